"""The A2A 1.0 protocol layer: ``service`` (one request handler), ``executor`` (task lifecycle), the
``jsonrpc`` and ``rest`` bindings, ``discovery``/``card``, ``sse``, ``errors``, and v0.3 ``compat_v03``."""
