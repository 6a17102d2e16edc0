"""Ctrl-C during a long wait raises KeyboardInterrupt promptly.

Each scenario runs in a child process that builds a backlog of large copies
(about two seconds of them: host memcpy, or device copies on hip), then
blocks in one waiting call. The parent sends SIGINT once the child is waiting; the child
must raise KeyboardInterrupt within a second, the work must not be
cancelled (it completes and every byte is right), and the child must exit
cleanly, also when the exception is left uncaught with work in flight.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

CHILD = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    import hrx

    target, mode, backend = sys.argv[1], sys.argv[2], sys.argv[3]
    CHUNK = (32 << 20) if backend == "host" else (4 << 30)
    dev = hrx.Device.open(0, backend=backend)
    s = dev.stream()
    src, dst = dev.allocate(CHUNK), dev.allocate(CHUNK)
    s.fill(src, 7)
    s.copy(dst, src)
    s.synchronize()  # pages touched: the copies below run at memcpy speed
    # Calibrate: enough copies for about 2 s of backlog on this machine.
    t0 = time.monotonic()
    for _ in range(8):
        s.copy(dst, src)
    s.synchronize()
    per_copy = (time.monotonic() - t0) / 8
    copies = max(50, int(2.0 / per_copy))
    for _ in range(copies):
        s.copy(dst, src)
    # Whether the backlog is done when the interrupt arrives, asked without
    # waiting: an event recorded after it now (one recorded later could
    # wait for a paced read's held chunks to be published).
    backlog = s.record_event()
    waits = {
        "stream": s.synchronize,
        "device": dev.synchronize,
        "event": lambda: s.record_event().synchronize(),
        "readback": lambda: s.read(dst[:16]).wait(),
        # A paced read into a new array: its wait copies chunks as they land.
        "large-readback": lambda: s.read(dst[:16 << 20]).wait(),
        "read_blocking": lambda: s.read_blocking(
            dst[:16], np.zeros(16, np.uint8)),
    }
    print("waiting", copies, flush=True)
    try:
        waits[target]()
        print("finished before the signal", flush=True)
    except KeyboardInterrupt:
        print("interrupted", time.monotonic(), backlog.query(), flush=True)
        if mode == "uncaught":
            raise
        # Nothing was cancelled: the backlog completes, bytes are right.
        s.synchronize()
        assert (s.read(dst[:4096]).wait() == 7).all()
        assert (s.read(dst[CHUNK - 4096:]).wait() == 7).all()
        print("recovered", flush=True)
""")


def run_and_interrupt(target: str, mode: str, backend: str):
    env = dict(os.environ, HRX_HOST_RING_CAPACITY="65536")
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, target, mode, backend],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout.readline().startswith("waiting")
        time.sleep(0.3)  # well inside the wait
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return sent, out, err, child.returncode


TARGETS = ["stream", "device", "event", "readback", "large-readback",
           "read_blocking"]


@pytest.mark.parametrize("target", TARGETS)
def test_ctrl_c_interrupts_a_long_wait_and_cancels_nothing(target, backend):
    sent, out, err, code = run_and_interrupt(target, "caught", backend)
    assert code == 0, err[-3000:]
    lines = out.split("\n")
    assert "finished before the signal" not in lines, out
    interrupted = next(line for line in lines if line.startswith("interrupted"))
    _, when, backlog_done = interrupted.split()
    assert float(when) - sent < 1.0, f"KeyboardInterrupt after {float(when) - sent:.2f} s"
    assert backlog_done == "False"  # it was a long wait, cut short
    assert "recovered" in lines


@pytest.mark.parametrize("target", ["stream", "read_blocking"])
def test_uncaught_ctrl_c_with_work_in_flight_exits_cleanly(target, backend):
    """The interpreter shuts down with the backlog still running: it waits
    for the work the buffers are used by, then exits as Python does on an
    uncaught KeyboardInterrupt, with no crash or hang."""
    sent, out, err, code = run_and_interrupt(target, "uncaught", backend)
    assert "interrupted" in out
    when = float(out.split("interrupted")[1].split()[0])
    assert when - sent < 1.0
    assert err.rstrip().endswith("KeyboardInterrupt"), err[-3000:]
    assert code in (-signal.SIGINT, 128 + signal.SIGINT, 1), code


COMPLETION_CHILD = textwrap.dedent("""
    import sys, time
    import hrx

    backend = sys.argv[1]
    dev = hrx.Device.open(0, backend=backend)
    s = dev.stream()
    g = hrx.Graph(dev)
    g.callback(lambda: time.sleep(3))   # the launch completes in about 3 s
    c = g.launch(s)
    print("waiting", flush=True)
    try:
        c.wait()
        print("finished before the signal", flush=True)
    except KeyboardInterrupt:
        print("interrupted", time.monotonic(), c.done(), flush=True)
        c.wait()                        # nothing was cancelled
        print("recovered", c.done(), flush=True)
""")


def interrupt_a_callback_wait(code: str, *args: str) -> None:
    """Runs a child that waits on a callback's launch, sends SIGINT 0.3 s
    into the wait and checks: KeyboardInterrupt within 1 s, the launch not
    done then (not cancelled either: it completes afterwards)."""
    child = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().startswith("waiting")
        time.sleep(0.3)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, err
    lines = out.split("\n")
    assert lines[0].startswith("interrupted"), out
    _, when, done = lines[0].split()
    assert float(when) - sent < 1.0, out
    assert done == "False", out          # interrupted before the callback ended
    assert lines[1] == "recovered True", out


def test_ctrl_c_interrupts_a_completion_wait(backend):
    interrupt_a_callback_wait(COMPLETION_CHILD, backend)


GATED_CHILD = textwrap.dedent("""
    import sys, time
    import numpy as np
    import hrx

    target, backend = sys.argv[1], sys.argv[2]
    dev = hrx.Device.open(0, backend=backend)
    s, other = dev.stream(), dev.stream()
    b = dev.allocate(64)
    s.fill(b, 5)
    s.synchronize()
    g = hrx.Graph(dev)
    g.callback(lambda: time.sleep(1.6))  # the launch ends in about 1.6 s
    c = g.launch(other)
    s.wait_completion(c)                # s's next calls wait for it
    calls = {
        "synchronize": s.synchronize,
        "read_blocking": lambda: s.read_blocking(b, np.zeros(64, np.uint8)),
        "read": lambda: s.read(b).wait(),
        "fill": lambda: s.fill(b, 6),   # submissions: one path for all
    }
    print("waiting", flush=True)
    try:
        calls[target]()
        print("finished before the signal", flush=True)
    except KeyboardInterrupt:
        print("interrupted", time.monotonic(), c.done(), flush=True)
        s.synchronize()                 # nothing was cancelled
        assert (s.read(b).wait() == 5).all()
        print("recovered", c.done(), flush=True)
""")


@pytest.mark.parametrize("target", ["synchronize", "read_blocking", "read",
                                    "fill"])
def test_ctrl_c_interrupts_a_wait_for_a_completion_gate(target, backend):
    """A stream gated by wait_completion() makes its next calls wait on the
    host until the completion is done; that wait takes the interrupt hook
    like every other, so Ctrl-C ends it within the slice."""
    interrupt_a_callback_wait(GATED_CHILD, target, backend)
