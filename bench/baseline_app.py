"""The benchmark's baseline: a minimal Flask app that parses a JSON-RPC body and returns a fixed result.

Run under the same gunicorn settings as the real server, it measures what the framework stack alone costs.
"""

from __future__ import annotations

from flask import Flask, jsonify, request

app = Flask(__name__)
FIXED = {"task": {"id": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_COMPLETED"}}}


@app.post("/a2a/jsonrpc")
def jsonrpc():  # type: ignore[no-untyped-def]
    body = request.get_json(force=True)
    return jsonify({"jsonrpc": "2.0", "id": body.get("id"), "result": FIXED})


@app.get("/healthz")
def healthz():  # type: ignore[no-untyped-def]
    return {"status": "ok"}
