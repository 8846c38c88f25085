"""A user's install: `pip install .` of the source tree into a fresh virtual
environment, with build isolation (pip fetches the pinned build
requirements of pyproject.toml), then memplan imported from that
environment plans as the module just built does.

The build compiles the library again, in a new directory beside the build
tree (removed afterwards). When the build tree compiled with ccache
(scripts/setup.sh does where ccache is installed, as in CI), this build
uses it with the same warning flags, and the library's compile commands
are the build tree's (the same paths relative to the build directory, for
a ccache base_dir), so its objects come from the cache and the test costs
about the module's compile and the links."""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

import memplan
from conftest import ROOT

TINY = ROOT / "examples" / "graphs" / "tiny.json"

# What the wheel's extension links besides the C and C++ runtimes: the
# Debian 12 libraries README.md names (libonnx1, libprotobuf32, libfmt9).
RUNTIME_DEPS = {"libonnx.so.1", "libonnx_proto.so.1", "libprotobuf.so.32", "libfmt.so.9"}
SYSTEM = {"libstdc++.so.6", "libm.so.6", "libgcc_s.so.1", "libc.so.6", "ld-linux-x86-64.so.2"}


def build_tree():
    return pathlib.Path(os.environ.get("MEMPLAN_BUILD_DIR", ROOT / "build"))


def build_tree_cache_args():
    """The build tree's compiler launcher and warning switch, so that the
    library's compile commands, and with ccache their results, are the same."""
    cache = build_tree() / "CMakeCache.txt"
    if not cache.is_file():
        return ""
    wanted = ("CMAKE_CXX_COMPILER_LAUNCHER", "MEMPLAN_WERROR")
    args = []
    for line in cache.read_text().splitlines():
        name, _, value = line.partition("=")
        if name.split(":")[0] in wanted and value:
            args.append(f"-D{name.split(':')[0]}={value}")
    return " ".join(args)


def clean_env():
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "CMAKE_ARGS")}
    env["CMAKE_ARGS"] = build_tree_cache_args()
    return env


@pytest.fixture(scope="module")
def user_venv(tmp_path_factory):
    venv = tmp_path_factory.mktemp("user") / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True, env=clean_env())
    python = venv / "bin" / "python"
    build = build_tree().parent / (build_tree().name + "-pip-test")
    shutil.rmtree(build, ignore_errors=True)
    try:
        done = subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check",
                               f"--config-settings=build-dir={build}", str(ROOT)],
                              capture_output=True, text=True, env=clean_env(), cwd=venv.parent)
    finally:
        shutil.rmtree(build, ignore_errors=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return venv


def test_pip_install_into_a_fresh_venv_plans_like_the_build(user_venv):
    code = ("import json, sys, memplan; p = memplan.plan(sys.argv[1]); "
            "print(json.dumps({'file': memplan._memplan.__file__, 'version': memplan.__version__, "
            "'plan': p.to_json()}))")
    r = subprocess.run([str(user_venv / "bin" / "python"), "-c", code, str(TINY)],
                       capture_output=True, text=True, env=clean_env(), cwd="/", check=True)
    installed = json.loads(r.stdout)
    module = pathlib.Path(installed["file"]).resolve()
    assert module.is_relative_to(user_venv.resolve()), module
    assert installed["version"] == memplan.__version__
    assert installed["plan"] == memplan.plan(str(TINY)).to_json()


def test_the_wheel_links_what_the_readme_names(user_venv):
    module, = user_venv.glob("lib/python*/site-packages/memplan/_memplan*.so")
    dynamic = subprocess.run(["readelf", "-d", str(module)], capture_output=True, text=True,
                             check=True).stdout
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic))
    assert needed - SYSTEM == RUNTIME_DEPS
    # The package holds the module and the Python files only (no CLI).
    files = {p.name for p in module.parent.iterdir() if p.name != "__pycache__"}
    assert files == {module.name, *(p.name for p in (ROOT / "python" / "memplan").iterdir()
                                    if p.name != "__pycache__")}


def test_the_interpreter_is_the_venvs():
    # ctest runs the Python tests with the test environment's interpreter
    # (CMake picks .venv/bin/python when it exists), so the runtimes are
    # importable.
    venv = pathlib.Path(os.environ.get("MEMPLAN_VENV", ROOT / ".venv"))
    assert pathlib.Path(sys.prefix).resolve() == venv.resolve()
