#!/bin/bash
# Issue 13 groundwork on the device machine: build and run the NVRTC/cuBLAS prototype, then the
# PyTorch and JAX anchors (separate processes: JAX would otherwise take most of the GPU's memory).
# Usage (device tool, from the repository root): bash bench/cuda/device_groundwork.sh
# Logs go to $OUT (or /tmp/hypatia_gpu when OUT is unset).
set -u
OUT=${OUT:-/tmp/hypatia_gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
{
  date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  nvcc --version | tail -2; nproc
} 2>&1 | tee "$OUT/env.txt"
t0=$(date +%s)
nvcc -std=c++20 -O2 -I src bench/cuda/nvrtc_table_proto.cpp -o /tmp/proto -lnvrtc -lcublas -cudart static \
  2>&1 | tee "$OUT/build.txt"
echo "prototype built in $(( $(date +%s) - t0 )) s"
/tmp/proto 2>&1 | tee "$OUT/proto.txt"
timeout 200 python3 bench/cuda/anchors.py torch 2>&1 | tee "$OUT/torch.txt"
timeout 200 python3 bench/cuda/anchors.py jax 2>&1 | grep -v "^WARNING\|^I0000\|^E0000" | tee "$OUT/jax.txt"
echo "total $(( $(date +%s) - t0 )) s"
