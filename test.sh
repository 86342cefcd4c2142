#!/usr/bin/env bash
# Set up, then run the tests.
#   ./test.sh          both tiers: tests/fast, then tests/slow (real nbgrader, kernels, sandbox, browser, a Dask
#                      cluster and a PostgreSQL server on loopback)
#   ./test.sh --fast   the fast tier only: no kernels; run it after every change. Its modules are spread over
#                      pytest-xdist workers, one per core up to 4 (--dist loadfile: a module's fixtures run once);
#                      -n 0 runs it in one process (for --pdb)
# Other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
if [ "${1:-}" = "--fast" ]; then
  shift
  tools/install.sh
  workers=$(nproc 2>/dev/null || echo 1)
  exec .venv/bin/python -m pytest tests/fast -n "$((workers < 4 ? workers : 4))" --dist loadfile "$@"
fi
tools/install.sh --test
exec .venv/bin/python -m pytest tests/fast tests/slow "$@"
