"""An open stream's credential, checked again while it streams (every binding's): once the key is revoked or
the JWT expires, the stream ends and subscribing again is refused."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from quineling.auth import AuthenticationFailed, AuthenticationUnavailable, Authenticator, Principal

log = logging.getLogger(__name__)

STREAM_RECHECK_SECONDS = 1.0


def still_valid(authenticator: Authenticator, header: str | None, principal: Principal) -> bool:
    """Whether ``header`` still authenticates ``principal``."""
    try:
        return authenticator.authenticate(header) == principal
    except AuthenticationFailed:
        return False
    except AuthenticationUnavailable:
        return True  # the keys cannot be fetched now: no reason to think the token went bad


def rechecked(
    chunks: Iterable[Any],
    still_valid: Callable[[], bool],
    interval: float,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[Any]:
    """``chunks`` for as long as ``still_valid()`` holds, asked before a chunk at most every ``interval``
    seconds; closing this closes ``chunks`` (which unsubscribes)."""
    iterator = iter(chunks)
    checked = clock()
    try:
        for chunk in iterator:
            now = clock()
            if now - checked >= interval:
                checked = now
                if not still_valid():
                    log.info("stream ended: its credential is no longer valid")
                    return
            yield chunk
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            close()
