"""The A2A protocol's vocabulary, shared by the server (:mod:`quineling.a2a`), the client
(:mod:`quineling.client`) and the command line: task states and which are terminal, roles, the error table
(code ⇄ reason ⇄ HTTP status), and the v0.3 ⇄ 1.0 names. Plain data and pure functions: no web framework,
no HTTP client, no store, nothing of the server or the client (``tests/test_layering.py``)."""
