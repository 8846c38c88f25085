"""memplan in ExecuTorch's export.

Two ways in. :class:`MemoryPlanningPass` replaces ExecuTorch's memory
planning pass and plans each method whole, its ``torch.cond``, ``map`` and
``scan`` bodies included (ExecuTorch's per-graph planning is unsafe there);
:func:`to_executorch` exports with it and :func:`verify` checks and replays
the emitted program::

    import memplan.executorch
    manager = memplan.executorch.to_executorch(edge)   # or
    # ExecutorchBackendConfig(memory_planning_pass=memplan.executorch.MemoryPlanningPass())

:func:`algorithm` is an algorithm for ExecuTorch's own pass, called once
per graph (see its note on control flow).

ExecuTorch's ``MemoryPlanningPass`` takes a callable
``algo(alignment, specs, graph_module, graph_signature, extra_padding)``
returning a ``MemoryAlgoResult``; ``MemoryPlanningAlgorithmSuite`` runs
several and keeps the one with the smallest ``sum(bufsizes)``. Add memplan
beside ExecuTorch's greedy::

    import memplan.executorch
    from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite, greedy
    suite = MemoryPlanningAlgorithmSuite(algo_list=[greedy, memplan.executorch.algorithm()])
    # to_executorch(ExecutorchBackendConfig(memory_planning_pass=MemoryPlanningPass(memory_planning_algo=suite)))

What the algorithm reads of each spec: ``lifetime`` ([first, last], closed),
``allocated_memory`` (and ``realign(alignment)``, which it calls, as
ExecuTorch's own algorithms do), ``mem_id`` (None or a preset pool),
``inplace_base`` (a spec whose storage this one reuses, or None), and
``nbytes()`` when the spec has it. It honours
``graph_module.input_mem_buffer_sizes`` (the bytes control-flow bodies hold
at the front of each pool) and ``extra_padding``. It returns ExecuTorch's
own ``MemoryAlgoResult``/``SpecAllocResult`` when
``executorch.exir.memory_planning`` can be imported, else objects with the
same attributes (``spec_dict``, ``bufsizes``; ``mem_id``, ``mem_obj_id``,
``mem_offset``). It never writes onto the specs other than through
``realign``: the suite writes the winner's placement.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional

from . import _memplan
from ._memplan import InputError, PlanError

__all__ = ["MemoryPlanningPass", "algorithm", "MemoryAlgoResult", "SpecAllocResult", "result_types",
           "to_executorch", "verify"]


@dataclass
class SpecAllocResult:
    """Where one spec goes (ExecuTorch's ``SpecAllocResult`` when it is not
    installed)."""

    mem_id: int
    mem_obj_id: int
    mem_offset: int


@dataclass
class MemoryAlgoResult:
    """An algorithm's result (ExecuTorch's ``MemoryAlgoResult`` when it is
    not installed): ``spec_dict`` maps each spec to its SpecAllocResult;
    ``bufsizes[k]`` is pool k's size, ``bufsizes[0]`` is 0."""

    spec_dict: Dict[Any, SpecAllocResult]
    bufsizes: List[int]


_result_types: Optional[tuple] = None


def result_types() -> tuple:
    """``(MemoryAlgoResult, SpecAllocResult)``: ExecuTorch's classes when
    ``executorch.exir.memory_planning`` can be imported, else this module's."""
    global _result_types
    if _result_types is None:
        try:
            from executorch.exir.memory_planning import MemoryAlgoResult as ET_Result
            from executorch.exir.memory_planning import SpecAllocResult as ET_Alloc
            _result_types = (ET_Result, ET_Alloc)
        except ImportError:
            _result_types = (MemoryAlgoResult, SpecAllocResult)
    return _result_types


_pass_results: Dict[type, type] = {}


def _pass_result(Result: type) -> type:
    """The result class, usable under both of ExecuTorch's contracts.

    In a ``MemoryPlanningAlgorithmSuite`` the result is a
    ``MemoryAlgoResult`` (``spec_dict``, ``bufsizes``) and the suite writes
    the winner's placement onto the specs. Given to
    ``MemoryPlanningPass(memory_planning_algo=...)`` directly, the pass
    expects the suite's contract instead: a list of buffer sizes, the
    placement already on the specs. The result acts as that list, and the
    first time it is read as one it writes its placement onto the specs (a
    suite never reads it so, and writes its winner's placement itself)."""
    cls = _pass_results.get(Result)
    if cls is None:
        class PassResult(Result):  # type: ignore[misc, valid-type]
            def _placed(self) -> List[int]:
                if not getattr(self, "_written", False):
                    for spec, a in self.spec_dict.items():
                        spec.mem_id, spec.mem_obj_id, spec.mem_offset = a.mem_id, a.mem_obj_id, a.mem_offset
                    self._written = True
                return self.bufsizes

            def __getitem__(self, i: Any) -> Any:
                return self._placed()[i]

            def __iter__(self) -> Any:
                return iter(self._placed())

            def __len__(self) -> int:
                return len(self._placed())

        PassResult.__name__ = PassResult.__qualname__ = Result.__name__
        cls = _pass_results[Result] = PassResult
    return cls


def _align_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            return int(value)  # torch SymInt, numpy integers
        except (TypeError, ValueError):
            raise InputError(f"{what}: expected an integer, got {value!r}") from None
    return value


def _read_sizes(spec: Any, i: int, alignment: int, realigned: Optional[int] = None) -> tuple:
    """(first, last, nbytes) of any spec object, checked, with messages
    naming the spec. ExecuTorch's greedy orders specs by ``allocated_memory``
    as it finds it (rounded to the spec's own alignment, 16 unless something
    realigned it), memplan's by nbytes rounded to 16; both place
    ``realign(alignment)`` bytes."""
    what = f"specs[{i}]"
    life = getattr(spec, "lifetime", None)
    try:
        lo, hi = life
    except (TypeError, ValueError):
        lo = hi = None
    if lo is None or hi is None:
        raise InputError(f"{what}.lifetime: expected [first, last], got {life!r}")
    lo, hi = _int(lo, what + ".lifetime[0]"), _int(hi, what + ".lifetime[1]")
    if not hasattr(spec, "allocated_memory"):
        raise InputError(f"{what}: {type(spec).__name__} has no allocated_memory")
    if realigned is None:
        before = _int(spec.allocated_memory, what + ".allocated_memory")
        realign = getattr(spec, "realign", None)
        size = _int(realign(alignment), what + ".realign()") if callable(realign) else _align_up(before, alignment)
    else:  # realign() was called already: what it was before is lost
        size = _int(realigned, what + ".realign()")
        before = size
    if before < 0 or size < 0:
        raise InputError(f"{what}.allocated_memory: {min(before, size)} is negative")
    nb = getattr(spec, "nbytes", None)
    if nb is not None:
        raw = _int(nb() if callable(nb) else nb, what + ".nbytes")
        if raw >= 0 and _align_up(raw, alignment) == size:
            return lo, hi, raw
    # Without nbytes: one value that rounds to both sizes when the spec was
    # at its default alignment (16) before realign.
    return lo, hi, size if alignment <= 16 else before


def algorithm(name: str = "auto", effort: float = 1.0, *, time_limit: float = 0.0) -> Callable[..., Any]:
    """Returns a memory-planning algorithm for ExecuTorch, with its signature
    ``(alignment, specs, graph_module, graph_signature, extra_padding)``.

    name: ``"auto"`` (memplan's best: never larger than ExecuTorch's greedy
        on the same specs, always safe) or any name of
        ``memplan.algorithms()``; ``"greedy"``, ``"greedy_no_overlap"`` and
        ``"naive"`` reproduce ExecuTorch's own bit for bit.
    effort: scales the search work of ``auto`` (deterministic).
    time_limit: optional wall-clock cap on the search, in seconds.

    The callable's ``__name__`` is ``memplan_<name>`` (the suite logs it).
    Results of algorithms other than ExecuTorch's own are verified before
    they are returned; an unsafe plan raises PlanError instead.

    Unsafe with control flow: ExecuTorch calls it once per graph, each
    ``torch.cond``/``map``/``scan`` body from offset 0 of the same pools,
    and the runtime moves a cond branch's result into the parent by pointer
    (MoveCall): the result keeps the body's bytes, which the next body
    reuses. A program where a cond's result is alive while a later cond
    runs, or a cond nests in a branch, then computes wrong outputs (as with
    ExecuTorch's own greedy). Plan such programs with
    :class:`MemoryPlanningPass`, which plans a method's graphs together.
    """
    known = {a[0]: bool(a[2]) for a in _memplan.algorithms()}
    if name not in known:
        raise InputError(f"algorithm: unknown algorithm '{name}' (known: {', '.join(sorted(known))})")
    if not (effort >= 0) or math.isinf(effort):
        raise InputError(f"effort: {effort} is not a non-negative number")
    if not (time_limit >= 0):
        raise InputError(f"time_limit: {time_limit} is not a non-negative number")
    executorch_exact = known[name]

    def plan_specs(alignment: int, specs: Iterable[Any], graph_module: Any = None,
                   graph_signature: Any = None, extra_padding: int = 0) -> Any:
        specs = list(specs)
        alignment = _int(alignment, "alignment")
        if alignment < 1 or alignment & (alignment - 1):
            raise InputError(f"alignment: {alignment} is not a power of two")
        extra_padding = _int(extra_padding or 0, "extra_padding")
        if extra_padding < 0:
            raise InputError(f"extra_padding: {extra_padding} is negative")
        index = {id(s): i for i, s in enumerate(specs)}
        n = len(specs)
        nbytes, first, last, mem_id, base = [0] * n, [0] * n, [0] * n, [0] * n, [-1] * n
        for i, spec in enumerate(specs):
            life = getattr(spec, "lifetime", None)
            try:
                lo, hi = life
            except (TypeError, ValueError):
                lo = hi = None
            nb = getattr(spec, "nbytes", None)
            realign = getattr(spec, "realign", None)
            if type(lo) is int and type(hi) is int and nb is not None and realign is not None:
                # ExecuTorch's TensorSpec: the common case, kept short.
                raw = nb() if callable(nb) else nb
                size = realign(alignment)
                if type(raw) is int and raw >= 0 and (raw + alignment - 1) // alignment * alignment == size:
                    first[i], last[i], nbytes[i] = lo, hi, raw
                else:
                    first[i], last[i], nbytes[i] = _read_sizes(spec, i, alignment, realigned=size)
            else:
                first[i], last[i], nbytes[i] = _read_sizes(spec, i, alignment)
            m = getattr(spec, "mem_id", None)
            if m is not None:
                m = m if type(m) is int else _int(m, f"specs[{i}].mem_id")
                if m < 1:
                    raise InputError(f"specs[{i}].mem_id: {m} out of range (0 holds constants)")
                mem_id[i] = m
            b = getattr(spec, "inplace_base", None)
            if b is not None:
                j = index.get(id(b), -1)  # a base that is not planned: an ordinary spec
                base[i] = -1 if j == i else j
        reserved = getattr(graph_module, "input_mem_buffer_sizes", None) if graph_module is not None else None
        reserved = [_int(x, "input_mem_buffer_sizes") for x in (reserved or [])]
        if any(x < 0 for x in reserved):
            raise InputError(f"input_mem_buffer_sizes: negative size in {reserved}")

        r = _memplan._plan_specs(nbytes, first, last, mem_id, base, name, alignment, extra_padding,
                                 reserved, float(effort), float(time_limit))
        if not r["ok"] and not executorch_exact:
            raise PlanError(f"memplan {name}: plan failed verification: {r['violation']}")
        bufsizes = list(r["bufsizes"])
        if not executorch_exact:
            # ExecuTorch's suite wants every algorithm's bufsizes of one
            # length (greedy's: up to the largest used mem_id, at least 2).
            # Trailing pools memplan keeps only for an empty reservation go.
            used = max(r["mem_ids"], default=1)
            while len(bufsizes) > used + 1 and bufsizes[-1] == 0:
                bufsizes.pop()
        Result, Alloc = result_types()
        spec_dict = {spec: Alloc(m, o, off)
                     for spec, m, o, off in zip(specs, r["mem_ids"], r["mem_obj_ids"], r["offsets"])}
        return _pass_result(Result)(spec_dict, bufsizes)

    fname = f"memplan_{name}"
    plan_specs.__name__ = fname
    plan_specs.__qualname__ = fname
    plan_specs.__doc__ = f"memplan's '{name}' memory planning for ExecuTorch (memplan.executorch.algorithm)."
    return plan_specs


# ---- the whole program at once: MemoryPlanningPass ------------------------
#
# ExecuTorch plans each control-flow body on its own, from offset 0 of the
# same pools, and the parent above the largest body. The emitter moves a
# cond branch's result into the parent by pointer (MoveCall): the result
# stays in the body's bytes while the next body, planned from 0 again,
# reuses them. The pass plans every graph of a method as one problem on one
# timeline instead.


def _control_flow(gm: Any, node: Any) -> tuple:
    """(kind, bodies) of a cond, map or scan node, else (None, [])."""
    import torch
    hop = torch.ops.higher_order
    if node.op != "call_function":
        return None, []
    if node.target is hop.cond:
        return "cond", [getattr(gm, node.args[1].target), getattr(gm, node.args[2].target)]
    if node.target is hop.map_impl:
        return "map", [getattr(gm, node.args[0].target)]
    if node.target is hop.scan:
        return "scan", [getattr(gm, node.args[0].target)]
    return None, []


def _specs(value: Any) -> List[Any]:
    """The tensor specs of a node (or of a tree of nodes)."""
    from torch.utils._pytree import tree_flatten
    out = []
    for n in tree_flatten(value)[0]:
        spec = n.meta.get("spec") if hasattr(n, "meta") else None
        out += [s for s in tree_flatten(spec)[0] if hasattr(s, "allocated_memory")]
    return out


def _bindings(kind: str, node: Any) -> List[Optional[List[Any]]]:
    """Per placeholder of the body: the specs of the parent value the emitter
    binds to it, or None where the body gets a tensor of its own (map's
    slice, scan's xs slices)."""
    if kind == "cond":
        return [_specs(v) for v in node.args[3]]
    if kind == "map":
        return [None] * len(node.args[1]) + [_specs(v) for v in node.args[2]]
    init, xs, extra = node.args[1], node.args[2], node.args[3]
    carries = _specs(node)[:len(init)]  # the body reads the carries the scan copies into
    return [[c] for c in carries] + [None] * len(xs) + [_specs(v) for v in extra]


@dataclass
class _Graph:
    gm: Any
    nodes: List[Any]               # as they were when ExecuTorch computed the lifetimes
    specs: List[Any]               # what ExecuTorch planned in it
    presets: List[Any]             # their mem_id before planning
    extra_padding: int
    spans: List[tuple] = None      # per node: (first, last) step on the method's timeline
    branch: tuple = ()             # ((id(cond node), 0 true / 1 false), ...) from the top


class _Sets:
    """Disjoint sets of objects, by identity."""

    def __init__(self) -> None:
        self.parent: Dict[int, int] = {}

    def find(self, s: Any) -> int:
        root = s = id(s)
        while self.parent.get(root, root) != root:
            root = self.parent[root]
        while self.parent.get(s, s) != root:
            self.parent[s], s = root, self.parent[s]
        return root

    def union(self, a: Any, b: Any) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


class _Method:
    """A method's graphs on one timeline: each node a step, a control-flow
    node the steps of its bodies (a cond's branches one after the other, a
    loop's body once: no body tensor crosses an iteration). Specs that one
    runtime tensor goes through (a cond's result and each branch's result,
    moved into it) form one storage; body placeholders bound to a parent
    value have no bytes of their own."""

    def __init__(self, top: Any, graphs: List[_Graph]) -> None:
        self.graphs = {id(g.gm): g for g in graphs}
        self.top = self.graphs[id(top)]
        self.step = 0
        self.moved = _Sets()           # one runtime tensor, moved from graph to graph
        self.bound: Dict[int, Any] = {}  # id(placeholder spec) -> the parent's spec
        self.siblings: List[tuple] = []  # (true branch's result, false branch's result)
        self.has_loop = False
        self._lay_out(self.top, ())

    def _lay_out(self, g: _Graph, branch: tuple) -> None:
        g.branch, g.spans = branch, []
        for node in g.nodes:
            first = self.step
            kind, bodies = _control_flow(g.gm, node)
            branch_results: List[List[Any]] = []
            self.has_loop = self.has_loop or kind in ("map", "scan")
            for k, body in enumerate(bodies):
                b = self.graphs.get(id(body))
                if b is None:
                    raise PlanError(f"memplan: the body {node.args[k + 1 if kind == 'cond' else 0]} "
                                    f"of {node.name} was not planned by ExecuTorch")
                self._bind(kind, node, b)
                self._lay_out(b, branch + ((id(node), k),) if kind == "cond" else branch)
                if kind == "cond":
                    results = [self._resolve(s) for s in _specs(b.nodes[-1].args[0])]
                    for mine, theirs in zip(_specs(node), results):
                        self.moved.union(mine, theirs)
                    branch_results.append(results)
            if not bodies:
                self.step += 1
            g.spans.append((first, self.step - 1))
            if len(branch_results) == 2:  # only one branch runs: its result may take the other's bytes
                self.siblings += list(zip(*branch_results))

    def _bind(self, kind: str, node: Any, body: _Graph) -> None:
        holders = [n for n in body.nodes if n.op == "placeholder"]
        for holder, bound in zip(holders, _bindings(kind, node)):
            if bound is not None:
                for s, v in zip(_specs(holder), bound):
                    self.bound[id(s)] = v

    def _resolve(self, spec: Any) -> Any:
        while id(spec) in self.bound:
            spec = self.bound[id(spec)]
        return spec

    def lifetime(self, g: _Graph, spec: Any) -> tuple:
        lo, hi = spec.lifetime
        return g.spans[lo][0], g.spans[hi][1]


def _exclusive(a: tuple, b: tuple) -> bool:
    """Tensors of the two branches of one cond never both exist."""
    for x, y in zip(a, b):
        if x != y:
            return x[0] == y[0]
    return False


@dataclass
class _Problem:
    """The joint spec list: planned specs, their storages and lifetimes."""
    specs: List[Any]
    first: List[int]
    last: List[int]
    nbytes: List[int]
    mem_id: List[int]
    base: List[int]
    branch: List[tuple]
    offset_aliases: List[tuple]    # (spec, storage_base): placed inside their base
    unused: List[Any]              # bound placeholders: never a runtime tensor
    extra_padding: int
    own: List[tuple] = None        # each spec's own (first, last), before storages merge them


def _problem(method: _Method, alignment: int, share_branch_results: bool) -> _Problem:
    index: Dict[int, int] = {}
    specs, graph_of, preset, offset_aliases, unused = [], [], [], [], []
    shared = _Sets()                   # ExecuTorch's own aliases: one storage
    for g in method.graphs.values():
        for spec, m in zip(g.specs, g.presets):
            if id(spec) in method.bound:
                unused.append(spec)
                continue
            if id(spec) in index:
                continue
            base = getattr(spec, "storage_base", None)
            if base is not None and getattr(spec, "storage_base_offset", 0):
                offset_aliases.append((spec, base))
                continue
            if base is not None:
                shared.union(base, spec)
            index[id(spec)] = len(specs)
            specs.append(spec)
            graph_of.append(g)
            preset.append(m)
    for a, b in method.siblings if share_branch_results else []:
        if id(a) in index and id(b) in index and a is not b:
            shared.union(a, b)
    n = len(specs)
    first, last, nbytes, mem_id = [0] * n, [0] * n, [0] * n, [0] * n
    span: Dict[int, List[int]] = {}
    for i, (spec, g) in enumerate(zip(specs, graph_of)):
        lo, hi, nbytes[i] = _read_sizes(spec, i, alignment)
        first[i], last[i] = method.lifetime(g, spec)
        mem_id[i] = _int(preset[i], f"specs[{i}].mem_id") if preset[i] is not None else 0
        s = span.setdefault(method.moved.find(spec), [first[i], last[i]])
        s[0], s[1] = min(s[0], first[i]), max(s[1], last[i])
    # A moved tensor's every spec is alive until the last of them dies: the
    # runtime keeps the first one's bytes (MoveCall moves a pointer). In a
    # method with a loop, memplan's checker reads the chain as one sequence
    # in which the specs moves link are one storage: alive from the first.
    for i, spec in enumerate(specs):
        s = span[method.moved.find(spec)]
        first[i], last[i] = (s[0], s[1]) if method.has_loop else (first[i], s[1])
    own = list(zip(first, last))
    # ExecuTorch's aliases: one storage at its largest member.
    root: Dict[int, int] = {}
    for i, spec in enumerate(specs):
        r = shared.find(spec)
        if root.get(r) is None or nbytes[i] > nbytes[root[r]]:
            root[r] = i
    base = [-1] * n
    for i, spec in enumerate(specs):
        j = root[shared.find(spec)]
        if j != i:
            base[i] = j
            if mem_id[i] != mem_id[j]:
                mem_id[i] = mem_id[j] = mem_id[i] or mem_id[j]
            first[j], last[j] = min(first[i], first[j]), max(last[i], last[j])
    for i in range(n):
        if base[i] >= 0:
            first[i], last[i] = first[base[i]], last[base[i]]
    return _Problem(specs, first, last, nbytes, mem_id, base, [g.branch for g in graph_of],
                    offset_aliases, unused, max(g.extra_padding for g in method.graphs.values()), own)


def _conflict(p: _Problem, alignment: int) -> Optional[str]:
    """The first pair of specs alive together on the method's timeline that
    share bytes in their current placement (ExecuTorch's per-graph plan),
    or None: one storage's members, the two branches of one cond and
    ExecuTorch's own aliases are no conflict."""
    storage = [i if b < 0 else b for i, b in enumerate(p.base)]
    first, last = [f for f, _ in p.own], [l for _, l in p.own]
    order = sorted(range(len(p.specs)), key=lambda i: first[i])
    live: List[int] = []
    for i in order:
        live = [j for j in live if last[j] >= first[i]]
        si = p.specs[i]
        if not si.allocated_memory:  # holds no byte
            continue
        lo_i = si.mem_offset
        hi_i = lo_i + si.allocated_memory
        for j in live:
            sj = p.specs[j]
            if sj.mem_id != si.mem_id or storage[i] == storage[j] or _exclusive(p.branch[i], p.branch[j]):
                continue
            if sj.mem_offset < hi_i and lo_i < sj.mem_offset + sj.allocated_memory:
                return (f"steps {first[i]}..{last[i]} and {first[j]}..{last[j]} of the method share "
                        f"bytes at offset {max(lo_i, sj.mem_offset)} of pool {si.mem_id}")
        live.append(i)
    return None


class _PassOptions:
    def __init__(self, algorithm: str, effort: float, time_limit: float,
                 capacities: Optional[Dict[int, int]], spill_order: Optional[Iterable[int]]) -> None:
        known = {a[0]: bool(a[2]) for a in _memplan.algorithms()}
        if algorithm not in known:
            raise InputError(f"algorithm: unknown algorithm '{algorithm}' (known: {', '.join(sorted(known))})")
        if not (effort >= 0) or math.isinf(effort):
            raise InputError(f"effort: {effort} is not a non-negative number")
        if not (time_limit >= 0):
            raise InputError(f"time_limit: {time_limit} is not a non-negative number")
        self.algorithm, self.exact = algorithm, known[algorithm]
        self.effort, self.time_limit = float(effort), float(time_limit)
        self.capacities = {_int(k, "capacities"): _int(v, "capacities") for k, v in (capacities or {}).items()}
        self.spill_order = [_int(m, "spill_order") for m in (spill_order or [])]


def _plan_method(top: Any, graphs: List[_Graph], alignment: int, o: _PassOptions) -> Dict[str, Any]:
    """Places every spec of a method's graphs; returns what it did."""
    method = _Method(top, graphs)
    et_sizes = list(top.meta["non_const_buffer_sizes"])
    conflict = _conflict(_problem(method, alignment, False), alignment)
    if o.exact and conflict is None and not o.capacities:
        # ExecuTorch's per-graph plan is safe on the whole method: keep it, bit for bit.
        return {"bufsizes": et_sizes, "kept_executorch": True, "conflict": None, "lower_bound": None,
                "operands_without_bytes": 0}
    # The two branches' results of a cond may share bytes (only one runs),
    # but then the pair holds them from the first one's birth: plan both
    # ways, keep the smaller.
    # A method with a loop is read by memplan's checker as one sequence, in
    # which the two results would be alive together: there they stay apart.
    best = None
    for share in (False,) if method.has_loop else (False, True):
        p = _problem(method, alignment, share)
        r = _memplan._plan_specs(p.nbytes, p.first, p.last, p.mem_id, p.base, o.algorithm, alignment,
                                 p.extra_padding, [], o.effort, o.time_limit, o.capacities, o.spill_order)
        if not r["ok"]:
            raise PlanError(f"memplan {o.algorithm}: the method's plan failed verification: {r['violation']}")
        if best is None or sum(r["bufsizes"]) < sum(best[1]["bufsizes"]):
            lower = int(r["lower_bound"]) if best is None else min(int(r["lower_bound"]), best[2])
            best = (p, r, lower)
        else:
            best = (best[0], best[1], min(int(r["lower_bound"]), best[2]))
    p, r, lower = best
    bufsizes = list(r["bufsizes"])
    used = max(r["mem_ids"], default=1)
    while len(bufsizes) > max(used, 1) + 1 and bufsizes[-1] == 0:
        bufsizes.pop()
    while len(bufsizes) < 2:
        bufsizes.append(0)
    if (conflict is None and not o.capacities and len(et_sizes) == len(bufsizes)
            and sum(et_sizes) <= sum(bufsizes)):
        # ExecuTorch's plan is safe and no larger: keep it.
        return {"bufsizes": et_sizes, "kept_executorch": True, "conflict": None, "lower_bound": lower,
                "operands_without_bytes": 0}
    for spec, m, obj, off in zip(p.specs, r["mem_ids"], r["mem_obj_ids"], r["offsets"]):
        spec.mem_id, spec.mem_obj_id, spec.mem_offset = m, obj, off
    for spec, base in p.offset_aliases:
        spec.mem_id, spec.mem_obj_id = base.mem_id, base.mem_obj_id
        spec.mem_offset = base.mem_offset + spec.storage_base_offset
    for spec in p.unused:
        spec.mem_id = spec.mem_obj_id = spec.mem_offset = None
    for g in graphs:
        g.gm.meta["non_const_buffer_sizes"] = list(bufsizes)
    return {"bufsizes": bufsizes, "kept_executorch": False, "conflict": conflict, "lower_bound": lower,
            "operands_without_bytes": len(p.unused)}


def _make_pass_class() -> type:
    from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite
    from executorch.exir.passes import MemoryPlanningPass as ETPass

    class MemoryPlanningPass(ETPass):
        __doc__ = _PASS_DOC

        def __init__(self, algorithm: str = "auto", effort: float = 1.0, *, alignment: int = 16,
                     capacities: Optional[Dict[int, int]] = None, spill_order: Optional[Iterable[int]] = None,
                     time_limit: float = 0.0, **executorch_options: Any) -> None:
            if "memory_planning_algo" in executorch_options:
                raise InputError("memory_planning_algo: memplan.executorch.MemoryPlanningPass plans with "
                                 "memplan; pass algorithm= (or use memplan.executorch.algorithm())")
            self.options = _PassOptions(algorithm, effort, time_limit, capacities, spill_order)
            alignment = _int(alignment, "alignment")
            if alignment < 1 or alignment & (alignment - 1):
                raise InputError(f"alignment: {alignment} is not a power of two")
            per_graph = (globals()["algorithm"](algorithm) if self.options.exact
                         else MemoryPlanningAlgorithmSuite())
            self._graphs: List[_Graph] = []

            def per_graph_recorded(alignment: int, specs: Iterable[Any], graph_module: Any,
                                   graph_signature: Any = None, extra_padding: int = 0) -> Any:
                specs = list(specs)
                g = _Graph(graph_module, list(graph_module.graph.nodes), specs,
                           [s.mem_id for s in specs], _int(extra_padding or 0, "extra_padding"))
                result = per_graph(alignment, specs, graph_module, graph_signature, extra_padding)
                self._graphs.append(g)
                return result

            per_graph_recorded.__name__ = f"memplan_whole_program_{algorithm}"
            super().__init__(memory_planning_algo=per_graph_recorded, alignment=alignment, **executorch_options)
            #: One entry per method planned, in planning order: ``bufsizes``,
            #: ``kept_executorch`` (ExecuTorch's own plan was safe and kept),
            #: ``conflict`` (why ExecuTorch's plan was not safe, or None),
            #: ``lower_bound``.
            self.plans: List[Dict[str, Any]] = []

        def run(self, graph_module: Any, graph_signature: Any = None) -> Any:
            self._graphs = []
            result = super().run(graph_module, graph_signature)
            if graph_module.meta.get("non_const_buffer_device") is not None:
                raise InputError("memplan.executorch.MemoryPlanningPass: tensors on devices other than "
                                 "the CPU are not supported")
            self.plans.append(_plan_method(graph_module, self._graphs, self.alignment, self.options))
            self._graphs = []
            return result

    return MemoryPlanningPass


_PASS_DOC = """ExecuTorch's ``MemoryPlanningPass``, planning each method whole.

One line to adopt::

    config = ExecutorchBackendConfig(memory_planning_pass=memplan.executorch.MemoryPlanningPass())

Every graph of a method (the top-level graph and the bodies of its
``torch.cond``, ``map`` and ``scan``, nested or not) is planned as one
problem on one timeline: a body's steps lie inside the step of the node that
runs it, a cond's branches one after the other. No body tensor shares bytes
with a value alive around the body, including the branch results the
runtime moves into the parent by pointer (``MoveCall``): a cond's result and
the branch results moved into it are one storage, alive as long as the
result. The operands a body reads from its parent (map's and scan's too) get
no bytes of their own. ExecuTorch's per-graph plan of the same method is
kept when it is safe on that timeline and no larger (so an
ExecuTorch-exact ``algorithm`` gives ExecuTorch's program wherever
ExecuTorch's is correct).

algorithm: ``"auto"`` (default) or any name of ``memplan.algorithms()``.
effort, time_limit: as ``memplan.plan``.
alignment: bytes (a power of two; ExecuTorch's default 16).
capacities: ``{mem_id: bytes}``; a pool over it spills into the next pool
    of ``spill_order``.
Other keywords (``alloc_graph_input``, ``share_mutable_buffers``, ...) are
ExecuTorch's. ``plans`` records what each method got. The joint plan is
verified before it is written onto the specs; check the emitted program
with :func:`memplan.executorch.verify` (``memplan.executorch.to_executorch``
does it for you).
"""


def __getattr__(name: str) -> Any:
    # The pass subclasses ExecuTorch's: made on first use, so that the rest
    # of this module works without ExecuTorch installed.
    if name == "MemoryPlanningPass":
        cls = _make_pass_class()
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def verify(program: Any, name: str = "program.pte") -> tuple:
    """The proof gate: reads the emitted program (an
    ``ExecutorchProgramManager``, or the bytes of a .pte), verifies the
    plan it carries against the lifetimes memplan reads from its
    instruction chains (moves, branches and loops included) and replays it
    on shadow arenas. Raises PlanError naming the first conflict; returns
    ``(VerifyResult, ReplayResult)`` when both pass."""
    from . import carried_plan, read_bytes, replay
    from . import verify as verify_plan
    data = program if isinstance(program, (bytes, bytearray, memoryview)) else program.buffer
    plan = carried_plan(read_bytes(bytes(data), name))
    v = verify_plan(plan)
    if not v.ok:
        raise PlanError(f"{name}: the program's memory plan is unsafe: {v.first_violation}")
    r = replay(plan)
    if not r.ok:
        raise PlanError(f"{name}: the program's memory plan fails replay: {r.message}")
    return v, r


def to_executorch(edge: Any, config: Any = None, *, check: bool = True, **pass_options: Any) -> Any:
    """``edge.to_executorch(config)`` with memplan's
    :class:`MemoryPlanningPass` (made from ``pass_options`` unless the
    config names one already), then :func:`verify` on the emitted program
    (``check=False`` skips it). Returns the ``ExecutorchProgramManager``."""
    from executorch.exir import ExecutorchBackendConfig
    cls = globals().get("MemoryPlanningPass") or __getattr__("MemoryPlanningPass")
    if config is None:
        config = ExecutorchBackendConfig(memory_planning_pass=cls(**pass_options))
    elif pass_options or not isinstance(config.memory_planning_pass, cls):
        import dataclasses
        config = dataclasses.replace(config, memory_planning_pass=cls(**pass_options))
    manager = edge.to_executorch(config)
    if check:
        verify(manager)
    return manager
