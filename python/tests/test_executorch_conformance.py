"""The 300 ExecuTorch conformance cases driven through the plug-in
(memplan.executorch.algorithm) with duck-typed spec objects, as ExecuTorch's
MemoryPlanningAlgorithmSuite would call it.

- greedy, greedy_no_overlap, naive: bufsizes and every (mem_id, mem_obj_id,
  mem_offset) equal ExecuTorch's, with TensorSpec-like specs (nbytes()) and
  with specs that only have allocated_memory/realign.
- auto: passes ExecuTorch's storage-reuse rule, honours presets and the
  reserved prefixes, and is never larger than ExecuTorch's result nor than
  greedy on the same specs; its bufsizes has greedy's length (the suite
  asserts that every algorithm's has the same).
"""

import json

import pytest

import memplan
import memplan.executorch as et
from conftest import CONFORMANCE

CASES = sorted(CONFORMANCE.glob("*.json"))


def align_up(value, alignment):
    return (value + alignment - 1) // alignment * alignment


class TensorSpecLike:
    """What the plug-in reads of ExecuTorch's TensorSpec."""

    def __init__(self, nbytes, lifetime, mem_id):
        self._nbytes = nbytes
        self.alignment = 16  # ExecuTorch's default spec alignment
        self.lifetime = list(lifetime)
        self.mem_id = mem_id
        self.inplace_base = None
        self.mem_obj_id = None
        self.mem_offset = None

    @property
    def allocated_memory(self):
        return align_up(self._nbytes, self.alignment)

    def realign(self, alignment):
        self.alignment = alignment
        return self.allocated_memory

    def nbytes(self):
        return self._nbytes


class MinimalSpec(TensorSpecLike):
    """No nbytes(): only allocated_memory and realign."""

    nbytes = None


class GraphModule:
    pass


def load(path, spec_class=TensorSpecLike):
    case = json.loads(path.read_text())
    specs = [spec_class(s["nbytes"], s["lifetime"], s["mem_id"]) for s in case["specs"]]
    by_id = {s["id"]: spec for s, spec in zip(case["specs"], specs)}
    for s, spec in zip(case["specs"], specs):
        if s["inplace_base"] is not None:
            spec.inplace_base = by_id[s["inplace_base"]]
    gm = GraphModule()
    if case["input_mem_buffer_sizes"] is not None:
        gm.input_mem_buffer_sizes = list(case["input_mem_buffer_sizes"])
    return case, specs, gm


def run(algo, case, specs, gm):
    return algo(case["alignment"], specs, gm, None, case["extra_padding"])


def root(spec):
    while spec.inplace_base is not None:
        spec = spec.inplace_base
    return spec


def check_storage_reuse(specs, result):
    """ExecuTorch's rule (Verifier.verify_storage_reuse): two specs whose
    bytes [offset, offset + allocated_memory) meet in one mem_id have
    disjoint lifetimes (an in-place pair excepted) and the same mem_obj_id."""
    by_pool = {}
    for spec in specs:
        a = result.spec_dict[spec]
        by_pool.setdefault(a.mem_id, []).append((a.mem_offset, a.mem_offset + spec.allocated_memory, spec, a))
    for items in by_pool.values():
        items.sort(key=lambda x: x[0])
        active = []
        for start, end, spec, a in items:
            active = [x for x in active if x[1] > start]
            for _, _, other, b in active:
                if end <= start:
                    continue
                lifetimes_meet = spec.lifetime[0] <= other.lifetime[1] and other.lifetime[0] <= spec.lifetime[1]
                if lifetimes_meet and root(spec) is not root(other):
                    raise AssertionError(f"storage and lifetime overlap: {spec.lifetime} at {a.mem_offset} "
                                         f"and {other.lifetime} at {b.mem_offset}, mem_id {a.mem_id}")
                assert a.mem_obj_id == b.mem_obj_id, "storage overlap across mem_obj_ids"
            if end > start:
                active.append((start, end, spec, a))


@pytest.mark.parametrize("spec_class", [TensorSpecLike, MinimalSpec], ids=["tensorspec", "minimal"])
@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_executorch_algorithm_is_exact(path, spec_class):
    case, specs, gm = load(path, spec_class)
    algo = et.algorithm(case["algorithm"])
    assert algo.__name__ == "memplan_" + case["algorithm"]
    result = run(algo, case, specs, gm)
    assert result.bufsizes == case["expected"]["bufsizes"]
    got = {s["id"]: result.spec_dict[spec] for s, spec in zip(case["specs"], specs)}
    assert len(result.spec_dict) == len(specs)
    for e in case["expected"]["allocations"]:
        a = got[e["id"]]
        assert (a.mem_id, a.mem_obj_id, a.mem_offset) == (e["mem_id"], e["mem_obj_id"], e["mem_offset"]), e["id"]
    # The plug-in realigned each spec, as ExecuTorch's algorithms do.
    assert all(spec.alignment == case["alignment"] for spec in specs)


def is_safe(specs, result):
    try:
        check_storage_reuse(specs, result)
        return True
    except AssertionError:
        return False


def why_no_bar(case, specs, result):
    """Why an ExecuTorch plan is no bar for a safe, aligned plan to clear
    (None: it is one). ExecuTorch's greedy places in-place results last, at
    their base's offset, where another tensor may live; lays its objects out
    right after a reserved prefix that is not a multiple of the alignment;
    and drops the reservation of a pool the graph does not use itself."""
    if not is_safe(specs, result):
        return "unsafe"
    if any(result.spec_dict[s].mem_offset % case["alignment"] for s in specs):
        return "misaligned"
    for m, held in enumerate(case["input_mem_buffer_sizes"] or []):
        if held and (m >= len(result.bufsizes) or result.bufsizes[m] < held):
            return "drops a reservation"
    return None


_auto = {}


def auto_and_greedy(path):
    """(case, specs, auto's result, greedy's result, why greedy is no bar)."""
    if path not in _auto:
        case, specs, gm = load(path)
        _, greedy_specs, greedy_gm = load(path)
        greedy = run(et.algorithm("greedy"), case, greedy_specs, greedy_gm)
        result = run(et.algorithm("auto"), case, specs, gm)
        _auto[path] = case, specs, result, greedy, why_no_bar(case, greedy_specs, greedy)
    return _auto[path]


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_auto_is_safe_and_no_larger(path):
    case, specs, result, greedy, no_bar = auto_and_greedy(path)
    assert type(result).__name__ == "MemoryAlgoResult"
    assert len(result.spec_dict) == len(specs)
    assert result.bufsizes[0] == 0
    check_storage_reuse(specs, result)
    reserved = case["input_mem_buffer_sizes"] or []
    held = [m for m, r in enumerate(reserved) if r > 0]
    # ExecuTorch's suite wants bufsizes of one length: greedy's, unless
    # greedy dropped a pool a control-flow body holds bytes in.
    assert len(result.bufsizes) == max([len(greedy.bufsizes)] + [m + 1 for m in held])
    for m in held:
        assert result.bufsizes[m] >= reserved[m]
    if no_bar is None:
        assert sum(result.bufsizes) <= sum(greedy.bufsizes)
        if case["algorithm"] == "greedy_no_overlap":
            assert sum(result.bufsizes) <= sum(case["expected"]["bufsizes"])
    if case["algorithm"] == "naive":
        _, naive_specs, naive_gm = load(path)
        naive = run(et.algorithm("naive"), case, naive_specs, naive_gm)
        if why_no_bar(case, naive_specs, naive) is None:  # naive leaves out extra_padding
            used = sum(1 for b in result.bufsizes[1:] if b)
            assert sum(result.bufsizes) <= sum(naive.bufsizes) + used * case["extra_padding"]
    for spec in specs:
        a = result.spec_dict[spec]
        r = root(spec)
        assert a.mem_id == (r.mem_id if r.mem_id is not None else 1)
        assert a.mem_offset % case["alignment"] == 0
        assert a.mem_offset >= (reserved[a.mem_id] if a.mem_id < len(reserved) else 0)
        assert a.mem_offset + spec.allocated_memory <= result.bufsizes[a.mem_id]
        if spec.inplace_base is not None:
            assert a.mem_offset == result.spec_dict[r].mem_offset


def test_auto_summary(capsys):
    smaller = equal = saved = 0
    no_bar = {}
    for path in CASES:
        case, specs, result, greedy, why = auto_and_greedy(path)
        if why:
            no_bar[why] = no_bar.get(why, 0) + 1
        elif sum(result.bufsizes) < sum(greedy.bufsizes):
            smaller += 1
            saved += sum(greedy.bufsizes) - sum(result.bufsizes)
        else:
            equal += 1
    with capsys.disabled():
        print(f"\nauto vs ExecuTorch's greedy on {len(CASES)} cases: smaller on {smaller} "
              f"({saved} bytes in all), equal on {equal}; greedy's plan no bar on "
              f"{sum(no_bar.values())} {no_bar}")
    assert smaller + equal + sum(no_bar.values()) == 300
    assert smaller > 50


def test_every_case_is_here():
    assert len(CASES) == 300
    algorithms = {json.loads(p.read_text())["algorithm"] for p in CASES}
    assert algorithms == {"greedy", "greedy_no_overlap", "naive"}

