"""Streams stay independent: a read waits only for its own stream (its
staging comes from a pool, never allocated or freed on the read path), an
event can be recorded while a producer of the same stream waits for queue
space (also while that queue is held shut by a gate, as are other streams'
synchronize and the flusher's timed flush of other streams),
Stream.flush() publishes without an event, and batching really
publishes fewer native operations than it accepts commands. Ordering is
checked, not time: figures live in bench/scripts/read_latency.py."""
from __future__ import annotations

import textwrap

import pytest


def test_a_read_does_not_wait_for_another_streams_backlog(fresh):
    """The busy stream's queue is held shut by a gated graph callback (its
    work cannot finish until the gate opens, however fast the device), so a
    read on another stream that returned proves it did not wait for it."""
    out = fresh("""
        import threading
        gate = threading.Event()
        dev = hrx.Device.open(0, backend=backend)
        dev.set_stream_queue_count(4)
        busy, idle, gatekeeper = dev.stream(), dev.stream(), dev.stream()
        assert len({busy.queue_index, idle.queue_index,
                    gatekeeper.queue_index}) == 3
        small = dev.allocate(64); idle.fill(small, 5); idle.synchronize()
        big = [dev.allocate(1 << 20) for _ in range(2)]
        idle.read_blocking(small, np.zeros(64, np.uint8))  # warm the pool
        g = hrx.Graph(dev); g.callback(lambda: gate.wait(60))
        launch = g.launch(gatekeeper)
        busy.wait_event(gatekeeper.record_event())
        busy.copy(big[1], big[0])
        backlog = busy.record_event()
        got = idle.read_blocking(small, np.zeros(64, np.uint8))
        assert (got == 5).all()
        assert not backlog.query(), "the read waited for the other stream"
        readback = idle.read(small)
        assert (readback.wait() == 5).all()
        readback.close()
        assert not backlog.query(), "a readback's release waited for it"
        gate.set()
        assert launch.wait(60)
        backlog.synchronize()
        for obj in big + [small, backlog, g, busy, idle, gatekeeper, dev]:
            obj.close()
        print("ok")
    """, timeout=120, env={"HRX_CHUNKING": "0"})
    # Chunking off: a paced copy would be held behind the shut queue, and
    # record_event waits for a stream's held transfers (docs/lanes.md,
    # "Transfers"), so the gate would never open.
    assert out.strip() == "ok"


def test_record_event_does_not_wait_behind_a_blocked_producer(fresh):
    """record_event follows the work already accepted (a batch the producer
    is publishing included) and never waits for the producer's later work.
    The held stream's queue is shut by a gated graph callback and its ring
    (capacity 2) is full, so the producer blocks publishing its first batch;
    record_event starts then; the gate opens, that batch goes out, and the
    producer parks on `go_on` before its later copies: record_event must
    return while it is parked. Nothing depends on the device's speed. The
    producer blocks only on host: a native hip queue is too deep to fill
    here, so on hip the producer publishes freely and the test checks only
    that record_event returns while the producer is parked."""
    out = fresh("""
        import threading, time
        gate, go_on = threading.Event(), threading.Event()
        dev = hrx.Device.open(0, backend=backend, batching=True)
        dev.set_stream_queue_count(4)
        held, gatekeeper = dev.stream(), dev.stream()
        assert held.queue_index != gatekeeper.queue_index
        src = dev.allocate(4096); dst = dev.allocate(4096)
        g = hrx.Graph(dev); g.callback(lambda: gate.wait(60))
        launch = g.launch(gatekeeper)
        held.wait_event(gatekeeper.record_event())
        held.copy(dst[0:8], src[0:8]); held.flush()   # the ring is full
        first_batch_out, produced = threading.Event(), threading.Event()
        def produce():
            for i in range(1, 3):      # one batch of 2: blocks publishing
                held.copy(dst[i * 8:(i + 1) * 8], src[i * 8:(i + 1) * 8])
            first_batch_out.set()
            go_on.wait(60)
            for i in range(3, 9):
                held.copy(dst[i * 8:(i + 1) * 8], src[i * 8:(i + 1) * 8])
            produced.set()
        producer = threading.Thread(target=produce); producer.start()
        if backend == "host":
            time.sleep(0.2)
            assert not first_batch_out.is_set(), "the producer did not block"
        recorded, finished = [], threading.Event()
        def record():
            recorded.append(held.record_event()); finished.set()
        recorder = threading.Thread(target=record); recorder.start()
        gate.set()
        ok = finished.wait(20) and not go_on.is_set()
        go_on.set()
        for t in (producer, recorder):
            t.join(60)
            assert not t.is_alive(), "a thread never finished"
        assert launch.wait(60) and produced.is_set()
        assert ok, "record_event waited for the producer's later work"
        recorded[0].synchronize(); held.synchronize()
        for obj in (recorded[0], g, held, gatekeeper, src, dst, dev):
            obj.close()
        print("ok")
    """, env={"HRX_HOST_RING_CAPACITY": "2", "HRX_BATCH_MAX_COMMANDS": "2",
              "HRX_BATCH_DELAY_US": "10000000"}, timeout=120)
    assert out.strip() == "ok"


def test_flush_publishes_pending_work_without_an_event(fresh):
    out = fresh("""
        dev = hrx.Device.open(0, backend=backend, batching=True)
        s = dev.stream()
        a = dev.allocate(64); b = dev.allocate(64)
        s.fill(a, 1); s.synchronize()
        counts = hrx._hrx._testing_live_native_objects
        s.fill(b, 0)   # right after a wait: published alone, at once
        before = counts()["native_commands"]
        for _ in range(3):
            s.copy(b, a); s.fill(a, 2)   # held in the pending batch
        assert counts()["native_commands"] == before  # delay: 10 s
        s.flush()
        assert counts()["native_commands"] > before
        assert counts()["events"] == 0   # no event was created
        s.synchronize()
        for obj in (s, a, b, dev):
            obj.close()
        print("ok")
    """, env={"HRX_FAULTS": "none", "HRX_BATCH_DELAY_US": "10000000"},
        timeout=60)
    assert out.strip() == "ok"


def test_batching_publishes_fewer_native_operations_than_commands(fresh):
    """Commands in > native operations out with batching on; equal with it
    off (the counter counts what reaches the backend)."""
    out = fresh("""
        import json
        figures = {}
        for batching in (True, False):
            dev = hrx.Device.open(0, backend=backend, batching=batching)
            s = dev.stream()
            a = dev.allocate(4096); b = dev.allocate(4096)
            s.synchronize()
            counts = hrx._hrx._testing_live_native_objects
            native0 = counts()["native_commands"]
            accepted0 = hrx._hrx._testing_commands_submitted(dev)
            for _ in range(2000):
                s.copy(b, a)
            s.synchronize()
            figures[batching] = (hrx._hrx._testing_commands_submitted(dev) - accepted0,
                                 counts()["native_commands"] - native0)
            for obj in (s, a, b, dev):
                obj.close()
        (accepted_on, native_on), (accepted_off, native_off) = (
            figures[True], figures[False])
        assert accepted_on == accepted_off == 2000, figures
        assert native_off == 2000, figures
        assert native_on * 4 < accepted_on, figures
        print(json.dumps({"native with batching": native_on}))
    """, env={"HRX_FAULTS": "none"}, timeout=120)
    assert "native with batching" in out


# A stream whose queue is held shut: its native queue waits for an event
# recorded after a graph callback that blocks until `gate` is set, and a
# producer thread (batching on) is blocked on the queue's full ring
# (capacity 2) behind it. That block is deterministic on host only: a
# native hip queue accepts far more than the producer's 8 copies, so on hip
# the producer finishes and the tests check that observers do not wait for
# the held queue's work (still gated, whatever the device's speed).
# The gate stays shut for as long as the observer is given, so an observer
# that waits behind the producer cannot finish in time; it is opened
# afterwards so every thread ends.
GATED_STREAM = """
    import threading, time
    gate = threading.Event()
    dev = hrx.Device.open(0, backend=backend, batching=True)
    dev.set_stream_queue_count(4)
    held, gatekeeper, other = dev.stream(), dev.stream(), dev.stream()
    assert len({held.queue_index, gatekeeper.queue_index,
                other.queue_index}) == 3
    src = dev.allocate(4096); dst = dev.allocate(4096)
    g = hrx.Graph(dev); g.callback(lambda: gate.wait(60))
    launch = g.launch(gatekeeper)
    opened = gatekeeper.record_event()
    held.wait_event(opened)
    spare = dev.stream()
    produced = threading.Event()
    def produce():
        for i in range(8):
            if observe_between:   # each copy then goes out alone, at once
                spare.record_event()
            held.copy(dst[i * 8:(i + 1) * 8], src[i * 8:(i + 1) * 8])
        produced.set()
    producer = threading.Thread(target=produce); producer.start()
    if backend == "host":   # a full ring of capacity 2 holds it
        time.sleep(0.2)
        assert not produced.is_set(), "the producer was not blocked by the gate"
    # On hip the producer may finish (a native queue takes all 8 copies) or
    # wait on the host for the gated callback's completion, depending on
    # batching: either way the observers below must not wait for it.

    def within(seconds, call):
        # True when call() returns within `seconds` while the gate is shut.
        finished = threading.Event()
        def run():
            call(); finished.set()
        t = threading.Thread(target=run); t.start()
        ok = finished.wait(seconds) and not gate.is_set()
        return ok, t

    def open_gate_and_finish(*threads):
        gate.set()
        for t in (producer,) + threads:
            t.join(60)
            assert not t.is_alive(), "a thread never finished"
        assert launch.wait(60)
        held.synchronize(); other.synchronize()
"""


def _gated(body: str, *, observe_between: bool) -> str:
    return (f"observe_between = {observe_between}\n" +
            textwrap.dedent(GATED_STREAM) + textwrap.dedent(body))


def test_observers_do_not_wait_behind_a_producer_blocked_on_a_full_queue(fresh):
    """record_event on the held stream, and synchronize and record_event on
    another stream, return while the held stream's producer is blocked on
    its full queue publishing a command alone (it observed another stream
    since its last command, so nothing is gathered)."""
    out = fresh(_gated(observe_between=True, body="""
    recorded = []
    ok_record, t1 = within(2, lambda: recorded.append(held.record_event()))
    other.copy(dst[4000:4008], src[4000:4008])
    ok_sync, t2 = within(2, other.synchronize)
    ok_other, t3 = within(2, lambda: recorded.append(other.record_event()))
    open_gate_and_finish(t1, t2, t3)
    assert ok_record, "record_event waited behind the blocked producer"
    assert ok_sync, "another stream's synchronize waited behind it"
    assert ok_other, "another stream's record_event waited behind it"
    for ev in recorded:
        ev.synchronize()
    print("ok")
    """), env={"HRX_HOST_RING_CAPACITY": "2"}, timeout=120)
    assert out.strip().endswith("ok"), out


def test_a_full_queue_does_not_delay_another_streams_timed_flush(fresh, backend):
    """With batching on, the held stream's producer is blocked publishing
    while a second producer left a command pending on the held stream (the
    flusher's turn for it finds the stream busy); a command pending on
    another stream is still published by the flusher after its delay."""
    if backend != "host":
        pytest.skip("needs a full queue, which only the host backend's ring "
                    "of capacity 2 gives deterministically")
    out = fresh(_gated(observe_between=False, body="""
    def pend(stream, offset):
        # A fresh thread's copy on `spare` goes out alone; its next one,
        # within the batch delay, joins `stream`'s pending batch.
        def run():
            spare.copy(dst[offset:offset + 8], src[offset:offset + 8])
            stream.copy(dst[offset + 8:offset + 16],
                        src[offset + 8:offset + 16])
        t = threading.Thread(target=run); t.start()
        return t
    t1 = pend(held, 3000)
    t1.join(5)
    assert not t1.is_alive(), "appending to a pending batch waited"
    time.sleep(0.5)            # the flusher's turn for the held stream
    def submitted():
        return dev.pool_stats()["queues"][other.queue_index][
            "commands_submitted"]
    before = submitted()
    t3 = pend(other, 3500)
    deadline = time.monotonic() + 2
    while submitted() == before and time.monotonic() < deadline:
        time.sleep(0.01)
    flushed = submitted() > before and not gate.is_set()
    ok_sync, t2 = within(2, other.synchronize)
    open_gate_and_finish(t1, t2, t3)
    assert flushed, "the flusher did not publish the other stream in time"
    assert ok_sync, "another stream's synchronize waited behind it"
    print("ok")
    """), env={"HRX_HOST_RING_CAPACITY": "2", "HRX_BATCH_DELAY_US": "200000",
              "HRX_BATCH_MAX_COMMANDS": "2"}, timeout=120)
    assert out.strip().endswith("ok"), out
