#!/usr/bin/env bash
# Plans the repository's inputs with two memplan CLIs and compares the plan
# files byte for byte: a refactoring that must not change any plan runs this
# with the CLI built before it and the one built after. The summary each
# prints is compared too, its planning time left out.
#
#   scripts/compare-plans.sh OLD_MEMPLAN NEW_MEMPLAN [SETTINGS...]
#
# SETTINGS are quoted flag sets, each run on every input (default: the
# default algorithm, -a local_search, -a exact, --effort 0.25, --effort 3).
# Inputs: the example graphs and programs, the fetched models
# (.cache/models, when present), the buffer lists and traces of
# tests/data, and the ExecuTorch conformance cases. Set MAX_BYTES to skip
# larger inputs (exact search on the largest traces takes minutes).
# Prints one line per difference and a summary; exits 1 on any difference.
set -u
old=$1
new=$2
shift 2
if [ $# -gt 0 ]; then settings=("$@"); else
  settings=("" "-a local_search" "-a exact" "--effort 0.25" "--effort 3")
fi
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

inputs=()
while IFS= read -r f; do inputs+=("$f"); done < <(
  cd "$root" && {
    find examples/graphs examples/runtime -name '*.json'
    find examples/executorch tests/data/executorch-programs -name '*.pte'
    [ -d .cache/models ] && find .cache/models -name '*.onnx' -o -name '*.tflite'
    find tests/data/traces tests/data/minimalloc-challenging -name '*.csv'
    find tests/data/executorch-conformance tests/data/executorch-conformance-devices \
      -name '*.json'
  } | sort)

same=0 differ=0 failed=0
for f in "${inputs[@]}"; do
  path="$root/$f"
  if [ -n "${MAX_BYTES:-}" ] && [ "$(stat -c %s "$path")" -gt "$MAX_BYTES" ]; then continue; fi
  for s in "${settings[@]}"; do
    # shellcheck disable=SC2086
    "$old" plan "$path" $s -o "$tmp/old.json" >"$tmp/old.out" 2>&1
    a=$?
    # shellcheck disable=SC2086
    "$new" plan "$path" $s -o "$tmp/new.json" >"$tmp/new.out" 2>&1
    b=$?
    if [ $a -ne $b ]; then
      echo "exit $a -> $b: $f $s"
      failed=$((failed + 1))
    elif [ $a -ne 0 ]; then
      # Both refused: the messages must match.
      if cmp -s "$tmp/old.out" "$tmp/new.out"; then same=$((same + 1)); else
        echo "message differs: $f $s"
        differ=$((differ + 1))
      fi
    elif ! cmp -s "$tmp/old.json" "$tmp/new.json"; then
      echo "plan differs: $f $s"
      differ=$((differ + 1))
    elif ! cmp -s <(sed 's/planned in [0-9.]* s//' "$tmp/old.out") \
                  <(sed 's/planned in [0-9.]* s//' "$tmp/new.out"); then
      # The summary (stages reached included), its time left out.
      echo "summary differs: $f $s"
      differ=$((differ + 1))
    else
      same=$((same + 1))
    fi
    rm -f "$tmp/old.json" "$tmp/new.json"
  done
done
echo "$same identical, $differ different, $failed exit codes differ"
[ $differ -eq 0 ] && [ $failed -eq 0 ]
