"""The CLI's one error type and its envelope ``{"error": {code, message, hint, a2aCode}}``.

``code`` is the A2A error name, unchanged, for a protocol failure, and one of the ``A2ACLI_ERR_*`` codes below
for a failure of the CLI's own; the exit code follows from it (3 unreachable, 4 authentication, 5 timeout)."""

from __future__ import annotations

from typing import Any

USAGE = "A2ACLI_ERR_USAGE"
CARD_NOT_FOUND = "A2ACLI_ERR_CARD_NOT_FOUND"
CARD_INVALID = "A2ACLI_ERR_CARD_INVALID"
UNREACHABLE = "A2ACLI_ERR_UNREACHABLE"
CREDENTIALS_MISSING = "A2ACLI_ERR_CREDENTIALS_MISSING"
AUTH_FAILED = "A2ACLI_ERR_AUTH_FAILED"
TIMEOUT = "A2ACLI_ERR_TIMEOUT"
INTERNAL = "A2ACLI_ERR_INTERNAL"

# The registry of CLI-local codes is closed: nothing else may carry the A2ACLI_ERR_ prefix.
EXIT_CODES = {
    USAGE: 2,
    CARD_NOT_FOUND: 3,
    CARD_INVALID: 1,
    UNREACHABLE: 3,
    CREDENTIALS_MISSING: 4,
    AUTH_FAILED: 4,
    TIMEOUT: 5,
    INTERNAL: 1,
}


class CliError(Exception):
    """A failure to report: ``code`` decides the exit status unless the code is a protocol error's name (1)."""

    def __init__(
        self, code: str, message: str, *, hint: str | None = None, a2a_code: str | int | None = None
    ) -> None:
        super().__init__(message)
        if code.startswith("A2ACLI_ERR_") and code not in EXIT_CODES:
            raise ValueError(f"{code} is not a registered A2ACLI_ERR_ code")
        self.code = code
        self.message = message
        self.hint = hint
        self.a2a_code = a2a_code

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.code, 1)

    def envelope(self) -> dict[str, Any]:
        return {
            "error": {"code": self.code, "message": self.message, "hint": self.hint, "a2aCode": self.a2a_code}
        }


def usage(message: str, hint: str | None = "run: quineling help") -> CliError:
    return CliError(USAGE, message, hint=hint)
