# Hypatia: `make demo` and `make test` install what is missing, build, and run.
SHELL := /bin/bash
JOBS ?= $(shell nproc)
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
CMAKE_FLAGS ?=
ifeq ($(CI),true)
  CMAKE_FLAGS += -DHYPATIA_WERROR=ON
endif
export CCACHE_DIR ?= $(HOME)/.cache/ccache
# Builds in other folders (CI clones) hit the same cache entries.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := true

.PHONY: deps venv build build-asan build-tsan test test-cpp test-asan test-tsan test-python demo bench bench-compare fuzz format clean

deps:
	@bash scripts/install_deps.sh

# .venv with numpy, pytest, hypothesis, nanobind, scikit-build-core, and the hypatia package built
# from this tree (build dir build-python/, kept between runs).
venv: deps
	@HYPATIA_WERROR=$(if $(filter true,$(CI)),ON,OFF) JOBS=$(JOBS) bash scripts/setup_venv.sh

build: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

build-asan: deps
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DHYPATIA_SANITIZE=ON -DHYPATIA_EXAMPLES=OFF $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS) --target hypatia_tests

# ThreadSanitizer: the tests of concurrent calls (jacobian's sub-program from four threads too), cancellation, lazy steps and the thread pool, and the kernel
# suites that run on the pool (with its size threshold lowered so that they do).
TSAN_TESTS ?= RuntimeCalls.*:Cancel.*:ThreadPool.*:Reduce.*:Nnet.*:BlasMatmul.*:TileProgram.*:FusionReduce.*:Subtensor.*:Grad.Jacobian*:*Lazy*:MRG.*:Scan.*:CudaModules.*
build-tsan: deps
	cmake -S . -B $(TSAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHYPATIA_TSAN=ON -DHYPATIA_EXAMPLES=OFF $(CMAKE_FLAGS)
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target hypatia_tests

test-tsan: build-tsan
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" HYPATIA_FLAGS=debug_checks=True,openmp_elemwise_minsize=4096 \
	  $(TSAN_BUILD)/tests/cpp/hypatia_tests --gtest_filter='$(TSAN_TESTS)'

test-cpp: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: build-asan
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

test-python: venv
	.venv/bin/python -m pytest -q tests/python

# Every C++ test, the same tests under AddressSanitizer + UndefinedBehaviorSanitizer, the
# concurrency tests under ThreadSanitizer, then the Python tests against the installed package.
test: test-cpp test-asan test-tsan test-python

demo: build venv
	@bash scripts/demo.sh $(BUILD)

bench: deps venv
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DHYPATIA_BENCH=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)
	@bash scripts/bench.sh $(BUILD)

# Hypatia beside numpy, PyTensor and JAX from Python, in .venv-bench (pinned versions from PyPI and
# this tree's package; .venv is not touched). Not part of test or demo.
bench-compare: deps
	@JOBS=$(JOBS) bash scripts/setup_bench_env.sh
	.venv-bench/bin/python bench/python/compare_frameworks.py

# libFuzzer on the graph fuzzer (tests/fuzz/fuzz_graph.cpp): a clang build with everything
# instrumented (build-fuzz/), run for FUZZ_SECONDS; findings land in build-fuzz/findings/.
# Not part of test or demo.
FUZZ_SECONDS ?= 600
# FUZZ_ARGS: more libFuzzer flags (e.g. -jobs=2 -workers=2: two processes, logs in build-fuzz/fuzz-N.log).
FUZZ_ARGS ?=
fuzz:
	@bash scripts/install_deps.sh clang libclang-rt-14-dev libomp-dev
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHYPATIA_FUZZ=ON \
	  -DHYPATIA_EXAMPLES=OFF -DHYPATIA_PYTHON=OFF
	cmake --build build-fuzz -j $(JOBS) --target fuzz_graph
	mkdir -p build-fuzz/corpus build-fuzz/findings
	@# A fresh corpus starts from 64 random inputs (each byte quadruple is one decision of the builder).
	@[ -n "$$(ls -A build-fuzz/corpus)" ] || for i in $$(seq 64); do head -c 256 /dev/urandom > build-fuzz/corpus/seed$$i; done
	@# Leak checks off in both: with them on, libFuzzer runs every input that leaves a cache entry
	@# behind a second time (half the throughput); CI's ASan job runs LeakSanitizer.
	cd build-fuzz && ASAN_OPTIONS=detect_leaks=0 tests/fuzz/fuzz_graph -max_total_time=$(FUZZ_SECONDS) -max_len=512 \
	  -detect_leaks=0 -timeout=120 -rss_limit_mb=4096 -print_final_stats=1 \
	  -artifact_prefix=findings/ $(FUZZ_ARGS) corpus

format:
	clang-format -i $$(git ls-files '*.cpp' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
