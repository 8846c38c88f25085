"""Control flow in ExecuTorch's runtime: programs whose torch.cond results
stay alive while a later cond runs, conds nested in a branch, a chain of
conds, a cond reading a registered buffer the method then updates, map,
scan, and conds in map's body (models written here, random weights). Each is exported three times
(torch 2.13.0, ExecuTorch 1.5.1):

- with ExecuTorch's default memory planning;
- with ``memplan.executorch.MemoryPlanningPass()`` through
  ``memplan.executorch.to_executorch`` (which verifies and replays the
  emitted program);
- with memplan's ExecuTorch-exact plug-in,
  ``MemoryPlanningPass(memory_planning_algo=memplan.executorch.algorithm("greedy"))``.

All three run in ``executorch.runtime`` and are compared with eager
PyTorch. memplan's pass must equal eager on every model; where
ExecuTorch's own program does not, the test records it and checks that
``memplan verify`` rejects that program (exit 1). docs/executorch.md shows
the table these tests measure.
"""

import copy
import dataclasses
import functools
import os
import pathlib
import tempfile
from typing import Any, Dict, List, Tuple

import pytest

import memplan
import memplan.executorch
from conftest import ROOT, doc_table, run_cli, runtime_package

DOC = ROOT / "docs" / "executorch.md"
WORK = pathlib.Path(tempfile.mkdtemp(prefix="runtime-controlflow-", dir=os.environ.get("MEMPLAN_BUILD_DIR")))


def _torch():
    return runtime_package("torch")


def _models() -> Dict[str, Any]:
    """name -> (module, [inputs of each call]); the calls run in order on
    one loaded program (state carries over, as in the runtime)."""
    torch = _torch()
    nn = torch.nn
    from torch._higher_order_ops.map import map as control_flow_map
    from torch._higher_order_ops.scan import scan

    def linears(n):
        return nn.ModuleList(nn.Linear(16, 16) for _ in range(n))

    class SequentialConds(nn.Module):
        """Two conds, the first one's result alive while the second runs."""

        def __init__(self):
            super().__init__()
            self.l = linears(4)

        def forward(self, x):
            y = torch.cond(x.sum() > 0, lambda x: torch.relu(self.l[0](x)),
                           lambda x: torch.sigmoid(self.l[1](x)), (x,))
            z = torch.cond(x.mean() > 0, lambda x: self.l[2](x) * 2, lambda x: self.l[3](x) - 1, (x,))
            return y + z

    class NestedCond(nn.Module):
        """A cond in a branch of a cond, its result the branch's result,
        alive while a later cond runs."""

        def __init__(self):
            super().__init__()
            self.l = linears(4)

        def forward(self, x):
            def outer_true(x):
                u = self.l[0](x)
                return torch.cond(u.sum() > 0, lambda u: torch.relu(self.l[1](u)),
                                  lambda u: torch.tanh(self.l[2](u)), (u,))

            y = torch.cond(x.sum() > 0, outer_true, lambda x: self.l[3](x) * 3, (x,))
            z = torch.cond(y.sum() > 0, lambda y: self.l[3](y), lambda y: y * 2, (y,))
            return y * z

    class CondChain(nn.Module):
        """Four conds, each on the last one's result, all kept for the end."""

        def __init__(self):
            super().__init__()
            self.l = linears(8)

        def forward(self, x):
            outs, h = [], x
            for i in range(4):
                a, b = self.l[2 * i], self.l[2 * i + 1]
                h = torch.cond(h.sum() > 0, lambda h: torch.relu(a(h)),
                               lambda h: torch.sigmoid(b(h)) - 0.5, (h,))
                outs.append(h)
            return outs[0] * outs[1] + outs[2] * outs[3]

    class CondBuffer(nn.Module):
        """A cond reading a registered buffer that the method then updates,
        and a second cond on the first one's result."""

        def __init__(self):
            super().__init__()
            self.l = linears(2)
            self.register_buffer("acc", torch.zeros(16))

        def forward(self, x):
            y = torch.cond(x.sum() > 0, lambda x, acc: torch.relu(self.l[0](x)) + acc,
                           lambda x, acc: self.l[1](x) - acc, (x, self.acc))
            self.acc.add_(y.mean(0))
            z = torch.cond(y.mean() > 0, lambda y: y * 2, lambda y: torch.sigmoid(self.l[1](y)), (y,))
            return y + z, self.acc * 1.0

    class Map(nn.Module):
        """torch's control-flow map over the first dimension, with an
        operand it does not map."""

        def __init__(self):
            super().__init__()
            self.l = linears(1)

        def forward(self, xs, y):
            return control_flow_map(lambda x, y: torch.relu(self.l[0](x)) + y, xs, y) * 2

    class CondInMap(nn.Module):
        """Two conds in map's body, the first one's result alive while the
        second runs, on every iteration."""

        def __init__(self):
            super().__init__()
            self.l = linears(1)

        def forward(self, xs):
            def body(x):
                u = torch.cond(x.sum() > 0, lambda x: torch.relu(self.l[0](x)), lambda x: x * 3, (x,))
                v = torch.cond(x.mean() > 0, lambda x: self.l[0](x) + 1, lambda x: x - 1, (x,))
                return u * v

            return control_flow_map(body, xs)

    class Scan(nn.Module):
        """A recurrence as torch's scan: a carry and a stacked output."""

        def __init__(self):
            super().__init__()
            self.l = linears(1)

        def forward(self, h, xs):
            def step(h, x):
                n = torch.tanh(self.l[0](h) + x)
                return n, n * 2

            last, ys = scan(step, h, xs)
            return last + 1, ys

    gen = torch.Generator().manual_seed(0)

    def g(*shape):
        return torch.randn(*shape, generator=gen)

    def both_signs(module):
        x = g(2, 16).abs()
        return module, [(x,), (-x,), (x,)]

    torch.manual_seed(0)
    return {
        "sequential_conds": both_signs(SequentialConds()),
        "nested_cond": both_signs(NestedCond()),
        "cond_chain": both_signs(CondChain()),
        "cond_buffer": both_signs(CondBuffer()),
        "map": (Map(), [(g(3, 2, 16), g(2, 16))]),
        "scan": (Scan(), [(g(2, 16), g(4, 2, 16))]),
        "cond_in_map": (CondInMap(), [(torch.cat([g(2, 2, 16).abs(), -g(2, 2, 16).abs()]),)]),
    }


MODELS = ["sequential_conds", "nested_cond", "cond_chain", "cond_buffer", "map", "scan", "cond_in_map"]

# What ExecuTorch 1.5.1's own planning gives on these models (the tests
# check it): its program's outputs differ from eager PyTorch where a cond's
# result lives across a later cond.
EXECUTORCH_CORRECT = {"sequential_conds": False, "nested_cond": False, "cond_chain": False,
                      "cond_buffer": False, "map": True, "scan": True, "cond_in_map": False}


@dataclasses.dataclass
class Case:
    name: str
    calls: List[tuple]
    eager: List[List[Any]]
    default: bytes
    memplan: bytes
    greedy_plugin: bytes
    memplan_greedy: bytes
    plan: Dict[str, Any]           # what the pass computed (MemoryPlanningPass.plans[0])
    placements: List[tuple]        # (mem_id, offset) of every spec the pass placed
    default_path: pathlib.Path = None
    memplan_path: pathlib.Path = None


def _outputs(y) -> List[Any]:
    return [t.clone() for t in (y if isinstance(y, (tuple, list)) else (y,))]


def _eager(module, calls):
    torch = _torch()
    module = copy.deepcopy(module)
    with torch.no_grad():
        return [_outputs(module(*inputs)) for inputs in calls]


def run_program(pte: bytes, calls) -> List[List[Any]]:
    rt = runtime_package("executorch.runtime")
    method = rt.Runtime.get().load_program(pte).load_method("forward")
    return [_outputs(method.execute(list(inputs))) for inputs in calls]


def _placed(manager) -> List[tuple]:
    """(mem_id, offset) of every planned tensor of the emitted program."""
    out = set()
    for value in manager.executorch_program.execution_plan[0].values:
        info = getattr(value.val, "allocation_info", None)
        if info is not None:
            out.add((info.memory_id, (info.memory_offset_high << 32) | info.memory_offset_low))
    return sorted(out)


def _sizes(pte_manager) -> List[int]:
    return list(pte_manager.executorch_program.execution_plan[0].non_const_buffer_sizes)


@functools.lru_cache(maxsize=None)
def _edge(name: str):
    """(module, calls, edge program); to_executorch changes an edge program:
    every export works on a copy."""
    torch = _torch()
    exir = runtime_package("executorch.exir")
    module, calls = _models()[name]
    module.eval()
    with torch.no_grad():
        return module, calls, exir.to_edge(torch.export.export(copy.deepcopy(module), calls[0], strict=False))


@functools.lru_cache(maxsize=None)
def case(name: str) -> Case:
    torch = _torch()
    exir = runtime_package("executorch.exir")
    from executorch.exir.passes import MemoryPlanningPass as ETPass

    module, calls, edge = _edge(name)
    eager = _eager(module, calls)
    with torch.no_grad():
        def export(planning_pass):
            return copy.deepcopy(edge).to_executorch(exir.ExecutorchBackendConfig(memory_planning_pass=planning_pass))

        default = copy.deepcopy(edge).to_executorch()
        mp = memplan.executorch.MemoryPlanningPass()
        placements: List[tuple] = []
        real = mp.run

        def recording_run(gm, sig=None):
            result = real(gm, sig)
            placements.extend(_spec_placements(gm))
            return result

        mp.run = recording_run
        planned = memplan.executorch.to_executorch(copy.deepcopy(edge),
                                                   exir.ExecutorchBackendConfig(memory_planning_pass=mp))
        greedy_plugin = export(ETPass(memory_planning_algo=memplan.executorch.algorithm("greedy")))
        memplan_greedy = memplan.executorch.to_executorch(copy.deepcopy(edge), algorithm="greedy")
    c = Case(name, calls, eager, bytes(default.buffer), bytes(planned.buffer), bytes(greedy_plugin.buffer),
             bytes(memplan_greedy.buffer), dict(mp.plans[0], program_sizes=_sizes(planned),
                                               default_sizes=_sizes(default), program_placed=_placed(planned)),
             sorted(set(placements)))
    c.default_path = WORK / f"{name}.default.pte"
    c.memplan_path = WORK / f"{name}.memplan.pte"
    c.default_path.write_bytes(c.default)
    c.memplan_path.write_bytes(c.memplan)
    return c


def _spec_placements(gm) -> List[tuple]:
    """(mem_id, offset) of every spec of the graph and its bodies that has one."""
    from torch.utils._pytree import tree_flatten
    out = []
    for sub in gm.modules():
        for node in getattr(getattr(sub, "graph", None), "nodes", []):
            for spec in tree_flatten(node.meta.get("spec"))[0]:
                if getattr(spec, "mem_id", None) is not None and getattr(spec, "mem_offset", None) is not None:
                    out.append((spec.mem_id, spec.mem_offset))
    return out


def _close(a, b) -> bool:
    torch = _torch()
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if len(x) != len(y):
            return False
        for u, v in zip(x, y):
            if u.shape != v.shape or not torch.allclose(u, v.to(u.dtype), rtol=1e-4, atol=1e-5):
                return False
    return True


# ---- the tests -----------------------------------------------------------

@pytest.mark.parametrize("name", MODELS)
def test_memplan_program_equals_eager(name):
    c = case(name)
    assert _close(run_program(c.memplan, c.calls), c.eager), f"{name}: memplan's program differs from eager"
    run_cli("verify", c.memplan_path)
    run_cli("replay", c.memplan_path)


@pytest.mark.parametrize("name", MODELS)
def test_executorch_default_as_recorded(name):
    """ExecuTorch's own program is right exactly where EXECUTORCH_CORRECT
    says; where it is wrong, memplan verify rejects it (exit 1)."""
    c = case(name)
    correct = _close(run_program(c.default, c.calls), c.eager)
    assert correct == EXECUTORCH_CORRECT[name], f"{name}: ExecuTorch's program correct: {correct}"
    verdict = run_cli("verify", c.default_path, check=False)
    assert verdict.returncode == (0 if correct else 1), (verdict.stdout, verdict.stderr)
    if not correct:
        assert "share bytes" in verdict.stderr + verdict.stdout
        with pytest.raises(memplan.PlanError, match="unsafe"):
            memplan.executorch.verify(c.default)


@pytest.mark.parametrize("name", MODELS)
def test_exact_plugin_is_executorch(name):
    """The per-graph plug-in in ExecuTorch-exact mode gives ExecuTorch's
    program byte for byte (its defect included: it plans graph by graph)."""
    c = case(name)
    assert c.greedy_plugin == c.default
    assert _close(run_program(c.greedy_plugin, c.calls), c.eager) == EXECUTORCH_CORRECT[name]


@pytest.mark.parametrize("name", MODELS)
def test_pass_in_exact_mode_keeps_executorch_where_correct(name):
    c = case(name)
    if EXECUTORCH_CORRECT[name]:
        assert c.memplan_greedy == c.default
    else:
        assert c.memplan_greedy != c.default
    assert _close(run_program(c.memplan_greedy, c.calls), c.eager)


@pytest.mark.parametrize("name", MODELS)
def test_program_carries_the_plan_the_pass_computed(name):
    c = case(name)
    assert c.plan["program_sizes"] == c.plan["bufsizes"]
    assert set(c.plan["program_placed"]) <= set(c.placements)
    assert sum(c.plan["bufsizes"]) >= c.plan["lower_bound"] > 0
    if c.plan["kept_executorch"]:
        assert c.memplan == c.default
    else:
        assert c.plan["conflict"] is not None or sum(c.plan["bufsizes"]) < sum(c.plan["default_sizes"])


def test_unmapped_operand_gets_no_bytes():
    """ExecuTorch plans the operands map does not map in the body too (its
    own TODO): here y and the Linear's weight and bias, which the body takes
    as operands. The runtime passes the parent's tensors, so the pass gives
    the body's copies no bytes."""
    c = case("map")
    assert c.plan["operands_without_bytes"] == 3
    assert sum(c.plan["bufsizes"]) < sum(c.plan["default_sizes"])


def test_verify_gate_raises_on_the_first_conflict():
    c = case("sequential_conds")
    with pytest.raises(memplan.PlanError, match=r"pool 1: .* share bytes"):
        memplan.executorch.verify(c.default)
    v, r = memplan.executorch.verify(c.memplan)
    assert v.ok and r.ok and r.reads > 0


def test_pool_capacity_spills_into_the_next_pool():
    """capacities and spill_order as the CLI's: pool 1 held to 1 KiB, the
    rest goes to pool 2; the program passes the gate and equals eager."""
    torch = _torch()
    module, calls, edge = _edge("sequential_conds")
    with torch.no_grad():
        manager = memplan.executorch.to_executorch(copy.deepcopy(edge), capacities={1: 1024}, spill_order=[1, 2])
        sizes = _sizes(manager)
        assert len(sizes) == 3 and sizes[1] <= 1024 and sizes[2] > 0, sizes
        assert sum(sizes) >= case("sequential_conds").plan["lower_bound"]
        assert _close(run_program(bytes(manager.buffer), calls), _eager(module, calls))
        with pytest.raises(memplan.PlanError, match="capacity"):
            memplan.executorch.to_executorch(copy.deepcopy(edge), capacities={1: 100})


@functools.lru_cache(maxsize=None)
def replanned(name: str) -> Tuple[bytes, int]:
    """`memplan plan default.pte --write-pte`: the program and its bytes."""
    c = case(name)
    out = WORK / f"{name}.replanned.pte"
    run_cli("plan", "-q", c.default_path, "--write-pte", out)
    pte = out.read_bytes()
    return pte, _sizes_of_pte(out)


def _sizes_of_pte(path: pathlib.Path) -> int:
    import json
    report = json.loads(run_cli("report", "--json", path).stdout)
    return sum(p["arena_bytes"] for p in report["pools"])


@pytest.mark.parametrize("name", MODELS)
def test_program_replanned_by_the_cli_equals_eager(name):
    """The .pte planner reads the emitted chain (moves, branches, loops):
    its program of ExecuTorch's export runs right too."""
    c = case(name)
    pte, _ = replanned(name)
    assert _close(run_program(pte, c.calls), c.eager)


def test_docs_show_the_measured_table():
    rows = ["| model | ExecuTorch correct | ExecuTorch bytes | memplan correct | memplan bytes | lower bound | "
            "`plan --write-pte` bytes |",
            "|---|---|---:|---|---:|---:|---:|"]
    for name in MODELS:
        c = case(name)
        et = _close(run_program(c.default, c.calls), c.eager)
        mine = _close(run_program(c.memplan, c.calls), c.eager)
        rows.append(f"| {name} | {'yes' if et else 'no'} | {sum(c.plan['default_sizes']):,} | "
                    f"{'yes' if mine else 'no'} | {sum(c.plan['bufsizes']):,} | {c.plan['lower_bound']:,} | "
                    f"{replanned(name)[1]:,} |")
    doc_table(DOC, "executorch-controlflow", "\n".join(rows) + "\n")
