#!/bin/bash
# Packs what the device check runs (bench/cuda/device_check.sh) into .devcarry/, which git ignores
# and the device tool carries: the C++ test binary, bench_cuda and bench_nvrtc, built here with the CUDA backend
# (a build dir configured with -DHYPATIA_BENCH=ON), stripped, with the shared libraries they need
# that the GPU machine lacks (OpenBLAS, oneDNN, Highway, ...; the CUDA libraries come from its own
# toolkit). Usage: bash bench/cuda/pack_for_device.sh [build-dir]
set -euo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
grep -qx '/.devcarry/' .git/info/exclude 2>/dev/null || echo '/.devcarry/' >> .git/info/exclude
rm -rf .devcarry /tmp/hyp_pack && mkdir -p .devcarry /tmp/hyp_pack/bin /tmp/hyp_pack/lib
cp "$BUILD/tests/cpp/hypatia_tests" "$BUILD/bench/bench_cuda" "$BUILD/bench/bench_nvrtc" /tmp/hyp_pack/bin/
strip --strip-unneeded /tmp/hyp_pack/bin/*
for bin in /tmp/hyp_pack/bin/*; do
  ldd "$bin" | awk '/=> \// {print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libgcc_s.so*|libstdc++.so*|ld-linux*) ;;
    *) cp -L "$lib" /tmp/hyp_pack/lib/ ;;
  esac
done
strip --strip-unneeded /tmp/hyp_pack/lib/libhypatia.so* 2>/dev/null || true
tar -C /tmp/hyp_pack -czf .devcarry/pack.tgz bin lib
ls -la .devcarry/pack.tgz
