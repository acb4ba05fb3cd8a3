"""The gRPC edge: A2A 1.0's gRPC binding (``lf.a2a.v1.A2AService``) over the same :class:`~quineling.a2a.
service.A2AService` as the HTTP bindings. Proto messages become the 1.0 JSON the service takes through
protobuf's JSON mapping (:mod:`.messages`), errors become ``google.rpc.Status`` with an ``ErrorInfo``
(:mod:`.status`), and the servicer (:mod:`.servicer`) authenticates, rate-limits, observes and streams as
the HTTP edge does, through the same shared pieces. The process that serves it is
``quineling/server/grpc_server.py``."""
