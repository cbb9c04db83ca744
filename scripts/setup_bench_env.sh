#!/usr/bin/env bash
# Creates .venv-bench (if missing), the environment of bench/python/compare_frameworks.py: pinned
# numpy, PyTensor and JAX (CPU) from PyPI, plus the hypatia package built from this tree. It is
# separate from .venv (the tests' environment), which it never touches, and no part of `make test`
# or `make demo`; `make bench-compare` runs it, then the comparison. Re-running it is cheap: pip
# skips what is installed, and the build reuses its own build dir and ccache's objects.
#   JOBS=N   parallel compile jobs
#
# The hypatia package is built with the same command as scripts/setup_venv.sh, but with
# .venv-bench's Python and in its own CMake build dir (build-bench-python/): a CMake build dir
# remembers its Python and nanobind, so sharing build-python/ would make each venv rebuild the
# other's module. With ccache (same compiler, flags and base dir as the Makefile's) the objects of
# libhypatia come from the cache when build-python/ or build/ compiled them first.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-bench
# The versions the published comparison used; change them here, together.
pins=(
  numpy==2.4.6
  scipy==1.17.1
  pytensor==3.0.7
  "jax[cpu]==0.10.2"
  jaxlib==0.10.2
  nanobind==3.1.0
  scikit-build-core==1.1.2
)
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check "${pins[@]}"

export CXX=${CXX:-c++}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
CMAKE_BUILD_PARALLEL_LEVEL="${JOBS:-$(nproc)}" "$venv/bin/python" -m pip install -q --disable-pip-version-check \
  --no-build-isolation --no-deps -Cbuild-dir=build-bench-python -Ccmake.args=-GNinja \
  -Ccmake.define.HYPATIA_WERROR=OFF .
"$venv/bin/python" -c "import hypatia, numpy, pytensor, jax; print('.venv-bench: hypatia', hypatia.__version__, \
'numpy', numpy.__version__, 'pytensor', pytensor.__version__, 'jax', jax.__version__)"
