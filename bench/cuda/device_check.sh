#!/bin/bash
# Issue 13 on the GPU machine (device tool): the CUDA tests, bench_cuda, and the PyTorch and JAX
# anchors, all on the same GPU. Needs .devcarry/pack.tgz (bench/cuda/pack_for_device.sh) carried.
# Usage there, from the repository root: bash bench/cuda/device_check.sh   (logs in $OUT)
set -u
OUT=${OUT:-/tmp/hypatia_gpu}
mkdir -p "$OUT" /tmp/h
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
tar -xzf .devcarry/pack.tgz -C /tmp/h
CUDALIB=$(dirname "$(find /usr/local /usr/lib /opt -name 'libnvrtc.so.13*' 2>/dev/null | head -1)")
# cuDNN (the convolutions): the toolkit's, or the one PyTorch's wheels carry.
CUDNNLIB=$(dirname "$(find /usr/local /usr/lib /opt -name 'libcudnn.so.9' 2>/dev/null | head -1)")
export LD_LIBRARY_PATH=/tmp/h/lib:$CUDALIB:$CUDNNLIB:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export HYPATIA_CACHE_DIR=/tmp/hypatia_cache
{
  date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nvcc --version | tail -1
  echo "nvrtc from: $CUDALIB"; echo "cudnn from: $CUDNNLIB"; nproc
  # Whether the Python package could be built here (its headers), for the Python suite on a GPU.
  python3 -c "import sys, sysconfig, os; i = sysconfig.get_paths()['include']; print(sys.version.split()[0], i, 'Python.h:', os.path.exists(os.path.join(i, 'Python.h')))"
} 2>&1 | tee "$OUT/env.txt"
t0=$(date +%s)
timeout 300 /tmp/h/bin/hypatia_tests --gtest_filter="${FILTER:-Cuda*}" 2>&1 | tee "$OUT/tests.txt" | grep -v "^\[ *OK\|^\[ RUN" | tail -150
echo "tests: $(( $(date +%s) - t0 )) s"
# The backend with one stream for every function (cuda_streams=one; the default gives each
# function its own): the tests of shared state between functions and calls, and the two threads'
# benchmark under each setting.
HYPATIA_FLAGS=cuda_streams=one timeout 120 /tmp/h/bin/hypatia_tests \
  --gtest_filter='CudaRun.FunctionsOnStreams*:CudaRun.SharedVariables*:CudaRun.AFailedCall*:CudaRun.AClassifier*:CudaRun.ATrainingLoop*:CudaRun.DeviceResults*' \
  2>&1 | tee "$OUT/tests_one_stream.txt" | grep -v "^\[ *OK\|^\[ RUN" | tail -30
# The device flag naming the GPU (a process drives the one it names: core/device.h): cuda0 by name
# runs the shared-state tests; the index past this machine's GPUs makes the backend unavailable
# with the count (the tests skip, printing why).
HYPATIA_FLAGS=device=cuda0 timeout 120 /tmp/h/bin/hypatia_tests --gtest_filter='CudaRun.SharedVariables*:CudaRun.ATrainingLoop*' \
  2>&1 | tee "$OUT/tests_named_gpu.txt" | grep -v "^\[ *OK\|^\[ RUN" | tail -8
HYPATIA_FLAGS=device=cuda$(nvidia-smi -L | wc -l) timeout 60 /tmp/h/bin/hypatia_tests --gtest_filter='CudaRun.ATrainingLoop*' \
  2>&1 | tee -a "$OUT/tests_named_gpu.txt" | grep -i "skip\|fail\|machine shows" | tail -4
for s in function one; do HYPATIA_FLAGS=cuda_streams=$s timeout 60 /tmp/h/bin/bench_cuda streams 2>&1 | tee -a "$OUT/streams.txt"; done
# The Python package built for this machine's Python (pack_python_for_device.sh), when carried:
# the suite as CI runs it (the GPU tests in it run here), the numerical suites with device=cuda,
# and the Python benchmark.
if [ -f .devcarry/py.tgz ] && [ "${PY:-1}" = 1 ]; then
  mkdir -p /tmp/hp && tar -xzf .devcarry/py.tgz -C /tmp/hp
  export PYTHONPATH=/tmp/hp/site
  timeout 240 python3 -m pytest -q -p no:cacheprovider tests/python 2>&1 | tee "$OUT/pytest.txt" | tail -25
  # With device=cuda: the numerical suites (every function compiled for the GPU; NVRTC's cold
  # compiles dominate). The tests that check the CPU backend's own graphs and memory are marked
  # host_graphs and skipped under device=cuda (conftest.py): any failure here is one to look at.
  HYPATIA_FLAGS=device=cuda timeout 300 python3 -m pytest -q -rf -p no:cacheprovider \
    tests/python/test_elemwise.py tests/python/test_nnet_blas.py tests/python/test_reduce_shape.py \
    tests/python/test_subtensor.py tests/python/test_softmax_stability.py tests/python/test_fuzz_graphs.py \
    tests/python/test_gpuarray.py tests/python/test_cuda_transfers.py tests/python/test_theano_api.py \
    tests/python/test_pyop_device.py tests/python/test_linalg.py \
    > "$OUT/pytest_device_cuda.txt" 2>&1; tail -30 "$OUT/pytest_device_cuda.txt"
  HYPATIA_FLAGS=device=cuda timeout 120 python3 bench/cuda/python_gpu.py 2>&1 | tee "$OUT/python_gpu.txt"
  echo "python: $(( $(date +%s) - t0 )) s"
fi
# NVRTC's cold compile of 14 modules, one by one against the batch on this machine's cores.
[ -x /tmp/h/bin/bench_nvrtc ] && timeout 60 /tmp/h/bin/bench_nvrtc 3 2>&1 | tee "$OUT/nvrtc.txt"
timeout 240 /tmp/h/bin/bench_cuda 2>&1 | tee "$OUT/bench.txt"
echo "bench: $(( $(date +%s) - t0 )) s"
if [ "${ANCHORS:-1}" = 1 ]; then
  timeout 150 python3 bench/cuda/anchors.py torch 2>&1 | tee "$OUT/torch.txt" | tail -30
  timeout 150 python3 bench/cuda/anchors.py jax 2>&1 | grep -v "^WARNING\|^I0000\|^E0000" | tee "$OUT/jax.txt" | tail -30
fi
echo "total $(( $(date +%s) - t0 )) s"
