"""The package `pip install .` installed into the test environment (.venv,
scripts/setup.sh): it imports from the venv's site-packages, not from the
build tree, and plans as the module just built does."""

import json
import os
import pathlib
import subprocess
import sys

import memplan
from conftest import ROOT, missing_data, model


def venv_python() -> pathlib.Path:
    venv = pathlib.Path(os.environ.get("MEMPLAN_VENV", ROOT / ".venv"))
    python = venv / "bin" / "python"
    if not python.is_file():
        missing_data(f"the test environment {venv} (scripts/setup.sh makes it)")
    return python


def test_pip_installed_package_plans_like_the_build():
    path = model("selfie_segmentation/selfie_segmentation.tflite")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    code = ("import json, sys, memplan; "
            "p = memplan.plan(sys.argv[1]); "
            "print(json.dumps({'file': memplan.__file__, 'version': memplan.__version__, "
            "'plan': p.to_json()}))")
    r = subprocess.run([str(venv_python()), "-c", code, str(path)], capture_output=True, text=True,
                       env=env, cwd="/", check=True)
    installed = json.loads(r.stdout)
    site = pathlib.Path(installed["file"]).resolve()
    assert "site-packages" in site.parts, site
    assert pathlib.Path(memplan.__file__).resolve() != site
    assert installed["version"] == memplan.__version__
    assert installed["plan"] == memplan.plan(str(path)).to_json()


def test_the_interpreter_is_the_venvs():
    # ctest runs these tests with the venv's interpreter (CMake picks
    # .venv/bin/python when it exists), so the runtimes are importable.
    assert pathlib.Path(sys.prefix).resolve() == venv_python().parents[1].resolve()
