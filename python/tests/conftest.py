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
