"""Seeing inside the service: Prometheus metrics (:mod:`.metrics`), structured logs (:mod:`.logs`) and what each
request was (:mod:`.notes`). The gunicorn master's part in both (the metrics directory, the logger class) is the
process layer's (:mod:`quineling.server`).

Imports nothing itself: the gunicorn master imports :mod:`.logs` (through quineling.server.gunicorn_log), which
must not bring in Flask or prometheus-client (and with it ``ssl``) before a gevent worker patches the standard
library."""
