#!/usr/bin/env bash
# The whole test suite: set up, build, run every ctest test (conformance,
# planner, importers on the example models, property tests, the browser test).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
# Tests also want clang (fuzz targets), Chromium (the viewer's browser test).
export MEMPLAN_SETUP_EXTRA="${MEMPLAN_SETUP_EXTRA:-ci}"
# Setup fetched every model and tool: a test that finds its data missing fails.
export MEMPLAN_REQUIRE_TEST_DATA=1
./scripts/setup.sh >&2
ctest --test-dir build --output-on-failure -j2 --timeout 900
