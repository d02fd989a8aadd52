#!/usr/bin/env bash
# Installs what building tkc needs (Debian 12 packages) and builds it into
# build/. Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
for pkg in llvm-19-dev llvm-19-tools libfmt-dev libzstd-dev cmake ninja-build g++ python3 libgtest-dev \
  python3-pip python3-setuptools; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if ((${#need[@]})); then
  echo "tkc: installing ${need[*]}" >&2
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

# The fuzzers need clang with its sanitizer runtimes. tools/check.sh skips
# fuzzing without them, so failing to install them is not fatal.
fuzz_need=()
for pkg in clang-19 libclang-rt-19-dev; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || fuzz_need+=("$pkg")
done
if ((${#fuzz_need[@]})); then
  echo "tkc: installing ${fuzz_need[*]} (for the fuzzers)" >&2
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${fuzz_need[@]}" >/dev/null; } ||
    echo "tkc: could not install ${fuzz_need[*]}; fuzzing will be skipped" >&2
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build
