#!/usr/bin/env bash
# Builds tkc if needed, compiles one example kernel and prints the CUDA.
#   tools/run-example.sh [examples/NAME.tk] [tkc options...]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh >&2
input=${1:-examples/gemm.tk}
shift || true
build/tools/tkc "$input" --emit=cuda -o - "$@"
