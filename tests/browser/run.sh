#!/usr/bin/env bash
# Browser test of the HTML viewer.
#
#   tests/browser/run.sh MEMPLAN_BINARY [MODEL [--flag=value ...]]...
#
# Lints the viewer's script (lint.sh), then writes a viewer page (plan by
# `auto`, compared with `greedy`) and the JSON report of the same plan for
# each MODEL (arguments starting with '-' after a model are `memplan plan`
# flags for it, e.g. --input-shape=x=1x3x640x640) and for two_pools.json
# beside this script (two pools, a cond node with two bodies and two steps
# that only produce constants: exercises pool tabs, control-flow markers and
# folding) and for far_steps.csv (lifetimes up to 10^12 steps), then opens
# them in the system Chromium via playwright-core (ESLint and
# playwright-core are installed here by `npm ci` when missing). Pages,
# reports and screenshots go to $MEMPLAN_VIEWER_OUT (default: a temporary
# directory, removed afterwards).
# Exit: 0 pass, 1 fail, 2 usage, 77 skipped (no node or no Chromium; with
# MEMPLAN_REQUIRE_TEST_DATA set to anything but 0, as scripts/test.sh sets
# it, missing pieces fail).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
if [ $# -lt 1 ]; then
  echo "usage: $0 MEMPLAN_BINARY [MODEL...]" >&2
  exit 2
fi
bin=$1
shift
if [ ! -x "$bin" ]; then
  echo "run.sh: $bin is not an executable" >&2
  exit 2
fi
chromium=${MEMPLAN_CHROMIUM:-/usr/bin/chromium}
skip_code=77
# Any value but "" or "0" requires the test to run, as in the C++ and Python tests.
case "${MEMPLAN_REQUIRE_TEST_DATA:-0}" in 0) ;; *) skip_code=1 ;; esac
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "run.sh: node/npm not installed" >&2
  exit $skip_code
fi
if [ ! -d "$here/node_modules/playwright-core" ] || [ ! -x "$here/node_modules/.bin/eslint" ]; then
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi
# The viewer's script is a source file like any other: lint it first.
"$here/lint.sh"
if [ ! -x "$chromium" ]; then
  echo "run.sh: no Chromium at $chromium (set MEMPLAN_CHROMIUM)" >&2
  exit $skip_code
fi

if [ -n "${MEMPLAN_VIEWER_OUT:-}" ]; then
  out=$MEMPLAN_VIEWER_OUT
  mkdir -p "$out"
else
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi

# Each page: MODEL.html, and MODEL.report.json (the report the viewer's
# peak must agree with).
page() {
  local model=$1
  shift
  if [ ! -f "$model" ]; then
    # Example models are fetched separately; without them the bundled
    # graph still runs.
    echo "run.sh: $model not found (scripts/fetch-models.sh fetches it); not tested" >&2
    [ "$skip_code" = 1 ] && exit 1
    return 0
  fi
  local name
  name=$(basename "$model")
  "$bin" plan "$model" "$@" --compare greedy --html "$out/${name%.*}.html" --json \
    > "$out/${name%.*}.report.json"
}
# far_steps.csv: a buffer list whose lifetimes reach 10^12 steps (the axis
# must not be a per-step table).
page "$here/far_steps.csv"
args=("$here/two_pools.json")
for arg in "$@"; do
  if [ "${arg#-}" != "$arg" ]; then
    args+=("$arg")
    continue
  fi
  page "${args[@]}"
  args=("$arg")
done
page "${args[@]}"

cd "$here"
MEMPLAN_VIEWER_DIR=$out MEMPLAN_CHROMIUM=$chromium node --test viewer.test.mjs
