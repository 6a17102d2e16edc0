"""Many Python threads submitting at once. Submissions keep the GIL unless
the core says they would wait; these tests drive every submission kind from
16 threads while another thread closes streams and buffers under them, and
check that a submission that has to wait does release the GIL."""
from __future__ import annotations

import random
import threading

import numpy as np
import pytest

import hrx

from conftest import run_fresh

THREADS = 16
ROUNDS = 60


def _worker(device, victims, failures, seed):
    rng = random.Random(seed)
    own_stream = device.stream()
    own = device.allocate(4096)
    scratch = device.allocate(4096)
    graph = hrx.Graph(device)
    graph.copy(scratch[0:64], own[0:64], after=[graph.fill(own[0:64], 5)])
    # Launched on shared streams, which are not ordered with own_stream: it
    # writes only scratch, so that own's final bytes are own_stream's.
    shared_graph = hrx.Graph(device)
    shared_graph.copy(scratch[128:192],
                      scratch[64:128],
                      after=[shared_graph.fill(scratch[64:128], 6)])
    payload = np.full(256, seed & 0xFF, dtype=np.uint8)
    try:
        for round_ in range(ROUNDS):
            # Own objects, never closed: every kind must succeed.
            own_stream.fill(own[0:1024], round_ & 0xFF)
            own_stream.copy(own[1024:2048], own[0:1024])
            own_stream.upload(own[2048:2304], payload)
            start = own_stream.record_event(timing=True)
            graph.launch(own_stream)
            end = own_stream.record_event(timing=True)
            own_stream.wait_event(start)
            own_stream.query()
            end.query()
            # Shared objects that another thread closes at any moment: a
            # closed handle is the only acceptable failure.
            stream = rng.choice(victims["streams"])
            buffer = rng.choice(victims["buffers"])
            try:
                kind = round_ % 6
                if kind == 0:
                    stream.fill(buffer[0:512], 7)
                elif kind == 1:
                    stream.copy(buffer[512:1024], buffer[0:512])
                elif kind == 2:
                    stream.upload(buffer[1024:1280], payload)
                elif kind == 3:
                    stream.wait_event(start)
                elif kind == 4:
                    stream.record_event(timing=bool(round_ & 1)).query()
                else:
                    shared_graph.launch(stream)
            except hrx.FailedPreconditionError as error:
                if "closed" not in str(error):
                    raise
        own_stream.synchronize()
        out = own_stream.read(own[0:2304]).wait()
        last = (ROUNDS - 1) & 0xFF
        expected = np.concatenate([
            np.full(64, 5, np.uint8), np.full(960, last, np.uint8),
            np.full(1024, last, np.uint8), payload])
        if not np.array_equal(out, expected):
            failures.append(f"thread {seed}: wrong bytes")
        if start.elapsed_time(end) < 0:
            failures.append(f"thread {seed}: negative elapsed time")
    except BaseException as error:  # reported by the main thread
        failures.append(f"thread {seed}: {error!r}")


def _closer(device, victims, stop, failures):
    rng = random.Random(1)
    try:
        while not stop.is_set():
            if rng.random() < 0.5:
                index = rng.randrange(len(victims["streams"]))
                old = victims["streams"][index]
                victims["streams"][index] = device.stream()
                old.close()
            else:
                index = rng.randrange(len(victims["buffers"]))
                old = victims["buffers"][index]
                victims["buffers"][index] = device.allocate(4096)
                old.close()
    except BaseException as error:
        failures.append(f"closer: {error!r}")


def test_sixteen_threads_every_submission_kind_while_closing(device):
    victims = {"streams": [device.stream() for _ in range(6)],
               "buffers": [device.allocate(4096) for _ in range(6)]}
    failures: list[str] = []
    stop = threading.Event()
    closer = threading.Thread(target=_closer,
                              args=(device, victims, stop, failures))
    workers = [threading.Thread(target=_worker,
                                args=(device, victims, failures, seed))
               for seed in range(THREADS)]
    closer.start()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=300)
    stop.set()
    closer.join(timeout=60)
    assert not any(w.is_alive() for w in workers), "a worker hung"
    assert not failures, failures
    device.synchronize()


def test_a_submission_that_waits_releases_the_gil():
    """The queue is full behind a Python callback that waits for another
    Python thread: the submission must wait without the GIL, or the other
    thread (and so the callback, and so the queue) never runs."""
    out = run_fresh("""
        import threading, time
        d = hrx.Device.open(0, backend=backend)
        d.set_stream_queue_count(1)
        gate = threading.Event()
        g = hrx.Graph(d)
        g.callback(lambda: gate.wait(30))
        a, b = d.stream(), d.stream()
        buf = d.allocate(64)
        completion = g.launch(a)
        threading.Thread(target=lambda: (time.sleep(0.2), gate.set())).start()
        for i in range(16):
            b.fill(buf, i)    # the ring (2 slots) fills behind the callback
        b.synchronize()
        completion.result()
        print(gate.is_set(), b.read(buf[0:1]).wait()[0])
    """, backend="host", env={"HRX_HOST_RING_CAPACITY": "2"}, timeout=60)
    assert out.split() == ["True", "15"]
