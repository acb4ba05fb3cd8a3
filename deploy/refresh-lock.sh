#!/usr/bin/env bash
# Regenerates deploy/requirements.lock: the exact versions of the server's runtime dependencies (pyproject.toml's
# `dependencies`, no test or dev extras), resolved in a fresh virtual environment with this machine's Python.
# The image installs with it as a constraints file (deploy/Dockerfile). Run after changing dependencies, or to
# take security updates; review the diff, then run the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="$(mktemp -d)/venv"
trap 'rm -rf "$(dirname "$venv")"' EXIT
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --disable-pip-version-check -q --upgrade pip
"$venv/bin/python" -m pip install --disable-pip-version-check -q .
{
  echo "# The server's runtime dependencies, pinned: regenerate with deploy/refresh-lock.sh (docs/deployment.md)."
  echo "# Resolved with $("$venv/bin/python" --version) on $(uname -m)."
  "$venv/bin/python" -m pip freeze --disable-pip-version-check --exclude-editable | grep -v -i '^quineling'
} >deploy/requirements.lock
echo "wrote deploy/requirements.lock ($(grep -vc '^#' deploy/requirements.lock) packages)"
