"""A request's JSON text, parsed strictly and judged, with no web framework: the one parse both bindings (and
the JSON-RPC core, :mod:`quineling.a2a.rpc`) use, so they accept the same documents. Reading the bytes off the
wire is the HTTP edge's (:mod:`quineling.a2a.http.body`)."""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from quineling.a2a.errors import InvalidParamsError, InvalidRequestError, JSONParseError
from stores import codec

# Arrays and objects a request object (the HTTP+JSON body, the JSON-RPC ``params``) may nest, itself included.
MAX_DEPTH = codec.MAX_DEPTH

_SHOWN_KEYS = 8  # a path in an error message shows at most this many steps
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


class UnacceptableValue(InvalidParamsError):
    """A request value the codec refused (:class:`stores.codec.Unacceptable`); ``path`` starts at the parsed
    document's root (``None``: unknown), ``document`` is that document when it could be parsed."""

    def __init__(self, message: str, path: codec.Path | None, document: Any) -> None:
        super().__init__(message)
        self.path = path
        self.document = document


def parse(raw: bytes, *, envelope: bool = False) -> Any:
    """The JSON value of ``raw``, parsed strictly. With ``envelope`` (JSON-RPC) the request object is one
    level down (``params``) and still gets the whole :data:`MAX_DEPTH`, so both bindings accept the same; and
    an envelope that names a member twice is ``InvalidRequest``: parsers disagree on which one counts (this
    one takes the last), so a gateway reading the first would see another request."""
    try:
        value = codec.loads(raw, strict=True, max_depth=MAX_DEPTH + envelope)
    except codec.Unacceptable as exc:
        raise UnacceptableValue(_describe(exc), exc.path, exc.document) from None
    except ValueError:
        raise JSONParseError() from None
    if envelope and isinstance(value, dict) and _may_repeat_names(raw, value) and _repeated_names(raw):
        raise InvalidRequestError("The request names a member more than once")
    return value


def _may_repeat_names(raw: bytes, value: dict[str, Any]) -> bool:
    """A cheap test that rules out a repeated member for nearly every request: the text holds as many quotes as
    the parsed value written out again. A member dropped as a repeat takes at least its name's two quotes
    with it; whitespace and escapes other than an escaped quote (then the exact test decides) change none."""
    try:
        again = orjson.dumps(value)
    except TypeError:  # an integer beyond 64 bits, say: the exact test decides
        return True
    return raw.count(b'"') != again.count(b'"')


def _repeated_names(raw: bytes) -> bool:
    """Whether the top-level object names a member twice (the outermost object is the last one built)."""
    outermost: list[list[tuple[str, Any]]] = []

    def build(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        outermost[:] = [pairs]
        return dict(pairs)

    json.loads(raw, object_pairs_hook=build, parse_constant=float)  # already parsed: cannot fail here
    names = [name for name, _ in outermost[0]] if outermost else []
    return len(names) != len(set(names))


def _describe(exc: codec.Unacceptable) -> str:
    where = _where(exc.path) if exc.path is not None else None
    if exc.problem == "depth":
        at = f"{where} nests" if where else "The request nests"
        return f"{at} arrays and objects more than {MAX_DEPTH} levels deep (the limit)"
    if exc.problem == "long-integer":
        return f"{where or 'the request'}: integers may have at most {codec.MAX_INT_DIGITS} digits"
    if exc.problem in ("surrogate", "surrogate-name"):
        what = "the member name" if exc.problem == "surrogate-name" else "the string"
        return (
            f"{where or 'the request'}: {what} holds a lone surrogate escape (\\ud800-\\udfff without its "
            "pair), which is not valid Unicode and cannot be encoded as UTF-8"
        )
    return f"{where or 'the request'}: numbers must be finite (this one is beyond the range of a double)"


def _where(path: codec.Path) -> str:
    """``params.message.parts[0].data`` for a path; odd member names are quoted in ASCII, long paths cut."""
    text = ""
    for step, key in enumerate(path):
        if step == _SHOWN_KEYS:
            return text + "…"
        if isinstance(key, int):
            text += f"[{key}]"
        elif _NAME.fullmatch(key):
            text += f".{key}" if text else key
        else:
            text += f"[{json.dumps(key[:64], ensure_ascii=True)}]"
    return text or "the request body"
