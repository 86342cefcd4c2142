#!/usr/bin/env bash
# Install everything the course needs into ./.venv (Python 3.11 and pip; no conda needed):
# the autograder package with its pinned dependencies, and bubblewrap for the grading sandbox.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if ! command -v bwrap >/dev/null 2>&1; then
  echo "installing bubblewrap (the sandbox that student code runs in)"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq bubblewrap >/dev/null
fi
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[test]"
