#!/usr/bin/env bash
# A long run of the C++ graph fuzzer (tests/cpp/graph_fuzz.h): N graphs from seed START, in chunks of
# 2,000 seeds spread over JOBS processes, each chunk in a process of its own (a crash names its seed
# and the run goes on with the next chunk). Prints one line per chunk and a total.
#   scripts/fuzz_graphs.sh [N=100000] [START=1] [JOBS=2] [BUILD=build]
set -uo pipefail
N=${1:-100000}
START=${2:-1}
JOBS=${3:-2}
BUILD=${4:-build}
BIN="$BUILD/tests/cpp/hypatia_tests"
# The library beside the binary (a copy of a build keeps running while the build changes).
export LD_LIBRARY_PATH="$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -x "$BIN" ] || { echo "build $BIN first (make build)" >&2; exit 2; }
CHUNK=2000
LOG=$(mktemp -d)
run_chunk() {
  local first=$1 count=$2
  HYPATIA_FLAGS=debug_checks=True HYPATIA_FUZZ_SEED=$first HYPATIA_FUZZ_GRAPHS=$count \
    "$BIN" --gtest_filter='GraphFuzz.Random*' >"$LOG/$first.log" 2>&1
  echo "rc=$?" >>"$LOG/$first.log"
  grep -hE '^\[graph fuzz\]|^graph seed|fatal signal|^rc=[^0]' "$LOG/$first.log" | cut -c1-300
}
export -f run_chunk
export BIN LOG
t0=$(date +%s)
seq "$START" "$CHUNK" $((START + N - 1)) | xargs -P "$JOBS" -I{} bash -c \
  'first={}; last=$((first + '"$CHUNK"' - 1)); end='"$((START + N - 1))"'; [ $last -gt $end ] && last=$end; run_chunk $first $((last - first + 1))'
echo "total: $(cat "$LOG"/*.log | grep -hoE '[0-9]+ graphs ran' | awk '{s+=$1} END {print s}') graphs ran," \
  "$(cat "$LOG"/*.log | grep -c '^graph seed') failed, $(cat "$LOG"/*.log | grep -c 'fatal signal') crashed," \
  "$(( $(date +%s) - t0 )) s; logs in $LOG"
