"""gunicorn settings for ``gunicorn -c deploy/gunicorn.conf.py wsgi:app`` (the same ones ``quineling serve``
uses): QUINELING_WORKERS (default 1) gevent workers (QUINELING_WORKER_CLASS), each taking
QUINELING_WORKER_CONNECTIONS connections and holding at most QUINELING_MAX_STREAMS open streams, a refusal
to start several worker processes on the per-process memory:// store (docs/deployment.md, "Worker model"),
and one to listen anywhere but on loopback without authentication (also for a --bind given to gunicorn
itself; docs/security.md). The master also prepares the metrics directory every worker writes to, marks
exited workers' metrics dead, and sets up the error, access and app logs in QUINELING_LOG_FORMAT
(docs/deployment.md, "Metrics" and "Logs").

Only ``quineling.config`` is imported here, in the master: the app is imported by each worker after gevent
has patched the standard library."""

from __future__ import annotations

import sys

from quineling.config import ConfigError, gunicorn_options, load_settings
from quineling.open_files import ensure_or_exit

try:
    _settings = load_settings()
    globals().update(gunicorn_options(_settings))
except ConfigError as exc:
    sys.exit(f"quineling: {exc}")
# Enough open files for the configured bounds, or a refusal (exit 3) that says so (docs/deployment.md).
ensure_or_exit(_settings)
