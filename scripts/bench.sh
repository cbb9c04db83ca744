#!/usr/bin/env bash
# Runs every C++ benchmark program in $1/bench (default build/bench), then the numpy baselines,
# printing each benchmark's ratio against its baseline measured in the same run (best of 3 repetitions).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
py=${PYTHON:-.venv/bin/python}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
shopt -s nullglob
progs=("$build"/bench/bench_*)
if [ ${#progs[@]} -eq 0 ]; then
  echo "no benchmark programs in $build/bench (configure with -DHYPATIA_BENCH=ON)" >&2
  exit 1
fi
for prog in "${progs[@]}"; do
  [ -x "$prog" ] || continue
  name=$(basename "$prog")
  echo "== $name =="
  "$prog" --benchmark_min_time=0.3 --benchmark_repetitions=3 --benchmark_out="$out/$name.json" --benchmark_out_format=json
  echo
done
echo "== numpy baselines =="
"$py" bench/numpy_baselines.py "$out"/*.json
