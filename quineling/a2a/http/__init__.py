"""The protocol layer's HTTP edge: everything that knows Flask or WSGI. The JSON-RPC view and its lean WSGI
path (both adapters of :mod:`quineling.a2a.rpc`), the HTTP+JSON views and schemas with the OpenAPI document
made from them, Server-Sent Events, discovery, and the request hooks (observation, Host/Origin guard,
authentication, rate limit, body limits). Below it, :mod:`quineling.a2a` knows no transport."""
