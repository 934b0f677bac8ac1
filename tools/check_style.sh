#!/usr/bin/env bash
# The format half of the habits check (issue 17 item 7): every line changed
# since the base commit (.ci/format-base) is formatted as .clang-format says.
# Only changed lines are checked: the tree as it stood is not reformatted.
#   tools/check_style.sh         fails (and prints the diff) on a format diff
#   tools/check_style.sh --fix   formats those lines in the working tree
set -euo pipefail
cd "$(dirname "$0")/.."
base=$(cat .ci/format-base)
git cat-file -e "$base^{commit}" 2>/dev/null ||
  { echo "$(basename "$0"): base $base (.ci/format-base) is not in this clone's history"; exit 1; }
paths=(src include tests bench examples)
if [ "${1:-}" = "--fix" ]; then
  git clang-format-14 -f "$base" -- "${paths[@]}"
  exit 0
fi
out=$(git clang-format-14 --diff "$base" -- "${paths[@]}" 2>&1) || true
case "$out" in
  "" | "no modified files to format" | "clang-format did not modify any files") exit 0 ;;
esac
echo "$out"
echo "check_style: the lines above, changed since $base, are not clang-formatted;"
echo "  run tools/check_style.sh --fix (git clang-format-14 $base)"
exit 1
