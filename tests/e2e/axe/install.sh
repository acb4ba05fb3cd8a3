#!/usr/bin/env bash
# Installs the pinned axe-core from package-lock.json: the accessibility rules tests/e2e/test_console.py runs on
# the console page in chromium (injected through the DevTools protocol, never served by the app).
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
