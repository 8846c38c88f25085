"""memplan as a memory-planning algorithm for ExecuTorch's export.

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

__all__ = ["algorithm", "MemoryAlgoResult", "SpecAllocResult", "result_types"]


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
