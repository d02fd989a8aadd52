#!/usr/bin/env bash
# Compiles schedule variants of the examples next to the generated kernels,
# so that one GPU run times them side by side (build/gpu/STEM@VARIANT.TARGET.cu).
# A variant is the example with some text replaced, e.g. another block size.
#   tools/gpu/variants.sh [--out DIR] [--target T] SPEC...
#   SPEC = VARIANT:EXAMPLE:SED_EXPRESSION      (EXAMPLE is examples/EXAMPLE.tk)
#        | VARIANT:EXAMPLE:@FILE.tk               (a whole other source with the same kernels)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/gpu target=sm_80
tkc=${TKC:-build/tools/tkc}
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --target) target=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for spec in "$@"; do
  IFS=: read -r variant example expr <<<"$spec"
  stem=$example
  [[ $example == attention_fwd ]] && stem=attention_fwd
  if [[ $expr == @* ]]; then
    cp "${expr#@}" "$tmp/$example.tk"
  else
    sed "$expr" "examples/$example.tk" >"$tmp/$example.tk"
  fi
  if cmp -s "$tmp/$example.tk" "examples/$example.tk"; then
    echo "variant $variant: the same source as examples/$example.tk" >&2
    exit 1
  fi
  "$tkc" "$tmp/$example.tk" --target="$target" -o "$out/$stem@$variant.$target.cu"
  echo "wrote $out/$stem@$variant.$target.cu"
done
