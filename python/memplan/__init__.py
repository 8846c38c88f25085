"""memplan: static memory planning for machine-learning graphs.

Read a model (ONNX, TFLite, memplan graph JSON), an ExecuTorch program
(.pte), an ExecuTorch spec list or a MiniMalloc buffer list, plan it, check
the plan and write it for a runtime::

    import memplan
    plan = memplan.plan("model.tflite")            # auto, 16-byte alignment
    print(plan.bufsizes, plan.ratio, plan.winner)
    assert memplan.verify(plan).ok                  # proven safe, or why not
    plan.write("model.plan.json")                   # atomically
    plan.write_tflite("planned.tflite")             # TFLite Micro's offline plan
    plan.emit_c("plan.h", prefix="model")           # or write_pte, write_html, write_svg

Errors are exceptions with one line naming the file and the place:
``memplan.InputError`` (bad file or argument; a ``ValueError``) and
``memplan.PlanError`` (a request that cannot be met, e.g. a pool capacity;
a ``RuntimeError``). Reading, planning, verifying and replaying release the
GIL, so threads plan in parallel.

``memplan.executorch.MemoryPlanningPass()`` replaces ExecuTorch's memory
planning pass (every method planned whole, control-flow bodies included);
``memplan.executorch.algorithm()`` plugs memplan into ExecuTorch's own
pass, graph by graph; see ``memplan.executorch``.
"""

from __future__ import annotations

import json as _json
import numbers as _numbers
import os as _os
from typing import Any as _Any, Dict as _Dict, List as _List, Mapping as _Mapping
from typing import Optional as _Optional, Sequence as _Sequence, Tuple as _Tuple, Union as _Union

from . import _memplan
from ._memplan import (  # noqa: F401  (re-exported)
    Allocation,
    GraphPlan,
    Input,
    InputError,
    Plan,
    PlanError,
    Pool,
    ReplayResult,
    VerifyResult,
)

del annotations  # the __future__ feature: not one of memplan's names

__version__: str = _memplan.__version__

#: A model is an :class:`Input` (the name the API uses for models).
Model = Input

_PathLike = _Union[str, "_os.PathLike[str]"]
_Source = _Union[Input, _PathLike, _Mapping[str, _Any], bytes]

__all__ = [
    "Allocation", "GraphPlan", "Input", "InputError", "Model", "Plan", "PlanError", "Pool",
    "ReplayResult", "VerifyResult", "algorithms", "carried_plan", "plan", "read", "read_bytes",
    "read_plan", "replay", "verify",
]


def read(
    path: _PathLike,
    *,
    input_shapes: _Optional[_Mapping[str, _Sequence[int]]] = None,
    dims: _Optional[_Mapping[str, int]] = None,
    alias_views: bool = False,
    unknown_size_bytes: int = 0,
    ignore_offline_plan: bool = False,
) -> Input:
    """Reads a model, ExecuTorch program, spec list or buffer list; the
    reader is chosen by extension and content (.onnx, .tflite, .pte, .json,
    .csv).

    input_shapes: ONNX input shapes, e.g. ``{"input": [1, 3, 224, 224]}``.
    dims: values of ONNX symbolic dimensions, e.g. ``{"batch": 1}``.
    alias_views: Reshape/Flatten/Squeeze/Unsqueeze/Identity results share
        their input's bytes (only for runtimes that implement them as views).
    unknown_size_bytes: plan tensors whose size cannot be inferred at this
        many bytes (0: such a tensor is an error).
    ignore_offline_plan: TFLite: ignore a TensorFlow Lite Micro offline plan
        the model carries (plan it afresh).

    An option the file's format does not read is an InputError.
    Raises InputError naming the file and the place (byte offset, tensor,
    field) on any malformed input.
    """
    return _memplan.read(_os.fspath(path), _shapes(input_shapes), _dims(dims),
                         bool(alias_views), _int(unknown_size_bytes, "unknown_size_bytes"),
                         bool(ignore_offline_plan))


def read_bytes(
    data: bytes,
    name: str,
    *,
    input_shapes: _Optional[_Mapping[str, _Sequence[int]]] = None,
    dims: _Optional[_Mapping[str, int]] = None,
    alias_views: bool = False,
    unknown_size_bytes: int = 0,
    ignore_offline_plan: bool = False,
) -> Input:
    """Like :func:`read`, from bytes in memory; ``name`` names the input in
    errors and plans (its extension, if any, picks the reader)."""
    return _memplan.read_bytes(bytes(data), str(name), _shapes(input_shapes), _dims(dims),
                               bool(alias_views), _int(unknown_size_bytes, "unknown_size_bytes"),
                               bool(ignore_offline_plan))


def plan(
    source: _Source,
    algorithm: _Optional[str] = None,
    alignment: _Optional[int] = None,
    *,
    extra_padding: _Optional[int] = None,
    plan_inputs: bool = True,
    plan_outputs: bool = True,
    plan_mutable_buffers: bool = True,
    per_device: bool = False,
    share_mutable_buffers: bool = False,
    allow_pinned_overlap: bool = False,
    effort: float = 1.0,
    time_limit: float = 0.0,
    capacities: _Optional[_Mapping[int, int]] = None,
    spill_order: _Optional[_Sequence[int]] = None,
    input_shapes: _Optional[_Mapping[str, _Sequence[int]]] = None,
    dims: _Optional[_Mapping[str, int]] = None,
    alias_views: bool = False,
    unknown_size_bytes: int = 0,
    reorder: _Union[bool, str] = False,
) -> Plan:
    """Plans a model and returns the :class:`Plan`.

    source: an :class:`Input` from :func:`read`, a path (read with the
        import options below), a dict (memplan graph JSON or an ExecuTorch
        spec list, as ``_json.load`` gives it) or the bytes of a file.
    algorithm: ``"auto"`` (default; a spec list: the case's own), or any
        name of :func:`algorithms` (``"greedy"``, ``"naive"``,
        ``"best_fit"``, ``"exact"``, ...).
    alignment: planning alignment in bytes, any positive number up to
        2^30 (default 16; a spec list: the case's; a CSV buffer list: 1).
    extra_padding: bytes added at the end of each used pool (default 0; a
        spec list: the case's).
    plan_inputs, plan_outputs, plan_mutable_buffers: plan graph inputs,
        outputs, mutable buffers (False: the caller provides them).
    per_device: one set of pools per device: ``[0, cpu, other devices]``.
    share_mutable_buffers: place the state the methods share exactly as
        ExecuTorch's ``share_mutable_buffers`` (pool 2).
    allow_pinned_overlap: accept pinned tensors that share bytes while alive
        (TFLite Micro offline plans may); the rest is planned around them.
    effort: scales the search's work budget (deterministic, not timed).
    time_limit: optional wall-clock cap on the search, in seconds (0: none).
    capacities: pool size limits, ``{mem_id: bytes}``; a pool over its
        capacity spills tensors into the next pool of ``spill_order``.
    spill_order: the pools to spill into, in order.
    reorder: ``True``: search an execution order that needs less memory and
        plan in it (``memplan plan --reorder``; ``Plan.order`` is the order
        used, ``Plan.write_tflite``/``write_pte`` write it); ``"report"``:
        search and report only (``Plan.order_search``).

    The GIL is released while planning. Raises InputError (bad input or
    argument) or PlanError (e.g. tensors that fit no pool).
    """
    inp = _input(source, input_shapes, dims, alias_views, unknown_size_bytes)
    return _memplan.plan(
        inp,
        "" if algorithm is None else str(algorithm),
        0 if alignment is None else _nonnegative(alignment, "alignment"),
        None if extra_padding is None else _int(extra_padding, "extra_padding"),
        bool(plan_inputs), bool(plan_outputs), bool(plan_mutable_buffers), bool(per_device),
        float(effort), float(time_limit),
        {_int(k, "capacities"): _int(v, "capacities") for k, v in (capacities or {}).items()},
        [_int(m, "spill_order") for m in (spill_order or [])],
        bool(share_mutable_buffers), bool(allow_pinned_overlap),
        "apply" if reorder is True else "" if reorder is False else str(reorder),
    )


def verify(input_or_plan: _Union[Input, Plan], plan: _Optional[Plan] = None) -> VerifyResult:
    """Checks a plan against its input: no two tensors alive at the same
    step share a byte, every allocation inside its pool and aligned, every
    planned tensor placed once. ``verify(plan)`` checks it against the input
    it was made from; ``verify(input, plan)`` against another reading of it.
    Returns a :class:`VerifyResult` (``ok``, ``first_violation``)."""
    inp, p = _pair(input_or_plan, plan)
    return _memplan.verify(inp, p)


def replay(
    input_or_plan: _Union[Input, Plan],
    plan: _Optional[Plan] = None,
    *,
    max_dense_bytes: int = 1 << 30,
    force_sparse: bool = False,
) -> ReplayResult:
    """Runs the model on shadow arenas under the plan, independently of
    lifetimes: every read must find the bytes its producer wrote. Returns a
    :class:`ReplayResult` (``ok``, ``first_violation``, the clobbered tensor,
    its writer and the node that found it)."""
    inp, p = _pair(input_or_plan, plan)
    return _memplan.replay(inp, p, _int(max_dense_bytes, "max_dense_bytes"), bool(force_sparse))


def read_plan(path: _PathLike, input: _Optional[Input] = None) -> Plan:
    """Reads a plan file (plan JSON, or a CSV solution of a CSV buffer list)
    onto an input's specs. Without ``input``, the input the plan records
    (its file name and import options) is read again. Raises InputError when
    the plan was made from other bytes than the input's."""
    p = _os.fspath(path)
    if input is None:
        made = _memplan.plan_source(p)
        if made is None or not made["name"]:
            raise InputError(f"{p}: the plan does not record its input file; pass input=")
        input = read(made["name"], input_shapes=made["input_shapes"], dims=made["dims"],
                     alias_views=made["alias_views"], unknown_size_bytes=made["unknown_size_bytes"],
                     ignore_offline_plan=made["ignore_offline_plan"])
    return _memplan.read_plan(p, input)


def carried_plan(source: _Union[Input, _PathLike], *, allow_pinned_overlap: bool = False) -> Plan:
    """The plan an input carries in itself: a .pte's own plan, or the
    offsets a .tflite's TensorFlow Lite Micro offline plan pins its tensors
    at (`memplan verify INPUT` without a PLAN). :func:`verify` checks it as
    the runtime would read it. Raises InputError when it carries none."""
    inp = source if isinstance(source, Input) else read(source)
    return _memplan.carried_plan(inp, bool(allow_pinned_overlap))


def algorithms() -> _List[_Tuple[str, str, bool]]:
    """``(name, summary, executorch_exact)`` for every algorithm."""
    return [tuple(a) for a in _memplan.algorithms()]


# ---- helpers ----

def _shapes(shapes: _Optional[_Mapping[str, _Sequence[int]]]) -> _Dict[str, _List[int]]:
    return {str(k): [_int(d, f"input_shapes[{k}]") for d in v] for k, v in (shapes or {}).items()}


def _dims(dims: _Optional[_Mapping[str, int]]) -> _Dict[str, int]:
    return {k: _int(v, f"dims[{k}]") for k, v in (dims or {}).items()}


def _int(value: _Any, what: str) -> int:
    """An integer argument. A number with a fractional part (1.5) is refused,
    as the CLI refuses ``--alignment 1.5``, never truncated; whole numbers
    of other types (2.0, numpy integers) are taken as they are."""
    if isinstance(value, _numbers.Integral):
        return int(value)
    if isinstance(value, _numbers.Number):
        try:
            whole = int(value)  # type: ignore[call-overload]
        except (OverflowError, ValueError, TypeError):  # inf, nan, complex
            raise InputError(f"{what}: {value!r} is not an integer") from None
        if whole != value:
            raise InputError(f"{what}: {value!r} is not an integer")
        return whole
    return int(value)


def _nonnegative(value: int, what: str) -> int:
    v = _int(value, what)
    if v < 0:
        raise InputError(f"{what}: {v} is negative")
    return v


def _input(source: _Source, input_shapes: _Any, dims: _Any, alias_views: bool,
           unknown_size_bytes: int) -> Input:
    opts = dict(input_shapes=input_shapes, dims=dims, alias_views=alias_views,
                unknown_size_bytes=unknown_size_bytes)
    if isinstance(source, Input):
        if input_shapes or dims or alias_views or unknown_size_bytes:
            raise InputError("import options (input_shapes, dims, alias_views, unknown_size_bytes) "
                             "apply when reading: pass them to memplan.read()")
        return source
    if isinstance(source, (str, _os.PathLike)):
        return read(source, **opts)
    if isinstance(source, _Mapping):
        return read_bytes(_json.dumps(source).encode(), "<dict>", **opts)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return read_bytes(bytes(source), "<bytes>", **opts)
    raise TypeError(f"memplan.plan: expected an Input, a path, a dict or bytes, got {type(source).__name__}")


def _pair(input_or_plan: _Union[Input, Plan], plan: _Optional[Plan]) -> _Tuple[Input, Plan]:
    if plan is None:
        if not isinstance(input_or_plan, Plan):
            raise TypeError("expected (plan) or (input, plan)")
        return input_or_plan.input, input_or_plan
    if not isinstance(input_or_plan, Input):
        raise TypeError(f"expected an Input as first argument, got {type(input_or_plan).__name__}")
    return input_or_plan, plan
