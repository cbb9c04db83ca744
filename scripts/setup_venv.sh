#!/usr/bin/env bash
# Creates .venv (if missing) with what the demo and the Python tests need, from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
need=()
for p in numpy; do
  .venv/bin/python -c "import $p" 2>/dev/null || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check "${need[@]}"
fi
