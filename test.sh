#!/usr/bin/env bash
# Set up, then run the tests. ./test.sh: both tiers. ./test.sh --fast: the fast tier only (no kernels,
# about a minute: run it after every change). Other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
tools/install.sh
tiers=(tests/fast tests/slow)
if [ "${1:-}" = "--fast" ]; then
  shift
  tiers=(tests/fast)
fi
exec .venv/bin/python -m pytest "${tiers[@]}" "$@"
