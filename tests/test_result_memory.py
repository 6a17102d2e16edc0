"""Result memory (docs/host-memory.md, "Reads into new arrays"): a large
array that Readback.wait() returns lives in pageable memory of a
process-wide pool (hrx.ResultMemory, HRX_RESULT_CACHE_BYTES), so that the
next result of a like size is copied into memory that is mapped already.
Results are ordinary writable arrays, never share memory while alive, and
hold no device."""
from __future__ import annotations

import gc
import threading

import hrx
import numpy as np

from fresh_programs import open_refused

# Above the size from which results are pooled (1 MiB in
# csrc/python/result_memory.h), and not a whole number of pages.
LARGE = (3 << 20) + 5


def pool():
    """The pool's free blocks now: {'cached_bytes': n, 'blocks': n}."""
    return hrx._hrx._testing_result_pool()


def uploaded(device, stream, data):
    buf = device.allocate(data.nbytes)
    stream.upload(buf, data)
    return buf


def test_a_large_result_is_pooled_memory(device, stream):
    data = np.random.default_rng(1).integers(0, 256, LARGE, np.uint8)
    buf = uploaded(device, stream, data)
    result = stream.read(buf).wait()
    assert isinstance(result, np.ndarray) and result.dtype == np.uint8
    assert isinstance(result.base, hrx.ResultMemory)
    assert result.base.nbytes == LARGE == result.nbytes
    assert result.base.address == result.ctypes.data
    assert result.ctypes.data % 4096 == 0
    assert result.flags.writeable and result.flags.c_contiguous
    assert (result == data).all()
    result[:3] = 9                        # the caller's own memory
    assert (stream.read(buf).wait() == data).all()
    # A typed view's result: its dtype and shape over the same memory.
    typed = stream.read(buf[:LARGE - 5].view("float32", (3, 1 << 18))).wait()
    assert typed.dtype == np.float32 and typed.shape == (3, 1 << 18)
    assert typed.tobytes() == data[:LARGE - 5].tobytes()
    assert isinstance(typed.base.base, hrx.ResultMemory)


def test_a_let_go_result_is_reused_and_a_kept_one_is_not(device, stream):
    first = np.full(LARGE, 1, np.uint8)
    second = np.full(LARGE, 2, np.uint8)
    a, b = uploaded(device, stream, first), uploaded(device, stream, second)
    kept = stream.read(a).wait()
    address = kept.ctypes.data
    other = stream.read(b).wait()
    assert other.ctypes.data != address   # both alive: two blocks
    assert (kept == 1).all() and (other == 2).all()
    del other
    gc.collect()
    assert pool()["blocks"] >= 1
    again = stream.read(b).wait()          # takes the block let go
    assert again.ctypes.data != address and (again == 2).all()
    assert (kept == 1).all()
    del kept
    gc.collect()
    reused = stream.read(a).wait()
    assert reused.ctypes.data == address and (reused == 1).all()
    assert (again == 2).all()


def test_a_result_keeps_no_device(fresh):
    out = fresh("""
        import gc
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        n = 5 << 20
        buf = dev.allocate(n)
        s.fill(buf, 6)
        kept = s.read(buf).wait()
        assert isinstance(kept.base, hrx.ResultMemory)
        for obj in (buf, s, dev):
            obj.close()
        del obj, buf, s, dev
        gc.collect()
        again = hrx.Device.open(0, backend=backend)
        again.set_stream_queue_count(3)   # a fresh live device: none held
        assert (kept == 6).all()
        del kept
        gc.collect()
        print(hrx._hrx._testing_result_pool()["blocks"])
    """)
    assert out.split() == ["1"]


def test_the_cache_variable_bounds_the_pool(fresh):
    program = """
        import gc
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        buf = dev.allocate(4 << 20)
        s.fill(buf, 1)
        for _ in range(3):
            r = s.read(buf).wait()
            del r
            gc.collect()
        print(hrx._hrx._testing_result_pool()["cached_bytes"])
    """
    assert fresh(program, env={"HRX_RESULT_CACHE_BYTES": "0"}).split() == \
        ["0"]
    # One 4 MiB block, reused by each read: the pool keeps it.
    assert fresh(program).split() == [str(4 << 20)]
    # A limit below the block: it is unmapped at once.
    assert fresh(program, env={"HRX_RESULT_CACHE_BYTES": str(1 << 20)}
                 ).split() == ["0"]
    message = open_refused(fresh, {"HRX_RESULT_CACHE_BYTES": "lots"})
    assert "HRX_RESULT_CACHE_BYTES" in message and "lots" in message, message


def test_threads_reading_and_dropping_results(device):
    """Threads that read, check and drop results of several sizes at once
    each get their own bytes: the pool never hands out a block that is
    still in use."""
    sizes = [LARGE, 2 << 20, (5 << 20) + 1]
    errors = []

    def work(t):
        try:
            s = device.stream()
            for i in range(12):
                n = sizes[(t + i) % len(sizes)]
                value = (t * 16 + i) % 251
                buf = device.allocate(n)
                s.fill(buf, value)
                result = s.read(buf).wait()
                assert (result == value).all(), (t, i)
                buf.close()
                if i % 3:
                    del result
            s.close()
        except BaseException as e:   # reported by the main thread
            errors.append(repr(e))

    workers = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, errors
