#!/usr/bin/env bash
# Building and testing Hypatia on a lent GPU machine (the device tool), which reaches no package
# registry: its Debian packages travel with the working tree, unpacked with `dpkg -x`.
#
#   here:  bash scripts/device_build.sh fetch     # downloads the .deb files into .devdeps/ (ignored)
#   there: bash scripts/device_build.sh build     # unpacks them under /tmp/devroot, configures and
#                                                 # builds build-device/ (Release, no Python, tests)
#          bash scripts/device_build.sh test      # runs ctest there (after build)
# The device call names `.devdeps` in carry. The packages are this build machine's (Debian 12);
# the GPU machine runs another distribution, so they are unpacked beside it, never over /.
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=(libopenblas-dev libopenblas0 libopenblas-pthread-dev libopenblas0-pthread libgfortran5 libquadmath0
      libdnnl-dev libdnnl2 ocl-icd-libopencl1 libhwy-dev libhwy1 libgtest-dev libgmock-dev)
root=/tmp/devroot
arch=x86_64-linux-gnu
case "${1:-}" in
  fetch)
    grep -qx '/.devdeps/' .git/info/exclude 2>/dev/null || echo '/.devdeps/' >> .git/info/exclude
    mkdir -p .devdeps
    (cd .devdeps && apt-get download "${pkgs[@]}")
    du -sh .devdeps
    ;;
  build)
    mkdir -p $root
    for f in .devdeps/*.deb; do dpkg -x "$f" $root; done
    lib=$root/usr/lib/$arch
    cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DHYPATIA_PYTHON=OFF -DHYPATIA_EXAMPLES=OFF \
      -DCMAKE_PREFIX_PATH=$root/usr -DCMAKE_LIBRARY_PATH=$lib \
      -DOPENBLAS_PTHREAD_INCLUDE_DIR=$root/usr/include/$arch/openblas-pthread \
      -DOPENBLAS_PTHREAD_LIBRARY=$lib/openblas-pthread/libopenblas.so \
      -DHWY_INCLUDE_DIR=$root/usr/include -DDNNL_INCLUDE_DIR=$root/usr/include \
      -DCMAKE_BUILD_RPATH="$lib/openblas-pthread;$lib"
    cmake --build build-device -j "$(nproc)" --target hypatia_tests
    ;;
  test)
    export LD_LIBRARY_PATH=$root/usr/lib/$arch/openblas-pthread:$root/usr/lib/$arch${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    cd build-device && HYPATIA_FLAGS=debug_checks=True ctest --output-on-failure -j "$(nproc)" "${@:2}"
    ;;
  *)
    echo "usage: $0 fetch|build|test [ctest args]" >&2
    exit 2
    ;;
esac
