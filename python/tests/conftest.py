"""Shared fixtures of memplan's Python tests.

Paths come from the environment ctest sets (MEMPLAN_MODELS_DIR, MEMPLAN_CLI)
or default to the checkout's. Data a test needs and cannot find makes it
skip, unless MEMPLAN_REQUIRE_TEST_DATA is set to anything but "" or "0"
(scripts/test.sh and CI set it to 1; the C++ tests read it the same way):
then it fails.
"""

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
CONFORMANCE = DATA / "executorch-conformance"
BAD_INPUTS = ROOT / "tests" / "bad_inputs"
MODELS = pathlib.Path(os.environ.get("MEMPLAN_MODELS_DIR", ROOT / ".cache" / "models"))
CLI = pathlib.Path(os.environ.get("MEMPLAN_CLI", ROOT / "build" / "memplan"))


def missing_data(what: str) -> None:
    """Fails (MEMPLAN_REQUIRE_TEST_DATA set, not 0) or skips: `what` is not there."""
    message = f"missing test data: {what} (run scripts/fetch-models.sh)"
    if os.environ.get("MEMPLAN_REQUIRE_TEST_DATA", "") not in ("", "0"):
        pytest.fail(message)
    pytest.skip(message)


def model(relative: str) -> pathlib.Path:
    path = MODELS / relative
    if not path.is_file():
        missing_data(str(path))
    return path


def cli() -> pathlib.Path:
    if not CLI.is_file():
        missing_data(f"the memplan CLI at {CLI}")
    return CLI


def runtime_package(name: str):
    """Imports a runtime the tests run plans in (torch, executorch,
    tflite_micro, onnxruntime, onnx): scripts/setup.sh installs them, pinned,
    into the checkout's .venv. Missing: fails under MEMPLAN_REQUIRE_TEST_DATA=1,
    else skips."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as e:
        missing_data(f"python package {name} ({e}; scripts/setup.sh installs it into .venv)")


def run_cli(*args, check=True, **kwargs):
    """Runs the memplan CLI; returns the CompletedProcess (text)."""
    import subprocess

    p = subprocess.run([str(cli()), *map(str, args)], capture_output=True, text=True, **kwargs)
    if check and p.returncode != 0:
        raise AssertionError(f"memplan {' '.join(map(str, args))}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def doc_table(doc: pathlib.Path, name: str, table: str) -> None:
    """Checks that `doc` holds `table` between the markers
    <!-- table:NAME --> and <!-- /table:NAME --> (the numbers the docs show
    are the numbers the tests measure). MEMPLAN_UPDATE_DOCS=1 rewrites it."""
    text = doc.read_text()
    begin, end = f"<!-- table:{name} -->\n", f"<!-- /table:{name} -->"
    i, j = text.find(begin), text.find(end)
    assert i >= 0 and j > i, f"{doc}: no markers {begin.strip()} ... {end}"
    current = text[i + len(begin):j]
    if os.environ.get("MEMPLAN_UPDATE_DOCS") == "1" and current != table:
        doc.write_text(text[:i + len(begin)] + table + text[j:])
        return
    assert current == table, (f"{doc}: the table '{name}' is not what the tests measured "
                              f"(MEMPLAN_UPDATE_DOCS=1 rewrites it):\n{table}")
