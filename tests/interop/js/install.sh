#!/usr/bin/env bash
# Installs the pinned official JS client (@a2a-js/sdk) for tests/interop/test_js_sdk.py from package-lock.json.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
