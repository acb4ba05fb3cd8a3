"""gunicorn settings for ``gunicorn -c deploy/gunicorn.conf.py wsgi:app`` (the same ones ``quineling serve``
uses): gthread workers, QUINELING_WORKERS (default 1) × QUINELING_THREADS (default 8), a large timeout, a
refusal to start several worker processes on the per-process memory:// store, and one to listen anywhere but
on loopback without authentication (also for a --bind given to gunicorn itself; docs/security.md)."""

from __future__ import annotations

import sys

from quineling.config import ConfigError, gunicorn_options, load_settings

try:
    globals().update(gunicorn_options(load_settings()))
except ConfigError as exc:
    sys.exit(f"quineling: {exc}")
