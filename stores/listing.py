"""ListTasks logic shared by every backend: filtering, newest-first ordering and the signed cursor.

A backend hands over one :class:`Row` per retained task of the scope; :func:`select_page` returns the page's
task ids, the continuation token and the total. The token names the last row's position
``(timestamp, sequence)``, and the next page is "rows strictly after that position", so evicting earlier rows
(or the cursor row itself) never shifts the continuation. A backend that reads the rows and the page's bodies
in two steps settles the page by the rows read with the bodies (:meth:`PagePlan.settle`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from stores.base import TaskQuery
from stores.errors import InvalidCursor

MAX_PAGE_SIZE = 100
Position = tuple[int, int, int]  # a row's place in the listing: ascending = newest first (Row.position)

_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def parse_instant(text: object) -> datetime | None:
    """An RFC 3339 timestamp (offset required) as an aware UTC datetime, or ``None`` if missing/invalid."""
    if not isinstance(text, str):
        return None
    match = _RFC3339.match(text)
    if not match:
        return None
    year, month, day, hour, minute, second, frac, zulu, sign, off_h, off_m = match.groups()
    try:
        micros = int((frac or "0")[:6].ljust(6, "0"))
        # RFC 3339 allows a leap second (:60); fold it onto the next instant rather than rejecting it.
        leap = int(second) == 60
        value = datetime(
            int(year), int(month), int(day), int(hour), int(minute), 59 if leap else int(second), micros, UTC
        )
        if leap:
            value += timedelta(seconds=1)
        if not zulu:
            offset = timedelta(hours=int(off_h), minutes=int(off_m))
            if offset >= timedelta(hours=24):
                return None
            value -= offset if sign == "+" else -offset
    except (ValueError, OverflowError):
        return None
    return value


def instant_micros(value: datetime) -> int:
    """Microseconds since the epoch: an exact integer for ordering and cursors. ``value`` must be aware; it is
    not converted to UTC first, which could overflow near the ends of the datetime range (a year-1 instant
    with a positive offset lies in year 0 in UTC)."""
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


@dataclass(frozen=True, slots=True)
class Row:
    """What listing needs to know about one task."""

    task_id: str
    status_timestamp: str | None
    sequence: int
    context_id: str | None
    state: str | None

    def position(self) -> Position:
        """Sort key, ascending = newest first; tasks without a valid timestamp sort last."""
        instant = parse_instant(self.status_timestamp)
        if instant is None:
            return (1, 0, -self.sequence)
        return (0, -instant_micros(instant), -self.sequence)


def validate_query(query: TaskQuery) -> None:
    if not isinstance(query.page_size, int) or not 1 <= query.page_size <= MAX_PAGE_SIZE:
        raise ValueError(f"page_size must be between 1 and {MAX_PAGE_SIZE}, got {query.page_size!r}")


def matches(row: Row, query: TaskQuery) -> bool:
    if query.context_id is not None and row.context_id != query.context_id:
        return False
    if query.status is not None and row.state != query.status:
        return False
    if query.status_after is not None:
        instant = parse_instant(row.status_timestamp)
        # Inclusive: a task at exactly the supplied instant is kept (A2A 1.0 ListTasks).
        if instant is None or instant < query.status_after:
            return False
    return True


def filter_fingerprint(query: TaskQuery) -> str:
    after = query.status_after
    if after is not None:
        if after.tzinfo is None:
            raise ValueError("status_after must be an aware datetime")
        after = instant_micros(after)
    canonical = json.dumps([query.context_id, query.status, after], separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


class CursorSigner:
    """Signs and checks page tokens for one store identity (id + secret)."""

    def __init__(self, store_id: str, secret: bytes) -> None:
        self.store_id = store_id
        self._secret = secret

    def _mac(self, body: bytes) -> bytes:
        return hmac.new(self._secret, body, hashlib.sha256).digest()

    def issue(self, scope: str, fingerprint: str, position: Position) -> str:
        body = json.dumps(
            {"s": self.store_id, "c": scope, "f": fingerprint, "p": list(position)}, separators=(",", ":")
        ).encode()
        return f"{_b64(body)}.{_b64(self._mac(body))}"

    def position(self, token: str, scope: str, fingerprint: str) -> Position:
        """The position a token continues after; :class:`InvalidCursor` unless it is ours and matches."""
        try:
            body_text, mac_text = token.split(".")
            body, mac = _unb64(body_text), _unb64(mac_text)
        except (ValueError, binascii.Error):
            raise InvalidCursor("malformed page token") from None
        if not hmac.compare_digest(mac, self._mac(body)):
            raise InvalidCursor("page token was not issued by this store")
        try:
            claims = json.loads(body)
            store_id, token_scope, token_fp, raw = claims["s"], claims["c"], claims["f"], claims["p"]
            position = (int(raw[0]), int(raw[1]), int(raw[2]))
        except (ValueError, KeyError, TypeError, IndexError):
            raise InvalidCursor("malformed page token") from None
        if store_id != self.store_id or token_scope != scope:
            raise InvalidCursor("page token belongs to another store or scope")
        if token_fp != fingerprint:
            raise InvalidCursor("page token was issued for different filters")
        return position


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    if not text or not re.fullmatch(r"[A-Za-z0-9_-]+", text):
        raise ValueError("not base64url")
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    # Unused trailing bits make several spellings decode alike; only the canonical one is a valid token.
    if _b64(raw) != text:
        raise ValueError("not canonical base64url")
    return raw


@dataclass(frozen=True, slots=True)
class PagePlan:
    """One page as selected: its task ids in order, the continuation token, the total, and the page's window
    of positions: strictly after ``after`` (``None``: from the newest) and, when a later page follows, at or
    before ``last``, where the token continues."""

    task_ids: list[str]
    next_page_token: str
    total_size: int
    after: Position | None = None
    last: Position | None = None

    def settle(self, rows: Iterable[Row], query: TaskQuery) -> list[str]:
        """The page's task ids, given their rows as read again together with their bodies (a backend that
        cannot select and read in one atomic step reads twice; tasks may change in between).

        Ordered by those rows, so the page is newest first by the timestamps it returns; a row that no longer
        matches the filters, or whose new position has left the page's window, is left out (it belongs to
        another page now: a task updated meanwhile is at the top of a fresh listing). Rows of other tasks are
        ignored, and a task that is gone is simply missing."""
        wanted = set(self.task_ids)
        kept = sorted(
            (row.position(), row.task_id)
            for row in rows
            if row.task_id in wanted
            and matches(row, query)
            and (self.after is None or row.position() > self.after)
            and (self.last is None or row.position() <= self.last)
        )
        return [task_id for _, task_id in kept]


def select_page(rows: Iterable[Row], scope: str, query: TaskQuery, signer: CursorSigner) -> PagePlan:
    """Filter, order and cut one page; raises :class:`InvalidCursor` for a token that does not fit."""
    validate_query(query)
    fingerprint = filter_fingerprint(query)
    after = signer.position(query.page_token, scope, fingerprint) if query.page_token else None
    matching = sorted((row.position(), row.task_id) for row in rows if matches(row, query))
    remaining = [item for item in matching if after is None or item[0] > after]
    page = remaining[: query.page_size]
    last = page[-1][0] if len(remaining) > len(page) else None
    token = signer.issue(scope, fingerprint, last) if last is not None else ""
    return PagePlan([task_id for _, task_id in page], token, len(matching), after, last)
