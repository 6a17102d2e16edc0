"""Model-based randomized testing: random programs run by hrx and by a
NumPy reference model, compared byte for byte.

A program (one hypothesis example) opens a fresh live device with a drawn
queue count (1, 2, 4, 8 or 16), queue policy (round-robin or least-loaded)
and submission batching on or off (switched again at random during the
program), creates 1-6 pool streams of drawn priority lanes (high, normal,
low; one in ten on a reserved queue of its own) and 0-2 fabric queues,
then runs a random sequence of allocate, upload, fill, copy, read,
read_blocking, record_event / wait_event across streams, event and stream
and device synchronize (which covers the pool's queues, not fabric
queues), and buffer close (with work in flight). The model
applies each command to NumPy arrays at submission time.

The contract guarantees order only within a stream; across streams only
through events and host synchronization. The model therefore keeps vector
clocks: each stream's own sequence number, what each stream's later work is
known to follow (through the events it waited on), and what the host knows
finished (through synchronize). Before a command touches a byte range that
another stream wrote (or read, for a write) without such ordering, the
program first orders it, either by recording an event on that stream and
waiting on it, or by synchronizing that stream from the host. So every
generated program is race-free under the contract, and sequential
application in submission order is the only correct outcome. Fresh
allocations are undefined: only bytes the program defined are compared.

Reads are compared as they complete (read_blocking at once, read() when its
readback is waited, possibly much later, after other streams wrote the same
buffer), and every buffer is compared after a device synchronize at the end
of each program.

Profiles (HRX_HYPOTHESIS_PROFILE): ``ci`` (default; derandomized, so CI is
reproducible) and ``thorough`` (many more, longer programs). Backends as
everywhere (HRX_TEST_BACKENDS). On the H200:

    HRX_BACKEND=hip HRX_TEST_BACKENDS=hip HRX_HYPOTHESIS_PROFILE=thorough \\
        python -m pytest -q -p no:cacheprovider tests/test_model_random.py

The figures (programs, commands, bytes compared) are printed in pytest's
terminal summary. The programs run in a fresh interpreter started by the
test (a live device another test left alive would block the pool
setting); HRX_MODEL_TIMEOUT bounds it (default 3600 s).
"""
from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("hypothesis", reason="the test extra (pip install '.[test]')")

from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.stateful import (RuleBasedStateMachine, initialize,  # noqa: E402
                                 invariant, precondition, rule)

import hrx  # noqa: E402
import hrx.fabric  # noqa: E402
from conftest import BACKENDS, QUEUE_COUNTS  # noqa: E402
from figures import figures  # noqa: E402

settings.register_profile(
    "ci", max_examples=300, stateful_step_count=80, derandomize=True,
    deadline=None, database=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow,
                           HealthCheck.filter_too_much])
settings.register_profile(
    "thorough", max_examples=3000, stateful_step_count=200, deadline=None,
    database=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow,
                           HealthCheck.filter_too_much])
PROFILE = os.environ.get("HRX_HYPOTHESIS_PROFILE", "ci")

MAX_BUFFERS = 8
SIZES = st.sampled_from([1, 2, 3, 7, 64, 255, 4096, 65536, 1 << 20])

FIGURES = figures("model-based random programs")


class Clock:
    """Vector clock over stream ids: entry s = the sequence number of stream
    s's last command known to come first."""

    def __init__(self, n: int):
        self.v = [0] * n

    def merge(self, other: "Clock") -> None:
        self.v = [max(a, b) for a, b in zip(self.v, other.v)]

    def copy(self) -> "Clock":
        c = Clock(len(self.v))
        c.v = list(self.v)
        return c


class Access:
    __slots__ = ("stream", "seq", "write", "lo", "hi")

    def __init__(self, stream, seq, write, lo, hi):
        self.stream, self.seq, self.write = stream, seq, write
        self.lo, self.hi = lo, hi


class ModelBuffer:
    def __init__(self, handle, size):
        self.handle = handle
        self.bytes = np.zeros(size, np.uint8)
        self.defined = np.zeros(size, bool)
        self.accesses: list[Access] = []


class Programs(RuleBasedStateMachine):
    BACKEND = "host"
    figures = FIGURES

    def __init__(self):
        super().__init__()
        self.device = None
        self.streams: list = []
        self.buffers: list[ModelBuffer] = []
        self.events: list = []        # (Event, Clock at record)
        self.pending: list = []       # (Readback, expected, defined mask)
        self.handles: list = []       # views and readbacks, closed at the end
        self.figures["programs"] += 1

    # ------------------------------------------------------------ set-up

    @initialize(queues=st.sampled_from(QUEUE_COUNTS),
                policy=st.sampled_from(["round_robin", "least_loaded"]),
                pool_streams=st.lists(
                    st.tuples(st.sampled_from(["normal", "high", "low"]),
                              st.integers(0, 9).map(lambda k: k == 0)),
                    min_size=1, max_size=6),
                fabric=st.integers(0, 2), batching=st.booleans())
    def open_device(self, queues, policy, pool_streams, fabric, batching):
        self.device = hrx.Device.open(0, backend=self.BACKEND,
                                      batching=batching)
        assert self.device.batching is batching
        assert not self.device.pool_info()["first_use"], (
            "a live device survived the previous program")
        self.device.set_stream_queue_count(queues)
        self.device.set_stream_queue_policy(policy)
        self.streams = [self.device.stream(priority=priority, reserve=reserve)
                        for priority, reserve in pool_streams]
        self.streams += [hrx.fabric.Queue(self.device) for _ in range(fabric)]
        n = len(self.streams)
        self.seq = [0] * n
        self.known = [Clock(n) for _ in range(n)]
        self.host = Clock(n)
        self.figures["streams"] += n
        self.figures[f"programs at queue count {queues}"] += 1
        self.figures[f"programs with policy {policy}"] += 1
        for priority, reserve in pool_streams:
            self.figures[f"{priority} streams"] += 1
            self.figures["reserved queues"] += reserve
        self.figures[f"programs starting with batching {'on' if batching else 'off'}"] += 1

    def teardown(self):
        if self.device is None:
            return
        try:
            self._synchronize_all()
            for readback, expected, mask in self.pending:
                self._compare(readback.wait(), expected, mask)
            for buf in self.buffers:
                self._check_buffer(buf)
        finally:
            for obj in self.handles:
                obj.close()
            for obj in ([b.handle for b in self.buffers] +
                        [e for e, _ in self.events] + self.streams):
                obj.close()
            self.device.close()

    # ------------------------------------------------------------ ordering

    def _effective(self, s: int) -> Clock:
        c = self.known[s].copy()
        c.merge(self.host)
        return c

    def _ordered(self, access: Access, s: int) -> bool:
        return (access.stream == s or
                self._effective(s).v[access.stream] >= access.seq)

    def _order_before(self, data, s: int, buf: ModelBuffer, lo: int, hi: int,
                      write: bool) -> None:
        """Makes stream s's next command follow every access of [lo, hi)
        that it conflicts with, by an event wait or a host synchronize."""
        for access in list(buf.accesses):
            if access.hi <= lo or hi <= access.lo:
                continue
            if not (write or access.write):
                continue
            if self._ordered(access, s):
                continue
            other = access.stream
            if data.draw(st.booleans(), label="order by event"):
                event, clock = self._record(other)
                self.streams[s].wait_event(event)
                self.known[s].merge(clock)
                self._tick(s)
                self.figures["event waits"] += 1
            else:
                self.streams[other].synchronize()
                self._host_sync(other)
                self.figures["stream synchronizes"] += 1
        self._prune(buf)

    def _record(self, s: int):
        event = self.streams[s].record_event()
        clock = self.known[s].copy()
        clock.v[s] = self.seq[s]
        self.events.append((event, clock))
        self.figures["commands"] += 1
        self.figures["events recorded"] += 1
        return event, clock

    def _host_sync(self, s: int) -> None:
        clock = self.known[s].copy()
        clock.v[s] = self.seq[s]
        self.host.merge(clock)

    def _tick(self, s: int) -> int:
        self.seq[s] += 1
        self.figures["commands"] += 1
        return self.seq[s]

    def _touch(self, s, seq, buf, lo, hi, write):
        buf.accesses.append(Access(s, seq, write, lo, hi))

    def _prune(self, buf: ModelBuffer) -> None:
        buf.accesses = [a for a in buf.accesses
                        if self.host.v[a.stream] < a.seq]

    # ------------------------------------------------------------ draws

    def _stream(self, data) -> int:
        return data.draw(st.integers(0, len(self.streams) - 1), label="stream")

    def _buffer(self, data) -> ModelBuffer:
        return data.draw(st.sampled_from(self.buffers), label="buffer")

    def _range(self, data, size: int, length: int | None = None):
        if length is None:
            length = data.draw(st.integers(1, size), label="length")
        lo = data.draw(st.integers(0, size - length), label="offset")
        return lo, lo + length

    def _view(self, buf: ModelBuffer, lo: int, hi: int, data):
        if lo == 0 and hi == len(buf.bytes) and data.draw(st.booleans()):
            return buf.handle
        if data.draw(st.booleans(), label="slice()"):
            view = buf.handle.slice(lo, hi - lo)
        else:
            view = buf.handle[lo:hi]
        # Closed at teardown even when a comparison fails (a traceback keeps
        # the view, and with it the live device, alive).
        self.handles.append(view)
        return view

    # ------------------------------------------------------------ rules

    @precondition(lambda self: len(self.buffers) < MAX_BUFFERS)
    @rule(size=SIZES, data=st.data())
    def allocate(self, size, data):
        if data.draw(st.booleans(), label="on a stream"):
            handle = self.streams[self._stream(data)].allocate(size)
        else:
            handle = self.device.allocate(size)
        assert handle.nbytes == size
        self.buffers.append(ModelBuffer(handle, size))
        self.figures["buffers allocated"] += 1

    @precondition(lambda self: self.buffers)
    @rule(data=st.data(), seed=st.integers(0, 2**32 - 1))
    def upload(self, data, seed):
        s, buf = self._stream(data), self._buffer(data)
        lo, hi = self._range(data, len(buf.bytes))
        payload = np.random.default_rng(seed).integers(0, 256, hi - lo,
                                                       dtype=np.uint8)
        self._order_before(data, s, buf, lo, hi, write=True)
        self.streams[s].upload(self._view(buf, lo, hi, data),
                               payload if seed % 2 else payload.tobytes())
        payload[:] = 0   # the caller may reuse its data once upload returns
        buf.bytes[lo:hi] = np.random.default_rng(seed).integers(
            0, 256, hi - lo, dtype=np.uint8)
        buf.defined[lo:hi] = True
        self._touch(s, self._tick(s), buf, lo, hi, write=True)

    @precondition(lambda self: self.buffers)
    @rule(data=st.data(), value=st.integers(0, 255))
    def fill(self, data, value):
        s, buf = self._stream(data), self._buffer(data)
        lo, hi = self._range(data, len(buf.bytes))
        self._order_before(data, s, buf, lo, hi, write=True)
        self.streams[s].fill(self._view(buf, lo, hi, data), value)
        buf.bytes[lo:hi] = value
        buf.defined[lo:hi] = True
        self._touch(s, self._tick(s), buf, lo, hi, write=True)

    @precondition(lambda self: self.buffers)
    @rule(data=st.data())
    def copy(self, data):
        s = self._stream(data)
        src, dst = self._buffer(data), self._buffer(data)
        limit = min(len(src.bytes), len(dst.bytes))
        if src is dst:
            limit = len(src.bytes) // 2
            if limit == 0:
                return
        length = data.draw(st.integers(1, limit), label="copy length")
        s_lo, s_hi = self._range(data, len(src.bytes), length)
        if src is dst:   # a disjoint destination range of the same buffer
            free = [lo for lo in range(0, len(dst.bytes) - length + 1,
                                       max(1, length // 4))
                    if lo + length <= s_lo or lo >= s_hi]
            if not free:
                return
            d_lo = data.draw(st.sampled_from(free), label="dst offset")
            d_hi = d_lo + length
        else:
            d_lo, d_hi = self._range(data, len(dst.bytes), length)
        self._order_before(data, s, src, s_lo, s_hi, write=False)
        self._order_before(data, s, dst, d_lo, d_hi, write=True)
        self.streams[s].copy(self._view(dst, d_lo, d_hi, data),
                             self._view(src, s_lo, s_hi, data))
        dst.bytes[d_lo:d_hi] = src.bytes[s_lo:s_hi].copy()
        dst.defined[d_lo:d_hi] = src.defined[s_lo:s_hi].copy()
        seq = self._tick(s)
        self._touch(s, seq, src, s_lo, s_hi, write=False)
        self._touch(s, seq, dst, d_lo, d_hi, write=True)

    @precondition(lambda self: self.buffers)
    @rule(data=st.data())
    def read(self, data):
        s, buf = self._stream(data), self._buffer(data)
        lo, hi = self._range(data, len(buf.bytes))
        self._order_before(data, s, buf, lo, hi, write=False)
        view = self._view(buf, lo, hi, data)
        expected = buf.bytes[lo:hi].copy()
        mask = buf.defined[lo:hi].copy()
        if data.draw(st.booleans(), label="blocking"):
            out = np.full(hi - lo + data.draw(st.integers(0, 3)), 0xA5,
                          np.uint8)
            got = self.streams[s].read_blocking(view, out)
            assert got is out
            assert np.all(out[hi - lo:] == 0xA5), "wrote past src.nbytes"
            self._compare(out[:hi - lo], expected, mask)
            self._tick(s)   # complete: no access stays pending
        else:
            readback = self.streams[s].read(view)
            self.handles.append(readback)
            self._touch(s, self._tick(s), buf, lo, hi, write=False)
            if data.draw(st.booleans(), label="wait now"):
                self._compare(readback.wait(), expected, mask)
                readback.close()
            else:
                self.pending.append((readback, expected, mask))

    @precondition(lambda self: self.pending)
    @rule(data=st.data())
    def wait_readback(self, data):
        index = data.draw(st.integers(0, len(self.pending) - 1))
        readback, expected, mask = self.pending.pop(index)
        self._compare(readback.wait(), expected, mask)
        assert readback.done()
        readback.close()

    @precondition(lambda self: len(self.streams) > 1)
    @rule(data=st.data())
    def event_between_streams(self, data):
        s, t = self._stream(data), self._stream(data)
        event, clock = self._record(s)
        if s != t:
            self.streams[t].wait_event(event)
            self.known[t].merge(clock)
            self._tick(t)
            self.figures["event waits"] += 1

    @precondition(lambda self: self.events)
    @rule(data=st.data())
    def event_synchronize(self, data):
        event, clock = data.draw(st.sampled_from(self.events))
        event.synchronize()
        assert event.query()
        self.host.merge(clock)
        for buf in self.buffers:
            self._prune(buf)

    @rule(data=st.data())
    def stream_synchronize(self, data):
        s = self._stream(data)
        self.streams[s].synchronize()
        self._host_sync(s)
        for buf in self.buffers:
            self._prune(buf)
        self.figures["stream synchronizes"] += 1

    @rule()
    def device_synchronize(self):
        """Device.synchronize waits for the pool's queues only: fabric
        queues stay unordered."""
        self.device.synchronize()
        for s, stream in enumerate(self.streams):
            if stream.queue_index is not None:
                self._host_sync(s)
        for buf in self.buffers:
            self._prune(buf)

    @rule()
    def synchronize_all_and_compare(self):
        self._synchronize_all()
        for buf in self.buffers:
            self._check_buffer(buf)

    def _synchronize_all(self) -> None:
        self.device.synchronize()
        for s, stream in enumerate(self.streams):
            if stream.queue_index is None:
                stream.synchronize()
            self._host_sync(s)
        for buf in self.buffers:
            buf.accesses.clear()

    @rule(enabled=st.booleans())
    def switch_batching(self, enabled):
        """Turning batching off publishes pending work; either way the
        contract (and so the model) is unchanged."""
        self.device.set_batching(enabled)
        assert self.device.batching is enabled
        self.figures["batching switched"] += 1

    @precondition(lambda self: self.buffers)
    @rule(data=st.data())
    def close_buffer(self, data):
        """Drops a buffer, possibly with its work still in flight."""
        buf = self._buffer(data)
        self.buffers.remove(buf)
        buf.handle.close()
        self.figures["buffers closed"] += 1

    @invariant()
    def clocks_never_run_ahead(self):
        if self.device is not None:
            for clock in self.known + [self.host]:
                assert all(c <= s for c, s in zip(clock.v, self.seq))

    # ------------------------------------------------------------ checks

    def _compare(self, got, expected, mask) -> None:
        got = np.asarray(got)
        assert got.shape == expected.shape
        bad = np.flatnonzero((got != expected) & mask)
        assert bad.size == 0, (
            f"{bad.size} of {expected.size} bytes differ; first at "
            f"{bad[0]}: got {got[bad[0]]}, expected {expected[bad[0]]}")
        self.figures["bytes compared"] += int(mask.sum())

    def _check_buffer(self, buf: ModelBuffer) -> None:
        with self.streams[0].read(buf.handle) as readback:
            got = readback.wait()
        self.figures["commands"] += 1
        self._compare(got, buf.bytes, buf.defined)


def _machine_for(backend: str):
    machine = type(f"Programs_{backend}", (Programs,), {"BACKEND": backend})
    case = machine.TestCase
    case.settings = settings(settings.get_profile(PROFILE))
    return case


class BrokenFill(Programs):
    """A model that gets fill wrong: the comparison must catch it."""

    figures = figures("model self-check (a model with a wrong fill)")

    @precondition(lambda self: self.buffers)
    @rule(data=st.data(), value=st.integers(0, 255))
    def fill(self, data, value):
        super().fill(data, value)
        buf = self.buffers[-1]
        buf.bytes[buf.defined] ^= 1


# Every program needs a fresh live device (the pool size can only be set
# before first use), so the programs run in a fresh interpreter of their
# own: an object another test left alive (or in an uncollectable cycle)
# would keep the device of index 0 alive. The parent test starts that
# interpreter (HRX_MODEL_CHILD=1) on this file and reports its figures.
IN_CHILD = os.environ.get("HRX_MODEL_CHILD") == "1"
CHILD_TIMEOUT = float(os.environ.get("HRX_MODEL_TIMEOUT", "3600"))

if IN_CHILD:
    for _backend in BACKENDS:
        globals()[f"TestModelPrograms_{_backend}"] = _machine_for(_backend)

    def test_a_wrong_model_is_caught():
        """The comparison is live: a model whose fill is off by one bit
        fails."""
        from hypothesis.stateful import run_state_machine_as_test
        BrokenFill.BACKEND = BACKENDS[0]
        with pytest.raises(AssertionError, match="bytes differ"):
            run_state_machine_as_test(BrokenFill, settings=settings(
                max_examples=50, stateful_step_count=20, derandomize=True,
                deadline=None, database=None, report_multiple_bugs=False,
                suppress_health_check=list(HealthCheck)))
else:
    def _child_figures(stdout: str) -> None:
        """Adds the child's "reliability figures" lines to ours."""
        lines = stdout.split("reliability figures", 1)[-1].splitlines()
        for line in lines:
            title, sep, body = line.partition(": ")
            if not sep or not title.startswith("model"):
                continue
            counter = figures(title)
            for item in body.split(", "):
                key, _, value = item.rpartition(": ")
                if key:
                    counter[key] += int(value.replace(",", ""))

    # Minutes on a GPU shared with other test processes: more than the
    # per-test limit a GPU run gives ordinary tests (pytest-timeout's).
    @pytest.mark.timeout(900)
    def test_model_programs_in_a_fresh_process(backend):
        """Runs this file's state machine (and the self-check) on `backend`
        in a fresh interpreter; its failure output is shown here."""
        import subprocess
        import sys
        env = dict(os.environ, HRX_MODEL_CHILD="1", HRX_TEST_BACKENDS=backend)
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             os.path.basename(__file__)],
            cwd=os.path.dirname(os.path.abspath(__file__)), env=env,
            capture_output=True, text=True, timeout=CHILD_TIMEOUT)
        _child_figures(done.stdout)
        assert done.returncode == 0, (
            f"the model programs failed (exit {done.returncode}):\n"
            f"{done.stdout[-12000:]}\n{done.stderr[-3000:]}")
        assert " passed" in done.stdout and "skipped" not in done.stdout, (
            done.stdout[-3000:])


def test_profile_is_known():
    assert PROFILE in ("ci", "thorough"), (
        f"HRX_HYPOTHESIS_PROFILE={PROFILE!r}: choose ci or thorough")
