#!/usr/bin/env bash
# The main job: set up, then plan a real model end to end and print the report.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
./scripts/setup.sh >&2
./build/memplan plan .cache/models/selfie_segmentation/selfie_segmentation.tflite \
  -o build/selfie_segmentation.plan.json --html build/selfie_segmentation.html
./build/memplan verify .cache/models/selfie_segmentation/selfie_segmentation.tflite \
  build/selfie_segmentation.plan.json
