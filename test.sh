#!/usr/bin/env bash
# Set up, then run the tests.
#   ./test.sh          both tiers: tests/fast and tests/slow (real nbgrader, kernels, sandbox, browser, a Dask cluster
#                      and a PostgreSQL server on loopback) on pytest-xdist workers, one per core (on two cores, three
#                      were no faster and loaded the machine to 5-6); then the modules marked "alone" (they time hosts
#                      against each other) by themselves
#   ./test.sh --fast   the fast tier only: no kernels; run it after every change, on one worker per core up to 4
# A module runs on one worker (--dist loadfile: its fixtures run once). -n 0 runs in one process (for --pdb).
# Other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
cores=$(nproc 2>/dev/null || echo 1)
if [ "${1:-}" = "--fast" ]; then
  shift
  tools/install.sh
  exec .venv/bin/python -m pytest tests/fast -n "$((cores < 4 ? cores : 4))" --dist loadfile "$@"
fi
tools/install.sh --test
status=0
# xdist hands the modules out by their number of tests, most first; the two workers' ends meet (docs/performance.md)
.venv/bin/python -m pytest tests/slow tests/fast -n "$cores" --dist loadfile -m "not alone" "$@" || status=$?
alone=0
.venv/bin/python -m pytest tests/slow -m alone "$@" || alone=$?
# 5: pytest found no test to run, which is right for one of the two when arguments chose some tests
if [ "$status" -eq 5 ] && [ "$alone" -ne 5 ]; then status=0; fi
if [ "$alone" -ne 5 ] && [ "$alone" -ne 0 ]; then status=$alone; fi
exit "$status"
