"""What the ExecuTorch plug-in promises beyond the conformance cases: the
reserved prefixes and padding, preset pools, result types, the suite's
rules, and a safe plan where ExecuTorch's greedy gives an unsafe one."""

import dataclasses
import sys
import types

import pytest

import memplan
import memplan.executorch as et
from test_executorch_conformance import GraphModule, TensorSpecLike, check_storage_reuse


def spec(nbytes, first, last, mem_id=None, base=None):
    s = TensorSpecLike(nbytes, [first, last], mem_id)
    s.inplace_base = base
    return s


def suite(algos, specs, gm, alignment=16, extra_padding=0):
    """ExecuTorch's MemoryPlanningAlgorithmSuite, as its contract reads:
    every result has bufsizes of one length; the smallest sum wins (the
    first on ties) and its placement is written onto the specs."""
    results = {a.__name__: a(alignment, specs, gm, None, extra_padding) for a in algos}
    assert len({len(r.bufsizes) for r in results.values()}) == 1
    best = min(results, key=lambda k: sum(results[k].bufsizes))
    for s, a in results[best].spec_dict.items():
        s.mem_id, s.mem_obj_id, s.mem_offset = a.mem_id, a.mem_obj_id, a.mem_offset
    return best, results[best].bufsizes


def test_name_and_defaults():
    assert et.algorithm().__name__ == "memplan_auto"
    assert et.algorithm("greedy").__name__ == "memplan_greedy"
    assert et.algorithm("best_fit", effort=0.5).__name__ == "memplan_best_fit"


def test_reserved_prefix_and_padding():
    gm = GraphModule()
    gm.input_mem_buffer_sizes = [0, 48]
    specs = [spec(32, 0, 1), spec(32, 2, 3), spec(100, 1, 2)]
    r = et.algorithm()(16, specs, gm, None, 64)
    # 112 + 32 bytes live at step 1 (and 2), above the 48 reserved, + 64 padding.
    assert r.bufsizes == [0, 48 + 112 + 32 + 64]
    for s in specs:
        assert r.spec_dict[s].mem_offset >= 48 and r.spec_dict[s].mem_id == 1
    g = et.algorithm("greedy")(16, specs, gm, None, 64)
    assert sum(r.bufsizes) <= sum(g.bufsizes)


def test_preset_pools_and_trailing_reservations():
    gm = GraphModule()
    gm.input_mem_buffer_sizes = [0, 0, 0, 0]  # nothing held: memplan drops the empty tail
    specs = [spec(64, 0, 3), spec(64, 1, 2, mem_id=2), spec(16, 4, 5)]
    auto = et.algorithm()(16, specs, gm, None, 0)
    greedy = et.algorithm("greedy")(16, specs, gm, None, 0)
    assert len(auto.bufsizes) == len(greedy.bufsizes) == 3
    assert auto.spec_dict[specs[1]].mem_id == 2 and auto.bufsizes[2] == 64
    assert auto.bufsizes[1] == 64


def test_specs_are_read_not_written():
    specs = [spec(10, 0, 1), spec(20, 1, 2)]
    r = et.algorithm()(8, (s for s in specs), None, None, 0)  # any iterable
    assert [s.mem_offset for s in specs] == [None, None]
    assert [s.mem_id for s in specs] == [None, None]
    assert [s.alignment for s in specs] == [8, 8]       # realign(), as ExecuTorch's algorithms do
    assert r.bufsizes == [0, 16 + 24]


def test_no_specs():
    for name in ("auto", "greedy", "naive"):
        assert et.algorithm(name)(16, [], GraphModule(), None, 0).bufsizes == [0, 0]


def test_safe_where_executorch_greedy_is_not():
    # ExecuTorch's greedy places in-place results last, at their base's
    # offset: B (in place of A) is still alive when C reuses A's bytes.
    def make():
        a = spec(64, 0, 2)
        b = spec(64, 2, 5, base=a)
        c = spec(64, 3, 4)
        return [a, b, c]

    specs = make()
    greedy = et.algorithm("greedy")(16, specs, None, None, 0)
    with pytest.raises(AssertionError, match="storage and lifetime overlap"):
        check_storage_reuse(specs, greedy)
    specs = make()
    auto = et.algorithm()(16, specs, None, None, 0)
    check_storage_reuse(specs, auto)
    assert auto.spec_dict[specs[1]].mem_offset == auto.spec_dict[specs[0]].mem_offset
    assert auto.bufsizes == [0, 128]


def test_suite_keeps_memplan_when_smaller():
    # ExecuTorch's defect 1: greedy needs 128 bytes, 96 is the minimum.
    specs = [spec(96, 0, 1), spec(32, 2, 3), spec(32, 2, 10), spec(32, 5, 10), spec(32, 5, 10)]
    best, bufsizes = suite([et.algorithm("greedy"), et.algorithm()], specs, GraphModule())
    assert best == "memplan_auto" and bufsizes == [0, 96]
    assert all(s.mem_offset is not None for s in specs)
    best, _ = suite([et.algorithm("greedy"), et.algorithm("naive")], specs, GraphModule())
    assert best == "memplan_greedy"


def test_executorch_result_types_when_importable(monkeypatch):
    @dataclasses.dataclass
    class SpecAllocResult:
        mem_id: int
        mem_obj_id: int
        mem_offset: int

    @dataclasses.dataclass
    class MemoryAlgoResult:
        spec_dict: dict
        bufsizes: list

    fake = types.ModuleType("executorch.exir.memory_planning")
    fake.SpecAllocResult, fake.MemoryAlgoResult = SpecAllocResult, MemoryAlgoResult
    for name in ("executorch", "executorch.exir"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "executorch.exir.memory_planning", fake)
    monkeypatch.setattr(et, "_result_types", None)
    specs = [spec(16, 0, 1)]
    r = et.algorithm()(16, specs, None, None, 0)
    # ExecuTorch's class (a subclass of it that also reads as the list of
    # sizes MemoryPlanningPass expects when given the algorithm directly).
    assert isinstance(r, MemoryAlgoResult) and type(r.spec_dict[specs[0]]) is SpecAllocResult
    assert list(r) == r.bufsizes and specs[0].mem_offset == 0
    monkeypatch.setattr(et, "_result_types", None)


def test_given_to_the_pass_directly():
    # MemoryPlanningPass(memory_planning_algo=algo) expects the suite's
    # contract: the sizes as a list, the placement on the specs. Reading the
    # result as a list writes it; a suite reads .bufsizes and writes itself.
    specs = [spec(32, 0, 1), spec(32, 2, 3), spec(64, 1, 2)]
    r = et.algorithm()(16, specs, GraphModule(), None, 0)
    assert [s.mem_offset for s in specs] == [None, None, None]
    assert r[1:] == r.bufsizes[1:] and len(r) == len(r.bufsizes) == 2
    assert [(s.mem_id, s.mem_offset) for s in specs] == [
        (a.mem_id, a.mem_offset) for a in (r.spec_dict[s] for s in specs)]
    check_storage_reuse(specs, r)


def test_own_result_types_without_executorch():
    r = et.algorithm()(16, [spec(16, 0, 1)], None, None, 0)
    assert {f.name for f in dataclasses.fields(r)} == {"spec_dict", "bufsizes"}
    a = next(iter(r.spec_dict.values()))
    assert (a.mem_id, a.mem_obj_id, a.mem_offset) == (1, 0, 0)


def test_effort_zero_still_plans_safely():
    specs = [spec(32 * (i % 5 + 1), i, i + 3) for i in range(40)]
    r = et.algorithm("auto", effort=0)(16, specs, None, None, 0)
    check_storage_reuse(specs, r)
    g = et.algorithm("greedy")(16, [spec(32 * (i % 5 + 1), i, i + 3) for i in range(40)], None, None, 0)
    assert sum(r.bufsizes) <= sum(g.bufsizes)
