#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, -DMEMPLAN_FUZZ=ON) and runs each one
# for a bounded time on its seed corpus. Prints executions per target.
#
#   MEMPLAN_FUZZ_SECONDS  seconds per target (default 60)
#   MEMPLAN_FUZZ_TARGETS  targets to run (default: all *_fuzz)
#   MEMPLAN_FUZZ_JOBS     ninja -j (default 2)
#   MEMPLAN_WERROR        ON: compiler warnings are errors (.ci/run sets it)
#
# A crash leaves crash-* files in build-fuzz/artifacts/<target>/: copy the
# input to tests/regressions/<target>/ so tests/regressions_test.cpp replays
# it in every test run. Exit status: 0 no crash, 1 a target crashed.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${MEMPLAN_FUZZ_BUILD:-$root/build-fuzz}"
seconds="${MEMPLAN_FUZZ_SECONDS:-60}"
jobs="${MEMPLAN_FUZZ_JOBS:-2}"
targets="${MEMPLAN_FUZZ_TARGETS:-graph_json_fuzz spec_list_fuzz csv_fuzz onnx_fuzz tflite_fuzz pte_fuzz}"

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMEMPLAN_FUZZ=ON -DMEMPLAN_TESTS=OFF -DMEMPLAN_BENCH=OFF \
  -DMEMPLAN_WERROR="${MEMPLAN_WERROR:-OFF}" >/dev/null || exit 2
# shellcheck disable=SC2086
ninja -C "$build" -j"$jobs" $targets || exit 2
"$root/scripts/fuzz-seeds.sh" "$build/seeds" || true

status=0
summary=""
for t in $targets; do
  corpus="$build/corpus/$t"     # grows between runs; seeds stay read-only
  artifacts="$build/artifacts/$t"
  mkdir -p "$corpus" "$artifacts"
  seeds=("$root/fuzz/corpus/$t")
  [ -d "$build/seeds/$t" ] && seeds+=("$build/seeds/$t")
  [ -d "$root/tests/regressions/$t" ] && seeds+=("$root/tests/regressions/$t")
  log="$build/$t.log"
  # Model files are big: keep whole example models as inputs.
  case "$t" in onnx_fuzz | tflite_fuzz) max_len=4194304 ;; *) max_len=65536 ;; esac
  # A fixed seed makes a CI run reproducible; vary MEMPLAN_FUZZ_SEED for longer hunts.
  "$build/fuzz/$t" "$corpus" "${seeds[@]}" -seed="${MEMPLAN_FUZZ_SEED:-1}" \
    -max_total_time="$seconds" -rss_limit_mb=2048 \
    -max_len="$max_len" -timeout=10 -print_final_stats=1 -artifact_prefix="$artifacts/" >"$log" 2>&1
  rc=$?
  execs=$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}')
  line="$t: ${execs:-?} executions in ${seconds}s, exit $rc"
  if [ $rc -ne 0 ]; then
    status=1
    line="$line (CRASH: see $log and $artifacts)"
  fi
  echo "$line"
  summary+="$line"$'\n'
done
echo "---"
printf '%s' "$summary"
exit $status
