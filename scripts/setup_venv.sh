#!/usr/bin/env bash
# Creates .venv (if missing) with what the demo and the Python tests need (from PyPI), then builds
# and installs the hypatia package into it. The CMake build dir build-python/ persists and ccache
# caches the objects, so a rebuild after a small change takes seconds.
#   HYPATIA_WERROR=ON   warnings are errors (CI)
#   JOBS=N              parallel compile jobs
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
need=()
for p in numpy pytest hypothesis nanobind scikit_build_core; do
  .venv/bin/python -c "import $p" 2>/dev/null || need+=("${p//_/-}")
done
if [ ${#need[@]} -gt 0 ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check "${need[@]}"
fi
# --no-build-isolation: build with the venv's nanobind, scikit-build-core and numpy (no download).
# CXX as CMake picks it for `make build` (c++, not Python's g++): same compiler path, same ccache
# entries, so libhypatia's objects come from the cache when the C++ build ran first.
export CXX=${CXX:-c++}
CMAKE_BUILD_PARALLEL_LEVEL="${JOBS:-$(nproc)}" .venv/bin/python -m pip install -q --disable-pip-version-check \
  --no-build-isolation --no-deps -Cbuild-dir=build-python -Ccmake.args=-GNinja \
  -Ccmake.define.HYPATIA_WERROR="${HYPATIA_WERROR:-OFF}" .
