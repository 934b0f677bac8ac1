#!/usr/bin/env bash
# The clang-tidy half of the habits check (issue 17 item 7): no file under
# src/ that changed since the base commit (.ci/format-base) has more findings
# of a check than .ci/clang-tidy-baseline.txt records (".clang-tidy" says
# which checks). Reads BUILD/compile_commands.json (the main build).
#   tools/check_tidy.sh BUILD              check the changed files
#   tools/check_tidy.sh BUILD --baseline   rewrite the baseline (every file)
# A finding is counted once per place (file, line, column, check), however
# many translation units include its header; the baseline keeps counts per
# file:check, without line numbers, so that moving code does not matter.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: tools/check_tidy.sh BUILD [--baseline]}
mode=${2:-check}
baseline=.ci/clang-tidy-baseline.txt
command -v clang-tidy-14 >/dev/null || { echo "check_tidy: clang-tidy-14 is not installed"; exit 1; }
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The translation units under src/ (the CUDA kernels excepted: nvcc flags).
python3 - "$build/compile_commands.json" "$root" >"$work/units" <<'PY'
import json, sys
root = sys.argv[2] + "/"
seen = set()
for e in json.load(open(sys.argv[1])):
    f = e["file"]
    if f.startswith(root + "src/") and not f.endswith(".cu") and f not in seen:
        seen.add(f)
        print(f[len(root):])
PY

if [ "$mode" = "--baseline" ]; then
  cp "$work/units" "$work/run"
  : >"$work/checked"  # every file
else
  base=$(cat .ci/format-base)
  git cat-file -e "$base^{commit}" 2>/dev/null ||
    { echo "$(basename "$0"): base $base (.ci/format-base) is not in this clone's history"; exit 1; }
  git diff --name-only "$base" -- src | grep -E '\.(cpp|hpp|h)$' >"$work/checked" || true
  [ -s "$work/checked" ] || { echo "check_tidy: no source under src/ changed since $base"; exit 0; }
  # A changed unit runs itself; a changed header, the unit of its name or the
  # first unit that includes it.
  while read -r f; do
    [ -f "$f" ] || continue  # deleted
    if grep -qxF "$f" "$work/units"; then echo "$f"; continue; fi
    stem=${f%.*}
    unit=$(grep -m1 -E "^${stem}\.cpp$" "$work/units" || true)
    [ -n "$unit" ] || unit=$(python3 - "$f" "$work/units" <<'PY'
# The first unit that includes the header, directly or through other headers.
import glob, sys
header, units = sys.argv[1], open(sys.argv[2]).read().split()
sources = {f: open(f, errors="replace").read() for f in units + glob.glob("src/**/*.hpp", recursive=True)}
wanted, seen = {header}, set()
while wanted:
    seen |= wanted
    including = {f for f, text in sources.items() if f not in seen and
                 any('#include "%s"' % w[len("src/"):] in text for w in wanted)}
    hit = sorted(f for f in including if f in units)
    if hit:
        print(hit[0])
        break
    wanted = including
PY
)
    [ -n "$unit" ] && echo "$unit"
  done <"$work/checked" | sort -u >"$work/run"
fi
echo "check_tidy: clang-tidy on $(wc -l <"$work/run") translation units"
# (The raw output stays in BUILD/clang-tidy.out.)
xargs -a "$work/run" -P 2 -I{} sh -c 'clang-tidy-14 -p "$1" --quiet "$2" 2>/dev/null || true' _ "$build" {} \
  >"$build/clang-tidy.out"
cp "$build/clang-tidy.out" "$work/out"

# file:line:col:check, once each, for files under src/; then counts per file:check.
sed -nE "s#^${root}/(src/[^:]+):([0-9]+):([0-9]+): (warning|error): .*\\[([^]]+)\\]\$#\\1:\\2:\\3 \\5#p" \
  "$work/out" | sort -u >"$work/places"
awk '{ split($1, p, ":"); print p[1] ":" $2 }' "$work/places" | sort | uniq -c |
  awk '{ print $2, $1 }' >"$work/counts"

if [ "$mode" = "--baseline" ]; then
  { echo "# file:check count (tools/check_tidy.sh BUILD --baseline; base $(git rev-parse --short HEAD))"
    cat "$work/counts"; } >"$baseline"
  echo "check_tidy: wrote $baseline ($(wc -l <"$work/counts") file:check pairs)"
  exit 0
fi
fail=0
while read -r key count; do
  file=${key%%:*}
  grep -qxF "$file" "$work/checked" || continue  # a header seen through a changed unit
  was=$(awk -v k="$key" '$1 == k { print $2 }' "$baseline")
  if [ "$count" -gt "${was:-0}" ]; then
    echo "check_tidy: $key: $count findings, the baseline has ${was:-0}:"
    check=${key#*:}
    grep -F "$file:" "$work/out" | grep -F "[$check]" | sort -u | sed "s|^$root/||"
    fail=1
  fi
done <"$work/counts"
[ "$fail" = 0 ] && echo "check_tidy: no new findings"
exit "$fail"
