"""Streams stay independent: a read waits only for its own stream (its
staging comes from a pool, never allocated or freed on the read path), an
event can be recorded while a producer of the same stream waits for queue
space, Stream.flush() publishes without an event, and batching really
publishes fewer native operations than it accepts commands. Ordering is
checked, not time: figures live in bench/scripts/read_latency.py."""
from __future__ import annotations


def test_a_read_does_not_wait_for_another_streams_backlog(fresh):
    out = fresh("""
        dev = hrx.Device.open(0, backend=backend)
        dev.set_stream_queue_count(2)
        busy, idle = dev.stream(), dev.stream()
        assert busy.queue_index != idle.queue_index
        small = dev.allocate(64); idle.fill(small, 5); idle.synchronize()
        big = [dev.allocate(128 << 20) for _ in range(2)]
        idle.read_blocking(small, np.zeros(64, np.uint8))  # warm the pool
        for _ in range(8):
            busy.copy(big[1], big[0])
        backlog = busy.record_event()
        got = idle.read_blocking(small, np.zeros(64, np.uint8))
        assert (got == 5).all()
        assert not backlog.query(), "the read waited for the other stream"
        readback = idle.read(small)
        assert (readback.wait() == 5).all()
        readback.close()
        assert not backlog.query(), "a readback's release waited for it"
        backlog.synchronize()
        for obj in big + [small, backlog, busy, idle, dev]:
            obj.close()
        print("ok")
    """, timeout=120)
    assert out.strip() == "ok"


def test_record_event_does_not_wait_behind_a_blocked_producer(fresh):
    """A producer publishing a batch into a full queue holds only the
    stream's publish lock; record_event takes the small state lock and
    snapshots what is already published."""
    out = fresh("""
        import threading
        dev = hrx.Device.open(0, backend=backend, batching=True)
        s = dev.stream()
        src = dev.allocate(64 << 20); dst = dev.allocate(64 << 20)
        chunk = 1 << 20
        views = [(dst[i * chunk:(i + 1) * chunk], src[i * chunk:(i + 1) * chunk])
                 for i in range(64)]
        s.synchronize()
        done = threading.Event()
        def produce():
            for _ in range(6):
                for d, c in views:
                    s.copy(d, c)
            s.flush()
            done.set()
        t = threading.Thread(target=produce); t.start()
        import time
        time.sleep(0.05)          # the producer is now blocked on the ring
        assert not done.is_set(), "the backlog is too short for this machine"
        ev = s.record_event()     # must not wait for the producer
        recorded_while_blocked = not done.is_set()
        t.join(); ev.synchronize(); s.synchronize()
        assert recorded_while_blocked, "record_event waited for the producer"
        for obj in (ev, s, src, dst, dev):
            obj.close()
        print("ok")
    """, env={"HRX_HOST_RING_CAPACITY": "2",
              "HRX_BATCH_MAX_COPY_BYTES": str(1 << 20)}, timeout=120)
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
