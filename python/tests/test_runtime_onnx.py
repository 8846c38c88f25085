"""ONNX sizes checked by ONNX Runtime: every example ONNX model (and the
libonnx control-flow test models memplan plans) runs in ONNX Runtime with
every value of its main graph exposed as an output. For each tensor memplan
plans, memplan's size equals the size of the array ONNX Runtime produced
where memplan knew the shape statically, and is never smaller anywhere: an
undersized tensor is memory corruption in a real runtime.

Values inside control-flow bodies (If/Loop/Scan) cannot be graph outputs;
those bodies' tensors are checked by memplan's own replay instead.
"""

import json
import os
import pathlib
import tempfile

import pytest

from conftest import model, run_cli, runtime_package

WORK = pathlib.Path(tempfile.mkdtemp(prefix="runtime-onnx-", dir=os.environ.get("MEMPLAN_BUILD_DIR")))

# model -> (memplan's import options as CLI flags, inputs as {name: (shape, dtype, value kind)})
CASES = {
    "ocr/ch_PP-OCRv4_det_infer.onnx": (["--input-shape", "x=1x3x160x160"], {"x": ((1, 3, 160, 160), "float32")}),
    "ocr/ch_PP-OCRv4_rec_infer.onnx": (["--input-shape", "x=1x3x48x160"], {"x": ((1, 3, 48, 160), "float32")}),
    "ocr/ch_ppocr_mobile_v2.0_cls_infer.onnx": (["--input-shape", "x=1x3x48x192"],
                                                {"x": ((1, 3, 48, 192), "float32")}),
    "vad/silero_vad_v5.onnx": (["--input-shape", "input=1x256", "--input-shape", "state=2x1x128"],
                               {"input": ((1, 256), "float32"), "state": ((2, 1, 128), "float32"),
                                "sr": ((), "int64:8000")}),
    "vad/silero_vad_v6.onnx": (["--input-shape", "input=1x256", "--input-shape", "state=2x1x128",
                                "--unknown-size-bytes", "65536"],
                               {"input": ((1, 256), "float32"), "state": ((2, 1, 128), "float32"),
                                "sr": ((), "int64:8000")}),
    "vad/silero_vad_legacy.onnx": (["--dim", "batch=1", "--dim", "sequence=512"],
                                   {"input": ((1, 512), "float32"), "sr": ((), "int64:16000"),
                                    "h": ((2, 1, 64), "float32"), "c": ((2, 1, 64), "float32")}),
    "onnx-node/test_if.onnx": ([], {"cond": ((), "bool:1")}),
    "onnx-node/test_loop11.onnx": (["--unknown-size-bytes", "64"],
                                   {"trip_count": ((), "int64:5"), "cond": ((), "bool:1"), "y": ((1,), "float32")}),
    "onnx-node/test_scan_sum.onnx": ([], {"initial": ((1, 2), "float32"), "x": ((1, 3, 2), "float32")}),
    "onnx-node/test_scan9_sum.onnx": ([], {"initial": ((2,), "float32"), "x": ((3, 2), "float32")}),
}


def _inputs(spec):
    np = runtime_package("numpy")
    rng = np.random.default_rng(0)
    out = {}
    for name, (shape, kind) in spec.items():
        if ":" in kind:
            dtype, value = kind.split(":")
            out[name] = np.full(shape, int(value), dtype=np.bool_ if dtype == "bool" else dtype)
        else:
            out[name] = rng.standard_normal(shape).astype(kind)
    return out


def run_with_every_value(path: pathlib.Path, inputs):
    """name -> the array ONNX Runtime computed, for every value of the main
    graph (node outputs made graph outputs; optimizations off so that no
    value is fused away)."""
    onnx = runtime_package("onnx")
    ort = runtime_package("onnxruntime")
    m = onnx.load(str(path))
    have = {o.name for o in m.graph.output}
    for node in m.graph.node:
        for name in node.output:
            if name and name not in have:
                m.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
                have.add(name)
    exposed = WORK / (path.stem + ".all-values.onnx")
    onnx.save(m, str(exposed))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(exposed), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    values = session.run(names, inputs)
    return dict(zip(names, values))


def memplan_sizes(path: pathlib.Path, flags):
    """name -> (bytes, shape known) for every tensor of the main graph that
    memplan plans (an allocation of the plan, alignment 1 so that sizes are
    exact)."""
    graph = json.loads(run_cli("import", path, *flags).stdout)
    plan_file = WORK / (path.stem + ".plan.json")
    run_cli("plan", "-q", path, *flags, "--alignment", "1", "-o", plan_file)
    planned = {a["id"] for a in json.loads(plan_file.read_text())["allocations"]}  # the main graph's
    out = {}
    for t in graph["tensors"]:
        if "graph" in t or t["name"] not in planned:  # a body's tensor, or not planned
            continue
        known = all(d >= 0 for d in t.get("shape", []))  # -1: a dimension memplan could not infer
        out[t["name"]] = (int(t["nbytes"]), known)
    return out


@pytest.mark.parametrize("relative", sorted(CASES))
def test_memplan_sizes_match_onnx_runtime(relative):
    path = model(relative)
    flags, spec = CASES[relative]
    ours = memplan_sizes(path, flags)
    real = run_with_every_value(path, _inputs(spec))
    checked = exact = 0
    for name, (nbytes, known) in sorted(ours.items()):
        if name not in real:
            continue  # a graph input or initializer: the caller's bytes
        got = real[name].nbytes
        assert nbytes >= got, f"{relative}: '{name}': memplan plans {nbytes} bytes, ONNX Runtime wrote {got}"
        if known:
            assert nbytes == got, f"{relative}: '{name}': memplan {nbytes} bytes, ONNX Runtime {got}"
            exact += 1
        checked += 1
    # Every value of the main graph memplan plans was seen.
    assert checked == len([n for n in ours if n in real]) and checked > 0, relative
    assert exact > 0, relative
