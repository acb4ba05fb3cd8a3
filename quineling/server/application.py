"""``quineling serve``'s gunicorn application: the options :func:`quineling.server.options.gunicorn_options`
made from the settings, and the app, which each worker loads for itself (after a gevent worker has patched the
standard library; the master never imports it)."""

from __future__ import annotations

from typing import Any

from gunicorn.app.base import BaseApplication


class Server(BaseApplication):
    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)

    # The Flask app. types-gunicorn spells a WSGI app's start_response differently from Flask's (typeshed)
    # WSGI types, so Flask does not match its return type although gunicorn serves it as WSGI.
    def load(self) -> Any:
        from quineling.app import serving_app

        return serving_app()
