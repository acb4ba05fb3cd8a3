#!/usr/bin/env bash
# Regenerates deploy/requirements.lock: the exact version and sha256 of every package the image installs —
# pyproject.toml's runtime `dependencies` (no test or dev extras) and hatchling, which builds the project
# itself inside the image without fetching anything (deploy/Dockerfile: pip --require-hashes, then --no-index).
# pip resolves them as it would install them (`pip install --dry-run --report`) from this machine's indexes,
# with this machine's Python: run it on linux/x86_64 with Python 3.11, the image's platform, so the hashes are
# those of the files the image downloads. Run after changing dependencies, or to take security updates; review
# the diff, then run the tests (tests/deploy/test_manifests.py checks the lock against pyproject.toml).
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --disable-pip-version-check -q --upgrade pip
"$work/venv/bin/python" -m pip install --disable-pip-version-check -q --dry-run --ignore-installed \
  --report "$work/report.json" . hatchling
"$work/venv/bin/python" - "$work/report.json" deploy/requirements.lock <<'PY'
import json
import platform
import sys

report = json.load(open(sys.argv[1]))
lines = [
    "# The image's Python packages, pinned with their hashes: regenerate with deploy/refresh-lock.sh",
    "# (docs/deployment.md, \"Building the image\"). The runtime dependencies of pyproject.toml, and hatchling,",
    "# which builds the project in the image. Installed with: pip install --require-hashes --no-deps -r this file.",
    f"# Resolved with Python {platform.python_version()} on {platform.system().lower()}/{platform.machine()}.",
]
entries = []
for item in report["install"]:
    archive = item["download_info"].get("archive_info")
    if archive is None:  # the project itself (a directory), which the image builds from its source
        continue
    digest = archive["hashes"]["sha256"]
    entries.append((item["metadata"]["name"].lower(), item["metadata"]["version"], digest))
for name, version, digest in sorted(entries):
    lines += [f"{name}=={version} \\", f"    --hash=sha256:{digest}"]
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
print(f"wrote {sys.argv[2]} ({len(entries)} packages)")
PY
