"""Conformance: stream commands, buffer views and object lifetimes.

Written once and run on every available backend (the `backend` fixture).
Every check compares bytes exactly; nothing here depends on timing.
"""
from __future__ import annotations

import array
import gc
import threading

import numpy as np
import pytest

import hrx
import hrx.fabric


def pattern(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


def read(stream, view) -> np.ndarray:
    return stream.read(view).wait()


def assert_bytes(actual, expected) -> None:
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.dtype == np.uint8
    assert actual.shape == expected.shape
    mismatch = np.flatnonzero(actual != expected)
    assert mismatch.size == 0, (
        f"{mismatch.size} bytes differ, first at {mismatch[0]}: "
        f"{actual[mismatch[0]]} != {expected[mismatch[0]]}")


# ------------------------------------------------------------ basic commands

def test_fill_whole_buffer(stream):
    buf = stream.allocate(4096)
    stream.fill(buf, 0x5A)
    result = read(stream, buf)
    assert isinstance(result, np.ndarray)
    assert_bytes(result, np.full(4096, 0x5A, np.uint8))


@pytest.mark.parametrize("byte", [0, 1, 127, 128, 255])
def test_fill_every_byte_value_edge(stream, byte):
    buf = stream.allocate(333)
    stream.fill(buf, byte)
    assert_bytes(read(stream, buf), np.full(333, byte, np.uint8))


def test_fill_accepts_index_objects(stream):
    buf = stream.allocate(8)
    stream.fill(buf, np.uint8(200))
    stream.fill(buf[0:4], np.int64(7))
    assert_bytes(read(stream, buf), [7] * 4 + [200] * 4)


def test_upload_then_read(stream):
    data = pattern(10_000, seed=1)
    buf = stream.allocate(data.size)
    stream.upload(buf, data)
    assert_bytes(read(stream, buf), data)


def test_copy_between_buffers(device, stream):
    data = pattern(65_536, seed=2)
    src = device.allocate(data.size)
    dst = device.allocate(data.size)
    stream.upload(src, data)
    stream.fill(dst, 0)
    stream.copy(dst, src)
    assert_bytes(read(stream, dst), data)
    assert_bytes(read(stream, src), data)


def test_copy_between_adjacent_views_of_one_buffer(stream):
    data = pattern(200, seed=3)
    buf = stream.allocate(200)
    stream.upload(buf, data)
    stream.copy(buf[100:200], buf[0:100])   # touching, not overlapping
    stream.copy(buf.slice(0, 50), buf.slice(50, 50))
    expected = data.copy()
    expected[100:200] = data[0:100]
    expected[0:50] = expected[50:100]
    assert_bytes(read(stream, buf), expected)


def test_synchronize_makes_work_visible_to_other_streams(device, stream):
    other = device.stream()
    data = pattern(1 << 20, seed=4)
    buf = device.allocate(data.size)
    stream.upload(buf, data)
    stream.synchronize()
    assert_bytes(read(other, buf), data)
    other.close()


def test_device_synchronize_covers_every_pool_stream(device):
    streams = [device.stream() for _ in range(4)]
    bufs = [device.allocate(4096) for _ in streams]
    for i, (s, b) in enumerate(zip(streams, bufs)):
        s.fill(b, i + 1)
    device.synchronize()
    reader = streams[-1]
    for i, b in enumerate(bufs):
        assert_bytes(read(reader, b), np.full(4096, i + 1, np.uint8))
    for s in streams:
        s.close()


# --------------------------------------------------------------------- views

N = 64

VIEWS = {
    # id: (make view of a 64-byte buffer, [start, stop) in the allocation)
    "getitem": (lambda b: b[10:20], (10, 20)),
    "getitem-full": (lambda b: b[:], (0, N)),
    "getitem-open-start": (lambda b: b[:5], (0, 5)),
    "getitem-open-stop": (lambda b: b[60:], (60, N)),
    "getitem-neg-start": (lambda b: b[-16:], (N - 16, N)),
    "getitem-neg-stop": (lambda b: b[:-16], (0, N - 16)),
    "getitem-neg-both": (lambda b: b[-20:-10], (N - 20, N - 10)),
    "getitem-step-1": (lambda b: b[3:9:1], (3, 9)),
    "slice": (lambda b: b.slice(10, 10), (10, 20)),
    "slice-keywords": (lambda b: b.slice(offset=1, length=2), (1, 3)),
    "slice-whole": (lambda b: b.slice(0, N), (0, N)),
    "nested-getitem": (lambda b: b[10:50][5:10], (15, 20)),
    "nested-slice": (lambda b: b.slice(8, 32).slice(4, 8), (12, 20)),
    "nested-neg": (lambda b: b[8:40][-4:], (36, 40)),
    "nested-mixed": (lambda b: b[4:][2:].slice(1, 3)[1:], (8, 10)),
    "last-byte": (lambda b: b[-1:], (N - 1, N)),
}


@pytest.mark.parametrize("make", VIEWS.values(), ids=VIEWS.keys())
def test_view_properties(stream, make):
    make_view, (start, stop) = make
    buf = stream.allocate(N)
    view = make_view(buf)
    assert isinstance(view, hrx.Buffer)
    assert view.offset == start
    assert view.nbytes == stop - start
    assert len(view) == stop - start
    assert view.allocation_size == N
    assert not view.closed


@pytest.mark.parametrize("make", VIEWS.values(), ids=VIEWS.keys())
def test_fill_through_view_touches_only_the_view(stream, make):
    make_view, (start, stop) = make
    buf = stream.allocate(N)
    stream.fill(buf, 0)
    stream.fill(make_view(buf), 0xAB)
    expected = np.zeros(N, np.uint8)
    expected[start:stop] = 0xAB
    assert_bytes(read(stream, buf), expected)


@pytest.mark.parametrize("make", VIEWS.values(), ids=VIEWS.keys())
def test_read_and_upload_through_view(stream, make):
    make_view, (start, stop) = make
    data = pattern(N, seed=5)
    buf = stream.allocate(N)
    stream.upload(buf, data)
    view = make_view(buf)
    assert_bytes(read(stream, view), data[start:stop])
    new = pattern(stop - start, seed=6)
    stream.upload(view, new)
    expected = data.copy()
    expected[start:stop] = new
    assert_bytes(read(stream, buf), expected)


def test_copy_between_nested_views(stream):
    data = pattern(256, seed=7)
    buf = stream.allocate(256)
    stream.upload(buf, data)
    stream.copy(buf[128:][16:48], buf.slice(8, 64)[-32:])   # [144:176] <- [40:72]
    expected = data.copy()
    expected[144:176] = data[40:72]
    assert_bytes(read(stream, buf), expected)


def test_empty_view_can_exist_but_not_be_used(stream):
    buf = stream.allocate(N)
    for view in (buf[5:5], buf.slice(N, 0), buf[N:]):
        assert view.nbytes == 0 and len(view) == 0
        with pytest.raises(hrx.InvalidArgumentError):
            stream.fill(view, 1)


def test_view_outlives_its_parent_handle(stream):
    """A parent handle that is collected (not closed) leaves its views
    open."""
    buf = stream.allocate(N)
    view = buf[16:32]
    stream.fill(buf, 3)
    del buf
    gc.collect()
    assert view.allocation_size == N
    stream.fill(view[0:8], 4)
    assert_bytes(read(stream, view), [4] * 8 + [3] * 8)


# ----------------------------------------------------------- upload sources

M = 96  # bytes in every source below

UPLOAD_SOURCES = {
    "bytes": lambda d: d.tobytes(),
    "bytearray": lambda d: bytearray(d.tobytes()),
    "memoryview-bytes": lambda d: memoryview(d.tobytes()),
    "memoryview-readonly-slice": lambda d: memoryview(
        b"xx" + d.tobytes() + b"yy")[2:-2],
    "memoryview-bytearray": lambda d: memoryview(bytearray(d.tobytes())),
    "memoryview-cast-int": lambda d: memoryview(d.tobytes()).cast("i"),
    "array.array": lambda d: array.array("q", d.tobytes()),
    "numpy-uint8": lambda d: d.copy(),
    "numpy-int8": lambda d: d.view(np.int8).copy(),
    "numpy-int16": lambda d: d.view(np.int16).copy(),
    "numpy-uint32": lambda d: d.view(np.uint32).copy(),
    "numpy-int64": lambda d: d.view(np.int64).copy(),
    "numpy-float32": lambda d: d.view(np.float32).copy(),
    "numpy-float64": lambda d: d.view(np.float64).copy(),
    "numpy-complex128": lambda d: d.view(np.complex128).copy(),
    "numpy-2d-c-order": lambda d: d.view(np.int32).reshape(4, 6).copy(),
    "numpy-3d-c-order": lambda d: d.reshape(2, 3, 16).copy(),
    "numpy-contiguous-slice": lambda d: np.concatenate(
        [np.zeros(8, np.uint8), d, np.zeros(8, np.uint8)])[8:-8],
    "numpy-readonly": lambda d: _readonly(d.copy()),
    "numpy-structured": lambda d: d.view(np.dtype([("a", "<u4"),
                                                   ("b", "<u8")])).copy(),
}


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr.flags.writeable = False
    return arr


@pytest.mark.parametrize("make", UPLOAD_SOURCES.values(),
                         ids=UPLOAD_SOURCES.keys())
def test_upload_from_source(stream, make):
    data = pattern(M, seed=8)
    source = make(data)
    assert memoryview(source).nbytes == M
    buf = stream.allocate(M)
    stream.fill(buf, 0)
    stream.upload(buf, source)
    assert_bytes(read(stream, buf), data)


def test_upload_into_view_leaves_the_rest(stream):
    buf = stream.allocate(64)
    stream.fill(buf, 0xEE)
    stream.upload(buf[32:48], bytes(range(16)))
    expected = np.full(64, 0xEE, np.uint8)
    expected[32:48] = np.arange(16)
    assert_bytes(read(stream, buf), expected)


def test_upload_source_reusable_when_upload_returns(device, stream):
    """The host data is read before upload() returns: mutating it right
    after (while earlier work still occupies the queue) changes nothing."""
    backlog = device.allocate(8 << 20)
    for i in range(6):
        stream.fill(backlog, i)             # keep the queue busy
    first = np.full(1 << 20, 1, np.uint8)
    second = bytearray(b"\x02" * (1 << 16))
    a = device.allocate(first.size)
    b = device.allocate(len(second))
    stream.upload(a, first)
    first[:] = 0xFF
    stream.upload(b, second)
    second[:] = b"\xff" * len(second)
    del first, second
    stream.synchronize()
    assert_bytes(read(stream, a), np.full(1 << 20, 1, np.uint8))
    assert_bytes(read(stream, b), np.full(1 << 16, 2, np.uint8))


# --------------------------------------------------------------- read paths

def test_read_blocking_into_bytearray(stream):
    data = pattern(100, seed=9)
    buf = stream.allocate(100)
    stream.upload(buf, data)
    out = bytearray(100)
    assert stream.read_blocking(buf, out) is out
    assert_bytes(np.frombuffer(out, np.uint8), data)


def test_read_blocking_into_numpy_arrays(stream):
    data = pattern(96, seed=10)
    buf = stream.allocate(96)
    stream.upload(buf, data)
    out8 = np.zeros(96, np.uint8)
    assert stream.read_blocking(buf, out8) is out8
    assert_bytes(out8, data)
    out32 = np.zeros((4, 6), np.int32)
    stream.read_blocking(buf, out32)
    assert_bytes(out32.view(np.uint8).ravel(), data)


def test_read_blocking_into_writable_memoryview(stream):
    data = pattern(32, seed=11)
    buf = stream.allocate(32)
    stream.upload(buf, data)
    backing = bytearray(b"\xcc" * 48)
    view = memoryview(backing)[8:40]
    stream.read_blocking(buf, view)
    assert bytes(backing[:8]) == b"\xcc" * 8
    assert bytes(backing[8:40]) == data.tobytes()
    assert bytes(backing[40:]) == b"\xcc" * 8


def test_read_blocking_into_larger_output_leaves_its_tail(stream):
    buf = stream.allocate(16)
    stream.fill(buf, 7)
    out = bytearray(b"\xee" * 24)
    stream.read_blocking(buf, out)
    assert bytes(out) == b"\x07" * 16 + b"\xee" * 8


def test_read_blocking_of_view(stream):
    data = pattern(64, seed=12)
    buf = stream.allocate(64)
    stream.upload(buf, data)
    out = np.zeros(10, np.uint8)
    stream.read_blocking(buf[-20:-10], out)
    assert_bytes(out, data[44:54])


def test_readback_wait_is_cached_and_done(stream):
    buf = stream.allocate(16)
    stream.fill(buf, 9)
    rb = stream.read(buf)
    first = rb.wait()
    assert rb.done() is True
    assert rb.wait() is first
    assert first.dtype == np.uint8 and first.shape == (16,)
    assert_bytes(first, np.full(16, 9, np.uint8))


def test_readback_done_is_a_bool(stream):
    buf = stream.allocate(16)
    rb = stream.read(buf)
    assert rb.done() in (True, False)
    rb.wait()
    assert rb.done() is True


# --------------------------------------------------------- submission order

def test_work_runs_in_submission_order(device, stream):
    """fill, copy, fill, copy, ...: each copy must see exactly the fill
    before it and none after it."""
    chunk, rounds = 4096, 64
    scratch = device.allocate(chunk)
    out = device.allocate(chunk * rounds)
    for i in range(rounds):
        stream.fill(scratch, i)
        stream.copy(out.slice(i * chunk, chunk), scratch)
    expected = np.repeat(np.arange(rounds, dtype=np.uint8), chunk)
    assert_bytes(read(stream, out), expected)


def test_reads_snapshot_their_position_in_the_stream(stream):
    buf = stream.allocate(1 << 16)
    readbacks = []
    for i in range(20):
        stream.fill(buf, i)
        if i % 3 == 0:
            stream.upload(buf[0:4], bytes([i, i, i, 250]))
        readbacks.append((i, stream.read(buf)))
    for i, rb in readbacks:
        expected = np.full(1 << 16, i, np.uint8)
        if i % 3 == 0:
            expected[:4] = [i, i, i, 250]
        assert_bytes(rb.wait(), expected)


def test_mixed_chain_on_one_stream(device, stream):
    n = 1 << 18
    a, b, c = (device.allocate(n) for _ in range(3))
    data = pattern(n, seed=13)
    stream.fill(a, 1)
    stream.copy(b, a)           # b = 1
    stream.upload(a, data)      # a = data
    stream.copy(c, a)           # c = data
    stream.fill(a[: n // 2], 3)  # a = 3 | data
    stream.copy(b[n // 2:], a[: n // 2])   # b = 1 | 3
    stream.fill(c[:1], 0)
    expected_a = data.copy()
    expected_a[: n // 2] = 3
    expected_b = np.ones(n, np.uint8)
    expected_b[n // 2:] = 3
    expected_c = data.copy()
    expected_c[0] = 0
    assert_bytes(read(stream, a), expected_a)
    assert_bytes(read(stream, b), expected_b)
    assert_bytes(read(stream, c), expected_c)


# ----------------------------------------------------------------- threads

def test_streams_used_from_many_threads(device):
    """8 threads x 200 mixed commands, each on a private stream and on one
    stream shared by all; a thread's buffers are touched by one stream only,
    except for event-ordered hand-overs. Every read is checked against a
    model of the bytes."""
    n_threads, n_commands, size = 8, 200, 512
    shared = device.stream()
    shared_buf = device.allocate(n_threads * 2 * size)
    errors: list[str] = []
    barrier = threading.Barrier(n_threads)

    def worker(t: int) -> None:
        rng = np.random.default_rng(100 + t)
        own_stream = device.stream()
        bufs = {
            "own0": device.allocate(size),
            "own1": device.allocate(size),
            "sh0": shared_buf.slice((2 * t) * size, size),
            "sh1": shared_buf.slice((2 * t + 1) * size, size),
        }
        stream_of = {"own0": own_stream, "own1": own_stream,
                     "sh0": shared, "sh1": shared}
        model = {name: np.zeros(size, np.uint8) for name in bufs}
        for name, buf in bufs.items():
            stream_of[name].fill(buf, 0)
        pending = []
        barrier.wait()
        for i in range(n_commands):
            side = "own" if rng.integers(2) else "sh"
            x, y = f"{side}0", f"{side}1"
            if rng.integers(2):
                x, y = y, x
            s = stream_of[x]
            op = rng.integers(6)
            lo = int(rng.integers(0, size - 1))
            hi = int(rng.integers(lo + 1, size + 1))
            if op == 0:
                value = int(rng.integers(256))
                s.fill(bufs[x][lo:hi], value)
                model[x][lo:hi] = value
            elif op == 1:
                data = rng.integers(0, 256, hi - lo, dtype=np.uint8)
                s.upload(bufs[x][lo:hi], data)
                model[x][lo:hi] = data
            elif op == 2:
                s.copy(bufs[x][lo:hi], bufs[y][lo:hi])
                model[x][lo:hi] = model[y][lo:hi]
            elif op == 3:
                pending.append((f"{t}:{i}:read {x}", s.read(bufs[x]),
                                model[x].copy()))
            elif op == 4:
                out = np.empty(size, np.uint8)
                s.read_blocking(bufs[x], out)
                if not np.array_equal(out, model[x]):
                    errors.append(f"{t}:{i}: read_blocking {x} differs")
            else:
                # Hand-over through events: own0 -> sh0 on the shared
                # stream, then own_stream waits for the shared stream so
                # its later writes cannot overtake the copy.
                ev = own_stream.record_event()
                shared.wait_event(ev)
                shared.copy(bufs["sh0"], bufs["own0"])
                model["sh0"][:] = model["own0"]
                back = shared.record_event()
                own_stream.wait_event(back)
        for label, rb, expected in pending:
            if not np.array_equal(rb.wait(), expected):
                errors.append(f"{label} differs")
        for name, buf in bufs.items():
            final = read(stream_of[name], buf)
            if not np.array_equal(final, model[name]):
                errors.append(f"{t}: final {name} differs")
        own_stream.close()

    def run(t: int) -> None:
        try:
            worker(t)
        except BaseException as exc:  # reported in the main thread
            errors.append(f"thread {t}: {exc!r}")
            barrier.abort()

    threads = [threading.Thread(target=run, args=(t,), daemon=True)
               for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=300)  # a deadlock guard, not a timing check
    assert not any(th.is_alive() for th in threads), "threads are stuck"
    assert not errors, "\n".join(errors[:20])
    shared.close()


def test_one_stream_many_threads_disjoint_regions(device):
    """Producers on one stream from several threads: each thread's commands
    keep their order; all bytes end up right."""
    n_threads, rounds, chunk = 6, 100, 1024
    stream = device.stream()
    out = device.allocate(n_threads * chunk)
    errors: list[str] = []

    def worker(t: int) -> None:
        try:
            region = out.slice(t * chunk, chunk)
            for r in range(rounds):
                stream.fill(region, (t * 31 + r) % 256)
                if r % 10 == 0:
                    got = read(stream, region)
                    if not np.all(got == (t * 31 + r) % 256):
                        errors.append(f"{t}:{r} differs")
        except BaseException as exc:
            errors.append(f"thread {t}: {exc!r}")

    threads = [threading.Thread(target=worker, args=(t,), daemon=True)
               for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=300)
    assert not any(th.is_alive() for th in threads), "threads are stuck"
    assert not errors, "\n".join(errors)
    expected = np.repeat([(t * 31 + rounds - 1) % 256
                          for t in range(n_threads)], chunk).astype(np.uint8)
    assert_bytes(read(stream, out), expected)
    stream.close()


# ------------------------------------------------------ lifetime of buffers

def test_dropping_buffers_with_queued_work(device, stream):
    """The last references of a copy's source and destination go right
    after submission, while a backlog still occupies the queue: nothing
    crashes and the data still arrives where it was copied next."""
    n = 4 << 20
    backlog = device.allocate(16 << 20)
    for i in range(4):
        stream.fill(backlog, i)
    data = pattern(n, seed=14)
    src = stream.allocate(n)
    stream.upload(src, data)
    mid = device.allocate(n)
    out = device.allocate(n)
    stream.copy(mid, src)
    del src                       # the copy into mid still needs it
    stream.copy(out, mid)
    del mid                       # the copy into out still needs it
    stream.synchronize()
    assert_bytes(read(stream, out), data)


def test_closing_buffers_with_queued_work(device, stream):
    n = 1 << 20
    data = pattern(n, seed=15)
    src, dst = device.allocate(n), device.allocate(n)
    stream.upload(src, data)
    stream.copy(dst, src)
    src.close()                   # the queued copy keeps src's memory
    assert_bytes(read(stream, dst), data)
    view = dst[0:n]
    dst.close()                   # closes the views taken from it too
    assert src.closed and dst.closed and view.closed


def test_readback_outlives_its_source_buffer(stream):
    data = pattern(1 << 16, seed=16)
    buf = stream.allocate(data.size)
    stream.upload(buf, data)
    rb = stream.read(buf)
    del buf
    assert_bytes(rb.wait(), data)


def test_closing_a_stream_lets_its_queued_work_finish(device, stream):
    n = 1 << 20
    buf = device.allocate(n)
    data = pattern(n, seed=17)
    other = device.stream()
    other.upload(buf, data)
    other.fill(buf[:16], 0xAA)
    other.close()
    device.synchronize()
    expected = data.copy()
    expected[:16] = 0xAA
    assert_bytes(read(stream, buf), expected)


def test_closing_a_fabric_queue_lets_its_queued_work_finish(device, stream):
    n = 1 << 20
    buf = device.allocate(n)
    queue = hrx.fabric.Queue(device)
    queue.fill(buf, 0x3C)
    queue.close()
    assert_bytes(read(stream, buf), np.full(n, 0x3C, np.uint8))


def test_dropping_every_handle_with_queued_work(backend):
    """A stream, its buffer and the device handle all go while work is
    queued; the live device is torn down only after the work, and a reopen
    works."""
    device = hrx.Device.open(0, backend=backend)
    stream = device.stream()
    buf = device.allocate(8 << 20)
    for i in range(4):
        stream.fill(buf, i)
    del stream, buf
    device.close()
    with hrx.Device.open(0, backend=backend) as again:
        s = again.stream()
        b = s.allocate(16)
        s.fill(b, 1)
        assert_bytes(read(s, b), np.ones(16, np.uint8))
        s.close()


# --------------------------------------------------- streams, devices, misc

def test_stream_open_uses_the_shared_live_device(device, backend):
    stream = hrx.Stream.open(0, backend=backend)
    assert isinstance(stream, hrx.Stream)
    assert stream.device == device
    assert stream.queue_index is not None
    buf = device.allocate(16)               # device buffers work on it
    stream.fill(buf, 5)
    assert_bytes(read(stream, buf), np.full(16, 5, np.uint8))
    stream.close()
    keywords = hrx.Stream.open(index=0, backend=backend)
    assert keywords.device == device
    keywords.close()


def test_stream_allocate(device, stream):
    buf = stream.allocate(100)
    assert isinstance(buf, hrx.Buffer)
    assert buf.nbytes == 100 and buf.offset == 0 and buf.allocation_size == 100
    assert buf.device == device == stream.device
    other = device.stream()
    other.fill(buf, 1)                      # any stream of the device
    assert_bytes(read(other, buf), np.ones(100, np.uint8))
    other.close()


def test_objects_report_their_device(device, stream):
    buf = device.allocate(8)
    event = stream.record_event()
    queue = hrx.fabric.Queue(device)
    for owner in (stream.device, buf.device, buf[2:4].device, event.device,
                  queue.device, device.clone()):
        assert isinstance(owner, hrx.Device)
        assert owner == device
        assert not owner != device
        assert hash(owner) == hash(device)
    queue.close()


def test_devices_of_different_indices_differ(device, second_device):
    assert device != second_device
    assert not device == second_device
    assert second_device.allocate(4).device == second_device


def test_reopened_device_is_equal(device, backend):
    with hrx.Device.open(0, backend=backend) as again:
        assert again == device
        assert hrx.Device(0, backend=backend) == device


def test_native_handle_is_an_int(device, stream):
    assert isinstance(stream.native_handle, int)
    assert stream.native_handle != 0
    queue = hrx.fabric.Queue(device)
    assert isinstance(queue.native_handle, int)
    assert queue.native_handle not in (0, stream.native_handle)
    queue.close()


def test_fabric_queue_has_the_stream_api(device, stream):
    queue = hrx.fabric.Queue(device)
    assert isinstance(queue, hrx.Stream)
    assert queue.queue_index is None
    data = pattern(4096, seed=18)
    a, b = queue.allocate(4096), queue.allocate(4096)
    queue.upload(a, data)
    queue.copy(b, a)
    queue.fill(a[:8], 0)
    out = np.empty(4096, np.uint8)
    queue.read_blocking(b, out)
    assert_bytes(out, data)
    queue.synchronize()
    assert_bytes(read(stream, a)[8:], data[8:])
    queue.close()


def test_fabric_queue_open_does_not_make_a_pool_stream(device, backend):
    """Queue.open either does not exist or makes a queue outside the pool."""
    before = device.pool_info()
    try:
        queue = hrx.fabric.Queue.open(0, backend=backend)
    except (AttributeError, TypeError):
        return
    try:
        assert isinstance(queue, hrx.fabric.Queue)
        assert queue.queue_index is None
        after = device.pool_info()
        assert after["live_streams"] == before["live_streams"]
        assert after["next_slot"] == before["next_slot"]
    finally:
        queue.close()


# ------------------------------------------------------- closed behaviour

def _stream_uses(buf, event):
    return {
        "allocate": lambda s: s.allocate(8),
        "copy": lambda s: s.copy(buf[0:4], buf[4:8]),
        "fill": lambda s: s.fill(buf, 1),
        "upload": lambda s: s.upload(buf, bytes(8)),
        "read": lambda s: s.read(buf),
        "read_blocking": lambda s: s.read_blocking(buf, bytearray(8)),
        "synchronize": lambda s: s.synchronize(),
        "record_event": lambda s: s.record_event(),
        "wait_event": lambda s: s.wait_event(event),
        "device": lambda s: s.device,
        "queue_index": lambda s: s.queue_index,
        "native_handle": lambda s: s.native_handle,
        "enter": lambda s: s.__enter__(),
    }


@pytest.mark.parametrize("kind", ["pool", "fabric"])
def test_closed_stream(device, kind):
    s = device.stream() if kind == "pool" else hrx.fabric.Queue(device)
    buf = device.allocate(8)
    helper = device.stream()
    event = helper.record_event()
    helper.fill(buf, 0x11)
    helper.synchronize()
    s.close()
    assert s.closed
    s.close()                                   # idempotent
    assert s.closed
    assert "closed" in repr(s)
    for name, use in _stream_uses(buf, event).items():
        with pytest.raises(hrx.FailedPreconditionError):
            use(s)
            pytest.fail(f"{name} worked on a closed stream")
    with pytest.raises(hrx.FailedPreconditionError):
        with s:
            pass
    # Nothing reached the buffer.
    assert_bytes(read(helper, buf), np.full(8, 0x11, np.uint8))
    helper.close()


def test_stream_context_manager(device):
    with device.stream() as s:
        assert not s.closed
        buf = s.allocate(8)
        s.fill(buf, 2)
    assert s.closed
    device.synchronize()            # closing does not wait; this does
    with pytest.raises(KeyError):
        with device.stream() as s2:
            raise KeyError("propagates")
    assert s2.closed
    with hrx.fabric.Queue(device) as q:
        assert_bytes(read(q, buf), np.full(8, 2, np.uint8))
        q.fill(buf, 3)
    assert q.closed                 # closing a fabric queue drains it
    with device.stream() as s3:
        assert_bytes(read(s3, buf), np.full(8, 3, np.uint8))


def test_closed_buffer(stream):
    buf = stream.allocate(32)
    view = buf[0:16]
    buf.close()
    assert buf.closed
    buf.close()
    assert "closed" in repr(buf)
    for use in (lambda: buf.nbytes, lambda: buf.offset,
                lambda: buf.allocation_size, lambda: buf.device,
                lambda: len(buf), lambda: buf[0:1], lambda: buf.slice(0, 1),
                lambda: buf.__enter__(), lambda: stream.fill(buf, 0),
                lambda: stream.read(buf),
                lambda: stream.read_blocking(buf, bytearray(32)),
                lambda: stream.upload(buf, bytes(32)),
                lambda: stream.copy(buf, view), lambda: stream.copy(view, buf)):
        with pytest.raises(hrx.FailedPreconditionError):
            use()
    # The views taken from it are closed with it.
    assert view.closed
    with pytest.raises(hrx.FailedPreconditionError):
        stream.read(view)


def test_closing_a_view_leaves_the_parent(stream):
    buf = stream.allocate(32)
    view = buf[8:16]
    view.close()
    assert view.closed and not buf.closed
    stream.fill(buf, 1)
    assert_bytes(read(stream, buf), np.ones(32, np.uint8))


def test_buffer_context_manager(stream):
    with stream.allocate(16) as buf:
        stream.fill(buf, 1)
        view = buf[0:16]
        assert_bytes(read(stream, view), np.ones(16, np.uint8))
    assert buf.closed and view.closed


def test_closed_event(device, stream):
    event = stream.record_event()
    event.close()
    assert event.closed
    event.close()
    for use in (event.query, event.synchronize, lambda: event.device,
                lambda: stream.wait_event(event)):
        with pytest.raises(hrx.FailedPreconditionError):
            use()
    buf = device.allocate(4)
    stream.fill(buf, 4)                          # the stream is fine
    assert_bytes(read(stream, buf), np.full(4, 4, np.uint8))


def test_closed_readback(stream):
    buf = stream.allocate(16)
    stream.fill(buf, 1)
    rb = stream.read(buf)
    rb.close()
    rb.close()
    for use in (rb.wait, rb.done):
        with pytest.raises(hrx.FailedPreconditionError):
            use()
    stream.synchronize()


def test_closed_device_handle(device, stream):
    handle = device.clone()
    handle.close()
    assert handle.closed
    handle.close()
    assert "closed" in repr(handle)
    uses = (handle.stream, lambda: handle.allocate(8), handle.synchronize,
            handle.pool_info, lambda: handle.set_stream_queue_count(8),
            handle.clone, lambda: handle.info, lambda: handle.free_memory,
            lambda: handle.stream_queue_count, handle.__enter__,
            lambda: hrx.fabric.Queue(handle))
    for use in uses:
        with pytest.raises(hrx.FailedPreconditionError):
            use()
    assert handle != device
    # Other handles and objects of the live device are unaffected.
    buf = device.allocate(8)
    stream.fill(buf, 8)
    assert_bytes(read(stream, buf), np.full(8, 8, np.uint8))


def test_device_context_manager(device):
    with device.clone() as handle:
        assert handle == device
        s = handle.stream()
    assert handle.closed
    s.fill(s.allocate(4), 1)    # the stream keeps the live device
    s.synchronize()
    s.close()
    assert not device.closed


def test_objects_keep_the_device_alive_after_its_handle_closes(backend):
    device = hrx.Device.open(0, backend=backend)
    stream = device.stream()
    buf = device.allocate(64)
    device.close()
    stream.fill(buf, 0x42)
    assert_bytes(read(stream, buf), np.full(64, 0x42, np.uint8))
    assert stream.device.info["backend"] == backend
    stream.close()
    buf.close()


def test_event_and_readback_are_context_managers(stream):
    buf = stream.allocate(64)
    stream.fill(buf, 3)
    with stream.record_event() as event:
        event.synchronize()
    assert event.closed
    with pytest.raises(hrx.FailedPreconditionError):
        event.query()
    with stream.read(buf) as readback:
        got = readback.wait()
        assert (got == 3).all()
    assert (got == 3).all()               # the array it returned stays
    with pytest.raises(hrx.FailedPreconditionError, match="readback is closed"):
        readback.wait()                   # closed, though its wait returned
    with stream.read(buf) as pending:
        pass
    with pytest.raises(hrx.FailedPreconditionError):
        pending.done()
