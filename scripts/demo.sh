#!/usr/bin/env bash
# The main job: set up what the CLI needs (its Debian packages, the model, the
# CLI alone -- not the tests, the benchmarks or the Python environment), then
# plan a real model end to end and print the report.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
MEMPLAN_SETUP=cli ./scripts/setup.sh >&2
./build/memplan plan .cache/models/selfie_segmentation/selfie_segmentation.tflite \
  -o build/selfie_segmentation.plan.json --html build/selfie_segmentation.html
./build/memplan verify .cache/models/selfie_segmentation/selfie_segmentation.tflite \
  build/selfie_segmentation.plan.json
