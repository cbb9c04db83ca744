#!/usr/bin/env bash
# Installs what Hypatia needs to build and test, only what is missing.
# Debian packages via apt-get; nothing else is assumed to be on the machine.
set -euo pipefail
pkgs=(cmake g++ make ninja-build ccache libopenblas-dev libopenblas-pthread-dev libdnnl-dev libhwy-dev libgtest-dev libgmock-dev
      libbenchmark-dev graphviz chromium pkg-config clang-format python3-dev python3-venv)
pkgs+=("$@")  # extra packages a target needs (make fuzz: clang and libFuzzer's runtime)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install_deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
