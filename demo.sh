#!/usr/bin/env bash
# Set up, then grade a small demo class end to end: release, submissions, autograde, feedback, grades.
set -euo pipefail
cd "$(dirname "$0")"
tools/install.sh
exec .venv/bin/backprop-ninja demo "$@"
