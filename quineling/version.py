"""The package version, semantic versioning (CHANGELOG.md): pyproject.toml reads it from here at build time,
and ``quineling --version``, the start-up banner and ``/healthz`` report it. Not the agent card's ``version``,
which stays ``0.0.0-experimental`` (quineling/a2a/card.py)."""

__version__ = "0.1.0"
