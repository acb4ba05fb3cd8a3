"""``send``'s message parts, in the order typed: ``--text`` a text part, ``--file`` a file part (a local path
inlined as base64, a URL sent as a reference the agent fetches), ``--data`` a data part from a JSON file or
stdin (``-``). ``--media-type`` sets the type of the part just before it; otherwise a file's type is guessed
from its name and text and data get none."""

from __future__ import annotations

import base64
import json
import mimetypes
import sys
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from quineling.cli_a2a.errors import usage

# Inline bytes go in the request body: past this, pass the file by URL (the agent's own limit may be lower).
MAX_INLINE_BYTES = 8 * 1024 * 1024


def build(
    message: str | None, typed: list[dict[str, Any]], *, stdin: TextIO | None = None
) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if message is not None:
        parts.append({"text": message})
    stdin_used = False
    for item in typed:
        kind, value, media = item["kind"], item["value"], item["media_type"]
        if kind == "text":
            part: dict[str, Any] = {"text": value}
        elif kind == "data":
            if value == "-":
                if stdin_used:
                    raise usage("--data -: stdin can be read only once")
                stdin_used = True
                part = {"data": _json(stdin or sys.stdin, "stdin")}
            else:
                part = {"data": _json_file(value)}
        else:
            part = _file(value, media)
        if media is not None:
            part["mediaType"] = media
        parts.append(part)
    if not parts:
        raise usage(
            "send: nothing to send: give the message text, --text, --file or --data",
            hint='example: quineling send -a HOST "hello"',
        )
    return parts


def _json(stream: TextIO, where: str) -> Any:
    try:
        return json.load(stream)
    except ValueError as exc:
        raise usage(f"--data: {where} is not JSON: {exc}", hint=None) from None


def _json_file(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return _json(handle, path)
    except OSError as exc:
        raise usage(f"--data: cannot read {path}: {exc.strerror}", hint=None) from None


def _file(value: str, media: str | None) -> dict[str, Any]:
    scheme = urlsplit(value).scheme
    name = Path(urlsplit(value).path if scheme else value).name
    guessed = media or mimetypes.guess_type(name)[0]
    if scheme in ("http", "https"):
        part: dict[str, Any] = {"url": value}
    else:
        path = Path(urlsplit(value).path if scheme == "file" else value)
        try:
            size = path.stat().st_size
            if size > MAX_INLINE_BYTES:
                raise usage(
                    f"--file: {path} is {size} bytes; inline files stop at {MAX_INLINE_BYTES}: "
                    "pass it by URL",
                    hint=None,
                )
            data = path.read_bytes()
        except OSError as exc:
            raise usage(f"--file: cannot read {path}: {exc.strerror}", hint=None) from None
        part = {"raw": base64.b64encode(data).decode("ascii")}
    if name:
        part["filename"] = name
    if guessed and media is None:
        part["mediaType"] = guessed
    return part
