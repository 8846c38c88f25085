"""Reordered ExecuTorch programs in ExecuTorch's runtime: every architecture
test_runtime_executorch.py exports (ExecuTorch's default memory planning),
its LLM-shaped XNNPACK program, and a generated two-branch model whose
best order is known. For each, ``memplan plan P.pte --reorder --write-pte
R.pte -o R.plan.json`` beside ``memplan plan P.pte --write-pte G.pte`` (the
given order, planned by memplan); then

- R runs in ``executorch.runtime`` with outputs identical to P's;
- R's instructions are P's in the order the plan file records;
- R's buffers are no larger than G's (smaller for the two-branch model,
  where the order is the limit);
- ``memplan verify`` and ``memplan replay`` pass on R's carried plan, and on
  P with the plan file (which records the order).
"""

import functools
import json
import os
import pathlib
import tempfile

import pytest

from conftest import run_cli, runtime_package
from test_runtime_executorch import MODELS, _assert_same, _edge, _export, _models, llm_program, run_program

WORK = pathlib.Path(tempfile.mkdtemp(prefix="runtime-reorder-pte-", dir=os.environ.get("MEMPLAN_BUILD_DIR")))


def two_branches():
    """x -> a1 (wide) -> a2; x -> b1 (wide) -> b2; y = a2 + b2, written with
    both wide layers first: the exported order holds a1 and b1 together."""
    torch = runtime_package("torch")
    nn = torch.nn

    class TwoBranches(nn.Module):
        def __init__(self):
            super().__init__()
            self.a1, self.b1 = nn.Linear(16, 1024), nn.Linear(16, 1024)
            self.a2, self.b2 = nn.Linear(1024, 16), nn.Linear(1024, 16)

        def forward(self, x):
            a1 = torch.relu(self.a1(x))
            b1 = torch.relu(self.b1(x))
            return self.a2(a1) + self.b2(b1)

    torch.manual_seed(0)
    return {"forward": TwoBranches().eval()}, [("forward", (torch.randn(1, 16),)), ("forward", (torch.randn(1, 16),))]


def _program(name: str):
    if name == "llm_xnnpack":
        return llm_program()
    modules, calls = two_branches() if name == "two_branches" else _models()[name]()
    manager = _export(_edge(modules, calls), len(modules) > 1, None)
    return bytes(manager.buffer), calls


NAMES = MODELS + ["llm_xnnpack", "two_branches"]


def instruction_outputs(path: pathlib.Path, method: str):
    """Each instruction's (op, outputs), in run order: memplan's own reading
    of the file (`memplan import --method M` lists instructions as nodes)."""
    graph = json.loads(run_cli("import", path, "--method", method).stdout)
    return [(n["op"], n["outputs"]) for n in graph["graphs"][0]["nodes"]]


def sizes(path: pathlib.Path):
    report = json.loads(run_cli("report", "--json", path).stdout)
    return {(p["graph"], p["mem_id"]): p["arena_bytes"] for p in report["pools"]}


@functools.lru_cache(maxsize=None)
def measured(name: str):
    pte, calls = _program(name)
    p = WORK / f"{name}.pte"
    p.write_bytes(pte)
    given, reordered, plan = (WORK / f"{name}.{k}" for k in ("given.pte", "reordered.pte", "plan.json"))
    run_cli("plan", "-q", p, "--write-pte", given)
    r = run_cli("plan", "--bytes", p, "--reorder", "--write-pte", reordered, "-o", plan)
    return dict(calls=calls, p=p, given=given, reordered=reordered, plan_path=plan,
                plan=json.loads(plan.read_text()), report=r.stdout)


@pytest.mark.parametrize("name", NAMES)
def test_reordered_program_runs_identical(name):
    r = measured(name)
    _assert_same(run_program(r["p"].read_bytes(), r["calls"]), run_program(r["reordered"].read_bytes(), r["calls"]),
                 f"{name}: reordered vs original")


@pytest.mark.parametrize("name", NAMES)
def test_instructions_run_in_the_recorded_order(name):
    r = measured(name)
    order = r["plan"]["order"]
    for g in order["graphs"]:
        method = r["plan"]["graphs"][g["graph"]]["name"]
        given, now = instruction_outputs(r["p"], method), instruction_outputs(r["reordered"], method)
        nodes = g.get("nodes") if order["applied"] else None
        assert now == (given if nodes is None else [given[i] for i in nodes]), f"{name}/{method}"
        if nodes is not None:
            assert nodes != sorted(nodes)
    assert all(g["bound_found"] <= g["bound_given"] for g in order["graphs"])
    if name == "two_branches":
        assert order["applied"]
        g = order["graphs"][0]
        assert g["bound_found"] < g["bound_given"]


@pytest.mark.parametrize("name", NAMES)
def test_reordered_buffers_no_larger(name):
    r = measured(name)
    given, reordered = sizes(r["given"]), sizes(r["reordered"])
    assert given.keys() == reordered.keys()
    assert all(reordered[k] <= given[k] for k in given), (given, reordered)
    if name == "two_branches":
        # Both wide results (2 x 4 KiB) at once no longer: one at a time
        # (ExecuTorch's transposed weight copies are planned too).
        assert sum(given.values()) - sum(reordered.values()) >= 4096 - 64


@pytest.mark.parametrize("name", NAMES)
def test_verify_and_replay_pass(name):
    r = measured(name)
    for args in ((r["reordered"],), (r["p"], r["plan_path"])):
        run_cli("verify", *args)
        run_cli("replay", *args)


@pytest.mark.parametrize("name", ["two_branches", "llm_xnnpack"])
def test_python_writes_the_same_program(name, tmp_path):
    """memplan.plan(..., reorder=True): the order the CLI records, and the
    same program written by Plan.write_pte."""
    import memplan

    r = measured(name)
    plan = memplan.plan(r["p"], reorder=True)
    recorded = {g["graph"]: g.get("nodes") for g in r["plan"]["order"]["graphs"]}
    assert plan.order is not None
    assert all(recorded[g] in (None, nodes) for g, nodes in enumerate(plan.order))
    plan.write_pte(tmp_path / "r.pte")
    assert (tmp_path / "r.pte").read_bytes() == r["reordered"].read_bytes()
