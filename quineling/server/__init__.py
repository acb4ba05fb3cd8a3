"""The gunicorn process: its options (:mod:`.options`), its hooks (:mod:`.hooks`), the start-up banner, store
probe and port check (:mod:`.startup`), the open-files check (:mod:`.open_files`), the metrics directory
(:mod:`.metrics_dir`), the logger class (:mod:`.gunicorn_log`), the lean worker (:mod:`.lean_worker`) and its
request-head reader (:mod:`.request_head`), and ``quineling serve``'s application (:mod:`.application`).

The top of the layers: it loads the app (in each worker) and nothing of the app imports it; what the app asks
of its worker while serving (is it stopping, close this connection) goes through :mod:`quineling.worker_state`,
which the hooks here fill in. Imports nothing itself: the gunicorn master imports the modules it needs, which
must not bring in Flask, redis or ssl before a gevent worker patches the standard library."""
