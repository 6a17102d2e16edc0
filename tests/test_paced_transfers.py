"""Paced bulk transfers (docs/lanes.md, "Transfers"): uploads, reads and
device copies of a normal or low stream are split into chunks of
HRX_CHUNK_BYTES and published so that no more than HRX_CHUNK_WINDOW_BYTES
of them are in flight per direction; the rest waits on the host. The bytes,
the order of a stream's work and its failure reports are the same with
chunking on and off; a high-priority or reserved stream's transfer is
published at once.

The variables are read when a live device is created, so each scenario runs
in a fresh interpreter, with small chunks so that the tests stay fast.
"""
from __future__ import annotations

import pytest

from fresh_programs import (DEVICE_ERROR_MESSAGE, LIVE_OBJECTS,
                            failing_read, open_refused)

SMALL = {"HRX_CHUNK_BYTES": "65536", "HRX_CHUNK_WINDOW_BYTES": "131072"}
OFF = {"HRX_CHUNKING": "0"}

LIVE = LIVE_OBJECTS
FAILS = DEVICE_ERROR_MESSAGE


@pytest.mark.parametrize("env", [SMALL, OFF], ids=["chunked", "unchunked"])
def test_transfers_give_the_same_bytes(fresh, env):
    out = fresh("""
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        low = dev.stream(priority="low")
        rng = np.random.default_rng(7)
        for n in (65536, 65536 * 3 + 17, 1 << 20 | 5, 4096):
            data = rng.integers(0, 256, n, dtype=np.uint8)
            a = dev.allocate(n); b = dev.allocate(n)
            s.upload(a, data)               # paced from one chunk on
            s.copy(b, a)
            assert (s.read(b).wait() == data).all(), n
            out = np.empty(n, np.uint8)
            low.wait_event(s.record_event())
            low.read_blocking(a, out)
            assert (out == data).all(), n
            # views: an odd offset into a larger buffer
            c = dev.allocate(n + 100)
            low.upload(c[33:33 + n], data)
            assert (low.read(c[33:33 + n]).wait() == data).all(), n
        dev.synchronize()
        print("ok")
    """, env=env)
    assert out.strip() == "ok"


def test_a_stream_keeps_its_order_behind_held_work(fresh):
    """Held reads and uploads followed by fills, copies and an event on the
    same stream: every later command sees the transfers done, and the event
    covers them."""
    out = fresh("""
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        n = 1 << 20
        a = dev.allocate(n); b = dev.allocate(n)
        s.fill(a, 1)
        reads = [s.read(a)]                 # held behind the window
        s.upload(b, np.full(n, 2, np.uint8))
        reads.append(s.read(b))
        s.fill(a[:4096], 3)                 # waits for the held list
        s.copy(b[4096:8192], a[:4096])
        reads.append(s.read(b[:8192]))
        assert not s.query() or all(r.done() for r in reads)
        ev = s.record_event()
        ev.synchronize()
        assert all(r.done() for r in reads)  # the event covers them
        assert (reads[0].wait() == 1).all()
        assert (reads[1].wait() == 2).all()
        third = reads[2].wait()
        assert (third[:4096] == 2).all() and (third[4096:] == 3).all()
        s.synchronize()
        assert s.query()
        print("ok")
    """, env=SMALL)
    assert out.strip() == "ok"


@pytest.mark.parametrize("urgent", ["priority='high'", "reserve=True"])
def test_an_urgent_read_overtakes_a_held_backlog(fresh, urgent):
    """A backlog of large reads on a normal stream is held on the host; a
    high-priority (or reserved) stream's read is published at once and
    completes while most of the backlog is still held."""
    out = fresh(f"""
        dev = hrx.Device.open(0, backend=backend)
        bulk = dev.stream()
        urgent = dev.stream({urgent})
        n = 8 << 20
        big = dev.allocate(n); small = dev.allocate(4096)
        bulk.fill(big, 5); urgent.fill(small, 6)
        dev.synchronize()
        backlog = [bulk.read(big) for _ in range(8)]
        probe = urgent.read(small)
        assert (probe.wait() == 6).all()
        # Completion order, not time: the backlog is far from done.
        assert not backlog[-1].done()
        assert not bulk.query()
        for r in backlog:
            assert (r.wait() == 5).all()
        assert bulk.query()
        print("ok")
    """, env=SMALL)
    assert out.strip() == "ok"




@pytest.mark.parametrize("op", ["upload", "read"])
def test_a_failing_chunk_reads_like_the_unchunked_failure(fresh, op):
    """Fault injection on the first chunk: the same exception type, command
    number and text with chunking on and off."""
    code = LIVE + FAILS + f"""
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        n = 65536 * 3 + 5
        a = dev.allocate(n); b = dev.allocate(n)
        s.fill(a, 1); s.fill(b, 2)
        op = {op!r}
        if op == "upload":
            s.upload(b, np.full(n, 9, np.uint8))  # fails
            s.fill(a, 7)                          # not run
            print(message(s.synchronize))
        elif op == "copy":
            s.copy(b, a)                          # fails
            s.upload(a, np.full(n, 8, np.uint8))  # not run
            print(message(s.synchronize))
        else:
            print(message(lambda: s.read(b)))     # its own failure: at once
        s.synchronize()
        assert (s.read(b).wait() == 2).all()      # nothing reached b
        for obj in (s, a, b, dev):
            obj.close()
        assert live() == NOTHING, live()
    """
    faults = {"upload": "upload:1", "copy": "copy:1", "read": "download:1"}
    chunked = fresh(code, env=dict(SMALL, HRX_FAULTS=faults[op]))
    unchunked = fresh(code, env=dict(OFF, HRX_FAULTS=faults[op]))
    assert chunked == unchunked
    assert "injected fault" in chunked, chunked


def test_a_failed_stream_runs_none_of_its_held_transfers(fresh):
    """A chunk that fails halfway through an upload fails the stream by the
    upload's number; the held upload after it is counted as not run, and a
    held read reports that it was not run."""
    out = fresh(LIVE + FAILS + """
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        n = 65536 * 4
        a = dev.allocate(n); b = dev.allocate(n)
        s.fill(b, 2); s.synchronize()
        s.upload(a, np.full(n, 9, np.uint8))  # its third chunk fails
        s.upload(b, np.full(n, 8, np.uint8))  # held: not run
        m = message(s.synchronize)
        assert "command 2 of this stream (upload of 262144 bytes) failed" in m, m
        assert "injected fault: upload call #3" in m, m
        assert "1 later command of this stream was not run" in m, m
        assert (s.read(b).wait() == 2).all()
        for obj in (s, a, b, dev):
            obj.close()
        assert live() == NOTHING, live()
        print("ok")
    """, env=dict(SMALL, HRX_FAULTS="upload:3"))
    assert out.strip() == "ok"


def test_a_read_failing_after_its_call_raises_at_its_wait(fresh):
    """Chunk 4 fails: usually on the pacer, after the call, so that the
    wait raises it; when the call itself published it (a slow machine), the
    call raises it, as an unpaced read's would."""
    out = fresh(failing_read(65536 * 6, "s.read(a)"),
                env=dict(SMALL, HRX_FAULTS="download:4"))
    assert out.strip() == "ok"


def test_closing_streams_and_the_device_with_held_work(fresh):
    """Held work is published (or dropped) before its stream and device go:
    nothing leaks and nothing runs on freed memory (the ASan run checks the
    latter)."""
    out = fresh(LIVE + """
        for _ in range(3):
            dev = hrx.Device.open(0, backend=backend)
            s = dev.stream()
            n = 1 << 20
            a = dev.allocate(n); b = dev.allocate(n)
            reads = [s.read(a) for _ in range(4)]
            s.upload(b, np.zeros(n, np.uint8))
            s.copy(a, b)
            del reads                      # released while held
            s.close()                      # publishes the held list
            a.close(); b.close()
            dev.close()
            assert live() == NOTHING, live()
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream(); a = dev.allocate(1 << 20)
        r = s.read(a)
        a.close()                          # the read still holds its bytes
        assert len(r.wait()) == 1 << 20
        r.close(); s.close(); dev.close()
        assert live() == NOTHING, live()
        print("ok")
    """, env=dict(SMALL, HRX_FAULTS="alloc:1000000"))
    assert out.strip() == "ok"


@pytest.mark.parametrize("name,value,part", [
    ("HRX_CHUNKING", "2", "HRX_CHUNKING must be an integer from 0 to 1"),
    ("HRX_CHUNK_BYTES", "4096",
     "HRX_CHUNK_BYTES must be an integer from 65536 to 1073741824"),
    ("HRX_CHUNK_BYTES", "4M", "got '4M'"),
    ("HRX_CHUNK_WINDOW_BYTES", "65535",
     "HRX_CHUNK_WINDOW_BYTES must be at least one chunk"),
    ("HRX_CHUNK_WINDOW_BYTES", "0", "HRX_CHUNK_WINDOW_BYTES must be an integer"),
])
def test_malformed_chunking_variables_are_refused(fresh, name, value, part):
    message = open_refused(fresh, {"HRX_CHUNK_BYTES": "65536", name: value})
    assert part in message, message


@pytest.mark.parametrize("env,staged", [(SMALL, True), (OFF, False)],
                         ids=["chunked", "unchunked"])
def test_a_paced_upload_copies_the_callers_data_once_into_pooled_staging(
        fresh, env, staged):
    """A paced upload copies the caller's data at the call into a staging
    block of the device's pool (pinned on GPUs) and publishes its chunks
    from it: the caller may overwrite its array as soon as the call
    returns, and the block goes back to the pool after the last chunk
    (with a cache of zero, evicted: counted). Unpaced uploads stage in the
    backend as before."""
    out = fresh(f"""
        import time
        evictions = hrx._hrx._testing_staging_evictions
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        n = 1 << 20
        bufs = [dev.allocate(n) for _ in range(8)]
        data = np.empty(n, np.uint8)
        for i, b in enumerate(bufs):
            data[:] = 10 + i
            s.upload(b, data)               # held behind the window
        data[:] = 255                       # the uploads took their copies
        s.synchronize()
        # Given back by the pacer, freed by the cleanup thread: waited for
        # (briefly where nothing is expected).
        deadline = time.monotonic() + (30 if {staged!r} else 0.2)
        while evictions()["cleanup"] < 8 and time.monotonic() < deadline:
            time.sleep(0.001)
        uploads = evictions()["cleanup"]
        assert (uploads >= 8) == {staged!r}, uploads
        for i, b in enumerate(bufs):
            out = np.empty(n, np.uint8)
            s.read_blocking(b, out)
            assert (out == 10 + i).all(), i
        dev.synchronize()
        print("ok")
    """, env=dict(env, HRX_STAGING_CACHE_BYTES="0", HRX_FAULTS="none"))
    assert out.strip() == "ok"


@pytest.mark.parametrize("op", ["read", "read_into", "upload", "copy"])
@pytest.mark.parametrize("env", [SMALL, OFF], ids=["chunked", "unchunked"])
def test_python_transfers_are_held_beyond_the_window(fresh, op, env):
    """Through the Python API (whose calls first try to submit without
    releasing the GIL) a bulk transfer is paced like one from C: while the
    stream's queue waits for another stream's event, at most a window of a
    backlog is published on it; with chunking off, all of it is. Device
    copies are never paced."""
    out = fresh(f"""
        from hrx.bench.kernel_launches import builtin_kernel
        dev = hrx.Device.open(0, backend=backend)
        blocker = dev.stream(reserve=True)
        bulk = dev.stream()
        n = 1 << 20
        src = [dev.allocate(n) for _ in range(4)]
        dst = [dev.allocate(n) for _ in range(4)]
        host = np.ones(n, np.uint8)
        outs = [np.empty(n, np.uint8) for _ in range(4)]
        spin = builtin_kernel(dev, "spin")
        flag = dev.allocate(64)
        blocker.launch(spin, 1, 1, (np.uint64(300_000_000), flag))
        bulk.wait_event(blocker.record_event())   # the queue waits ~0.3 s
        def submitted():
            slot = bulk.queue_index
            return [q for q in dev.pool_stats()["queues"]
                    if q["slot"] == slot and q["priority"] == "normal"
                    ][0]["bytes_submitted"]
        before = submitted()
        reads = []
        for i in range(4):
            if {op!r} == "read":
                reads.append(bulk.read(src[i]))
            elif {op!r} == "read_into":
                reads.append(bulk.read_into(src[i], outs[i]))
            elif {op!r} == "upload":
                bulk.upload(dst[i], host)
            else:
                bulk.copy(dst[i], src[i])
        published = submitted() - before
        held = not blocker.query()      # the event had not completed yet
        for r in reads:
            r.wait()
        bulk.synchronize()
        print(published, 4 * n, held)
    """, env=env)
    published, total, held = out.split()
    assert held == "True", "the blocking kernel ended too early to tell"
    if env is OFF or op == "copy":       # device copies are never paced
        assert int(published) == int(total)
    else:
        assert int(published) <= int(SMALL["HRX_CHUNK_WINDOW_BYTES"])
