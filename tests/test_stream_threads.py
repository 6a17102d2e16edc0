"""Many Python threads submitting at once. Submissions keep the GIL unless
the core says they would wait; these tests drive every submission kind from
16 threads while another thread closes streams and buffers under them, and
check that a submission that has to wait does release the GIL."""
from __future__ import annotations

import json
import random
import threading

import numpy as np

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


def test_submissions_on_queues_with_room_keep_the_gil(backend):
    """With room in every queue, no submission releases the GIL but to
    publish a batch it filled: 16 threads fill and publish batches (copies,
    fills), publish them before lone commands (upload, wait_event, a timing
    record) and observations (record_event), and none takes the blocking
    path (the testing build counts each one that does, with the core's
    reason); a copy that fills its stream's batch publishes it with the GIL
    released ("full batch"), at most once per 160 copies. The batch delay is
    long so that only the submitting threads publish: a publication in
    progress on another thread is a wait, and with it the count would
    depend on timing; for the same reason the buffers outlive every
    thread's submissions (a buffer's last release publishes every stream's
    pending work). Warm-up first: a stream's first upload may allocate
    staging, and the flusher must already watch every stream."""
    out = run_fresh("""
        import json, threading
        counts = hrx._hrx._testing_submissions_released_gil
        d = hrx.Device.open(0, backend=backend)
        d.set_stream_queue_count(8)
        threads = 16
        ready = threading.Barrier(threads + 1)
        go = threading.Barrier(threads + 1)
        failures = []
        kept = []

        def worker(index):
            try:
                s = d.stream()
                src, dst = d.allocate(4096), d.allocate(4096)
                kept.append((s, src, dst))
                s.fill(src, index)
                s.upload(src[0:64], np.full(64, index, np.uint8))
                for _ in range(3):
                    s.copy(dst, src)
                ready.wait()
                go.wait()
                payload = np.full(256, index + 1, np.uint8)
                for round_ in range(20):
                    for _ in range(300):
                        s.copy(dst, src)
                    for i in range(8):
                        s.fill(dst[i * 512:i * 512 + 256], round_)
                    s.upload(dst[4000:4096 - 40], payload[:56])
                    event = s.record_event()
                    s.wait_event(event)
                    s.record_event(timing=True)
                s.synchronize()
                out = s.read(dst[0:4096]).wait()
                assert bytes(out[256:512]) == bytes([index]) * 256, index
                assert out[0] == 19 and out[4000] == index + 1, index
            except BaseException as error:
                failures.append(repr(error))
                ready.abort()
                go.abort()

        workers = [threading.Thread(target=worker, args=(i,))
                   for i in range(threads)]
        for w in workers:
            w.start()
        ready.wait()
        before = counts()
        go.wait()
        for w in workers:
            w.join()
        after = counts()
        # The final synchronize and read wait for the work (and the first
        # read of each thread for staging of its own): not submissions.
        released = {f"{kind}: {reason}": n - before.get((kind, reason), 0)
                    for (kind, reason), n in after.items()
                    if n != before.get((kind, reason), 0)
                    and kind not in ("synchronize", "read")}
        print(json.dumps({"failures": failures, "released": released}))
    """, backend=backend, env={"HRX_BATCH_DELAY_US": "10000000"},
        timeout=300)
    result = json.loads(out.strip().splitlines()[-1])
    assert result["failures"] == []
    released = dict(result["released"])
    full = released.pop("copy: full batch", 0) + released.pop(
        "fill: full batch", 0)
    assert released == {}
    # 20 rounds of 308 small commands on each of 16 threads.
    assert full <= 16 * 20 * 308 // 160 + 16, full


def test_a_readback_is_usable_from_several_threads(backend):
    """While one thread waits in Readback.wait(), others may ask done(),
    wait too (every wait returns the data) or close it: close() closes the
    handle for every later call, and the waits in progress still return
    what they waited for; a close() after a wait returned closes it too.
    Never a "readback is closed" that is not so."""
    out = run_fresh("""
        import threading
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        buf = dev.allocate(4096)
        s.fill(buf, 9)
        gate = threading.Event()

        def gated_read():
            g = hrx.Graph(dev)
            g.callback(lambda: gate.wait(30))
            g.launch(s)                      # the read waits behind it
            return s.read(buf)

        def in_thread(call, results):
            def run():
                try:
                    results.append(call())
                except Exception as e:
                    results.append(e)
            t = threading.Thread(target=run)
            t.start()
            return t

        # Two waits and done() at once.
        gate.clear()
        rb = gated_read()
        first, second = [], []
        waiters = [in_thread(rb.wait, first), in_thread(rb.wait, second)]
        time.sleep(0.2)                      # both are waiting
        assert rb.done() is False
        gate.set()
        for t in waiters:
            t.join(30)
        assert (first[0] == 9).all() and (second[0] == 9).all(), (first, second)
        assert rb.done() is True and (rb.wait() == 9).all()

        # close() while another thread waits.
        gate.clear()
        rb = gated_read()
        waiting = []
        waiter = in_thread(rb.wait, waiting)
        time.sleep(0.2)
        rb.close()
        for later in (rb.done, rb.wait):
            try:
                later()
            except hrx.FailedPreconditionError as e:
                assert "readback is closed" in str(e), e
            else:
                raise AssertionError(f"{later} after close()")
        gate.set()
        waiter.join(30)
        assert (waiting[0] == 9).all(), waiting   # it was waiting already
        try:
            rb.wait()
        except hrx.FailedPreconditionError:
            pass
        else:
            raise AssertionError("wait() after close() returned data")

        # close() once a wait returned (the result is kept), here and from
        # another thread: closed all the same, for every later call.
        for closer in (lambda rb: rb.close(),
                       lambda rb: in_thread(rb.close, []).join(30)):
            rb = s.read(buf)
            assert (rb.wait() == 9).all() and rb.done() is True
            closer(rb)
            for later in (rb.done, rb.wait, rb.__enter__):
                try:
                    later()
                except hrx.FailedPreconditionError as e:
                    assert "readback is closed" in str(e), e
                else:
                    raise AssertionError(f"{later} after close() after wait()")
            rb.close()                       # closing again is a no-op
        s.synchronize()
        print("ok")
    """.replace("import threading", "import threading, time"),
        backend=backend, timeout=120)
    assert out.strip() == "ok"
