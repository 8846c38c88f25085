#!/usr/bin/env bash
# Builds the whole test suite with AddressSanitizer + UBSan
# (-DMEMPLAN_SANITIZE=ON) in build-asan and runs ctest there.
# The browser viewer test drives chromium, which does not run under ASan's
# interposed allocator in a reasonable time: it is excluded.
#   MEMPLAN_SANITIZE_JOBS  ninja/ctest parallelism (default 2)
#   MEMPLAN_WERROR         ON: compiler warnings are errors (.ci/run sets it)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${MEMPLAN_ASAN_BUILD:-$root/build-asan}"
jobs="${MEMPLAN_SANITIZE_JOBS:-2}"
# MEMPLAN_UNITY as the demo builds: this build also keeps the library's
# files compiling together (no clashing names between files).
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMPLAN_SANITIZE=ON \
  -DMEMPLAN_UNITY=ON -DMEMPLAN_BENCH=OFF -DMEMPLAN_WERROR="${MEMPLAN_WERROR:-OFF}" >/dev/null
ninja -C "$build" -j"$jobs"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# Property tests run fewer graphs under the sanitizers (slower by ~10x).
export MEMPLAN_PROPERTY_GRAPHS="${MEMPLAN_PROPERTY_GRAPHS:-400}"
cd "$build"
ctest -j"$jobs" --output-on-failure -E '[Bb]rowser|[Vv]iewer[Bb]rowser'
