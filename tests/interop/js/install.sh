#!/usr/bin/env bash
# Installs the pinned official JS SDK (@a2a-js/sdk) and express from package-lock.json: the client that
# tests/interop/test_js_sdk.py drives, and the fixture agent tests/interop/js/agent.mjs.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
