#!/usr/bin/env python3
"""What Python adds to planning: prints tables of median CPU times (this
process's, and the CLI's as a child process: on a shared machine the wall
clock measures the neighbours).

    PYTHONPATH=build/python python3 python/benchmarks/overhead.py [--cli build/memplan] [--runs 15]

Rows, per example model:
- `memplan plan MODEL -q -o plan.json` as a process (the CLI's whole run:
  start, read, plan, verify, write);
- memplan.read + memplan.plan + memplan.verify + Plan.write from Python
  (the same work in an already running interpreter);
- memplan.plan(input) alone, beside the planning time the library measures
  itself (Plan.planning_seconds, wall clock: run it on a quiet machine for
  that column); the difference is the binding's overhead;
- Plan.allocations: building the Python objects of every allocation.
Then the ExecuTorch plug-in on synthetic spec lists of growing size: the
whole call against the library's part of it.
"""

import argparse
import os
import pathlib
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import memplan
import memplan.executorch as et

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = pathlib.Path(os.environ.get("MEMPLAN_MODELS_DIR", ROOT / ".cache" / "models"))
EXAMPLES = [
    ("selfie_segmentation/selfie_segmentation.tflite", {}, []),
    ("face_detection/face_detection_full_range.tflite", {}, []),
    ("ocr/ch_PP-OCRv4_det_infer.onnx", {"input_shapes": {"x": [1, 3, 640, 640]}},
     ["--input-shape", "x=1x3x640x640"]),
]


def median_seconds(fn, runs):
    times = []
    for _ in range(runs):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return statistics.median(times)


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def median_child_seconds(argv, runs):
    times = []
    for _ in range(runs):
        t = children_cpu()
        subprocess.run(argv, check=True)
        times.append(children_cpu() - t)
    return statistics.median(times)


def ms(seconds):
    return f"{seconds * 1e3:9.2f}"


class Spec:
    def __init__(self, nbytes, first, last):
        self._nbytes, self.alignment, self.lifetime = nbytes, 16, [first, last]
        self.mem_id = self.inplace_base = None

    @property
    def allocated_memory(self):
        return (self._nbytes + self.alignment - 1) // self.alignment * self.alignment

    def realign(self, alignment):
        self.alignment = alignment
        return self.allocated_memory

    def nbytes(self):
        return self._nbytes


def synthetic_specs(n, seed=1):
    rng = random.Random(seed)
    specs = []
    for i in range(n):
        first = i
        specs.append(Spec(rng.choice([64, 256, 1024, 4096, 16384]) * rng.randint(1, 4),
                          first, first + rng.randint(1, 12)))
    return specs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", default=str(ROOT / "build" / "memplan"))
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()

    print(f"memplan {memplan.__version__}, Python {sys.version.split()[0]}, median CPU time of {args.runs} runs, ms")
    print()
    print("| model | tensors | CLI process | Python read+plan+verify+write | plan(input) | library planning | binding overhead | .allocations |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "plan.json"
        for name, options, flags in EXAMPLES:
            path = MODELS / name
            if not path.is_file():
                print(f"| {name} | missing: run scripts/fetch-models.sh |")
                continue
            cli = median_child_seconds([args.cli, "plan", str(path), *flags, "-q", "-o", str(out)], args.runs)

            def whole():
                inp = memplan.read(str(path), **options)
                p = memplan.plan(inp)
                assert memplan.verify(p).ok
                p.write(out)

            py_whole = median_seconds(whole, args.runs)
            inp = memplan.read(str(path), **options)
            plans = []
            py_plan = median_seconds(lambda: plans.append(memplan.plan(inp)), args.runs)
            lib = statistics.median(p.planning_seconds for p in plans)
            allocs = median_seconds(lambda: plans[-1].allocations, args.runs)
            print(f"| {path.name} | {inp.tensors} | {ms(cli)} | {ms(py_whole)} | {ms(py_plan)} | {ms(lib)} "
                  f"| {ms(py_plan - lib)} | {ms(allocs)} |")

    print()
    print("ExecuTorch plug-in, synthetic spec lists (sizes 64 B-64 KiB, lifetimes 1-12 steps):")
    print()
    print("| specs | algorithm | whole call | library (_plan_specs) | Python share |")
    print("|---:|---|---:|---:|---:|")
    for n, algorithm in [(1000, "greedy"), (1000, "auto"), (10000, "greedy"), (10000, "auto"), (100000, "greedy")]:
        specs = synthetic_specs(n)
        algo = et.algorithm(algorithm)
        whole = median_seconds(lambda: algo(16, specs, None, None, 0), max(3, args.runs // 3))
        nb = [s.nbytes() for s in specs]
        first = [s.lifetime[0] for s in specs]
        last = [s.lifetime[1] for s in specs]
        zeros, bases = [0] * n, [-1] * n
        core = median_seconds(lambda: memplan._memplan._plan_specs(
            nb, first, last, zeros, bases, algorithm, 16, 0, [], 1.0, 0.0), max(3, args.runs // 3))
        print(f"| {n} | {algorithm} | {ms(whole)} | {ms(core)} | {ms(whole - core)} |")


if __name__ == "__main__":
    main()
