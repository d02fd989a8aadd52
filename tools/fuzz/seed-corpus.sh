#!/usr/bin/env bash
# Seeds the fuzz corpora from the examples and the test inputs:
#   seed-corpus.sh DIR  ->  DIR/frontend, DIR/pipeline (.tk), DIR/ir (.tkir)
# .tkir tests hold several modules separated by `// -----` lines; each one
# becomes its own seed, since the IR parser reads one module at a time.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:?usage: seed-corpus.sh DIR}"
mkdir -p "$out/frontend" "$out/pipeline" "$out/ir"

while IFS= read -r -d '' file; do
  name=$(echo "${file#"$root"/}" | tr '/' '_')
  cp "$file" "$out/frontend/$name"
  cp "$file" "$out/pipeline/$name"
done < <(find "$root/examples" "$root/test" -name '*.tk' -print0)

while IFS= read -r -d '' file; do
  name=$(echo "${file#"$root"/}" | tr '/' '_')
  awk -v prefix="$out/ir/$name" '
    /^[ \t]*\/\/ -----/ { chunk++; next }
    { print > (prefix "." chunk+0) }' "$file"
done < <(find "$root/test" -name '*.tkir' -print0)

echo "seeds: $(ls "$out/frontend" | wc -l) .tk, $(ls "$out/ir" | wc -l) .tkir modules" >&2
