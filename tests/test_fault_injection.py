"""Fault injection through $HRX_FAULTS (csrc/drivers/fault/): every
injected failure surfaces as its documented hrx error class, the pool and the
live device stay consistent, and repeated faults leak no native object
(counted by the wrapper, read with the testing-only
``hrx._hrx._testing_live_native_objects()``).

HRX_FAULTS is read when a live device is created, so each scenario runs in a
fresh interpreter. Runs on every available backend (the wrapper sits above
host and hip alike).
"""
from __future__ import annotations

import json
import textwrap

import pytest

LIVE = """
import time
def live():
    c = hrx._hrx._testing_live_native_objects()
    return {k: c[k] for k in ("queues", "events", "allocations",
                              "host_allocations", "graphs", "devices")}
NOTHING = dict(queues=0, events=0, allocations=0, host_allocations=0,
               graphs=0, devices=0)
def settled():
    # What is left once releases handed to a device's cleanup thread ran
    # (a handle dropped in non-blocking mode, such as an Event's, may hold
    # the last reference to its device): asynchronous by design.
    deadline = time.monotonic() + 30
    while live() != NOTHING and time.monotonic() < deadline:
        time.sleep(0.001)
    return live()
"""
# Indented like the snippets below, which run_fresh dedents together.
LIVE = textwrap.indent(LIVE, " " * 8)


def test_counts_are_zero_without_faults(fresh):
    out = fresh(LIVE + """
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream(); b = dev.allocate(64); s.fill(b, 1); s.synchronize()
        assert live() == NOTHING, live()  # no wrapper without HRX_FAULTS
        print("ok")
    """)
    assert out.strip() == "ok"


@pytest.mark.parametrize("spec,part", [
    ("alloc", "has no ':VALUE'"),
    ("alloc:0", "positive integer"),
    ("nosuch:1", "unknown call 'nosuch'"),
    ("copy:101%", "percentage in (0, 100]"),
    ("alloc:1,,copy:1", "is empty"),
])
def test_malformed_spec_is_refused_at_open(fresh, spec, part):
    out = fresh(LIVE + f"""
        try:
            hrx.Device.open(0, backend=backend)
        except hrx.InvalidArgumentError as e:
            assert "HRX_FAULTS" in str(e) and {part!r} in str(e), str(e)
            assert "OP:K" in str(e)  # states what is allowed
        else:
            raise AssertionError("opened with a malformed HRX_FAULTS")
        assert live() == NOTHING, live()
        print("ok")
    """, env={"HRX_FAULTS": spec})
    assert out.strip() == "ok"


def test_allocation_failure(fresh):
    out = fresh(LIVE + """
        dev = hrx.Device.open(0, backend=backend)
        dev.set_batching(False)  # each command fails its own call
        a = dev.allocate(256)
        try:
            dev.allocate(256)
        except hrx.OutOfMemoryError as e:
            assert isinstance(e, MemoryError)
            assert "injected fault: alloc call #2" in str(e), str(e)
        else:
            raise AssertionError("allocation #2 did not fail")
        assert live()["allocations"] == 1
        c = dev.allocate(256)  # the next allocation works
        s = dev.stream()
        try:
            s.read(a)          # its staging memory is refused
        except hrx.OutOfMemoryError as e:
            assert "host_alloc call #1" in str(e)
        else:
            raise AssertionError("read staging did not fail")
        assert live()["host_allocations"] == 0 and live()["events"] == 0
        s.fill(a, 5)
        assert (s.read(a).wait() == 5).all()
        assert live()["host_allocations"] == 1  # pooled for later reads
        for obj in (s, a, c, dev):
            obj.close()
        assert live() == NOTHING, live()
        print("ok")
    """, env={"HRX_FAULTS": "alloc:2,host_alloc:1"})
    assert out.strip() == "ok"


def test_queue_creation_failure_keeps_the_pool_consistent(fresh):
    out = fresh(LIVE + """
        dev = hrx.Device.open(0, backend=backend)
        dev.set_batching(False)  # each command fails its own call
        dev.set_stream_queue_count(4)
        try:
            dev.stream()
        except hrx.ResourceExhaustedError as e:
            assert "pool slot 0 of 4" in str(e), str(e)
            assert "injected fault: queue_create call #1" in str(e)
        else:
            raise AssertionError("queue #1 did not fail")
        info = dev.pool_info()
        assert not info["first_use"] and info["next_slot"] == 0
        assert info["queues_created"] == 0 and info["live_streams"] == 0
        dev.set_stream_queue_count(2)   # a failure is not first use
        s0 = dev.stream()
        try:
            dev.stream()
        except hrx.ResourceExhaustedError as e:
            assert "pool slot 1 of 2" in str(e), str(e)
        else:
            raise AssertionError("queue #3 did not fail")
        info = dev.pool_info()
        assert info["next_slot"] == 1 and info["queues_created"] == 1
        s1 = dev.stream()               # retries slot 1
        s2 = dev.stream()
        assert (s0.queue_index, s1.queue_index, s2.queue_index) == (0, 1, 0)
        assert live()["queues"] == 2
        try:
            hrx.fabric.Queue(dev)       # outside the pool: same fault class
        except hrx.ResourceExhaustedError as e:
            assert "outside the pool" in str(e), str(e)
        else:
            raise AssertionError("queue #5 did not fail")
        assert dev.pool_info()["fabric_queues"] == 0
        for obj in (s0, s1, s2, dev):
            obj.close()
        assert live() == NOTHING, live()
        print("ok")
    """, env={"HRX_FAULTS": "queue_create:1,queue_create:3,queue_create:5"})
    assert out.strip() == "ok"


FAILS = """
        def fails(call, part):
            try:
                call()
            except hrx.DeviceError as e:
                assert isinstance(e, RuntimeError)
                assert part in str(e), str(e)
            else:
                raise AssertionError(part + " did not fail")
"""
FAILS = textwrap.indent(textwrap.dedent(FAILS), " " * 8)


@pytest.mark.parametrize("batching", [False, True])
def test_a_failed_command_fails_its_stream(fresh, batching):
    """A refused command fails its stream: the call returns, later commands
    are not run, the next observation point raises the failure (naming the
    command and how many were not run), then the stream works again. The
    same with batching on and off."""
    out = fresh(LIVE + FAILS + f"""
        dev = hrx.Device.open(0, backend=backend, batching={batching})
        s = dev.stream()
        src = dev.allocate(4096); dst = dev.allocate(4096)
        s.fill(src, 0x11)
        s.fill(dst, 0x22)
        s.synchronize()
        s.copy(dst, src)                    # copy #1 fails: no exception
        s.fill(dst, 0x33)                   # not run
        s.upload(dst, np.full(4096, 0x44, np.uint8))  # not run
        fails(s.synchronize, "command 3 of this stream (copy of 4096 bytes) "
              "failed: injected fault: copy call #1 failed (HRX_FAULTS); 2 "
              "later commands of this stream were not run; the stream is "
              "usable again")
        s.synchronize()                     # raised once
        assert (s.read(dst).wait() == 0x22).all()  # nothing reached dst
        s.copy(dst, src)                    # the stream works again
        assert (s.read(dst).wait() == 0x11).all()
        s.fill(dst, 0x55)                   # fill #3 fails
        fails(lambda: s.read(dst), "fill call #3")   # a read observes it
        s.upload(src, bytes(4096))          # upload #1 fails
        fails(s.record_event, "upload call #1")
        fails(lambda: s.read(dst), "download call #3")  # its own: at once
        ev = s.record_event()
        t = dev.stream()
        t.wait_event(ev)                    # wait_event #1 fails on t
        fails(dev.synchronize, "(event wait) failed: injected fault: "
              "wait_event call #1")          # a device synchronize raises it
        t.synchronize()
        assert (s.read(dst).wait() == 0x11).all()
        for obj in (ev, s, t, src, dst, dev):
            obj.close()
        assert live() == NOTHING, live()
        print("ok")
    """, env={"HRX_FAULTS": "copy:1,fill:3,upload:1,download:3,"
                            "wait_event:1"})
    assert out.strip() == "ok"


@pytest.mark.parametrize("batching", [False, True])
def test_closing_a_failed_stream_warns(fresh, batching):
    """A failure that nothing raised is reported when its stream closes:
    a RuntimeWarning naming the command, never silence."""
    out = fresh(LIVE + f"""
        import warnings
        dev = hrx.Device.open(0, backend=backend, batching={batching})
        s = dev.stream(); b = dev.allocate(64)
        s.fill(b, 1)                        # fill #1 fails
        s.fill(b, 2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            s.close()
        assert len(caught) == 1, [str(w.message) for w in caught]
        w = caught[0]
        assert issubclass(w.category, RuntimeWarning)
        assert "command 1 of this stream (fill of 64 bytes) failed" in str(
            w.message), str(w.message)
        assert "1 later command of this stream was not run" in str(w.message)
        t = dev.stream()                    # a clean close warns nothing
        t.fill(b, 3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t.close()
        assert not caught, [str(w.message) for w in caught]
        b.close(); dev.close()
        assert live() == NOTHING, live()
        print("ok")
    """, env={"HRX_FAULTS": "fill:1"})
    assert out.strip() == "ok"


def test_failing_events(fresh):
    out = fresh(LIVE + FAILS + """
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream(); t = dev.stream()
        b = dev.allocate(64)
        s.fill(b, 9)
        fails(s.record_event, "injected fault: event_create call #1")
        ev = s.record_event()                      # create #2, record #1
        fails(s.record_event, "injected fault: event_record call #2")
        assert live()["events"] == 1
        fails(ev.synchronize, "injected fault: event_synchronize call #1")
        t.wait_event(ev)
        ev.synchronize()
        ev.close()
        # A read's staging block brings its own event (create #4), kept
        # with the block in the device's pool for later reads.
        assert (s.read(b).wait() == 9).all()
        assert live()["events"] == 1 and live()["host_allocations"] == 1
        assert (s.read(b).wait() == 9).all()
        assert live()["events"] == 1 and live()["host_allocations"] == 1
        for obj in (s, t, b, dev):
            obj.close()
        assert live() == NOTHING, live()
        print("ok")
    """, env={"HRX_FAULTS": "event_create:1,event_record:2,"
                            "event_synchronize:1"})
    assert out.strip() == "ok"


def test_a_read_whose_wait_failed_keeps_its_device_until_closed(fresh):
    """A Readback whose wait raised is still open: it keeps its device and
    its staging block alive after everything else closed, and its close
    releases them all."""
    out = fresh(LIVE + """
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream(); b = dev.allocate(512)
        s.fill(b, 1)
        r = s.read(b)
        try:
            r.wait()
        except hrx.DeviceError as e:
            assert "injected fault: event_synchronize call #1" in str(e), e
        else:
            raise AssertionError("the failed wait did not raise")
        for obj in (s, b, dev):
            obj.close()
        time.sleep(0.2)     # the cleanup thread would have run by now
        held = live()
        assert held["devices"] == 1 and held["host_allocations"] >= 1, held
        r.close()
        assert settled() == NOTHING, live()
        print("ok")
    """, env={"HRX_FAULTS": "event_synchronize:1"})
    assert out.strip() == "ok"


def test_a_fault_inside_a_batch_fails_the_stream(fresh):
    """With batching, a copy that fails inside a published batch fails the
    stream: the rest of the batch is not run, the next observation point
    raises it once, naming the command."""
    out = fresh(LIVE + """
        dev = hrx.Device.open(0, backend=backend)
        dev.set_batching(True)
        s = dev.stream()
        big = dev.allocate(64 << 20)
        src, dst = dev.allocate(96), dev.allocate(96)
        s.fill(src, 0xAB); s.fill(dst, 0); s.synchronize()
        s.fill(big, 1)                      # keeps the queue busy
        for i in range(6):                  # no call raises
            s.copy(dst[i * 16:(i + 1) * 16], src[i * 16:(i + 1) * 16])
        try:
            s.synchronize()
        except hrx.DeviceError as e:
            message = str(e)
        else:
            raise AssertionError("the failed copy was not reported")
        assert "injected fault: copy call #3" in message, message
        assert "3 later commands of this stream were not run" in message
        s.synchronize()                     # reported once only
        got = s.read(dst).wait().reshape(6, 16)
        assert (got[:2] == 0xAB).all() and (got[2:] == 0).all()
        for obj in (s, big, src, dst, dev):
            obj.close()
        assert live() == NOTHING, live()
        print("ok")
    """, env={"HRX_FAULTS": "copy:3"})
    assert out.strip() == "ok"


def test_repeated_random_faults_leak_nothing(fresh):
    """Random programs under probabilistic faults of every kind (several
    seeds): each failure has its documented class; after closing
    everything, no native object is left."""
    out = fresh(LIVE + """
        import json, random
        classes = {"alloc": hrx.OutOfMemoryError,
                   "host_alloc": hrx.OutOfMemoryError,
                   "queue_create": hrx.ResourceExhaustedError}
        injected = ops = 0
        for seed in range(1, 5):
            os.environ["HRX_FAULTS"] = (
                f"seed:{seed},alloc:10%,host_alloc:10%,queue_create:25%,"
                "copy:10%,fill:10%,upload:10%,download:10%,event_create:10%,"
                "event_record:10%,wait_event:10%,synchronize:5%,"
                "event_synchronize:5%")
            before = hrx._hrx._testing_live_native_objects()["faults_injected"]
            rng = random.Random(seed)
            dev = hrx.Device.open(0, backend=backend)
            dev.set_batching(seed % 2 == 0)
            dev.set_stream_queue_count(1)  # streams share buffers race-free
            streams, bufs, ev = [None] * 4, [None] * 3, None
            for _ in range(600):
                ops += 1
                i, j = rng.randrange(4), rng.randrange(3)
                try:
                    if streams[i] is None:
                        streams[i] = dev.stream()
                    elif bufs[j] is None:
                        bufs[j] = dev.allocate(512)
                    else:
                        s, b, op = streams[i], bufs[j], rng.randrange(8)
                        other = bufs[(j + 1) % 3]
                        if op == 0 and other is not None:
                            s.copy(other, b)
                        elif op == 1:
                            s.fill(b, 3)
                        elif op == 2:
                            s.upload(b, bytes(512))
                        elif op == 3:
                            # A wait that raises leaves the read open: the
                            # close must still come, or the read keeps the
                            # device (and its staging blocks) alive.
                            r = s.read(b)
                            try:
                                if rng.random() < 0.5:
                                    r.wait()
                            finally:
                                r.close()
                        elif op == 4:
                            if ev is not None:
                                ev.close()
                            ev = None
                            ev = s.record_event()
                        elif op == 5 and ev is not None:
                            s.wait_event(ev)
                        elif op == 6:
                            s.synchronize()
                        elif op == 7:
                            s.close(); streams[i] = None
                except hrx.Error as e:
                    msg = str(e)
                    assert "injected fault: " in msg, msg
                    call = msg.split("injected fault: ")[1].split(" ")[0]
                    assert isinstance(e, classes.get(call, hrx.DeviceError)), msg
            for obj in streams + bufs + [ev, dev]:
                if obj is not None:
                    obj.close()
            assert settled() == NOTHING, (seed, live())
            injected += (hrx._hrx._testing_live_native_objects()
                         ["faults_injected"] - before)
        print(json.dumps({"injected": injected, "operations": ops}))
    """, env={"HRX_FAULTS": "none"})
    figures = json.loads(out)
    assert figures["injected"] > 100, figures
