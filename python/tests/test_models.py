"""Model files read and planned from Python: the numbers equal the CLI's
(the same plan file, byte for byte), the plans verify and replay, plan files
round-trip, and every kind of input (path, Input, dict, bytes) plans."""

import json
import subprocess

import pytest

import memplan
from conftest import CONFORMANCE, ROOT, cli, model

# (model file under the models folder, import options, CLI flags for them)
MODELS = [
    ("face_detection/face_detection_short_range.tflite", {}, []),
    ("selfie_segmentation/selfie_segmentation.tflite", {}, []),
    ("vad/silero_vad_v5.onnx", {"input_shapes": {"input": [1, 256], "state": [2, 1, 128]}},
     ["--input-shape", "input=1x256", "--input-shape", "state=2x1x128"]),
    ("vad/silero_vad_legacy.onnx", {"dims": {"batch": 1, "sequence": 512}},
     ["--dim", "batch=1", "--dim", "sequence=512"]),
    ("onnx-node/test_if.onnx", {}, []),
]
TINY = ROOT / "examples" / "graphs" / "tiny.json"


def cli_plan(path, flags, out, extra=()):
    done = subprocess.run([str(cli()), "plan", str(path), *flags, *extra, "-q", "-o", str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return out.read_bytes()


@pytest.mark.parametrize("name,options,flags", MODELS, ids=[m[0] for m in MODELS])
def test_model_plans_like_the_cli(name, options, flags, tmp_path):
    path = str(model(name))
    inp = memplan.read(path, **options)
    assert inp.kind == ("tflite" if name.endswith(".tflite") else "onnx")
    assert inp.name == path and inp.size > 0 and len(inp.sha256) == 64
    assert inp.tensors > 0 and inp.nodes > 0
    for key, value in options.items():
        assert getattr(inp, key) == {k: list(v) if isinstance(v, list) else v for k, v in value.items()}

    plan = memplan.plan(inp)
    # The same file as `memplan plan MODEL -o plan.json`.
    assert plan.to_json().encode() == cli_plan(path, flags, tmp_path / "cli.json")
    assert plan.algorithm == "auto" and plan.alignment == 16

    assert plan.bufsizes[0] == 0 and plan.total == sum(plan.bufsizes) > 0
    assert plan.lower_bound == sum(p.lower_bound for p in plan.pools)
    assert plan.lower_bound <= plan.total
    assert plan.ratio == pytest.approx(plan.total / plan.lower_bound)
    assert plan.proven_optimal == all(p.proven_optimal for p in plan.pools)
    assert plan.winner == ", ".join(dict.fromkeys(p.algorithm for p in plan.pools))
    for pool in plan.pools:
        assert pool.size == plan.bufsizes[pool.mem_id]
        assert pool.lower_bound <= pool.size <= pool.naive_size
        assert pool.device == "cpu:0"
    assert len(plan.graphs) == inp.graphs
    assert plan.graphs[0].bufsizes == plan.bufsizes and plan.graphs[0].parent is None

    allocations = plan.allocations
    assert len(allocations) == sum(p.buffers for p in plan.pools)
    for a in allocations:
        assert isinstance(a.id, str) and a.name == a.id and a.graph == 0
        assert a.offset % 16 == 0 and a.size % 16 == 0
        assert a.offset + a.size <= plan.bufsizes[a.mem_id]
        assert a.lifetime[0] <= a.lifetime[1]

    verdict = memplan.verify(plan)
    assert verdict.ok and bool(verdict) and verdict.first_violation is None
    assert verdict.checked_allocations >= len(allocations)
    replayed = memplan.replay(plan)
    assert replayed.ok and replayed.issue == "none" and replayed.first_violation is None
    assert replayed.writes > 0 and replayed.reads > 0

    # No algorithm memplan offers beats auto here by ExecuTorch's measure.
    greedy = memplan.plan(inp, "greedy")
    assert greedy.winner == "greedy" and plan.total <= greedy.total

    # Plan files: write, read back (with and without the input), verify.
    out = tmp_path / "plan.json"
    plan.write(out)
    assert out.read_text() == plan.to_json()
    again = memplan.read_plan(out, inp)
    assert again.bufsizes == plan.bufsizes
    assert [(a.id, a.mem_id, a.offset, a.size) for a in again.allocations] == \
           [(a.id, a.mem_id, a.offset, a.size) for a in allocations]
    assert memplan.verify(inp, again).ok
    assert memplan.read_plan(out).to_json() == plan.to_json()


def test_control_flow_bodies_are_planned():
    plan = memplan.plan(model("onnx-node/test_if.onnx"))
    assert len(plan.graphs) == 3
    bodies = plan.graphs[1:]
    assert all(g.parent == 0 for g in bodies)
    # Each body's arena is the reserved prefix of the parent's pool.
    reserved = {p.mem_id: p.reserved for p in plan.pools}
    for g in bodies:
        for a in g.allocations:
            assert a.graph == g.graph
            assert a.offset + a.size <= reserved[a.mem_id]


def test_inputs_of_every_kind_plan_alike(tmp_path):
    by_path = memplan.plan(str(TINY))
    assert by_path.bufsizes == [0, 48]
    assert memplan.plan(TINY).to_json() == by_path.to_json()       # pathlib.Path
    as_dict = memplan.plan(json.loads(TINY.read_text()))
    assert as_dict.bufsizes == by_path.bufsizes
    assert as_dict.input.name == "<dict>" and as_dict.input.kind == "graph_json"
    as_bytes = memplan.plan(TINY.read_bytes())
    assert as_bytes.bufsizes == by_path.bufsizes
    named = memplan.read_bytes(TINY.read_bytes(), "tiny.json")
    assert memplan.plan(named).bufsizes == by_path.bufsizes
    assert [(a.id, a.offset) for a in by_path.allocations] == [(a.id, a.offset) for a in as_dict.allocations]


def test_spec_list_plans_with_its_own_algorithm():
    case_path = CONFORMANCE / "greedy-101-0004.json"
    case = json.loads(case_path.read_text())
    plan = memplan.plan(case_path)                # the case's algorithm and alignment
    assert plan.algorithm == "greedy" and plan.alignment == case["alignment"]
    assert plan.bufsizes == case["expected"]["bufsizes"]
    expected = {e["id"]: e for e in case["expected"]["allocations"]}
    for a in plan.allocations:
        e = expected[a.id]                          # integer ids, as in the case
        assert (a.mem_id, a.mem_obj_id, a.offset) == (e["mem_id"], e["mem_obj_id"], e["mem_offset"])
    better = memplan.plan(case, "auto")
    assert better.total <= plan.total and memplan.verify(better).ok
    assert memplan.plan(case, "naive").total >= plan.total


def test_options_reach_the_planner():
    tiny = memplan.read(TINY)
    assert memplan.plan(tiny, alignment=64).alignment == 64
    assert all(a.offset % 64 == 0 for a in memplan.plan(tiny, alignment=64).allocations)
    padded = memplan.plan(tiny, extra_padding=100)
    assert padded.extra_padding == 100 and padded.bufsizes[1] == 48 + 100
    no_io = memplan.plan(tiny, plan_inputs=False, plan_outputs=False)
    assert {a.id for a in no_io.allocations} == {"b", "c", "d"}
    naive = memplan.plan(tiny, "naive")
    assert naive.bufsizes == [0, 80] and naive.winner == "naive"


def test_reorder_plans_in_the_order_found(tmp_path):
    """The order search from Python: the same order, plan and plan file as
    `memplan plan --reorder`; 'report' searches without using it."""
    two = ROOT / "examples" / "graphs" / "two_branches.json"
    p = memplan.plan(two, reorder=True)
    assert p.order == [[0, 2, 1, 3, 4]]  # one wide layer at a time
    assert p.bufsizes == [0, 4608] and p.lower_bound == 4608
    (s,) = p.order_search
    assert (s["bound_given"], s["bound_found"], s["changed"]) == (8448, 4608, True)
    assert p.to_json() == cli_plan(two, ["--reorder"], tmp_path / "r.json").decode()
    assert memplan.verify(p).ok and memplan.replay(p).ok
    given = memplan.plan(two)
    assert given.order is None and given.order_search is None and given.bufsizes == [0, 8448]
    report = memplan.plan(two, reorder="report")
    assert report.order is None and report.bufsizes == [0, 8448]
    assert report.order_search[0]["bound_found"] == 4608
    with pytest.raises(memplan.InputError, match="reorder"):
        memplan.plan(two, reorder="yes")


def test_a_broken_plan_is_caught(tmp_path):
    tiny = memplan.read(TINY)
    plan = memplan.plan(tiny, "naive")
    doc = json.loads(plan.to_json())
    # Put 'c' on 'b' while both are alive (c = a * b; d = c + b).
    for allocations in (doc["allocations"], doc["graphs"][0]["allocations"]):
        offsets = {a["id"]: a["mem_offset"] for a in allocations}
        for a in allocations:
            if a["id"] == "c":
                a["mem_offset"] = offsets["b"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    broken = memplan.read_plan(bad, tiny)
    verdict = memplan.verify(broken)
    assert not verdict.ok and not verdict
    assert "'b'" in verdict.first_violation and "'c'" in verdict.first_violation
    assert verdict.violations[0] == verdict.first_violation
    replayed = memplan.replay(broken)
    assert not replayed.ok and replayed.issue == "clobber"
    assert {replayed.victim, replayed.writer} == {"b", "c"}
    assert replayed.first_violation == replayed.message and replayed.message


def test_algorithms_are_listed():
    names = {name: exact for name, _, exact in memplan.algorithms()}
    assert names["greedy"] and names["naive"] and not names["auto"]
    assert memplan.__version__
