#!/usr/bin/env bash
# Refresh requirements.lock: every package the course installs (pyproject.toml's direct requirements with all its
# extras, and everything they pull in), at exact versions with their hashes. Run after changing pyproject.toml's
# requirements, then commit both files; tools/install.sh installs from the lock. Run it with the Python the course is
# installed with (PYTHON=/usr/bin/python3, Debian's 3.11.2): a newer 3.11.x may pick versions the older cannot install.
set -euo pipefail
cd "$(dirname "$0")/.."
tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT
"${PYTHON:-/usr/bin/python3}" -m venv "$tools"
"$tools/bin/pip" install -q "pip-tools==7.6.2"
"$tools/bin/pip-compile" -q --generate-hashes --allow-unsafe --no-strip-extras --no-emit-index-url \
  --no-emit-find-links --extra test,cluster,postgres,hub --output-file requirements.lock pyproject.toml
