"""Request bodies, the same for every binding: read at most the size limit, parse strictly, refuse what a
request may not carry (docs/decisions/0007-request-limits.md).

Reading stops at ``limit + 1`` bytes whatever the framing (``Content-Length`` or chunked), so an oversized
upload costs a worker at most that much memory and never the whole body. What parses as JSON but cannot be
served — nesting deeper than :data:`MAX_DEPTH`, a lone surrogate escape, a number beyond the double range —
is :class:`UnacceptableValue` (``InvalidParams``) naming where it is, before any of it is copied or stored.
"""

from __future__ import annotations

from typing import Any

from flask import Response, request
from werkzeug.exceptions import RequestEntityTooLarge

from quineling.a2a.errors import (
    ContentTypeNotSupportedError,
    InvalidRequestError,
)
from quineling.worker_state import close_connection, within, worker_stopping

_READ_TO_END = "quineling.a2a.body_read"  # WSGI environ: the request body was read to its end


def too_large(limit: int) -> InvalidRequestError:
    return InvalidRequestError(f"Request body exceeds {limit} bytes", http_status=413)


def read_limited(limit: int, timeout: float | None = None) -> bytes:
    """The raw body: 413 (:func:`too_large`) as soon as more than ``limit`` bytes arrive, without reading
    further; a body the client does not deliver intact (a broken chunk, a disconnect, fewer bytes than its
    Content-Length before a half-close) is ``InvalidRequest``; one not received in full within ``timeout``
    seconds (the body deadline, QUINELING_BODY_TIMEOUT_SECONDS) is 408, and its connection closes."""
    declared = request.content_length
    if declared is not None and declared > limit:
        raise too_large(limit)
    chunks: list[bytes] = []
    size = 0
    try:
        with within(request.environ.get("gunicorn.socket"), timeout):
            stream = request.stream
            while size <= limit:
                # Streams may return less than asked (werkzeug's LimitedStream, a chunked body): read again.
                chunk = stream.read(limit + 1 - size)
                if not chunk:
                    request.environ[_READ_TO_END] = True
                    break
                chunks.append(chunk)
                size += len(chunk)
    except RequestEntityTooLarge:  # werkzeug's own cap (MAX_CONTENT_LENGTH) on a stream
        raise too_large(limit) from None
    except Exception as exc:  # noqa: BLE001 - the server's framing errors are the client's doing
        if isinstance(exc, TimeoutError) or isinstance(exc.__context__, TimeoutError):  # werkzeug wraps it
            close_connection(request.environ.get("wsgi.input"))
            raise body_timed_out(timeout or 0.0) from None
        raise InvalidRequestError(f"The request body could not be read ({type(exc).__name__})") from None
    if size > limit:
        raise too_large(limit)
    if declared is not None and size < declared:  # the client closed its side before the body's end
        raise InvalidRequestError(f"The request body ended after {size} of its {declared} bytes")
    return b"".join(chunks)


def body_timed_out(timeout: float) -> InvalidRequestError:
    return InvalidRequestError(
        f"The request body was not received within {timeout:g} seconds", http_status=408
    )


def refuse_content_encoding(http_status: int) -> None:
    """A body in a ``Content-Encoding`` other than ``identity`` is refused (``http_status``: 415 on HTTP+JSON,
    400 on JSON-RPC), never read as if it were plain: the server decodes none."""
    encoding = request.headers.get("Content-Encoding", "").strip()
    if encoding and encoding.lower() != "identity":
        raise ContentTypeNotSupportedError(
            f"Content-Encoding {encoding[:64]!r} is not supported: send the body unencoded",
            http_status=http_status,
        )


def mark_read(environ: dict[str, Any]) -> None:
    """Say that the body was read to its end (by the lean JSON-RPC path, before it handed the request on)."""
    environ[_READ_TO_END] = True


def close_if_unread(response: Response) -> Response:
    """After every request (``app.after_request``): a body that was not read to its end — refused before
    reading (a bad Content-Type, an unknown route, a foreign Host) or while reading (too large) — is not left
    for the server to drain; the connection is closed after the answer instead."""
    has_body = bool(request.content_length) or bool(request.headers.get("Transfer-Encoding"))
    if has_body and not request.environ.get(_READ_TO_END):
        close_connection(request.environ.get("wsgi.input"))
    return response


def close_if_stopping(response: Response) -> Response:
    """After every request: once the worker has been told to stop (SIGTERM), the connection closes after this
    answer — with ``Connection: close`` when the stop came before the answer started, or right after its end
    when it came during it (a stream). gunicorn decides keep-alive when a request starts, so a request in
    flight at the SIGTERM would otherwise keep its connection open for a next one, and the worker's exit
    would wait out the keep-alive timeout."""
    wsgi_input = request.environ.get("wsgi.input")

    def close_if_told() -> None:
        if worker_stopping():
            close_connection(wsgi_input)

    close_if_told()
    response.call_on_close(close_if_told)  # runs when the body is done, before gunicorn's keep-alive check
    return response
