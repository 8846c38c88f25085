#!/usr/bin/env bash
# Copies the fetched example models (scripts/fetch-models.sh) into the seed
# corpora of the ONNX and TFLite fuzzers. Model files are never committed:
# run this before scripts/ci-fuzz.sh. Usage: scripts/fuzz-seeds.sh [OUT_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
models="${MEMPLAN_MODELS_DIR:-$root/.cache/models}"
out="${1:-$root/build-fuzz/seeds}"
mkdir -p "$out/onnx_fuzz" "$out/tflite_fuzz"
# Hand-made seeds first, then the models (the fuzzer trims large inputs to
# -max_len, so small models are the useful ones).
for t in onnx_fuzz tflite_fuzz; do
  if [ -d "$root/fuzz/corpus/$t" ]; then cp -f "$root/fuzz/corpus/$t"/* "$out/$t"/ 2>/dev/null || true; fi
done
n=0
if [ -d "$models" ]; then
  while IFS= read -r -d '' f; do cp -f "$f" "$out/onnx_fuzz/"; n=$((n + 1)); done \
    < <(find "$models" -name '*.onnx' -size -4M -print0)
  while IFS= read -r -d '' f; do cp -f "$f" "$out/tflite_fuzz/"; n=$((n + 1)); done \
    < <(find "$models" -name '*.tflite' -size -4M -print0)
fi
echo "fuzz-seeds: $n model files copied into $out"
