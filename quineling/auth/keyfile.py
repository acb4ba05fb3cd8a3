"""API keys: the keys file (``QUINELING_AUTH_KEYS_FILE``), its parser, the constant-time match, and the edits
``quineling keys add|list|revoke`` make.

One line per key: ``<principal> sha256:<64 lower-case hex>``, the SHA-256 of the token's UTF-8 bytes; ``#``
starts a comment, blank lines are ignored. A principal may have several keys (rotation: add the new one,
move the clients, revoke the old one). The file holds no token, only hashes, so reading it does not reveal
a credential.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import os
import re
import secrets
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from quineling.auth.watch import ParseError

PRINCIPAL_PATTERN = re.compile(r"[A-Za-z0-9._-]{1,64}")
# The name operators give the caller of an unauthenticated server (``quineling store … --principal anonymous``,
# quineling/store_admin.py); no key principal may take it, so that name always means one thing.
ANONYMOUS = "anonymous"
_DIGEST = re.compile(r"sha256:([0-9a-f]{64})")
TOKEN_PREFIX = "qk_"  # makes a Quineling key recognisable (secret scanners, logs) and never a JWT
TOKEN_BYTES = 32  # 256 bits of randomness


def token_digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


@dataclass(frozen=True, slots=True)
class KeyEntry:
    principal: str
    digest: bytes
    line: int

    @property
    def fingerprint(self) -> str:
        """Enough of the hash to tell keys apart in a listing."""
        return "sha256:" + self.digest.hex()[:12]


@dataclass(frozen=True, slots=True)
class KeySet:
    entries: tuple[KeyEntry, ...] = ()

    def match(self, token: str) -> str | None:
        """The principal whose key ``token`` is, or ``None``. The token is hashed, then compared with every
        key by ``hmac.compare_digest``, always all of them: the time taken depends on the number of keys
        only, never on which key (or how much of one) matched."""
        digest = token_digest(token)
        found: str | None = None
        for entry in self.entries:
            if hmac.compare_digest(digest, entry.digest):
                found = entry.principal
        return found

    def principals(self) -> list[str]:
        return sorted({entry.principal for entry in self.entries})


def parse_keys(text: str) -> KeySet:
    """Parse a keys file; :class:`ParseError` names the first bad line and what is wrong with it (never
    its contents)."""
    entries: list[KeyEntry] = []
    seen: dict[bytes, int] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) != 2:
            raise ParseError(
                f"line {number}: expected '<principal> sha256:<64 hex>', got {len(fields)} fields"
            )
        principal, hashed = fields
        if not PRINCIPAL_PATTERN.fullmatch(principal):
            raise ParseError(f"line {number}: a principal name is 1 to 64 of A-Z a-z 0-9 . _ -")
        if principal == ANONYMOUS:
            raise ParseError(f"line {number}: {ANONYMOUS!r} is reserved for the unauthenticated caller")
        digest = _DIGEST.fullmatch(hashed)
        if not digest:
            raise ParseError(f"line {number}: the key must be 'sha256:' and 64 lower-case hex digits")
        value = bytes.fromhex(digest.group(1))
        if value in seen:
            raise ParseError(f"line {number}: the same key as line {seen[value]}")
        seen[value] = number
        entries.append(KeyEntry(principal, value, number))
    return KeySet(tuple(entries))


def parse_keys_of(path: str | Path, text: str) -> KeySet:
    """:func:`parse_keys`, with the path in the error."""
    try:
        return parse_keys(text)
    except ParseError as exc:
        raise ParseError(f"{path}: {exc}") from None


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


def key_line(principal: str, token: str) -> str:
    return f"{principal} sha256:{token_digest(token).hex()}\n"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One editor of a keys file at a time: two ``keys add`` at once must not lose a key."""
    lock = path.with_name(f".{path.name}.lock")
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _replace(path: Path, text: str) -> None:
    """Write ``text`` as the file's new contents in one step: readers (every worker) see the old file or
    the new one, never half of it. A new file is readable by its owner only."""
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o600
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def add_key(path: str | Path, principal: str) -> str:
    """Create a token for ``principal``, append its hash to the file (created if missing) and return the
    token, which exists nowhere else."""
    if not PRINCIPAL_PATTERN.fullmatch(principal):
        raise ValueError(f"{principal!r} is not a principal name: 1 to 64 of A-Z a-z 0-9 . _ -")
    if principal == ANONYMOUS:
        raise ValueError(f"{ANONYMOUS!r} is reserved for the unauthenticated caller")
    file = Path(path)
    token = new_token()
    with _locked(file):
        current = file.read_text(encoding="utf-8") if file.exists() else ""
        parse_keys_of(file, current)  # never append to a file the server would refuse
        if current and not current.endswith("\n"):
            current += "\n"
        _replace(file, current + key_line(principal, token))
    return token


def revoke_keys(path: str | Path, principal: str, *, fingerprint: str | None = None) -> int:
    """Remove every key of ``principal``, or only its key whose hash starts with ``fingerprint`` (as
    :attr:`KeyEntry.fingerprint` shows it, ``sha256:`` and at least 12 hex digits); comments and other lines
    stay as they are. How many were removed; a fingerprint matching two keys of the principal removes none."""
    wanted = None
    if fingerprint is not None:
        wanted = fingerprint.strip().lower().removeprefix("sha256:")
        if len(wanted) < 12 or any(c not in "0123456789abcdef" for c in wanted):
            raise ValueError(f"{fingerprint!r} is not a key fingerprint (sha256: and 12 or more hex digits)")
    file = Path(path)
    with _locked(file):
        text = file.read_text(encoding="utf-8")
        keys = parse_keys_of(file, text)
        lines = {
            entry.line
            for entry in keys.entries
            if entry.principal == principal and (wanted is None or entry.digest.hex().startswith(wanted))
        }
        if wanted is not None and len(lines) > 1:
            raise ValueError(f"{fingerprint} matches {len(lines)} keys of {principal}: give more of the hash")
        kept = [raw for number, raw in enumerate(text.splitlines(keepends=True), 1) if number not in lines]
        removed = len(lines)
        if removed:
            _replace(file, "".join(kept))
    return removed
