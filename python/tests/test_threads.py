"""Planning releases the GIL: two plans run in parallel threads and give the
same bytes as one after the other; while one thread plans, another runs."""

import threading
import time

import memplan
from conftest import DATA, model


def test_two_plans_in_parallel_threads():
    a = memplan.read(model("face_detection/face_detection_full_range.tflite"))
    b = memplan.read(model("selfie_segmentation/selfie_segmentation.tflite"))
    expected = [memplan.plan(a).to_json(), memplan.plan(b).to_json(), memplan.plan(a, "greedy").to_json()]
    results = [None] * 3
    errors = []

    def work(i, inp, algorithm):
        try:
            results[i] = memplan.plan(inp, algorithm).to_json()
        except Exception as e:  # reported below, not lost in the thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=args)
               for args in ((0, a, None), (1, b, None), (2, a, "greedy"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results == expected


def test_planning_releases_the_gil():
    # MiniMalloc's list D: auto's search runs its whole work budget on it
    # (effort 0.05: deterministic, no time limit; about 0.6 s, a few
    # hundred ticks here), long enough to watch. While the worker
    # is inside memplan.plan, this thread keeps running Python and records
    # the worker's phase at each tick. With the GIL held for the whole call
    # it could run only before the call starts or after it returns: at most
    # a tick or two while the phase says "planning", never dozens.
    inp = memplan.read(DATA / "minimalloc-challenging" / "D.1048576.csv")
    phase = ["before"]
    result = {}

    def work():
        phase[0] = "planning"
        result["plan"] = memplan.plan(inp, effort=0.05)
        phase[0] = "done"

    ticks = []
    t = threading.Thread(target=work)
    t.start()
    while t.is_alive():
        ticks.append(phase[0])
        time.sleep(0.001)
    t.join()
    ticks.append(phase[0])
    assert memplan.verify(result["plan"]).ok
    # The phases in order, each seen as it happened.
    order = {"before": 0, "planning": 1, "done": 2}
    assert [order[x] for x in ticks] == sorted(order[x] for x in ticks), ticks
    assert ticks[-1] == "done"
    assert ticks.count("planning") >= 20, f"this thread ran {ticks.count('planning')} times while the other planned"
