"""Lifetimes with work in flight: dropping buffers, streams, events and
devices never frees memory that queued work still uses and never deadlocks;
interpreter shutdown with work in flight exits cleanly; a forked child gets
FailedPreconditionError naming fork for its parent's objects, and a fresh
device if it opens one.

Scenarios run in fresh interpreters bounded by timeouts, with backlogs of
large copies on the host backend (a deep ring, so submission never waits).
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from conftest import run_fresh

DEEP = {"HRX_HOST_RING_CAPACITY": "8192"}

BACKLOG = """
CHUNK = 8 << 20
def backlog(stream, dst, src, n=300):
    for _ in range(n):
        stream.copy(dst, src)
"""


def host(code: str, timeout: float = 120) -> str:
    return run_fresh(BACKLOG + textwrap.dedent(code), backend="host",
                     env=DEEP, timeout=timeout)


def test_dropping_a_source_buffer_with_reads_queued():
    """The dropped source stays allocated until the queued copies have read
    it: a buffer allocated right after (which may reuse freed memory) and
    filled differently never shows up in the copies' results."""
    out = host("""
        dev = hrx.Device.open(0, backend="host")
        s = dev.stream()
        src, dst = dev.allocate(CHUNK), dev.allocate(CHUNK)
        s.fill(src, 0x5a)
        backlog(s, dst, src)
        del src                       # the last reference, copies queued
        other = dev.stream()
        decoys = [dev.allocate(CHUNK) for _ in range(4)]
        for d in decoys:
            other.fill(d, 0xEE)
        other.synchronize()
        got = s.read(dst).wait()
        assert (got == 0x5a).all(), np.unique(got)
        print(CHUNK)
    """)
    assert int(out) == 8 << 20


def test_dropping_a_stream_with_work_in_flight():
    out = host("""
        dev = hrx.Device.open(0, backend="host")
        s = dev.stream()
        src, dst = dev.allocate(CHUNK), dev.allocate(CHUNK)
        s.fill(src, 7)
        backlog(s, dst, src)
        s.fill(dst[:16], 9)           # the last command
        s.close()                     # its queued work still runs
        dev.synchronize()
        t = dev.stream()
        got = t.read(dst).wait()
        assert (got[:16] == 9).all() and (got[16:] == 7).all()
        print("ok")
    """)
    assert out.strip() == "ok"


def test_dropping_an_event_that_another_stream_waits_on():
    out = host("""
        dev = hrx.Device.open(0, backend="host")
        dev.set_stream_queue_count(2)
        s, t = dev.stream(), dev.stream()
        assert s.queue_index != t.queue_index
        src, dst = dev.allocate(CHUNK), dev.allocate(CHUNK)
        s.fill(src, 3)
        backlog(s, dst, src, 100)
        s.fill(dst[:8], 4)
        ev = s.record_event()
        t.wait_event(ev)
        ev.close()                    # the device-side wait keeps its target
        del ev
        got = t.read(dst).wait()      # ordered after s's backlog
        assert (got[:8] == 4).all() and (got[8:] == 3).all()
        print("ok")
    """)
    assert out.strip() == "ok"


def test_dropping_every_handle_with_work_in_flight_then_reopening():
    """Closing the device handle first, then streams and buffers in any
    order, with copies queued: nothing hangs, and once the last object goes
    the live device is torn down (a new open starts at the default)."""
    out = host("""
        import gc
        dev = hrx.Device.open(0, backend="host")
        dev.set_stream_queue_count(3)
        streams = [dev.stream() for _ in range(6)]
        bufs = [dev.allocate(CHUNK) for _ in range(4)]
        for i, s in enumerate(streams):
            s.fill(bufs[i % 4], i)
            backlog(s, bufs[(i + 1) % 4], bufs[i % 4], 20)
        ev = streams[0].record_event()
        r = streams[1].read(bufs[0][:64])
        dev.close()
        del streams[::2]
        del bufs[1:3]
        gc.collect()
        del streams, bufs, ev, s
        r.close()                     # abandoned without waiting
        del r
        gc.collect()
        again = hrx.Device.open(0, backend="host")
        assert again.stream_queue_count == hrx.DEFAULT_STREAM_QUEUE_COUNT
        assert again.pool_info()["queues_created"] == 0
        print("ok")
    """, timeout=60)
    assert out.strip() == "ok"


@pytest.mark.parametrize("how", ["return", "sys.exit", "exception",
                                 "thread"])
def test_interpreter_shutdown_with_work_in_flight(how):
    """The interpreter exits with copies queued on several streams (and, in
    `thread`, a daemon thread still submitting): it exits with the expected
    status, promptly (the backlog is a few hundred ms), with no crash."""
    code = BACKLOG + textwrap.dedent(f"""
        import sys, threading, hrx
        dev = hrx.Device.open(0, backend="host")
        streams = [dev.stream() for _ in range(4)]
        bufs = [dev.allocate(CHUNK) for _ in range(5)]
        for i, s in enumerate(streams):
            backlog(s, bufs[i + 1], bufs[0], 40)
        cycle = [streams[0], bufs[0]]
        cycle.append(cycle)           # held only by a reference cycle
        how = {how!r}
        if how == "thread":
            def keep_submitting():
                s = dev.stream()
                while True:
                    s.copy(bufs[1], bufs[2])
            threading.Thread(target=keep_submitting, daemon=True).start()
        if how == "sys.exit":
            sys.exit(3)
        if how == "exception":
            raise RuntimeError("left with work in flight")
        print("bye", flush=True)
    """)
    env = dict(DEEP)
    import os
    result = subprocess.run([sys.executable, "-c", code], capture_output=True,
                            text=True, timeout=60, env={**os.environ, **env})
    expected = {"return": 0, "thread": 0, "sys.exit": 3, "exception": 1}[how]
    assert result.returncode == expected, result.stderr[-3000:]
    if how == "exception":
        assert result.stderr.rstrip().endswith(
            "RuntimeError: left with work in flight")
    else:
        assert "Error" not in result.stderr, result.stderr[-3000:]


FORK = """
import os, signal
dev = hrx.Device.open(0, backend=backend)
s = dev.stream()
b = dev.allocate(1 << 20)
for i in range(32):
    s.fill(b, i)                      # work in flight at the fork
ev = s.record_event()
r = s.read(b[:16])
g = hrx.Graph(dev)
g.fill(b[:16], 6)
if backend == "host" and os.environ.get("HRX_EXPECT_SANITIZED"):
    # GCC 12's ASan allocator takes none of its locks around fork(): a
    # parent thread inside malloc or free at the fork leaves a size class's
    # lock held for good in the child, whose next refill of that class then
    # blocks, most likely in the interpreter's teardown with its thousands
    # of frees. So under ASan the fork comes with the device idle (its
    # threads then allocate nothing: engines park, the batch flusher's
    # lingering polls find nothing due) and the child leaves with os._exit
    # after its checks; the ordinary build forks with the fills in flight
    # and has the child release the parent's objects on its way out.
    dev.synchronize()
pid = os.fork()
if pid == 0:
    signal.alarm(20)                  # a hang fails instead of blocking
    failures = []
    def refused(name, call):
        try:
            call()
        except hrx.FailedPreconditionError as e:
            if "forked" not in str(e) or "spawn" not in str(e):
                failures.append(f"{name}: unclear message {e}")
        except BaseException as e:
            failures.append(f"{name}: {type(e).__name__}: {e}")
        else:
            failures.append(f"{name}: not refused")
    out = np.zeros(16, np.uint8)
    refused("fill", lambda: s.fill(b, 1))
    refused("copy", lambda: s.copy(b[16:32], b[:16]))
    refused("upload", lambda: s.upload(b[:4], b"abcd"))
    refused("read", lambda: s.read(b[:16]))
    refused("read_blocking", lambda: s.read_blocking(b[:16], out))
    refused("synchronize", s.synchronize)
    refused("record_event", s.record_event)
    refused("wait_event", lambda: s.wait_event(ev))
    refused("event.synchronize", ev.synchronize)
    refused("event.query", ev.query)
    refused("readback.wait", r.wait)
    refused("readback.done", r.done)
    refused("device.stream", dev.stream)
    refused("device.allocate", lambda: dev.allocate(64))
    refused("device.synchronize", dev.synchronize)
    refused("set_stream_queue_count", lambda: dev.set_stream_queue_count(2))
    refused("fabric.Queue", lambda: hrx.fabric.Queue(dev))
    refused("Graph", lambda: hrx.Graph(dev))
    refused("graph.launch", lambda: g.launch(s))
    if backend == "host" and os.environ.get("HRX_EXPECT_SANITIZED"):
        # Under ASan (GCC 12's runtime) a thread started in a forked child can
        # block for good on an allocator lock that another parent thread held
        # at the fork; the fresh device's engine threads are such threads.
        # The ordinary build checks the fresh device.
        pass
    elif backend == "host":
        fresh = hrx.Device.open(0, backend="host")   # a new live device
        t = fresh.stream()
        c = fresh.allocate(64)
        t.fill(c, 0x3C)
        if not (t.read(c).wait() == 0x3C).all():
            failures.append("fresh device: wrong bytes")
        if fresh.pool_info()["queues_created"] != 1:
            failures.append("fresh device shares the parent's pool")
    else:
        refused("Device.open", lambda: hrx.Device.open(0, backend=backend))
    print("child:", failures or "ok", flush=True)
    if backend != "host" or os.environ.get("HRX_EXPECT_SANITIZED"):
        # The GPU runtime's own exit handlers, inherited from the parent,
        # are not hrx's to test in a forked child (nor, under ASan, the
        # teardown: see above).
        os._exit(1 if failures else 0)
    # Leaving normally releases the parent's objects here: no hang.
    sys.exit(1 if failures else 0)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0, status
assert (r.wait() == 31).all()         # the parent is unaffected
s.fill(b, 5)
assert (s.read(b[:16]).wait() == 5).all()
print("parent: ok")
"""


def test_forked_child_gets_a_clear_error_or_a_fresh_device(fresh):
    out = fresh(FORK, timeout=60)
    assert "child: ok" in out, out
    assert "parent: ok" in out, out
