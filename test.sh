#!/usr/bin/env bash
# Set up, then run the tests.
#   ./test.sh          both tiers: tests/fast, then tests/slow (real nbgrader, kernels, sandbox, browser, a Dask
#                      cluster and a PostgreSQL server on loopback)
#   ./test.sh --fast   the fast tier only: no kernels, about a minute; run it after every change
# Other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
if [ "${1:-}" = "--fast" ]; then
  shift
  tools/install.sh
  exec .venv/bin/python -m pytest tests/fast "$@"
fi
tools/install.sh --test
exec .venv/bin/python -m pytest tests/fast tests/slow "$@"
