"""Reordered .tflite models in TensorFlow Lite Micro: for every model the
TFLite Micro tests run (test_runtime_tflite_micro.py) and a generated one
whose best order is known, ``memplan plan M.tflite --reorder --write-tflite
R.tflite -o R.plan.json``; then

- R's subgraph runs its operators in the order the plan file records;
- R runs in the interpreter with outputs bit-identical to M's;
- the smallest arena at which R runs is no larger than that of M planned in
  its given order (and smaller for the generated model, where the order is
  the limit);
- ``memplan verify`` and ``memplan replay`` pass on R's carried plan, and on
  M with the plan file (which records the order).
"""

import functools
import json
import os
import pathlib
import re
import tempfile

import pytest

from conftest import model, run_cli, runtime_package
from test_runtime_tflite_micro import RUNNABLE, fc_dag, float32_weights, outputs, smallest_arena

WORK = pathlib.Path(tempfile.mkdtemp(prefix="runtime-reorder-", dir=os.environ.get("MEMPLAN_BUILD_DIR")))


def two_branches(width: int = 1024) -> bytes:
    """x -> a1 (wide) -> a2; x -> b1 (wide) -> b2; y = a2 + b2, written with
    both wide layers first: the given order holds a1 and b1 together, the
    best order one at a time."""
    np = runtime_package("numpy")
    flatbuffers = runtime_package("flatbuffers")
    fb = runtime_package("tflite_micro.tensorflow.lite.micro.python.schema_py_generated")
    rng = np.random.default_rng(3)
    m = fb.ModelT()
    m.version = 3
    fc, add = fb.OperatorCodeT(), fb.OperatorCodeT()
    fc.builtinCode = fc.deprecatedBuiltinCode = fb.BuiltinOperator.FULLY_CONNECTED
    add.builtinCode = add.deprecatedBuiltinCode = fb.BuiltinOperator.ADD
    fc.version = add.version = 1
    m.operatorCodes, m.buffers = [fc, add], [fb.BufferT()]
    sg = fb.SubGraphT()
    sg.tensors, sg.operators = [], []

    def tensor(shape, name, data=None):
        buffer = 0
        if data is not None:
            b = fb.BufferT()
            b.data = np.frombuffer(data.astype("<f4").tobytes(), dtype=np.uint8)
            m.buffers.append(b)
            buffer = len(m.buffers) - 1
        t = fb.TensorT()
        t.shape, t.type, t.buffer, t.name = np.array(shape, dtype=np.int32), fb.TensorType.FLOAT32, buffer, name.encode()
        sg.tensors.append(t)
        return len(sg.tensors) - 1

    def op(code, inputs, output, options_type, options):
        o = fb.OperatorT()
        o.opcodeIndex = code
        o.inputs, o.outputs = np.array(inputs, dtype=np.int32), np.array([output], dtype=np.int32)
        o.builtinOptionsType, o.builtinOptions = options_type, options
        sg.operators.append(o)

    def dense(src, k, n, name):
        w = tensor([n, k], "w_" + name, rng.standard_normal((n, k)) / np.sqrt(k))
        out = tensor([1, n], name)
        return (src, w, out)

    x = tensor([1, 16], "x")
    a1, b1 = dense(x, 16, width, "a1"), dense(x, 16, width, "b1")
    a2, b2 = dense(a1[2], width, 16, "a2"), dense(b1[2], width, 16, "b2")
    y = tensor([1, 16], "y")
    for src, w, out in (a1, b1, a2, b2):  # both wide layers first
        op(0, [src, w, -1], out, fb.BuiltinOptions.FullyConnectedOptions, fb.FullyConnectedOptionsT())
    op(1, [a2[2], b2[2]], y, fb.BuiltinOptions.AddOptions, fb.AddOptionsT())
    sg.inputs, sg.outputs = np.array([x], dtype=np.int32), np.array([y], dtype=np.int32)
    m.subgraphs = [sg]
    builder = flatbuffers.Builder(1 << 16)
    builder.Finish(m.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


GENERATED = {"two_branches": two_branches, "fc_dag_105": lambda: fc_dag(105)}
MODELS = sorted(RUNNABLE) + sorted(GENERATED)


def operator_outputs(data: bytes):
    """Each operator's first output tensor, subgraph 0, in run order."""
    rt = runtime_package("tflite_micro.python.tflite_micro.runtime")
    m = rt.convert_bytearray_to_object(bytearray(data))
    return [int(op.outputs[0]) for op in m.subgraphs[0].operators]


@functools.lru_cache(maxsize=None)
def measured(name: str):
    m = WORK / f"{name}.tflite"
    given, reordered, plan = (WORK / f"{name}.{k}" for k in ("given.tflite", "reordered.tflite", "plan.json"))
    m.write_bytes(GENERATED[name]() if name in GENERATED else float32_weights(model(RUNNABLE[name]).read_bytes()))
    run_cli("plan", "-q", m, "--write-tflite", given)
    r = run_cli("plan", "--bytes", m, "--reorder", "--write-tflite", reordered, "-o", plan)
    md, gd, rd = m.read_bytes(), given.read_bytes(), reordered.read_bytes()
    return dict(m=md, given=gd, reordered=rd, plan=json.loads(plan.read_text()), report=r.stdout,
                m_min=smallest_arena(md), given_min=smallest_arena(gd), reordered_min=smallest_arena(rd),
                paths=(m, reordered, plan))


@pytest.mark.parametrize("name", MODELS)
def test_operators_run_in_the_recorded_order(name):
    r = measured(name)
    order = r["plan"]["order"]
    assert order["graphs"][0]["bound_found"] <= order["graphs"][0]["bound_given"]
    nodes = order["graphs"][0].get("nodes")
    given = operator_outputs(r["m"])
    if nodes is None:
        assert not order["applied"] or operator_outputs(r["reordered"]) == given
        return
    assert operator_outputs(r["reordered"]) == [given[i] for i in nodes]


@pytest.mark.parametrize("name", MODELS)
def test_reordered_model_runs_bit_identical(name):
    np = runtime_package("numpy")
    r = measured(name)
    for seed in (0, 1):
        a, b = outputs(r["m"], r["m_min"], seed), outputs(r["reordered"], r["reordered_min"], seed)
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y)


@pytest.mark.parametrize("name", MODELS)
def test_reordered_arena_no_larger(name):
    r = measured(name)
    assert r["reordered_min"] <= r["given_min"] <= r["m_min"]
    if name == "two_branches":  # the order is the limit here
        g = r["plan"]["order"]["graphs"][0]
        assert g["bound_found"] < g["bound_given"]
        assert r["reordered_min"] < r["given_min"]
        # Both wide layers at once (2 x 4 KiB) no longer: one at a time.
        assert r["given_min"] - r["reordered_min"] >= 4096 - 64
        assert re.search(r"order of main: bound .* in the given order, .* in the order found", r["report"])


@pytest.mark.parametrize("name", MODELS)
def test_verify_and_replay_pass(name):
    m, reordered, plan = measured(name)["paths"]
    for args in ((reordered,), (m, plan)):
        assert run_cli("verify", *args).returncode == 0
        assert run_cli("replay", *args).returncode == 0
