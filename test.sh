#!/usr/bin/env bash
# Set up, then run the tests.
#   ./test.sh          both tiers: tests/fast and tests/slow (real nbgrader, kernels, sandbox, browser, a Dask cluster
#                      on hosts of their own and a PostgreSQL server on loopback) on pytest-xdist workers, one per core
#                      (on two cores, three were no faster and loaded the machine to 5-6)
#   ./test.sh --fast   the fast tier only: no kernels; run it after every change, on one worker per core up to 4
# A module runs on one worker (--dist loadfile: its fixtures run once), handed out in tests/conftest.py's order.
# -n 0 runs in one process (for --pdb). Other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
cores=$(nproc 2>/dev/null || echo 1)
if [ "${1:-}" = "--fast" ]; then
  shift
  tools/install.sh
  exec .venv/bin/python -m pytest tests/fast -n "$((cores < 4 ? cores : 4))" --dist loadfile --no-loadscope-reorder "$@"
fi
tools/install.sh --test
exec .venv/bin/python -m pytest tests/slow tests/fast -n "$cores" --dist loadfile --no-loadscope-reorder "$@"
