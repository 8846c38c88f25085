#!/usr/bin/env bash
# Run a fixed set of memplan commands with two binaries and diff everything
# they print and write: a refactoring must leave every plan, report and
# written file byte-identical.
#
#   scripts/compare-outputs.sh OLD_CLI NEW_CLI [WORK_DIR]
#
# Inputs: the example models fetched by scripts/fetch-models.sh (.cache/models,
# skipped when absent), the ExecuTorch programs of the test data and
# examples/, examples' graphs, the MiniMalloc CSVs and traces of the test
# data, and a sample of the ExecuTorch conformance cases. Lines that report
# wall-clock time are left out of the comparison. Exit 0 when all match.
#
# Set COMPARE_QUICK=1 to skip the larger inputs and the exact search.
set -uo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 OLD_CLI NEW_CLI [WORK_DIR]" >&2
  exit 2
fi
old_cli=$(realpath "$1")
new_cli=$(realpath "$2")
root=$(cd "$(dirname "$0")/.." && pwd)
work=${3:-$(mktemp -d)}
mkdir -p "$work"
cd "$root" || exit 2

# Time-dependent lines: "planned in 0.01 s", planning_seconds, progress.
timing_filter='s/[0-9.]+ ?(s|ms|µs)\b/<time>/g; /planning_seconds/d; /"seconds"/d'

cases=()   # "name|input|extra plan flags"
add() { cases+=("$1|$2|${3:-}"); }

quick=${COMPARE_QUICK:-0}
shopt -s nullglob
for m in .cache/models/*/*.tflite .cache/models/*/*.onnx; do
  size=$(stat -c %s "$m")
  if [[ $quick == 1 && $size -gt 1500000 ]]; then continue; fi
  add "model-$(basename "$m")" "$m"
  # ONNX models with symbolic or unknown sizes plan only at a bound.
  [[ $m == *.onnx ]] && add "model-$(basename "$m")-bound" "$m" "--unknown-size-bytes 4096"
done
for p in tests/data/executorch-programs/*.pte examples/executorch/*.pte; do
  add "pte-$(basename "$p")" "$p"
done
for g in examples/graphs/*.json examples/runtime/*.json; do
  add "graph-$(basename "$g")" "$g"
  add "graph-$(basename "$g")-exact" "$g" "--algorithm exact"
  add "graph-$(basename "$g")-best_fit" "$g" "--algorithm best_fit"
  add "graph-$(basename "$g")-reorder" "$g" "--reorder"
done
for c in tests/data/minimalloc-challenging/*.csv tests/data/traces/*.csv; do
  add "csv-$(basename "$c")" "$c"
  [[ $quick == 1 ]] && continue
  add "csv-$(basename "$c")-first_fit" "$c" "--algorithm first_fit"
done
if [[ $quick != 1 ]]; then
  for c in tests/data/minimalloc-challenging/example.12.csv tests/data/minimalloc-challenging/[A-C].1048576.csv; do
    add "csv-$(basename "$c")-exact" "$c" "--algorithm exact"
  done
fi
conformance=(tests/data/executorch-conformance/*.json)
for ((i = 0; i < ${#conformance[@]}; i += 25)); do
  c=${conformance[i]}
  add "conf-$(basename "$c")" "$c"
  add "conf-$(basename "$c")-et" "$c" "--algorithm $(sed -n 's/.*"algorithm": *"\([a-z_]*\)".*/\1/p' "$c" | head -1)"
done
for c in tests/data/executorch-conformance-devices/*.json; do
  add "confdev-$(basename "$c")" "$c"
done

# run_case BIN DIR NAME INPUT FLAGS: every command of one case, run inside
# DIR/NAME with relative output names so both sides print the same paths.
run_case() {
  local bin=$1 dir=$2 name=$3 input=$4 flags=$5
  local out="$dir/$name"
  mkdir -p "$out"
  local abs_input="$root/$input"
  local ext=json
  [[ $input == *.csv ]] && ext=csv
  local plan=(plan "$abs_input" $flags -o "plan.$ext" --html view.html --svg view.svg)
  # A reordered plan has no C header (the header carries no node order).
  [[ $flags != *--reorder* ]] && plan+=(--emit-c plan.h)
  case $input in
    *.tflite) plan+=(--write-tflite planned.tflite) ;;
    *.pte) plan+=(--write-pte planned.pte) ;;
  esac
  (
    cd "$out" || exit
    "$bin" "${plan[@]}" >plan.out 2>plan.err
    echo "exit $?" >>plan.err
    "$bin" plan "$abs_input" $flags --json --bytes >plan-json.out 2>plan-json.err
    echo "exit $?" >>plan-json.err
    if [[ -f plan.$ext ]]; then
      for cmd in verify replay; do
        "$bin" $cmd "$abs_input" "plan.$ext" >$cmd.out 2>$cmd.err
        echo "exit $?" >>$cmd.err
      done
      "$bin" report "$abs_input" "plan.$ext" --html report.html --svg report.svg >report.out 2>report.err
      echo "exit $?" >>report.err
      "$bin" report "$abs_input" "plan.$ext" --json --bytes >report-json.out 2>report-json.err
      echo "exit $?" >>report-json.err
    fi
    case $input in
      *.pte | *.tflite)
        for cmd in verify replay; do
          "$bin" $cmd "$abs_input" >$cmd-carried.out 2>$cmd-carried.err
          echo "exit $?" >>$cmd-carried.err
        done
        if [[ $input == *.pte ]]; then
          "$bin" report "$abs_input" >report-carried.out 2>report-carried.err
          echo "exit $?" >>report-carried.err
        fi
        ;;
    esac
    if [[ -f planned.pte ]]; then
      "$bin" verify planned.pte >verify-planned.out 2>verify-planned.err
      echo "exit $?" >>verify-planned.err
    fi
    if [[ -f planned.tflite ]]; then
      "$bin" verify planned.tflite >verify-planned.out 2>verify-planned.err
      echo "exit $?" >>verify-planned.err
    fi
  )
}

for side in old new; do
  bin=$old_cli
  [[ $side == new ]] && bin=$new_cli
  rm -rf "${work:?}/$side"
  mkdir -p "$work/$side"
  for c in "${cases[@]}"; do
    IFS='|' read -r name input flags <<<"$c"
    run_case "$bin" "$work/$side" "$name" "$input" "$flags"
  done
  # Time-dependent lines out of everything textual; binaries are compared as they are.
  find "$work/$side" -type f \( -name '*.out' -o -name '*.err' -o -name '*.html' -o -name '*.svg' \) \
    -exec sed -E -i "$timing_filter" {} +
done

if diff -r "$work/old" "$work/new" >"$work/diff.txt"; then
  files=$(find "$work/new" -type f | wc -l)
  echo "identical: ${#cases[@]} cases, $files files ($work)"
  exit 0
fi
echo "DIFFERENT: see $work/diff.txt" >&2
head -40 "$work/diff.txt" >&2
exit 1
