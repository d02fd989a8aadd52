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

# The check of the tree-sitter grammar (test/editors/tree-sitter.test) builds
# tree-sitter 0.13's parser generator and runtime from these npm packages
# (sources only: `npm pack` runs no install scripts); the current CLI's
# package downloads a binary from outside the npm registry. Without them the
# test is skipped, so failing to fetch or build them is not fatal.
tree_sitter_packages=(tree-sitter-cli@0.13.16 tree-sitter@0.13.23)
mkdir -p build/npm
if command -v npm >/dev/null && command -v node >/dev/null; then
  for pkg in "${tree_sitter_packages[@]}"; do
    [[ -f build/npm/${pkg/@/-}.tgz ]] ||
      (cd build/npm && npm pack --silent "$pkg" >/dev/null) ||
      echo "tkc: could not fetch $pkg from npm; the tree-sitter grammar's test will be skipped" >&2
  done
  python3 test/editors/Inputs/check-tree-sitter.py . --npm build/npm --build-only >/dev/null ||
    echo "tkc: could not build tree-sitter 0.13 from build/npm" >&2
else
  echo "tkc: npm or node not found; the tree-sitter grammar's test will be skipped" >&2
fi
