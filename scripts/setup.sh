#!/usr/bin/env bash
# Installs what is missing (Debian 12 packages), fetches the example models
# and builds memplan into build/. Safe to run again: it only does what is
# left to do. Needs root (or sudo) for apt-get when packages are missing.
#
#   MEMPLAN_SETUP=cli    only what the CLI needs: its packages, the demo's
#                        model, `ninja memplan` (scripts/demo.sh)
#   MEMPLAN_SETUP=full   (default) everything: the test environment .venv
#                        (python/requirements-test.txt: torch, executorch,
#                        tflite-micro, onnxruntime, ...; memplan itself by
#                        `pip install .`), every model, every target
#   MEMPLAN_SETUP_EXTRA=ci   also clang + libFuzzer and Chromium (tests, CI)
#   MEMPLAN_WERROR=ON        compiler warnings are errors (CI)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
mode="${MEMPLAN_SETUP:-full}"

# The library and the CLI.
packages=(
  cmake ninja-build g++ pkg-config
  nlohmann-json3-dev libcli11-dev libfmt-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libflatbuffers-dev flatbuffers-compiler
)
if [ "$mode" != cli ]; then
  # Tests, benchmarks, the Python module and its virtual environment.
  packages+=(libgtest-dev libgmock-dev libbenchmark-dev libonnx-testdata
             pybind11-dev python3-dev python3-venv python3-pytest)
fi
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

launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

if [ "$mode" = cli ]; then
  # The model downloads while the CLI compiles (MEMPLAN_UNITY: the quickest
  # build from scratch; a later full setup builds file by file again).
  ./scripts/fetch-models.sh selfie_segmentation &
  fetch=$!
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
    -DMEMPLAN_TESTS=OFF -DMEMPLAN_BENCH=OFF -DMEMPLAN_PYTHON=OFF -DMEMPLAN_UNITY=ON \
    ${MEMPLAN_WERROR:+-DMEMPLAN_WERROR=$MEMPLAN_WERROR} >/dev/null
  ninja -C build -j"$(nproc)" memplan
  wait "$fetch"
  exit 0
fi

./scripts/fetch-models.sh

# The test environment: a virtual environment in the checkout with the
# pinned runtimes. pip runs only when the requirements changed.
venv="$root/.venv"
if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating $venv" >&2
  python3 -m venv "$venv"
fi
stamp="$venv/.memplan-requirements"
want="$(cat python/requirements-test.txt python/constraints-test.txt | sha256sum)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setup: installing python/requirements-test.txt into .venv" >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check \
    -r python/requirements-test.txt -c python/constraints-test.txt
  echo "$want" >"$stamp"
fi

# memplan itself, by `pip install .` into the venv. It builds in build/ (the
# tree everything else builds in next), so the library is compiled once.
cmake_args=(-DMEMPLAN_TESTS=ON -DMEMPLAN_CLI=ON -DMEMPLAN_BENCH=ON -DMEMPLAN_UNITY=OFF "${launcher[@]}"
            ${MEMPLAN_WERROR:+-DMEMPLAN_WERROR=$MEMPLAN_WERROR})
echo "setup: pip install . (memplan's Python package, built in build/)" >&2
CMAKE_ARGS="${cmake_args[*]}" "$venv/bin/python" -m pip install -q --disable-pip-version-check \
  --no-build-isolation --no-deps --config-settings=build-dir=build .

# Everything else: the CLI, the tests, the benchmarks; the Python module in
# build/python for the venv's interpreter (the tests import it from there).
# (pip's build left its own settings in the cache: the wheel's install
# prefix and SKBUILD; a development build has neither.)
cmake -S . -B build -G Ninja -U 'SKBUILD*' -DCMAKE_INSTALL_PREFIX=/usr/local \
  -DCMAKE_BUILD_TYPE=Release "${cmake_args[@]}" -DMEMPLAN_PYTHON=ON \
  -DPython_EXECUTABLE="$venv/bin/python" \
  -Dpybind11_DIR="$("$venv/bin/python" -m pybind11 --cmakedir)" >/dev/null
ninja -C build -j"$(nproc)"
