"""Staged transfers (docs/api.md, "Staged transfers"): a large upload or
read of pageable host memory is copied to and from pinned staging by the
calling thread and the device's copy threads together
(HRX_STAGED_COPY_THREADS, HRX_STAGED_COPY_MIN_BYTES), and a paced upload's
chunks are published as soon as their piece of staging is filled. The
bytes, the order of a stream's work, when the caller's memory may be reused
and how failures are reported are the same as with the copy threads off.

The variables are read when a live device is created, so each scenario runs
in a fresh interpreter, with small chunks and a small threshold so that the
tests stay fast while every transfer of a few chunks is pipelined.
"""
from __future__ import annotations

import textwrap

import pytest

from fresh_programs import (DEVICE_ERROR_MESSAGE, LIVE_OBJECTS,
                            failing_read, open_refused)

CHUNK = 65536
# Chunking on whatever the run's environment says (the conformance files
# run once more with HRX_CHUNKING=0): these tests fail transfers by chunk.
SMALL = {"HRX_CHUNKING": "1", "HRX_CHUNK_BYTES": str(CHUNK),
         "HRX_CHUNK_WINDOW_BYTES": str(2 * CHUNK)}
PIPELINED = dict(SMALL, HRX_STAGED_COPY_THREADS="3",
                 HRX_STAGED_COPY_MIN_BYTES=str(CHUNK))
SINGLE = dict(SMALL, HRX_STAGED_COPY_THREADS="0")
# Large copies through the caches (memcpy) instead of around them.
CACHED = dict(PIPELINED, HRX_STAGED_COPY_STREAMING="0")
# Not paced: staged whole by the copy threads, then one upload.
UNCHUNKED = dict(PIPELINED, HRX_CHUNKING="0")

# threads(): how many threads the process has.
LIVE = LIVE_OBJECTS + DEVICE_ERROR_MESSAGE + textwrap.indent("""
def threads():
    return len(os.listdir("/proc/self/task"))
""", " " * 8)

# Around the chunk (and piece) boundaries, odd sizes, one below the
# threshold (the short path), and a read of several drain pieces.
SIZES = [CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK - 1, 2 * CHUNK,
         2 * CHUNK + 1, 7 * CHUNK + 13, (5 << 20) + 3]


@pytest.mark.parametrize("env", [PIPELINED, UNCHUNKED, SINGLE, CACHED],
                         ids=["pipelined", "unchunked", "one-thread",
                              "cached"])
def test_staged_transfers_give_identical_bytes(fresh, env):
    out = fresh(f"""
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        urgent = dev.stream(priority="high")   # never paced
        rng = np.random.default_rng(11)
        for n in {SIZES!r}:
            data = rng.integers(0, 256, n, dtype=np.uint8)
            a = dev.allocate(n); b = dev.allocate(n + 64)
            s.upload(a, data)
            assert (s.read(a).wait() == data).all(), n
            done = s.read(a)
            s.synchronize()            # complete before its wait
            assert (done.wait() == data).all(), n
            out = np.empty(n, np.uint8)
            assert s.read_into(a, out).wait() is out
            assert (out == data).all(), n
            out2 = np.zeros(n, np.uint8)
            s.read_blocking(a, out2)
            assert (out2 == data).all(), n
            # A view at an odd offset, uploaded from a strided-free slice.
            s.upload(b[17:17 + n], data)
            assert (s.read(b[17:17 + n]).wait() == data).all(), n
            s.synchronize()
            urgent.upload(a, data[::-1].copy())
            assert (urgent.read(a).wait() == data[::-1]).all(), n
            urgent.synchronize()
        print("ok")
    """, env=env)
    assert out.strip() == "ok"


@pytest.mark.parametrize("env", [PIPELINED, UNCHUNKED],
                         ids=["pipelined", "unchunked"])
def test_the_callers_memory_may_be_reused_when_upload_returns(fresh, env):
    """The upload borrowed its source for the call only: overwriting it at
    once changes nothing on the device, even while chunks are held."""
    out = fresh("""
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        n = 9 * 65536 + 7
        dsts = [dev.allocate(n) for _ in range(6)]
        data = np.empty(n, np.uint8)
        for i, d in enumerate(dsts):
            data[:] = i + 1
            s.upload(d, data)          # held behind the window
            data[:] = 255              # reused at once
        for i, d in enumerate(dsts):
            assert (s.read(d).wait() == i + 1).all(), i
        print("ok")
    """, env=env)
    assert out.strip() == "ok"


@pytest.mark.parametrize("env", [PIPELINED, UNCHUNKED],
                         ids=["pipelined", "unchunked"])
def test_staged_uploads_keep_their_place_in_the_stream(fresh, env):
    """Fills, copies, reads and uploads on one stream run in submission
    order around pipelined uploads, and an event recorded after them covers
    them."""
    out = fresh("""
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        n = 6 * 65536 + 3
        a = dev.allocate(n); b = dev.allocate(n)
        s.fill(a, 1)
        s.upload(a, np.full(n, 2, np.uint8))   # after the fill
        s.copy(b, a)                           # sees the upload
        first = s.read(b)
        s.upload(a, np.full(n, 3, np.uint8))   # after the copy and read
        s.fill(a[:100], 4)                     # after the second upload
        ev = s.record_event()
        ev.synchronize()
        assert (first.wait() == 2).all()
        got = s.read(a).wait()
        assert (got[:100] == 4).all() and (got[100:] == 3).all()
        # Another stream ordered by the event sees every byte.
        other = dev.stream()
        other.wait_event(ev)
        assert (other.read(b).wait() == 2).all()
        print("ok")
    """, env=env)
    assert out.strip() == "ok"


@pytest.mark.parametrize("env", [PIPELINED, UNCHUNKED],
                         ids=["pipelined", "unchunked"])
def test_copy_threads_start_with_the_first_large_copy(fresh, env, backend):
    """Small transfers stay on the short path: no copy thread starts; the
    first transfer at the threshold starts HRX_STAGED_COPY_THREADS of
    them, and later ones reuse them."""
    if backend != "host":
        pytest.skip("counts the process's threads: a GPU runtime starts its "
                    "own")
    out = fresh(LIVE + """
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        small = dev.allocate(4096)
        s.upload(small, np.ones(4096, np.uint8))
        assert (s.read(small).wait() == 1).all()
        before = threads()
        n = 8 * 65536
        big = dev.allocate(n)
        s.upload(big, np.ones(n, np.uint8))
        started = threads() - before
        assert started >= 3, started         # the copy threads (and maybe
                                             # the pacer's)
        s.upload(big, np.full(n, 2, np.uint8))
        assert (s.read(big).wait() == 2).all()
        # No more copy threads (the large read may start the pacer's
        # thread of its direction).
        assert threads() - before <= started + 1, (threads(), before, started)
        for obj in (s, small, big, dev):
            obj.close()
        assert live() == NOTHING, live()
        print("ok")
    """, env=env)
    assert out.strip() == "ok"


def test_copy_threads_off_start_none(fresh, backend):
    if backend != "host":
        pytest.skip("counts the process's threads: a GPU runtime starts its "
                    "own")
    out = fresh(LIVE + """
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        n = 8 * 65536
        big = dev.allocate(n)
        s.upload(big, np.ones(n, np.uint8))   # starts the pacer's threads
        assert (s.read(big).wait() == 1).all()
        before = threads()
        s.upload(big, np.full(n, 2, np.uint8))
        assert (s.read(big).wait() == 2).all()
        assert threads() == before, (threads(), before)
        print("ok")
    """, env=SINGLE)
    assert out.strip() == "ok"


FAILING_UPLOAD = LIVE + """
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        n = 65536 * 6 + 5
        a = dev.allocate(n); b = dev.allocate(n)
        s.fill(b, 2); s.synchronize()
        s.upload(a, np.full(n, 9, np.uint8))  # its third chunk fails
        s.upload(b, np.full(n, 8, np.uint8))  # held: not run
        s.fill(a, 7)                          # not run
        print(message(s.synchronize))
        s.synchronize()
        assert (s.read(b).wait() == 2).all()  # nothing reached b
        for obj in (s, a, b, dev):
            obj.close()
        assert live() == NOTHING, live()
"""


def test_an_unpaced_staged_upload_fails_like_the_drivers_upload(fresh):
    """With chunking off a large upload is staged by the copy threads and
    published as one upload: its failure reads as the driver's upload's."""
    staged = fresh(FAILING_UPLOAD, env=dict(UNCHUNKED, HRX_FAULTS="upload:1"))
    driver = fresh(FAILING_UPLOAD, env=dict(UNCHUNKED, HRX_FAULTS="upload:1",
                                            HRX_STAGED_COPY_THREADS="0"))
    assert staged == driver
    assert "command 2 of this stream (upload of 393221 bytes) failed" in \
        staged, staged


def test_a_failure_mid_upload_reads_like_the_one_thread_path(fresh):
    """A chunk failing halfway through a pipelined upload fails the stream
    by the upload's number, at its next observation point, with the same
    text as with the copy threads off; later transfers are not run."""
    pipelined = fresh(FAILING_UPLOAD, env=dict(PIPELINED, HRX_FAULTS="upload:3"))
    single = fresh(FAILING_UPLOAD, env=dict(SINGLE, HRX_FAULTS="upload:3"))
    assert pipelined == single
    assert "command 2 of this stream (upload of 393221 bytes) failed" in \
        pipelined, pipelined
    assert "injected fault: upload call #3" in pipelined, pipelined
    assert "2 later commands of this stream were not run" in pipelined, \
        pipelined


def test_a_read_failing_mid_transfer_raises_at_its_wait(fresh):
    out = fresh(failing_read(65536 * 6 + 5, "s.read_into(a, out)"),
                env=dict(PIPELINED, HRX_FAULTS="download:4"))
    assert out.strip() == "ok"


def test_many_threads_upload_and_read_at_once(fresh):
    """Threads uploading and reading large buffers at once, on their own
    streams and on one shared stream, share the copy threads: every byte
    arrives, and a shared stream keeps each thread's transfers in order."""
    out = fresh("""
        import threading
        dev = hrx.Device.open(0, backend=backend)
        shared = dev.stream()
        n = 5 * 65536 + 11
        errors = []
        def work(t):
            try:
                own = dev.stream()
                rng = np.random.default_rng(t)
                a = dev.allocate(n); b = dev.allocate(n)
                for i in range(6):
                    data = rng.integers(0, 256, n, dtype=np.uint8)
                    s = own if i % 2 else shared
                    s.upload(a, data)
                    s.copy(b, a)
                    out = np.empty(n, np.uint8)
                    s.read_into(b, out).wait()
                    assert (out == data).all(), (t, i)
                    assert (s.read(a).wait() == data).all(), (t, i)
            except BaseException as e:
                errors.append(repr(e))
        workers = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for w in workers: w.start()
        for w in workers: w.join()
        assert not errors, errors
        dev.synchronize()
        print("ok")
    """, env=PIPELINED, timeout=300)
    assert out.strip() == "ok"


@pytest.mark.parametrize("name,value,part", [
    ("HRX_STAGED_COPY_THREADS", "-1",
     "HRX_STAGED_COPY_THREADS must be an integer from 0 to 64"),
    ("HRX_STAGED_COPY_THREADS", "65",
     "HRX_STAGED_COPY_THREADS must be an integer from 0 to 64"),
    ("HRX_STAGED_COPY_THREADS", "four", "got 'four'"),
    ("HRX_STAGED_COPY_MIN_BYTES", "65535",
     "HRX_STAGED_COPY_MIN_BYTES must be an integer from 65536"),
    ("HRX_STAGED_COPY_STREAMING", "2",
     "HRX_STAGED_COPY_STREAMING must be an integer from 0 to 1"),
])
def test_malformed_staged_copy_variables_are_refused(fresh, name, value,
                                                     part):
    message = open_refused(fresh, {name: value})
    assert part in message, message


def test_threads_waiting_on_one_large_read_get_one_array(fresh):
    """read().wait() copies a large read out without the GIL: threads that
    wait on the same read at once all get its bytes (the first array made
    is the readback's), and closing a read while another thread copies it
    out does not take the bytes from under that copy."""
    out = fresh("""
        import threading
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        n = (4 << 20) + 3
        a = dev.allocate(n)
        data = np.random.default_rng(5).integers(0, 256, n, dtype=np.uint8)
        s.upload(a, data)
        for k in range(20):
            r = s.read(a)
            got = []
            waiters = [threading.Thread(target=lambda: got.append(r.wait()))
                       for _ in range(4)]
            for w in waiters: w.start()
            for w in waiters: w.join()
            assert len(got) == 4 and all((g == data).all() for g in got)
            assert r.wait() is r.wait()
            r.close()
            r2 = s.read(a)
            late = []
            def wait_late():
                try:
                    late.append(r2.wait())
                except hrx.Error as e:   # closed before its wait began
                    late.append(e)
            t = threading.Thread(target=wait_late)
            t.start(); r2.close(); t.join()
            assert len(late) == 1
            if isinstance(late[0], np.ndarray):
                assert (late[0] == data).all()
        print("ok")
    """, env=PIPELINED)
    assert out.strip() == "ok"


# A paced read of n bytes of 4s in six chunks and a bit, set up for a
# fault at its fourth download (HRX_FAULTS="download:4").
PACED_READ_OF_FOURS = LIVE + """
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        chunk = 65536
        n = chunk * 6 + 5
        a = dev.allocate(n)
        s.upload(a, np.full(n, 4, np.uint8))
        s.synchronize()
"""


def test_a_failing_read_into_keeps_only_landed_chunks(fresh):
    """read_into's wait copies a paced read's chunks into `out` as they
    land; when a later chunk fails, the wait raises and `out` holds at most
    the chunks before it, with their right bytes, and nothing after."""
    out = fresh(PACED_READ_OF_FOURS + """
        out = np.zeros(n, np.uint8)
        try:
            r = s.read_into(a, out)
        except hrx.DeviceError as e:   # published by the call itself
            m = str(e)
        else:
            m = message(r.wait)
            r.close()
        assert "injected fault: download call #4" in m, m
        written = np.flatnonzero(out)
        assert (out[written] == 4).all()
        assert len(written) <= 3 * chunk, len(written)
        assert (out[3 * chunk:] == 0).all()
        print("ok")
    """, env=dict(PIPELINED, HRX_FAULTS="download:4"))
    assert out.strip() == "ok"


def test_a_failing_read_raises_from_its_wait_and_returns_no_array(fresh):
    """read().wait() copies a paced read's chunks into the new array as
    they land; when a later chunk fails, the wait raises the failure
    (returning no partial array), and the stream reads again after it."""
    out = fresh(PACED_READ_OF_FOURS + """
        try:
            r = s.read(a)
        except hrx.DeviceError as e:   # published by the call itself
            m = str(e)
        else:
            m = message(r.wait)
            assert "injected fault: download call #4" in message(r.wait)
            r.close()
        assert "injected fault: download call #4" in m, m
        assert (s.read(a).wait() == 4).all()
        print("ok")
    """, env=dict(PIPELINED, HRX_FAULTS="download:4"))
    assert out.strip() == "ok"


def test_a_read_polled_while_another_thread_drains_it(fresh):
    """One thread waits on a large paced read_into (draining its chunks as
    they land) while others poll done(): `out` ends with every byte."""
    out = fresh("""
        import threading
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        n = 40 * 65536 + 9
        a = dev.allocate(n)
        data = np.random.default_rng(3).integers(0, 256, n, dtype=np.uint8)
        s.upload(a, data)
        for k in range(10):
            out = np.zeros(n, np.uint8)
            r = s.read_into(a, out)
            stop = []
            def poll():
                while not stop:
                    r.done()
            pollers = [threading.Thread(target=poll) for _ in range(2)]
            for p in pollers: p.start()
            assert r.wait() is out
            stop.append(1)
            for p in pollers: p.join()
            assert (out == data).all(), k
            got = np.zeros(n + 7, np.uint8)
            s.read_blocking(a, got)
            assert (got[:n] == data).all() and (got[n:] == 0).all(), k
        print("ok")
    """, env=PIPELINED)
    assert out.strip() == "ok"
