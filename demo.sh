#!/usr/bin/env bash
# Set up, then grade a small demo class end to end: release, submissions, autograde, feedback, grades.
# Needs no network and no data download: names.txt ships with the course.
set -euo pipefail
cd "$(dirname "$0")"
tools/install.sh
exec .venv/bin/backprop-ninja demo "$@"
