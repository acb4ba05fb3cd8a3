"""Seeing inside the service: Prometheus metrics (:mod:`.metrics`), structured logs (:mod:`.logs`), what each
request was (:mod:`.notes`), and the gunicorn master's part in both (:mod:`.master`, :mod:`.gunicorn_log`).

Imports nothing itself: the gunicorn master imports :mod:`.master` and :mod:`.gunicorn_log`, which must not
bring in Flask or prometheus-client (and with it ``ssl``) before a gevent worker patches the standard library."""
