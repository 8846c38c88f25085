#!/usr/bin/env bash
# Installs what is missing (Debian 12 packages), fetches the example models
# and builds memplan into build/. Safe to run again: it only does what is
# left to do. Needs root (or sudo) for apt-get when packages are missing.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

packages=(
  cmake ninja-build g++ pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libflatbuffers-dev flatbuffers-compiler
  libonnx-testdata
  pybind11-dev python3-dev python3-pytest
)
if [ "${MEMPLAN_SETUP_EXTRA:-}" = "ci" ]; then
  # Fuzzing (clang + libFuzzer runtime) and the browser test (Chromium).
  packages+=(clang libclang-rt-14-dev chromium)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ! command -v npm >/dev/null 2>&1; then missing+=(npm); fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

./scripts/fetch-models.sh

# MEMPLAN_WERROR=ON (CI) makes compiler warnings errors.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
  ${MEMPLAN_WERROR:+-DMEMPLAN_WERROR=$MEMPLAN_WERROR} >/dev/null
ninja -C build -j"$(nproc)"
