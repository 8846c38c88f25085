"""Errors are Python exceptions with the CLI's one-line messages:
memplan.InputError (a ValueError) for bad input or arguments,
memplan.PlanError (a RuntimeError) for requests that cannot be met."""

import subprocess

import pytest

import memplan
import memplan.executorch as et
from conftest import BAD_INPUTS, ROOT, cli, model

TINY = ROOT / "examples" / "graphs" / "tiny.json"


def cli_error(*args, code=2):
    done = subprocess.run([str(cli()), *map(str, args)], capture_output=True, text=True,
                          errors="backslashreplace")  # messages may quote bytes that are not UTF-8
    assert done.returncode == code, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def bad_inputs():
    listed = []
    for line in (BAD_INPUTS / "expect.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            listed.append(line.split("\t")[0])
    return listed


@pytest.mark.parametrize("name", bad_inputs())
def test_bad_input_raises_the_cli_message(name):
    path = BAD_INPUTS / name
    with pytest.raises(memplan.InputError) as e:
        memplan.plan(path)
    message = str(e.value)
    assert "\n" not in message and name in message
    assert "memplan: " + message == cli_error("plan", path)


def test_missing_file():
    path = ROOT / "no-such-model.tflite"
    with pytest.raises(memplan.InputError) as e:
        memplan.read(path)
    assert str(path) in str(e.value)
    assert "memplan: " + str(e.value) == cli_error("plan", path)


def test_errors_are_standard_exception_kinds():
    assert issubclass(memplan.InputError, ValueError)
    assert issubclass(memplan.PlanError, RuntimeError)
    assert memplan.executorch.InputError is memplan.InputError


@pytest.mark.parametrize("kwargs,flags,message", [
    ({"alignment": 2**32}, ["--alignment", str(2**32)], "alignment: 4294967296 is above the limit of 2^30"),
    ({"algorithm": "nope"}, ["--algorithm", "nope"], "algorithm: unknown algorithm 'nope' (known: "),
    ({"spill_order": [0]}, ["--spill-order", "0"], "spill_order: mem_id 0 not in [1, 4096]"),
])
def test_bad_request_names_the_argument(kwargs, flags, message):
    with pytest.raises(memplan.InputError) as e:
        memplan.plan(TINY, **kwargs)
    assert str(e.value).startswith(message)
    # The CLI says the same of its flag.
    flag = flags[0]
    assert cli_error("plan", TINY, *flags) == "memplan: " + flag + str(e.value)[len(message.split(":")[0]):]


def test_capacity_that_cannot_be_met_is_a_plan_error():
    with pytest.raises(memplan.PlanError) as e:
        memplan.plan(TINY, capacities={1: 16})
    assert "\n" not in str(e.value)
    # The CLI's exit code for a capacity that cannot be met is 3.
    assert "memplan: does not fit: " + str(e.value) == cli_error("plan", TINY, "--capacity", "1=16", code=3)


def test_bad_arguments():
    with pytest.raises(memplan.InputError, match=r"^effort: -1(\.0)? is not a non-negative number"):
        memplan.plan(TINY, effort=-1)
    with pytest.raises(memplan.InputError, match=r"^capacities: mem_id must be in \[1, 4096\], got 0"):
        memplan.plan(TINY, capacities={0: 100})
    with pytest.raises(memplan.InputError, match=r"^dims\[batch\]: negative value -1"):
        memplan.read(TINY, dims={"batch": -1})
    with pytest.raises(memplan.InputError, match=r"^input_shapes\[x\]: negative dimension -2"):
        memplan.read(TINY, input_shapes={"x": [1, -2]})
    with pytest.raises(memplan.InputError, match=r"^alignment: -16 is negative"):
        memplan.plan(TINY, alignment=-16)
    with pytest.raises(memplan.InputError, match="apply when reading"):
        memplan.plan(memplan.read(TINY), dims={"batch": 1})
    with pytest.raises(TypeError):
        memplan.plan(42)
    with pytest.raises(TypeError):
        memplan.verify(memplan.read(TINY))


@pytest.mark.parametrize("kwargs,message", [
    ({"alignment": 1.5}, "alignment: 1.5 is not an integer"),
    ({"extra_padding": 7.9}, "extra_padding: 7.9 is not an integer"),
    ({"capacities": {1: 4096.5}}, "capacities: 4096.5 is not an integer"),
    ({"spill_order": [1.5]}, "spill_order: 1.5 is not an integer"),
    ({"unknown_size_bytes": 0.25}, "unknown_size_bytes: 0.25 is not an integer"),
    ({"alignment": float("nan")}, "alignment: nan is not an integer"),
])
def test_fractional_integers_are_refused_not_truncated(kwargs, message):
    # The CLI refuses "--alignment 1.5"; Python used to take it as 1.
    with pytest.raises(memplan.InputError) as e:
        memplan.plan(TINY, **kwargs)
    assert str(e.value) == message
    with pytest.raises(memplan.InputError, match=r"^dims\[batch\]: 2.5 is not an integer$"):
        memplan.read(TINY, dims={"batch": 2.5})
    with pytest.raises(memplan.InputError, match=r"^input_shapes\[x\]: 3.5 is not an integer$"):
        memplan.read(TINY, input_shapes={"x": [1, 3.5]})


def test_whole_numbers_of_other_types_are_taken():
    assert memplan.plan(TINY, alignment=32.0).alignment == 32
    assert memplan.plan(TINY, extra_padding=8.0).bufsizes == memplan.plan(TINY, extra_padding=8).bufsizes


class Spec:
    def __init__(self, nbytes, lifetime, mem_id=None):
        self.allocated_memory = nbytes
        self.lifetime = lifetime
        self.mem_id = mem_id
        self.inplace_base = None


def test_plugin_errors():
    with pytest.raises(memplan.InputError, match=r"^algorithm: unknown algorithm 'nope'"):
        et.algorithm("nope")
    with pytest.raises(memplan.InputError, match=r"^effort: "):
        et.algorithm("auto", effort=-1)
    algo = et.algorithm()
    with pytest.raises(memplan.InputError, match=r"^specs\[1\]\.lifetime: expected \[first, last\], got \[None, None\]"):
        algo(16, [Spec(16, [0, 1]), Spec(16, [None, None])], None, None, 0)
    with pytest.raises(memplan.InputError, match=r"^specs\[0\]\.lifetime: expected \[first, last\] with 0 <= first <= last, got \[3, 1\]"):
        algo(16, [Spec(16, [3, 1])], None, None, 0)
    with pytest.raises(memplan.InputError, match=r"^alignment: 3 is not a power of two"):
        algo(3, [Spec(16, [0, 1])], None, None, 0)
    with pytest.raises(memplan.InputError, match=r"^specs\[0\]\.mem_id: 0 out of range"):
        algo(16, [Spec(16, [0, 1], mem_id=0)], None, None, 0)
    with pytest.raises(memplan.InputError, match=r"^specs\[0\]\.allocated_memory: expected an integer"):
        algo(16, [Spec("big", [0, 1])], None, None, 0)


# The importers' messages name what binds a dimension: Python's keyword
# arguments here, the CLI's flags there (one table, memplan::inShellTerms).
@pytest.mark.parametrize("name,kwargs,flags,python,cli_says", [
    ("vad/silero_vad_legacy.onnx", {}, [],
     "cannot size 226 tensors: bind input 'input' [batch,sequence], input 'h' [2,batch,64], "
     "input 'c' [2,batch,64] (hint: input_shapes={'input': [?, ?], 'h': [2, ?, 64], 'c': [2, ?, 64]}, "
     "a number for each ?, or dims={'SYMBOL': N}; unknown_size_bytes=N plans them at an upper bound "
     "instead)",
     "cannot size 226 tensors: bind input 'input' [batch,sequence], input 'h' [2,batch,64], "
     "input 'c' [2,batch,64] (hint: --input-shape input=?x? --input-shape h=2x?x64 --input-shape "
     "c=2x?x64, a number for each ?, or --dim SYMBOL=N; --unknown-size-bytes N plans them at an "
     "upper bound instead)"),
    ("vad/silero_vad_v5.onnx", {"input_shapes": {"x": [1, 256]}}, ["--input-shape", "x=1x256"],
     "input_shapes: no graph input named 'x' (inputs: input, state, sr)",
     "--input-shape: no graph input named 'x' (inputs: input, state, sr)"),
    ("vad/silero_vad_legacy.onnx", {"input_shapes": {"input": [1, 2, 3]}}, ["--input-shape", "input=1x2x3"],
     "input_shapes: input 'input' has rank 2, got 3 dims",
     "--input-shape: input 'input' has rank 2, got 3 dims"),
    ("ocr/ch_PP-OCRv4_det_infer.onnx", {"input_shapes": {"x": [1, 4, 640, 640]}},
     ["--input-shape", "x=1x4x640x640"],
     "input_shapes: input 'x' dim 1 is fixed at 3 by the model, got 4",
     "--input-shape: input 'x' dim 1 is fixed at 3 by the model, got 4"),
    ("vad/silero_vad_legacy.onnx", {"dims": {"seq": 512}}, ["--dim", "seq=512"],
     "dims: no dimension named 'seq' (symbols: Concat1091_dim_1, ",
     "--dim: no dimension named 'seq' (symbols: Concat1091_dim_1, "),
], ids=["unbound", "no_such_input", "rank", "fixed_dim", "no_such_dim"])
def test_import_messages_name_the_keyword_arguments(name, kwargs, flags, python, cli_says):
    path = model(name)
    with pytest.raises(memplan.InputError) as e:
        memplan.read(path, **kwargs)
    message = str(e.value)
    assert "--" not in message
    full = name.startswith("vad/silero_vad_legacy.onnx") and "dims" in kwargs
    if full:  # the symbol list is long: its start is enough
        assert message.startswith(f"{path}: {python}")
    else:
        assert message == f"{path}: {python}"
    said = cli_error("plan", path, *flags)
    assert said.startswith(f"memplan: {path}: {cli_says}") if full else said == f"memplan: {path}: {cli_says}"
