#!/usr/bin/env bash
# Install everything the course needs into ./.venv (Python 3.11 and pip; no conda needed):
# the autograder package with its pinned dependencies, and bubblewrap for the grading sandbox.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
# Debian packages, each only when missing: bubblewrap (the sandbox that student code runs in), and a
# headless Chromium for the JupyterLab browser test (tests/test_student_side.py).
MISSING=""
command -v bwrap >/dev/null 2>&1 || MISSING="$MISSING bubblewrap"
command -v chromium >/dev/null 2>&1 || MISSING="$MISSING chromium"
command -v chromedriver >/dev/null 2>&1 || MISSING="$MISSING chromium-driver"
if [ -n "$MISSING" ]; then
  echo "installing$MISSING"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $MISSING >/dev/null
fi
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[test]"
