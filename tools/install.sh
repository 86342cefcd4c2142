#!/usr/bin/env bash
# Install what the course needs into ./.venv, with nothing activated: every package of requirements.lock (exact
# versions, checked against their hashes; tools/lock.sh refreshes it from pyproject.toml), the autograder package
# itself, and Debian's bubblewrap for the grading sandbox.
#   tools/install.sh          what the demo and grading need
#   tools/install.sh --test   also what the whole test suite needs of Debian: Chromium and ChromeDriver (the
#                             JupyterLab browser test), the PostgreSQL server (the shared gradebook's test starts
#                             one of its own), iproute2 and libfaketime (the namespace cluster's hosts, one with
#                             its clock off), Noto CJK fonts (Chinese pages in the browser; DejaVu has Cyrillic)
#                             and npm; then from the npm registry, as their package-lock.json pins them, axe-core
#                             (tools/axe, the accessibility test) into .venv/axe and configurable-http-proxy (tools/chp,
#                             JupyterHub's proxy, the hub's test) into .venv/chp
#   tools/install.sh --hub    also what a JupyterHub on this machine needs (docs/jupyterhub.md): npm, then
#                             configurable-http-proxy (tools/chp) into .venv/chp; JupyterHub itself is in the lock
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
TORCH_INDEX=https://download.pytorch.org/whl/cpu

# Debian packages, each only when its program is missing: package:program (PostgreSQL's are not on PATH)
wanted=("bubblewrap:bwrap")
if [ "${1:-}" = "--test" ]; then
  wanted+=("chromium:chromium" "chromium-driver:chromedriver" "postgresql:/usr/lib/postgresql/*/bin/initdb"
    "iproute2:ip" "faketime:faketime" "fonts-noto-cjk:/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"
    "npm:npm")
elif [ "${1:-}" = "--hub" ]; then
  wanted+=("npm:npm")
fi
missing=()
for entry in "${wanted[@]}"; do
  program=${entry#*:}
  command -v "$program" >/dev/null 2>&1 || compgen -G "$program" >/dev/null || missing+=("${entry%%:*}")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then sudo=(); else sudo=(sudo); fi
  if command -v apt-get >/dev/null 2>&1 && { [ ${#sudo[@]} = 0 ] || command -v sudo >/dev/null 2>&1; }; then
    echo "installing ${missing[*]} (apt-get)"
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "not installed: ${missing[*]} (no apt-get here). Without bubblewrap, backprop-ninja grade refuses to run" \
      "student code unless you pass --unsandboxed; the demo grades its own notebooks without the sandbox."
  fi
fi

"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null ||
  { echo "the course needs Python 3.10 or newer as \$PYTHON (now: $("$PYTHON" --version 2>&1))"; exit 1; }
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv ||
    { echo "could not make .venv: on Debian, apt-get install python3-venv"; rm -rf .venv; exit 1; }
fi
# pip only when the lock changed since the last install (the package itself is installed editable)
stamp=".venv/.installed-requirements.lock"
if ! cmp -s requirements.lock "$stamp"; then
  # torch is locked as PyTorch's CPU build (+cpu), which PyTorch's own index serves, not PyPI: that index is added
  # unless pip is told where to look already (an index or a folder of wheels, in the environment or pip's config)
  # (pip's config is read whole before grep: grep -q stops at its first match, and under pipefail pip's broken pipe
  # made the test fail at random, adding the index on a machine that is told where to look)
  torch_index=()
  pip_config=$(.venv/bin/python -m pip config list 2>/dev/null || true)
  if [ -z "${PIP_INDEX_URL:-}${PIP_EXTRA_INDEX_URL:-}${PIP_FIND_LINKS:-}" ] &&
    ! grep -Eq '\.(index-url|extra-index-url|find-links)=' <<< "$pip_config"; then
    torch_index=(--extra-index-url "$TORCH_INDEX")
  fi
  # An unreachable index costs pip five retries a package, tens of minutes of silence before it fails: say so at once
  # (a warning only: pip may reach it where this cannot, through pip's own proxy or certificates)
  if [ ${#torch_index[@]} -gt 0 ] && ! .venv/bin/python -c 'import sys, urllib.request
urllib.request.urlopen(sys.argv[1] + "/torch/", timeout=15)' "$TORCH_INDEX" > /dev/null 2>&1; then
    echo "warning: cannot reach PyTorch's index ($TORCH_INDEX), which serves torch==2.13.0+cpu; pip will retry" \
      "every package for many minutes before it fails. If this machine has no way there, stop it (Ctrl-C) and point" \
      "PIP_EXTRA_INDEX_URL or PIP_FIND_LINKS at a mirror or a folder of wheels (README, Two commands)"
  fi
  echo "installing the course's Python packages into .venv (a minute or two; log: .venv/pip.log)"
  { .venv/bin/python -m pip install "${torch_index[@]}" --require-hashes -r requirements.lock &&
    .venv/bin/python -m pip install --no-deps --no-build-isolation -e .; } \
    > .venv/pip.log 2>&1 || {
    tail -40 .venv/pip.log
    echo "pip failed: see .venv/pip.log. torch==2.13.0+cpu comes from PyTorch's index ($TORCH_INDEX):" \
      "if this machine cannot reach it, point PIP_EXTRA_INDEX_URL or PIP_FIND_LINKS at a mirror or a folder of wheels"
    exit 1
  }
  cp requirements.lock "$stamp"
fi

# The npm packages of the tests, each only when its lock changed since the last install (npm ci checks every package
# against the lock's integrity hash): tools/axe (axe-core, the accessibility test) into .venv/axe, tools/chp
# (configurable-http-proxy, JupyterHub's proxy: the hub's test, and a hub's --hub) into .venv/chp
npm_tools=()
case "${1:-}" in --test) npm_tools=(axe chp) ;; --hub) npm_tools=(chp) ;; esac
if [ ${#npm_tools[@]} -gt 0 ]; then
  for name in "${npm_tools[@]}"; do
    if ! cmp -s "tools/$name/package-lock.json" ".venv/$name/.installed-package-lock.json"; then
      echo "installing tools/$name into .venv/$name (log: .venv/$name/npm.log)"
      mkdir -p ".venv/$name"
      cp "tools/$name/package.json" "tools/$name/package-lock.json" ".venv/$name/"
      (cd ".venv/$name" && npm ci --ignore-scripts --no-audit --no-fund > npm.log 2>&1) ||
        { tail -20 ".venv/$name/npm.log"; echo "npm failed: see .venv/$name/npm.log"; exit 1; }
      cp "tools/$name/package-lock.json" ".venv/$name/.installed-package-lock.json"
    fi
  done
fi
