#!/usr/bin/env bash
# Installs the pinned official @a2a-js/sdk (and express, for its server) from package-lock.json: the client for
# tests/interop/test_js_sdk.py, the server for the benchmark peer bench/js_agent.mjs (./dev bench).
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
