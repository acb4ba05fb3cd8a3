"""The runtime's one error type. ``code`` is one of :data:`ERROR_CODES`."""

from __future__ import annotations

from stores.jsontypes import JSON

ERROR_CODES = frozenset(
    {
        "invalid-request",
        "non-finite",
        "unknown-operation",
        "invalid-intent",
        "invalid-source",
        "invalid-genome",
        "not-found",
        "record-mismatch",
        "metadata-conflict",
        "intent-mismatch",
        "candidate-mismatch",
        "conflict",
        "stale-revision",
        "sequence-gap",
        "sequence-discarded",
        "ineligible",
        "expired",
        "resource-limit",
        "busy",
    }
)


class QuinelingError(Exception):
    """A structured runtime failure: ``{code, message, path}``; ``path`` points into the request or is None."""

    def __init__(self, code: str, message: str, path: str | None = None) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.path = path

    def to_dict(self) -> JSON:
        return {"code": self.code, "message": self.message, "path": self.path}

    def __repr__(self) -> str:
        return f"QuinelingError({self.code!r}, {self.message!r}, {self.path!r})"
