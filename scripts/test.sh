#!/usr/bin/env bash
# The whole test suite: set up, build, run every ctest test (conformance,
# planner, importers on the example models, property tests, the browser test).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
./scripts/setup.sh >&2
ctest --test-dir build --output-on-failure -j2 --timeout 900
