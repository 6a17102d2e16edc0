"""Pinned host memory (docs/host-memory.md): Device.empty_pinned arrays from
the device's pinned pool, Device.pin scopes, Device.is_pinned, and the
transfers that copy such memory directly (upload, read_into,
read_blocking) with the bytes, lifetimes and failures of the staged
path."""
from __future__ import annotations

import gc

import hrx
import numpy as np
import pytest

from fresh_programs import failing_read, open_refused

# A backlog of device work queued before a transfer, so that the transfer
# is most likely still queued when the test lets its memory go.
BACKLOG = 64 << 20


def direct():
    """The direct transfers so far: {'uploads': n, 'reads': n}."""
    return hrx._hrx._testing_pinned_direct()


def queue_backlog(device, stream, rounds=4):
    """Queues device copies of BACKLOG bytes, rounds times. Keep what it
    returns until the backlog is done: dropping a buffer waits for it."""
    src, dst = device.allocate(BACKLOG), device.allocate(BACKLOG)
    stream.fill(src, 7)
    for _ in range(rounds):
        stream.copy(dst, src)
    return src, dst


def test_empty_pinned_is_an_ndarray_owned_by_its_base(device):
    a = device.empty_pinned((3, 5), dtype="int32")
    assert isinstance(a, np.ndarray)
    assert a.shape == (3, 5) and a.dtype == np.int32
    assert a.flags.c_contiguous and a.flags.writeable
    assert isinstance(a.base, hrx.PinnedMemory)
    assert a.base.nbytes == a.nbytes
    assert a.base.device == device
    assert a.ctypes.data % 4096 == 0
    assert device.is_pinned(a) and device.is_pinned(a[1:])
    assert device.is_pinned(memoryview(a))
    assert not device.is_pinned(np.zeros(15, np.int32))
    assert device.empty_pinned(7).dtype == np.uint8
    assert device.empty_pinned(0).shape == (0,)
    # DLPack and the buffer protocol work as on any ndarray.
    b = np.from_dlpack(a)
    b[0, 0] = 42
    assert a[0, 0] == 42


def test_freed_pinned_blocks_are_reused(device):
    a = device.empty_pinned(1 << 20)
    address = a.base.address
    del a
    gc.collect()
    # Nothing was queued with it: its block is back in the pool at once.
    b = device.empty_pinned(1 << 20)
    assert b.base.address == address


def test_pinned_and_pageable_paths_give_identical_bytes(device, stream):
    rng = np.random.default_rng(5)
    before = direct()
    for n in (1, 255, 4096, 65536 * 3 + 17, 1 << 22):
        data = rng.integers(0, 256, n, dtype=np.uint8)
        pinned = device.empty_pinned(n)
        pinned[:] = data
        buf_pinned, buf_pageable = device.allocate(n), device.allocate(n)
        stream.upload(buf_pinned, pinned)       # direct
        stream.upload(buf_pageable, data)       # staged
        out_pinned = device.empty_pinned(n)
        out_pageable = np.zeros(n, np.uint8)
        assert stream.read_into(buf_pageable, out_pinned).wait() is out_pinned
        stream.read_into(buf_pinned, out_pageable).wait()
        assert (out_pinned == data).all() and (out_pageable == data).all(), n
        again = device.empty_pinned(n)
        stream.read_blocking(buf_pinned, again)  # direct
        assert (again == data).all(), n
        assert (stream.read(buf_pinned).wait() == data).all(), n
    after = direct()
    assert after["uploads"] - before["uploads"] == 5
    assert after["reads"] - before["reads"] == 10


def test_pin_scope_copies_directly_and_unpins(device, stream):
    data = np.arange(1 << 16, dtype=np.uint32)
    buf = device.allocate(data.nbytes)
    before = direct()
    assert not device.is_pinned(data)
    scope = device.pin(data)
    assert not scope.pinned
    with scope as pinned:
        assert pinned is data and scope.pinned
        assert device.is_pinned(data)
        stream.upload(buf, data)
    assert not scope.pinned and not device.is_pinned(data)
    out = np.zeros_like(data)
    with device.pin(out):
        stream.read_blocking(buf, out)
    assert (out == data).all()
    # Read-only memory may be pinned as an upload's source.
    frozen = np.full(data.nbytes, 3, np.uint8)
    frozen.setflags(write=False)
    with device.pin(frozen):
        stream.upload(buf, frozen)
    stream.read_blocking(buf, out)
    assert (out.view(np.uint8) == 3).all()
    after = direct()
    assert after["uploads"] - before["uploads"] == 2
    assert after["reads"] - before["reads"] == 1
    # After the scope: staged again.
    stream.upload(buf, data)
    assert direct()["uploads"] == after["uploads"]


def test_pin_scope_takes_a_host_dlpack_tensor(device, stream):
    from bad_input_cases import DLPackOnly
    data = np.arange(4096, dtype=np.uint8)
    tensor = DLPackOnly(data)
    buf = device.allocate(data.nbytes)
    before = direct()["uploads"]
    with device.pin(tensor) as pinned:
        assert pinned is tensor and device.is_pinned(tensor)
        stream.upload(buf, tensor)
    assert direct()["uploads"] == before + 1
    assert (stream.read(buf).wait() == data).all()


def test_pin_scope_exit_waits_for_queued_copies(device, stream):
    held = queue_backlog(device, stream)
    data = np.full(1 << 20, 9, np.uint8)
    buf = device.allocate(data.nbytes)
    with device.pin(data):
        backlog = stream.record_event()
        stream.upload(buf, data)
        queued = not backlog.query()   # the upload is behind the backlog
    # The scope's end waited for the upload: changing `data` now changes
    # nothing on the device.
    data[:] = 0
    out = np.zeros_like(data)
    stream.read_blocking(buf, out)
    assert (out == 9).all(), queued


def test_dropped_pinned_array_outlives_its_queued_upload(device, stream):
    pending_seen = 0
    for _ in range(3):
        held = queue_backlog(device, stream)
        n = 1 << 20
        src = device.empty_pinned(n)
        src[:] = 0x5A
        address = src.base.address
        buf = device.allocate(n)
        stream.upload(buf, src)
        done = stream.record_event()
        del src                      # its copy may still be queued
        other = device.empty_pinned(n)
        if not done.query():
            # The block is held by the queued upload, not back in the pool.
            pending_seen += 1
            assert other.base.address != address
        other[:] = 0xFF              # would corrupt a reused block
        out = np.zeros(n, np.uint8)
        stream.read_blocking(buf, out)
        assert (out == 0x5A).all()
        del held
    # Not asserted (timing): the copy was still queued in most rounds.
    print("pending seen", pending_seen)


def test_dropped_pinned_output_outlives_its_queued_read(device, stream):
    held = queue_backlog(device, stream)
    n = 1 << 20
    buf = device.allocate(n)
    stream.fill(buf, 0x33)
    out = device.empty_pinned(n)
    reader = stream.read_into(buf, out)
    reader.close()
    del out, reader
    again = device.empty_pinned(n)
    stream.read_blocking(buf, again)
    assert (again == 0x33).all()


def test_read_into_new_pinned_array_after_close_is_safe(device, stream):
    """A pin scope whose memory a read_into still writes waits for it."""
    held = queue_backlog(device, stream)
    n = 1 << 20
    buf = device.allocate(n)
    stream.fill(buf, 0x44)
    out = np.zeros(n, np.uint8)
    with device.pin(out):
        reader = stream.read_into(buf, out)
    # The scope's end waited for the read.
    assert (out == 0x44).all()
    assert reader.wait() is out


def test_failed_stream_with_pinned_memory(fresh):
    out = fresh("""
        import gc
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        n = 1 << 16
        a = dev.allocate(n)
        src = dev.empty_pinned(n)
        src[:] = 7
        s.fill(a, 1)                   # fails (fault 1)
        s.upload(a, src)               # not run: the stream failed
        try:
            s.synchronize()
        except hrx.DeviceError as e:
            assert "injected fault" in str(e), str(e)
        else:
            raise AssertionError("the failure was not raised")
        # Usable again, and the pinned memory too.
        s.upload(a, src)
        dst = dev.empty_pinned(n)
        s.read_blocking(a, dst)
        assert (dst == 7).all()
        # A direct read that fails (fault 2 of download): raised at wait.
        try:
            s.read_into(a, dst).wait()
        except hrx.DeviceError as e:
            assert "injected fault" in str(e), str(e)
        else:
            raise AssertionError("the failed read was not raised")
        address = dst.base.address
        del dst
        gc.collect()
        again = dev.empty_pinned(n)
        assert again.base.address == address   # nothing holds it
        s.read_blocking(a, again)
        assert (again == 7).all()
        print("ok")
    """, env={"HRX_FAULTS": "fill:1,download:2"})
    assert out.strip() == "ok"


def test_pinned_cache_variable(fresh):
    out = fresh("""
        import gc
        dev = hrx.Device.open(0, backend=backend)
        a = dev.empty_pinned(1 << 20)
        address = a.base.address
        evictions = hrx._hrx._testing_staging_evictions
        before = sum(evictions().values())
        del a
        gc.collect()
        dev.synchronize()      # the cleanup thread's frees are done
        # No cache: the freed block was given back to the driver.
        print(sum(evictions().values()) > before)
    """, env={"HRX_PINNED_CACHE_BYTES": "0"})
    assert out.split()[0] == "True"
    message = open_refused(fresh, {"HRX_PINNED_CACHE_BYTES": "-1"})
    assert "HRX_PINNED_CACHE_BYTES" in message, message


def test_device_outlives_its_pinned_arrays(fresh):
    out = fresh("""
        import gc
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        a = dev.empty_pinned(4096)
        a[:] = 1
        buf = dev.allocate(4096)
        s.upload(buf, a)
        for obj in (buf, s, dev):
            obj.close()
        del dev
        gc.collect()
        a[:] = 2                      # the memory is still the array's
        assert a.base.device.info["backend"] == backend
        del a
        gc.collect()
        again = hrx.Device.open(0, backend=backend)
        again.set_stream_queue_count(3)  # a fresh live device: all gone
        print("ok")
    """)
    assert out.strip() == "ok"


def test_a_large_read_into_a_new_array_does_not_hold_the_device(fresh):
    """read().wait() copies a large read into an ordinary array: keeping it
    keeps neither the read staging nor the live device (the queue count
    can change while the array lives), and its bytes stay its own."""
    out = fresh("""
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        n = 4 << 20
        data = np.random.default_rng(9).integers(0, 256, n, np.uint8)
        buf = dev.allocate(n)
        s.upload(buf, data)
        reader = s.read(buf)
        kept = reader.wait()
        assert reader.wait() is kept                 # cached
        assert (kept == data).all() and kept.flags.writeable
        assert not isinstance(kept.base, hrx.PinnedMemory)
        assert not dev.is_pinned(kept)
        reader.close()
        del reader, buf, s
        dev.close()
        del dev
        import gc; gc.collect()
        again = hrx.Device.open(0, backend=backend)
        again.set_stream_queue_count(3)   # a fresh live device: none held
        assert (kept == data).all()
        print("ok")
    """)
    assert out.strip() == "ok"


def test_large_direct_transfers_with_chunking_on(fresh):
    """With chunking on, a large upload of pinned memory on a normal stream
    is paced like any (chunks held back on the host) and still copies the
    memory in place; letting the memory go while chunks are held keeps it
    until the last chunk is done. Direct reads, one copy each, and a pin
    scope whose exit waits for them, work beside it."""
    out = fresh("""
        counts = hrx._hrx._testing_pinned_direct
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        n = (1 << 20) + 4097
        data = np.random.default_rng(11).integers(0, 256, n, np.uint8)
        buf = dev.allocate(n)
        before = counts()
        src = dev.empty_pinned(n)
        src[:] = data
        address = src.base.address
        s.upload(buf, src)
        del src                          # chunks may still be held
        other = dev.empty_pinned(n)
        other[:] = 0xFF
        dst = dev.empty_pinned(n)
        assert s.read_into(buf, dst).wait() is dst
        assert (dst == data).all()
        again = np.zeros(n, np.uint8)
        with dev.pin(again):
            s.read_blocking(buf, again)
        assert (again == data).all()
        after = counts()
        assert after["uploads"] == before["uploads"] + 1, after
        assert after["reads"] == before["reads"] + 2, after
        # A read into pinned memory closed before its wait; a pin scope
        # around a read_into and a paced upload.
        scratch = dev.empty_pinned(n)
        s.read_into(buf, scratch).close()
        del scratch
        mine = np.zeros(n, np.uint8)
        with dev.pin(mine):
            reader = s.read_into(buf, mine)
            s.upload(buf, mine)
        assert (mine == data).all()
        dev.synchronize()
        print("ok")
    """, env={"HRX_CHUNK_BYTES": "65536", "HRX_CHUNK_WINDOW_BYTES": "131072"})
    assert out.strip() == "ok"


# Chunking on whatever the run says (the conformance files run once more
# with HRX_CHUNKING=0): these tests are about paced reads.
SMALL_CHUNKS = {"HRX_CHUNKING": "1", "HRX_CHUNK_BYTES": "65536",
                "HRX_CHUNK_WINDOW_BYTES": "131072"}


def test_large_reads_into_pinned_memory_are_paced(fresh):
    """A large read into pinned memory on a normal stream is paced like a
    staged one, its chunks landing in the memory itself: a high-priority
    read overtakes a backlog of them (completion order, not time), and
    every byte lands; a reader closed early and a pin scope left while its
    read is held leave no chunk writing the memory afterwards."""
    out = fresh("""
        counts = hrx._hrx._testing_pinned_direct
        dev = hrx.Device.open(0, backend=backend)
        bulk = dev.stream()
        urgent = dev.stream(priority="high")
        n = (4 << 20) + 3
        data = np.random.default_rng(5).integers(0, 256, n, np.uint8)
        big = dev.allocate(n); small = dev.allocate(4096)
        bulk.upload(big, data); urgent.fill(small, 6)
        dev.synchronize()
        before = counts()["reads"]
        outs = [dev.empty_pinned(n) for _ in range(6)]
        backlog = [bulk.read_into(big, o) for o in outs]
        probe = urgent.read(small)
        assert (probe.wait() == 6).all()
        assert not backlog[-1].done()          # still held
        for r, o in zip(backlog, outs):
            assert r.wait() is o and (o == data).all()
        assert counts()["reads"] == before + len(outs)
        # Closed before its chunks were published: they still land, and
        # the memory goes back to the pool only after them.
        early = dev.empty_pinned(n)
        held = [bulk.read_into(big, dev.empty_pinned(n)) for _ in range(3)]
        bulk.read_into(big, early).close()
        del early
        # A pin scope left with its read held: the exit waits for it.
        mine = np.zeros(n, np.uint8)
        with dev.pin(mine):
            reader = bulk.read_into(big, mine)
        assert (mine == data).all()
        assert reader.wait() is mine
        for r in held:
            r.wait()
        dev.synchronize()
        print("ok")
    """, env=SMALL_CHUNKS)
    assert out.strip() == "ok"


def test_a_paced_read_into_pinned_memory_failing_mid_way(fresh):
    """A chunk of a paced read into pinned memory fails (its fourth
    download: the read is one per chunk): the wait raises it once the
    earlier chunks are done, so none writes the memory after the raise;
    the stream is not failed, and nothing is left behind."""
    out = fresh(failing_read(65536 * 6 + 7, "s.read_into(a, out)",
                             out="dev.empty_pinned(n)"),
                env=dict(SMALL_CHUNKS, HRX_FAULTS="download:4"))
    assert out.strip() == "ok"
