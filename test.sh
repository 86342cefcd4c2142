#!/usr/bin/env bash
# Set up, then run the whole test suite (real nbgrader, real kernels, real sandbox).
set -euo pipefail
cd "$(dirname "$0")"
tools/install.sh
exec .venv/bin/python -m pytest "$@"
