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
    # A buffer list whose search runs far longer than the 0.6 s cap given:
    # the call lasts about 0.6 s.
    inp = memplan.read(DATA / "minimalloc-challenging" / "D.1048576.csv")
    window = {}

    def work():
        window["start"] = time.perf_counter()
        window["plan"] = memplan.plan(inp, time_limit=0.6)
        window["end"] = time.perf_counter()

    ticks = []
    t = threading.Thread(target=work)
    t.start()
    while t.is_alive():
        ticks.append(time.perf_counter())
        time.sleep(0.001)
    t.join()
    assert memplan.verify(window["plan"]).ok
    span = window["end"] - window["start"]
    assert span > 0.3, f"planning took {span:.3f} s: too short to tell"
    # With the GIL held for the whole call, this thread could not have run
    # in the middle of it.
    inside = [x for x in ticks if window["start"] + 0.05 < x < window["end"] - 0.05]
    assert len(inside) > 10
