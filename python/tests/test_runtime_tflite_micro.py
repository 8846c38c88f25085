"""TensorFlow Lite Micro in the loop: for every example .tflite model TFLite
Micro's interpreter (the pinned ``tflite-micro`` package) can run,
``memplan plan M.tflite --write-tflite P.tflite``; then

- P runs in the interpreter with outputs bit-identical to M's;
- the smallest arena at which P runs (found by bisection) is no larger than
  the smallest at which M runs, and smaller where memplan's plan is (a
  generated model of fully connected layers where TFLite Micro's greedy
  planner leaves a gap);
- the ``kTensorArenaSize`` memplan prints is never below P's smallest arena
  and at most 10% (or 2 KiB) above it;
- docs/runtime.md shows the table these tests measure.

The MediaPipe face detectors store their weights as float16 behind
DEQUANTIZE operators, which TFLite Micro's DEQUANTIZE does not take (it reads
int8/int16/uint8): the test expands those weights to float32 constants (the
values DEQUANTIZE would produce) and plans that model. Models TFLite Micro
cannot run are listed with the interpreter's error; the list is checked, so
a new model that runs is not silently left out.
"""

import functools
import os
import pathlib
import re
import tempfile

import pytest

import memplan

from conftest import ROOT, doc_table, model, run_cli, runtime_package

DOC = ROOT / "docs" / "runtime.md"
WORK = pathlib.Path(tempfile.mkdtemp(prefix="runtime-tflm-", dir=os.environ.get("MEMPLAN_BUILD_DIR")))

# The example models (scripts/fetch-models.sh), and what TFLite Micro says
# about the ones it cannot run.
RUNNABLE = {
    "face_detection_short_range": "face_detection/face_detection_short_range.tflite",
    "face_detection_full_range": "face_detection/face_detection_full_range.tflite",
}
NOT_RUNNABLE = {
    "face_detection/face_detection_full_range_sparse.tflite": "Didn't find op for builtin opcode 'DENSIFY'",
    "selfie_segmentation/selfie_segmentation.tflite": "Failed to get registration from op code CUSTOM",
    "selfie_segmentation/selfie_segmentation_landscape.tflite": "Failed to get registration from op code CUSTOM",
}
# Built by the test (fc_dag below): a DAG of fully connected layers where
# TFLite Micro's greedy planner leaves a gap memplan's plan does not.
GENERATED = {"fc_dag_105": 105}
# The margin the printed kTensorArenaSize keeps above the smallest arena:
# 10%, or 2 KiB for small models (TFLite Micro's fixed overhead).
MARGIN, MARGIN_BYTES = 0.10, 2048


def _np():
    return runtime_package("numpy")


def _tflm():
    return runtime_package("tflite_micro.python.tflite_micro.runtime")


def float32_weights(data: bytes) -> bytes:
    """The model with float16 weights behind DEQUANTIZE expanded to float32
    constants: each such DEQUANTIZE is dropped and its output becomes a
    constant holding the values it would compute."""
    np = _np()
    flatbuffers = runtime_package("flatbuffers")
    rt = _tflm()
    fb = runtime_package("tflite_micro.tensorflow.lite.micro.python.schema_py_generated")
    m = rt.convert_bytearray_to_object(bytearray(data))
    codes = [rt.get_builtin_code_from_operator_code(c) for c in m.operatorCodes]
    for sg in m.subgraphs:
        kept = []
        for op in sg.operators:
            if codes[op.opcodeIndex] == fb.BuiltinOperator.DEQUANTIZE:
                src, dst = sg.tensors[op.inputs[0]], sg.tensors[op.outputs[0]]
                buf = m.buffers[src.buffer]
                if src.type == fb.TensorType.FLOAT16 and buf.data is not None and len(buf.data):
                    values = np.frombuffer(bytes(bytearray(buf.data)), dtype=np.float16).astype("<f4")
                    b = fb.BufferT()
                    b.data = np.frombuffer(values.tobytes(), dtype=np.uint8)
                    m.buffers.append(b)
                    dst.buffer = len(m.buffers) - 1
                    continue
            kept.append(op)
        sg.operators = kept
    builder = flatbuffers.Builder(len(data) * 2)
    builder.Finish(m.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def fc_dag(seed: int, layers: int = 12) -> bytes:
    """A float32 .tflite of `layers` FULLY_CONNECTED operators, each reading
    one of the 4 tensors made before it (random widths of 16 to 512, random
    weights): lifetimes that overlap in many ways. Tensors no operator reads
    are outputs."""
    np = _np()
    flatbuffers = runtime_package("flatbuffers")
    fb = runtime_package("tflite_micro.tensorflow.lite.micro.python.schema_py_generated")
    rng = np.random.default_rng(seed)
    widths, src = [int(rng.integers(1, 33)) * 16], []
    for i in range(layers):
        src.append(int(rng.integers(max(0, i - 3), i + 1)))
        widths.append(int(rng.integers(1, 33)) * 16)
    weights = np.random.default_rng(0)
    m = fb.ModelT()
    m.version = 3
    code = fb.OperatorCodeT()
    code.builtinCode = code.deprecatedBuiltinCode = fb.BuiltinOperator.FULLY_CONNECTED
    code.version = 1
    m.operatorCodes, m.buffers = [code], [fb.BufferT()]
    sg = fb.SubGraphT()
    sg.tensors, sg.operators = [], []

    def tensor(shape, name, buffer=0):
        t = fb.TensorT()
        t.shape, t.type, t.buffer, t.name = np.array(shape, dtype=np.int32), fb.TensorType.FLOAT32, buffer, name.encode()
        sg.tensors.append(t)
        return len(sg.tensors) - 1

    acts, read = [tensor([1, widths[0]], "t0")], set()
    for i, j in enumerate(src):
        k, n = widths[j], widths[i + 1]
        b = fb.BufferT()
        b.data = np.frombuffer((weights.standard_normal((n, k)) / np.sqrt(k)).astype("<f4").tobytes(), dtype=np.uint8)
        m.buffers.append(b)
        w = tensor([n, k], f"w{i + 1}", len(m.buffers) - 1)
        acts.append(tensor([1, n], f"t{i + 1}"))
        op = fb.OperatorT()
        op.opcodeIndex = 0
        op.inputs, op.outputs = np.array([acts[j], w, -1], dtype=np.int32), np.array([acts[-1]], dtype=np.int32)
        op.builtinOptionsType, op.builtinOptions = fb.BuiltinOptions.FullyConnectedOptions, fb.FullyConnectedOptionsT()
        sg.operators.append(op)
        read.add(j)
    sg.inputs = np.array([acts[0]], dtype=np.int32)
    sg.outputs = np.array([acts[i] for i in range(1, len(acts)) if i not in read], dtype=np.int32)
    m.subgraphs = [sg]
    builder = flatbuffers.Builder(1 << 16)
    builder.Finish(m.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def interpreter(data: bytes, arena: int):
    return _tflm().Interpreter.from_bytes(data, arena_size=arena)


def runs(data: bytes, arena: int) -> bool:
    try:
        interpreter(data, arena)
        return True
    except RuntimeError:
        return False


def smallest_arena(data: bytes) -> int:
    """The smallest arena_size at which the interpreter allocates the model
    (it allocates every tensor, persistent buffer and scratch buffer at
    construction), by bisection."""
    hi = 1 << 12
    while not runs(data, hi):
        hi *= 2
    lo = hi // 2 if hi > 1 << 12 else 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if runs(data, mid):
            hi = mid
        else:
            lo = mid
    return hi


def outputs(data: bytes, arena: int, seed: int = 0):
    np = _np()
    it = interpreter(data, arena)
    d = it.get_input_details(0)
    x = np.random.default_rng(seed).standard_normal(d["shape"]).astype(d["dtype"])
    it.set_input(x, 0)
    it.invoke()
    out, i = [], 0
    while True:
        try:
            out.append(np.array(it.get_output(i), copy=True))
        except (IndexError, RuntimeError, ValueError):
            break
        i += 1
    assert out, "no outputs"
    return out


MODELS = sorted(RUNNABLE) + sorted(GENERATED)


@functools.lru_cache(maxsize=None)
def measured(name: str):
    m = WORK / f"{name}.tflite"
    p = WORK / f"{name}.planned.tflite"
    if name in GENERATED:
        m.write_bytes(fc_dag(GENERATED[name]))
    else:
        m.write_bytes(float32_weights(model(RUNNABLE[name]).read_bytes()))
    r = run_cli("plan", "--bytes", m, "--write-tflite", p)
    arena = re.search(r"kTensorArenaSize[^\n]*?(\d+)\s*\(", r.stdout + r.stderr) or \
        re.search(r"kTensorArenaSize = (\d+)", r.stdout + r.stderr)
    assert arena, f"memplan printed no kTensorArenaSize:\n{r.stdout}{r.stderr}"
    head = int(re.search(r"main\s+1\s+cpu:0\s+\S+ \S+ \((\d+) B\)", r.stdout).group(1))
    tflm = int(re.search(r"GreedyMemoryPlanner\) would need [^(]*\((\d+) B\)", r.stdout).group(1))
    # Python says what the CLI prints.
    assert memplan.plan(m).tflite_micro_arena_size == int(arena.group(1))
    md, pd = m.read_bytes(), p.read_bytes()
    return dict(m=md, p=pd, m_min=smallest_arena(md), p_min=smallest_arena(pd), head=head, tflm_head=tflm,
                arena_size=int(arena.group(1)))


def test_the_runnable_list_is_complete():
    for relative, error in NOT_RUNNABLE.items():
        data = model(relative).read_bytes()
        assert not runs(data, 64 << 20), f"{relative} runs in TFLite Micro now: add it to RUNNABLE"
    assert set(RUNNABLE.values()) | set(NOT_RUNNABLE) == {
        str(p.relative_to(model(RUNNABLE["face_detection_short_range"]).parents[1]))
        for p in model(RUNNABLE["face_detection_short_range"]).parents[1].glob("*/*.tflite")}


@pytest.mark.parametrize("name", MODELS)
def test_planned_model_runs_bit_identical(name):
    np = _np()
    r = measured(name)
    arena = max(r["m_min"], r["p_min"])
    for seed in (0, 1):
        a, b = outputs(r["m"], arena, seed), outputs(r["p"], r["p_min"], seed)
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y)


@pytest.mark.parametrize("name", MODELS)
def test_planned_arena_no_larger(name):
    r = measured(name)
    assert r["p_min"] <= r["m_min"]
    if name in GENERATED:  # chosen because memplan's plan is smaller here
        assert r["p_min"] < r["m_min"]
    # Only the head (the tensors' plan) differs: the original runs TFLite
    # Micro's own planner, whose head memplan reproduces exactly.
    assert r["m_min"] - r["p_min"] == r["tflm_head"] - r["head"]


@pytest.mark.parametrize("name", MODELS)
def test_written_model_carries_the_computed_plan(name):
    """The model TFLite Micro ran carries memplan's plan, tensor for tensor
    (a writer that wrote no plan, or another one, fails here even where
    both arenas happen to be the same)."""
    measured(name)
    computed = memplan.plan(WORK / f"{name}.tflite")
    carried = memplan.carried_plan(memplan.read(WORK / f"{name}.planned.tflite"))
    assert carried.carried
    where = {(a.graph, a.name, a.offset) for a in computed.allocations}
    assert {(a.graph, a.name, a.offset) for a in carried.allocations} == where
    assert len(where) > 0


@pytest.mark.parametrize("name", MODELS)
def test_printed_arena_size_holds(name):
    r = measured(name)
    assert r["arena_size"] >= r["p_min"], r
    assert r["arena_size"] <= max(r["p_min"] * (1 + MARGIN), r["p_min"] + MARGIN_BYTES), r
    assert runs(r["p"], r["arena_size"])


def test_docs_show_the_measured_table():
    rows = ["| model | TFLM smallest arena, original | with memplan's plan | saving | "
            "memplan's kTensorArenaSize | above the smallest | outputs identical |",
            "|---|---:|---:|---:|---:|---:|---|"]
    for name in MODELS:
        r = measured(name)
        np = _np()
        same = all(np.array_equal(x, y) for x, y in zip(outputs(r["m"], r["m_min"]), outputs(r["p"], r["p_min"])))
        what = "generated: 12 fully connected layers" if name in GENERATED else "float32 weights"
        rows.append(f"| {name} ({what}) | {r['m_min']:,} | {r['p_min']:,} | "
                    f"{r['m_min'] - r['p_min']:,} | {r['arena_size']:,} | "
                    f"{(r['arena_size'] / r['p_min'] - 1) * 100:.1f}% | {'yes' if same else 'no'} |")
    doc_table(DOC, "tflite-micro", "\n".join(rows) + "\n")
