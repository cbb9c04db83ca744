#!/bin/bash
# Packs the Python package for the GPU machine's Python (CPython 3.12 there; this host's default is
# 3.11), for the Python suite and the per-call benchmark on a GPU (bench/cuda/device_check.sh runs
# them when .devcarry/py.tgz is there). Builds hypatia with the CUDA backend for Python $PYVER
# (pyenv's, or any python$PYVER on PATH) in build-py$PYVER/ and a venv of its own, then packs the
# installed package with the pure-Python test dependencies (pytest, hypothesis and theirs: that
# machine reaches no package index) into .devcarry/py.tgz. The shared libraries the package needs
# beyond the CUDA toolkit are those pack_for_device.sh packs (run it too).
# Usage: bash bench/cuda/pack_python_for_device.sh [3.12]
set -euo pipefail
PYVER=${1:-3.12}
cd "$(dirname "$0")/../.."
PY=$(ls -d "$HOME"/.pyenv/versions/"$PYVER"*/bin/python"$PYVER" 2>/dev/null | tail -1)
[ -n "$PY" ] || PY=$(command -v "python$PYVER" || true)
"$PY" -c "import sys; assert sys.version.startswith('$PYVER')" || { echo "no python$PYVER here" >&2; exit 1; }
VENV=/tmp/hyp_py$PYVER
[ -x $VENV/bin/python ] || "$PY" -m venv $VENV
$VENV/bin/python -m pip install -q --disable-pip-version-check numpy nanobind scikit-build-core
export CXX=${CXX:-c++}
CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) $VENV/bin/python -m pip install -q --disable-pip-version-check \
  --no-build-isolation --no-deps -Cbuild-dir=build-py$PYVER -Ccmake.args=-GNinja .
rm -rf /tmp/hyp_pypack && mkdir -p /tmp/hyp_pypack/site
SITE=$($VENV/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
cp -r "$SITE/hypatia" /tmp/hyp_pypack/site/
strip --strip-unneeded /tmp/hyp_pypack/site/hypatia/*.so 2>/dev/null || true
# pytest and hypothesis are pure Python: their wheels unpacked onto the path.
$VENV/bin/python -m pip download -q --disable-pip-version-check --only-binary=:all: --python-version "$PYVER" \
  -d /tmp/hyp_pypack/wheels pytest hypothesis
for w in /tmp/hyp_pypack/wheels/*.whl; do $VENV/bin/python -m zipfile -e "$w" /tmp/hyp_pypack/site/; done
rm -rf /tmp/hyp_pypack/wheels
mkdir -p .devcarry
tar -C /tmp/hyp_pypack -czf .devcarry/py.tgz site
ls -la .devcarry/py.tgz
