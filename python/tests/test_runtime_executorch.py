"""ExecuTorch in the loop: real PyTorch architectures (written here, random
weights, small inputs) exported with torch.export -> to_edge ->
to_executorch, once with ExecuTorch's default memory planning and once with
``MemoryPlanningPass(memory_planning_algo=memplan.executorch.algorithm())``.
Both programs run in ``executorch.runtime`` on the same inputs:

- their outputs are identical, and close to eager PyTorch;
- memplan's ``non_const_buffer_sizes`` are never larger;
- memplan's ExecuTorch-exact greedy gives a program byte-identical to the
  default export;
- ``memplan plan default.pte --write-pte`` gives a program that runs with
  outputs identical to the original; ``memplan verify`` and ``memplan
  replay`` pass on every exported program;
- docs/executorch.md shows the table these tests measure.

Needs the pinned torch and executorch of python/requirements-test.txt
(scripts/setup.sh installs them into .venv).
"""

import copy
import dataclasses
import functools
import json
import os
import pathlib
import tempfile
from typing import Any, Callable, Dict, List, Sequence, Tuple

import pytest

import memplan
import memplan.executorch
from conftest import ROOT, doc_table, run_cli, runtime_package

DOC = ROOT / "docs" / "executorch.md"
# Exported programs go under the build tree (ctest sets MEMPLAN_BUILD_DIR).
WORK = pathlib.Path(tempfile.mkdtemp(prefix="runtime-executorch-", dir=os.environ.get("MEMPLAN_BUILD_DIR")))


def _torch():
    return runtime_package("torch")


# ---- the architectures ---------------------------------------------------

def _models() -> Dict[str, Callable[[], Tuple[Dict[str, Any], List[Tuple[str, tuple]]]]]:
    """name -> builder; a builder returns ({method: module}, calls) where
    calls is the sequence [(method, inputs)] run on a fresh program (state
    carries over between calls, as in the runtime)."""
    torch = _torch()
    nn = torch.nn
    F = nn.functional

    class Fire(nn.Module):
        """SqueezeNet's fire module: a 1x1 squeeze, then 1x1 and 3x3
        expands in parallel, concatenated."""

        def __init__(self, cin, squeeze, expand):
            super().__init__()
            self.squeeze = nn.Conv2d(cin, squeeze, 1)
            self.e1 = nn.Conv2d(squeeze, expand, 1)
            self.e3 = nn.Conv2d(squeeze, expand, 3, padding=1)

        def forward(self, x):
            s = F.relu(self.squeeze(x))
            return torch.cat([F.relu(self.e1(s)), F.relu(self.e3(s))], 1)

    class SqueezeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 32, 3, stride=2)
            self.fires = nn.Sequential(Fire(32, 8, 16), Fire(32, 8, 16), nn.MaxPool2d(3, 2, ceil_mode=True),
                                       Fire(32, 16, 32), Fire(64, 16, 32))
            self.classifier = nn.Conv2d(64, 10, 1)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.stem(x)), 3, 2, ceil_mode=True)
            x = F.relu(self.classifier(self.fires(x)))
            return torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)

    class InvertedResidual(nn.Module):
        """MobileNetV2's block: 1x1 expand, 3x3 depthwise, 1x1 project
        (batch norm, ReLU6), with a residual when the shape allows."""

        def __init__(self, cin, cout, stride, expand):
            super().__init__()
            hidden = cin * expand
            self.residual = stride == 1 and cin == cout
            self.block = nn.Sequential(
                nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
                nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden),
                nn.ReLU6(),
                nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = self.block(x)
            return x + y if self.residual else y

    class MobileNetV2(nn.Module):
        def __init__(self):
            super().__init__()
            layers = [nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU6()]
            cin = 16
            for expand, cout, n, stride in [(1, 8, 1, 1), (6, 12, 2, 2), (6, 16, 3, 2), (6, 24, 2, 1)]:
                for i in range(n):
                    layers.append(InvertedResidual(cin, cout, stride if i == 0 else 1, expand))
                    cin = cout
            layers += [nn.Conv2d(cin, 64, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU6()]
            self.features = nn.Sequential(*layers)
            self.head = nn.Linear(64, 10)

        def forward(self, x):
            return self.head(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))

    class EncoderBlock(nn.Module):
        """A pre-norm transformer encoder block: multi-head self-attention
        and a GELU feed-forward, both residual."""

        def __init__(self, d=32, heads=4, ff=64):
            super().__init__()
            self.heads = heads
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ff1, self.ff2 = nn.Linear(d, ff), nn.Linear(ff, d)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.n1(x)).reshape(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
            att = torch.softmax(q @ k.transpose(-2, -1) * (d // self.heads) ** -0.5, dim=-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
            return x + self.ff2(F.gelu(self.ff1(self.n2(x))))

    class Recurrent(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(12, 24, batch_first=True)
            self.out = nn.Linear(24, 5)

        def forward(self, x):
            y, _ = self.lstm(x)
            return self.out(y[:, -1])

    class RunningStats(nn.Module):
        """Updates registered buffers in place on every call (a running
        mean and a call counter), as batch norm does in training."""

        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(16, 16)
            self.register_buffer("mean", torch.zeros(16))
            self.register_buffer("calls", torch.zeros(1))

        def forward(self, x):
            y = self.lin(x)
            self.mean.mul_(0.9).add_(0.1 * y.mean(0))
            self.calls.add_(1)
            return y - self.mean, self.calls * 1.0

    class Cond(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(16, 16), nn.Linear(16, 16)

        def forward(self, x):
            def big(x):
                return torch.relu(self.a(x)) * 2

            def small(x):
                return torch.sigmoid(self.b(x)) - 1

            return torch.cond(x.sum() > 0, big, small, (x,)) + x

    class KVCache(nn.Module):
        """Two layers, each with a key and a value cache, written by prefill
        (4 positions) and read and extended by decode (1 position)."""

        def __init__(self, layers=2, seq=16, d=16):
            super().__init__()
            self.layers = layers
            self.qkv = nn.ModuleList([nn.Linear(d, 3 * d) for _ in range(layers)])
            self.out = nn.ModuleList([nn.Linear(d, d) for _ in range(layers)])
            for i in range(layers):
                self.register_buffer(f"k{i}", torch.zeros(1, seq, d))
                self.register_buffer(f"v{i}", torch.zeros(1, seq, d))

        def step(self, x, pos: int):
            t = x.shape[1]
            for i in range(self.layers):
                q, k, v = self.qkv[i](x).chunk(3, dim=-1)
                kc, vc = getattr(self, f"k{i}"), getattr(self, f"v{i}")
                kc[:, pos:pos + t].copy_(k)
                vc[:, pos:pos + t].copy_(v)
                att = torch.softmax(q @ kc.transpose(1, 2), dim=-1)
                x = x + self.out[i](att @ vc)
            return x

    class Prefill(nn.Module):
        def __init__(self, kv):
            super().__init__()
            self.kv = kv

        def forward(self, x):
            return self.kv.step(x, 0)

    class Decode(nn.Module):
        def __init__(self, kv):
            super().__init__()
            self.kv = kv

        def forward(self, x):
            return self.kv.step(x, 4)

    def g(*shape):
        return torch.randn(*shape, generator=gen)

    gen = torch.Generator().manual_seed(0)

    def single(module, *inputs):
        return lambda: ({"forward": module().eval()}, [("forward", inp) for inp in inputs])

    def two_methods():
        kv = KVCache().eval()
        return ({"prefill": Prefill(kv), "decode": Decode(kv)},
                [("prefill", (g(1, 4, 16),)), ("decode", (g(1, 1, 16),))])

    return {
        "squeezenet": single(SqueezeNet, (g(1, 3, 48, 48),)),
        "mobilenet_v2": single(MobileNetV2, (g(1, 3, 32, 32),)),
        "transformer_encoder": single(EncoderBlock, (g(1, 10, 32),)),
        "lstm": single(Recurrent, (g(1, 6, 12),)),
        "running_stats": single(RunningStats, (g(4, 16),), (g(4, 16),)),
        "cond": single(Cond, (g(2, 16).abs(),), (-g(2, 16).abs(),)),
        "kv_cache_two_methods": two_methods,
    }


MODELS = ["squeezenet", "mobilenet_v2", "transformer_encoder", "lstm", "running_stats", "cond",
          "kv_cache_two_methods"]


# ---- export and run ------------------------------------------------------

@dataclasses.dataclass
class Case:
    name: str
    methods: List[str]
    default: bytes                 # the .pte of ExecuTorch's default planning
    planned: bytes                 # the .pte with memplan's plug-in
    greedy: bytes                  # the .pte with memplan's ExecuTorch-exact greedy
    default_sizes: Dict[str, List[int]]
    memplan_sizes: Dict[str, List[int]]
    lower_bound: Dict[str, int]    # per method: the bound memplan computed on ExecuTorch's specs
    eager: List[List[Any]]
    calls: List[Tuple[str, tuple]]
    default_path: pathlib.Path = None
    planned_path: pathlib.Path = None


def _edge(modules: Dict[str, Any], calls) -> Any:
    """torch.export then to_edge, once per model (to_executorch changes the
    edge program: each export below works on a copy)."""
    torch = _torch()
    exir = runtime_package("executorch.exir")
    first = {}
    for method, inputs in calls:
        first.setdefault(method, inputs)
    with torch.no_grad():
        programs = {m: torch.export.export(mod, first[m], strict=False) for m, mod in modules.items()}
    return exir.to_edge(programs if len(modules) > 1 else programs["forward"])


def _export(edge, shared: bool, algo) -> Any:
    exir = runtime_package("executorch.exir")
    from executorch.exir.passes import MemoryPlanningPass

    kwargs = dict(share_mutable_buffers=True) if shared else {}
    if algo is not None:
        kwargs["memory_planning_algo"] = algo
    config = exir.ExecutorchBackendConfig(memory_planning_pass=MemoryPlanningPass(**kwargs),
                                          emit_mutable_buffer_names=shared)
    return copy.deepcopy(edge).to_executorch(config)


def _sizes(manager) -> Dict[str, List[int]]:
    return {p.name: list(p.non_const_buffer_sizes) for p in manager.executorch_program.execution_plan}


def run_program(pte, calls) -> List[List[Any]]:
    """Runs `calls` on one freshly loaded program; the outputs of each call."""
    rt = runtime_package("executorch.runtime")
    program = rt.Runtime.get().load_program(pte)
    outs = []
    for method, inputs in calls:
        outs.append([t.clone() for t in program.load_method(method).execute(list(inputs))])
    return outs


def run_eager(modules, calls) -> List[List[Any]]:
    torch = _torch()
    modules = copy.deepcopy(modules)  # fresh state, shared submodules kept shared
    outs = []
    with torch.no_grad():
        for method, inputs in calls:
            y = modules[method](*inputs)
            outs.append([t.clone() for t in (y if isinstance(y, (tuple, list)) else (y,))])
    return outs


@functools.lru_cache(maxsize=None)
def case(name: str) -> Case:
    builders = _models()
    modules, calls = builders[name]()
    eager = run_eager(modules, calls)
    edge = _edge(modules, calls)
    shared = len(modules) > 1
    default = _export(edge, shared, None)

    # The lower bound memplan computes on the specs ExecuTorch hands it
    # (the last call per method is its top-level graph).
    bounds: List[int] = []
    real = memplan._memplan._plan_specs

    def recording(*args, **kwargs):
        r = real(*args, **kwargs)
        bounds.append(int(r["lower_bound"]))
        return r

    memplan._memplan._plan_specs = recording
    try:
        planned = _export(edge, shared, memplan.executorch.algorithm())
    finally:
        memplan._memplan._plan_specs = real
    greedy = _export(edge, shared, memplan.executorch.algorithm("greedy"))
    methods = [p.name for p in planned.executorch_program.execution_plan]
    c = Case(name, methods, bytes(default.buffer), bytes(planned.buffer), bytes(greedy.buffer),
             _sizes(default), _sizes(planned), {}, eager, calls)
    c.lower_bound = _method_bounds(list(modules), bounds)
    if shared:  # state shared between methods (pool 2): its bytes as they are
        c.lower_bound = {m: b + sum(c.memplan_sizes[m][2:]) for m, b in c.lower_bound.items()}
    c.default_path = WORK / f"{name}.default.pte"
    c.planned_path = WORK / f"{name}.memplan.pte"
    c.default_path.write_bytes(c.default)
    c.planned_path.write_bytes(c.planned)
    return c


def _method_bounds(planning_order: List[str], bounds: List[int]) -> Dict[str, int]:
    """Per method, the lower bound of its top-level graph. ExecuTorch plans
    the methods in the order they were given (execution_plan lists them
    sorted by name), each method's control-flow bodies first and its
    top-level graph last."""
    per = len(bounds) // len(planning_order)  # calls per method: 1 + its bodies
    assert per * len(planning_order) == len(bounds), bounds
    return {m: bounds[(i + 1) * per - 1] for i, m in enumerate(planning_order)}


def _assert_same(a, b, what):
    torch = _torch()
    assert len(a) == len(b), what
    for i, (x, y) in enumerate(zip(a, b)):
        assert len(x) == len(y), f"{what}: call {i}"
        for j, (u, v) in enumerate(zip(x, y)):
            assert u.shape == v.shape and torch.equal(u, v), f"{what}: call {i} output {j} differs"


def _assert_close(a, b, what):
    torch = _torch()
    for i, (x, y) in enumerate(zip(a, b)):
        for j, (u, v) in enumerate(zip(x, y)):
            assert torch.allclose(u, v.to(u.dtype), rtol=1e-4, atol=1e-5), (
                f"{what}: call {i} output {j}: max difference {(u - v).abs().max().item()}")


# ---- the tests -----------------------------------------------------------

@pytest.mark.parametrize("name", MODELS)
def test_both_plans_run_with_identical_outputs(name):
    c = case(name)
    by_default = run_program(c.default, c.calls)
    by_memplan = run_program(c.planned, c.calls)
    _assert_same(by_default, by_memplan, f"{name}: default vs memplan")
    _assert_close(by_memplan, c.eager, f"{name}: memplan vs eager PyTorch")


@pytest.mark.parametrize("name", MODELS)
def test_memplan_never_larger(name):
    c = case(name)
    for method in c.methods:
        d, m = c.default_sizes[method], c.memplan_sizes[method]
        assert len(d) == len(m), (method, d, m)
        assert all(x <= y for x, y in zip(m, d)), f"{name}/{method}: memplan {m} > default {d}"
        assert sum(m) >= c.lower_bound[method] > 0
        # Where ExecuTorch's plan is above the bound, memplan's must be
        # below it: a plug-in that handed back ExecuTorch's plan fails here.
        if sum(d) > c.lower_bound[method]:
            assert sum(m) < sum(d), f"{name}/{method}: memplan {m} is ExecuTorch's {d}, above the bound"


@pytest.mark.parametrize("name", MODELS)
def test_executorch_exact_greedy_is_byte_identical(name):
    c = case(name)
    assert c.greedy == c.default, f"{name}: memplan's greedy gives another program than ExecuTorch's"


@pytest.mark.parametrize("name", MODELS)
def test_replanned_program_runs(name):
    c = case(name)
    out = WORK / f"{name}.replanned.pte"
    run_cli("plan", "-q", c.default_path, "--write-pte", out)
    replanned = out.read_bytes()
    # The program carries the plan memplan computed, offset for offset (a
    # writer that copied the program unchanged fails here).
    computed = memplan.plan(memplan.read(c.default_path))
    carried = memplan.carried_plan(memplan.read(out))
    def where(plan):
        return {(a.graph, a.name, a.mem_id, a.offset) for a in plan.allocations}

    assert where(carried) == where(computed), f"{name}: the written program does not carry the plan"
    _assert_same(run_program(c.default, c.calls), run_program(replanned, c.calls),
                 f"{name}: replanned vs original")
    run_cli("verify", out)
    run_cli("replay", out)
    report = json.loads(run_cli("report", "--json", out).stdout)
    original = json.loads(run_cli("report", "--json", c.default_path).stdout)
    assert _total(report) <= _total(original)


@pytest.mark.parametrize("name", MODELS)
def test_verify_and_replay_every_program(name):
    c = case(name)
    for pte in (c.default_path, c.planned_path):
        run_cli("verify", pte)
        run_cli("replay", pte)


def _total(report) -> int:
    return sum(p["arena_bytes"] for p in report["pools"])


def test_docs_show_the_measured_table():
    rows = ["| model | method | default bytes | memplan bytes | lower bound | default / bound | "
            "memplan / bound | outputs identical |",
            "|---|---|---:|---:|---:|---:|---:|---|"]
    for name in MODELS:
        c = case(name)
        same = "yes" if _same(run_program(c.default, c.calls), run_program(c.planned, c.calls)) else "no"
        for method in c.methods:
            d, m, lb = sum(c.default_sizes[method]), sum(c.memplan_sizes[method]), c.lower_bound[method]
            rows.append(f"| {name} | {method} | {d:,} | {m:,} | {lb:,} | {_ratio(d, lb)} | "
                        f"{_ratio(m, lb)} | {same} |")
    doc_table(DOC, "executorch-export", "\n".join(rows) + "\n")


def _ratio(x: int, bound: int) -> str:
    return f"{x / bound:.3f}" if bound else "-"


def _same(a, b) -> bool:
    try:
        _assert_same(a, b, "")
        return True
    except AssertionError:
        return False


# ---- an LLM's shape, exported for an accelerator -------------------------

def llm_program() -> Tuple[bytes, List[Tuple[str, tuple]]]:
    """Prefill and decode methods over per-layer KV caches shared between
    them (share_mutable_buffers), the linear layers delegated to XNNPACK:
    the shape of an LLM exported for an NPU. tests/data/executorch-programs/
    llm_prefill_decode_xnnpack.pte was written by this function."""
    torch = _torch()
    nn = torch.nn
    exir = runtime_package("executorch.exir")
    from executorch.exir.passes import MemoryPlanningPass
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

    torch.manual_seed(0)

    class Layer(nn.Module):
        def __init__(self, seq=16, d=16):
            super().__init__()
            self.q, self.o = nn.Linear(d, d), nn.Linear(d, d)
            self.register_buffer("k_cache", torch.zeros(1, seq, d))

        def step(self, x, pos: int):
            q = self.q(x)
            self.k_cache[:, pos:pos + x.shape[1]].copy_(q)
            att = torch.softmax(q @ self.k_cache.transpose(1, 2), -1)
            return self.o(att @ self.k_cache) + x

    class LLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([Layer() for _ in range(2)])

        def run(self, x, pos: int):
            for layer in self.layers:
                x = layer.step(x, pos)
            return x

    class Prefill(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            return self.m.run(x, 0)

    class Decode(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            return self.m.run(x, 4)

    llm = LLM().eval()
    x4, x1 = torch.randn(1, 4, 16), torch.randn(1, 1, 16)
    with torch.no_grad():
        eps = {"prefill_forward": torch.export.export(Prefill(llm), (x4,), strict=False),
               "decode_forward": torch.export.export(Decode(llm), (x1,), strict=False)}
    edge = exir.to_edge_transform_and_lower(eps, partitioner=[XnnpackPartitioner()])
    manager = edge.to_executorch(exir.ExecutorchBackendConfig(
        memory_planning_pass=MemoryPlanningPass(share_mutable_buffers=True), emit_mutable_buffer_names=True))
    return bytes(manager.buffer), [("prefill_forward", (x4,)), ("decode_forward", (x1,))]


def test_llm_shaped_program_read_verified_replanned_and_run():
    pte, calls = llm_program()
    original = WORK / "llm.default.pte"
    original.write_bytes(pte)
    run_cli("verify", original)
    run_cli("replay", original)
    report = run_cli("report", "--bytes", original).stdout
    for method in ("prefill_forward", "decode_forward"):
        assert method in report
    out = WORK / "llm.replanned.pte"
    run_cli("plan", "-q", original, "--write-pte", out)
    run_cli("verify", out)
    _assert_same(run_program(pte, calls), run_program(out.read_bytes(), calls), "llm: replanned vs original")
