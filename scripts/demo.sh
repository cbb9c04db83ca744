#!/usr/bin/env bash
# Runs the seed programs in C++ and their numpy baselines side by side.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
py=.venv/bin/python
echo "== seed 000: y = m.x + b, 1000x1000 float32, 500 iterations =="
"$build"/examples/cpp/seed000_linear 1000 500
$py examples/python/numpy_baselines.py seed000 1000 500
echo
echo "== seed 001: exp over 230,400 float32, 1000 calls =="
"$build"/examples/cpp/seed001_exp
$py examples/python/numpy_baselines.py seed001
