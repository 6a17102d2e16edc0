"""Conformance: kernel launches are commands of their stream (docs/kernels.md).

Real compiled kernels (tests/kernel_sources.py) on every available backend:
results against numpy, launches in order with uploads, fills and copies
(also with batching off: the Makefile runs this file again with
HRX_BATCHING=0), events and wait_event across streams, fabric queues,
priority lanes and reserved queues, argument conversion, buffers dropped
right after a launch, launches from many threads, the GIL kept, and the
failure model with injected launch failures.
"""
from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import hrx
import hrx._hrx
import hrx.fabric
from kernel_sources import compile_kernel


def known_sizes(kernel):
    """Skips where the runtime cannot tell the kernel's parameter sizes
    (CUDA before 12.4): then ints are 8 bytes and nothing is checked."""
    if kernel.attributes["param_count"] is None:
        pytest.skip("the runtime does not tell parameter sizes")


def test_saxpy_matches_numpy(device, stream):
    k = compile_kernel(device, "saxpy")
    n = 1000
    x = np.linspace(-3, 3, n, dtype=np.float32)
    y = np.arange(n, dtype=np.float32)
    bx, by = device.allocate(4 * n), device.allocate(4 * n)
    stream.upload(bx, x)
    stream.upload(by, y)
    stream.launch(k, grid=((n + 127) // 128,), block=(128,),
                  args=(bx, by, np.float32(2.5), np.int32(n)))
    out = stream.read(by).wait().view(np.float32)
    # A GPU may fuse a * x + y into one rounding (FMA), numpy rounds twice:
    # both lie within one float32 rounding of each term of the exact value.
    ax, exact = 2.5 * x.astype(np.float64), 2.5 * x.astype(np.float64) + y
    bound = np.finfo(np.float32).eps * (np.abs(ax) + np.abs(y))
    error = np.abs(out - exact)
    assert (error <= bound).all(), (
        f"{int((error > bound).sum())} of {n} elements off by more than "
        f"float32 rounding, worst {error.max()}")


def test_indices_of_a_3d_grid_of_3d_blocks(device, stream):
    k = compile_kernel(device, "where")
    grid, block = (3, 2, 2), (4, 3, 2)
    blocks, threads = 12, 24
    out = device.allocate(4 * blocks * threads)
    stream.fill(out, 0xFF)
    stream.launch(k, grid, block, (out,))
    got = stream.read(out).wait().view(np.uint32).reshape(blocks, threads)
    expected = (np.arange(blocks)[:, None] * 1000 + np.arange(threads)[None, :])
    np.testing.assert_array_equal(got, expected.astype(np.uint32))


def test_int_grid_and_block_and_keywords(device, stream):
    k = compile_kernel(device, "add_one")
    b = device.allocate(64)
    stream.fill(b, 0)
    stream.launch(k, 2, 32, args=[b, 64])
    stream.launch(kernel=k, grid=[2], block=(32, 1, 1), args=(b, 64), shared=0)
    assert set(stream.read(b).wait()) == {2}


def test_launches_never_overtake_pending_copies(device, stream):
    """fill, kernel, copy, kernel, read: each sees the one before, round
    after round, with small commands gathered into batches between."""
    k = compile_kernel(device, "add_one")
    n = 256
    a, b = device.allocate(n), device.allocate(n)
    for round_ in range(20):
        stream.fill(a, round_)
        stream.launch(k, 2, 128, (a, n))
        stream.copy(b, a)
        stream.launch(k, 2, 128, (b, n))
        stream.fill(a[0:16], 0)
    got_a = stream.read(a).wait()
    got_b = stream.read(b).wait()
    assert set(got_b) == {19 + 2}
    assert set(got_a[:16]) == {0} and set(got_a[16:]) == {19 + 1}


def test_views_pass_the_address_of_their_first_byte(device, stream):
    k = compile_kernel(device, "add_one")
    b = device.allocate(64)
    stream.fill(b, 10)
    stream.launch(k, 1, 32, (b[16:32], 16))
    got = stream.read(b).wait()
    assert set(got[:16]) == {10} and set(got[16:32]) == {11}
    assert set(got[32:]) == {10}


def test_events_order_launches_across_streams(device):
    k = compile_kernel(device, "slow_write")
    a, b = device.stream(), device.stream()
    out, dst = device.allocate(4), device.allocate(4)
    for value in (7, 8, 9):
        a.launch(k, 1, 1, (out, np.uint32(value), np.uint64(200000)))
        done = a.record_event()
        b.wait_event(done)
        b.copy(dst, out)
        assert b.read(dst).wait().view(np.uint32)[0] == value
        assert done.query()
    a.close()
    b.close()


def test_fabric_queue_lanes_and_reserved_queues(device):
    k = compile_kernel(device, "add_one")
    streams = [hrx.fabric.Queue(device), device.stream(priority="high"),
               device.stream(priority="low"), device.stream(reserve=True),
               device.stream(priority="high", reserve=True)]
    for s in streams:
        b = device.allocate(128)
        s.fill(b, 1)
        s.launch(k, 1, 128, (b, 128))
        assert set(s.read(b).wait()) == {2}, s
        s.close()


def test_scalar_arguments_take_their_parameters_types(device, stream):
    k = compile_kernel(device, "record")
    out = device.allocate(64)
    h = 2**63 + 5

    def run(*args):
        stream.fill(out, 0)
        stream.launch(k, 1, 1, (out, *args))
        raw = stream.read(out).wait()
        return (list(raw[:32].view(np.int64)), list(raw[32:48].view(np.float64)),
                list(raw[48:].view(np.uint64)))

    # numpy scalars are their exact type.
    assert run(np.int8(-5), np.int16(-300), np.int32(-70000), np.int64(-7),
               np.float32(1.5), np.float64(-0.125), np.uint8(9),
               np.uint64(h)) == ([-5, -300, -70000, -7], [1.5, -0.125],
                                 [9, h])
    # A bool goes to a 1-byte unsigned parameter (bool's form in PTX).
    assert run(np.int8(0), np.int16(0), np.int32(0), np.int64(0),
               np.float32(0), np.float64(0), np.bool_(True),
               np.uint64(0))[2][0] == 1
    # Python ints, floats and bools fill the parameter's size.
    known_sizes(k)
    assert run(-5, -300, -70000, -2**40, 1.5, 2.25, True, h) == (
        [-5, -300, -70000, -2**40], [1.5, 2.25], [1, h])
    # An int for a float parameter is its value.
    assert run(0, 0, 0, 0, 3, -2, 0, 0)[1] == [3.0, -2.0]
    if all(p["type"] == "unknown" or "/" in p["type"] for p in k.params[1:5]):
        # Signedness not recorded: up to the size's unsigned maximum.
        assert run(200, 65535, 2**32 - 1, 2**64 - 1, 0.5, 0.5, 255, 0)[0] == [
            -56, -1, -1, -1]


@pytest.mark.parametrize("value", [2**32, -2**31 - 1])
def test_an_int_that_does_not_fit_its_parameter_is_refused(device, stream,
                                                           value):
    k = compile_kernel(device, "record")
    known_sizes(k)
    out = device.allocate(64)
    with pytest.raises(hrx.InvalidArgumentError,
                       match="argument 3 .*out of range for parameter 3"):
        stream.launch(k, 1, 1, (out, 0, 0, value, 0, 0.0, 0.0, 0, 0))


def test_a_numpy_scalar_of_another_size_is_refused(device, stream):
    k = compile_kernel(device, "record")
    known_sizes(k)
    out = device.allocate(64)
    with pytest.raises(TypeError,
                       match=r"argument 3 \(numpy.int64\) does not match "
                             r"parameter 3"):
        stream.launch(k, 1, 1, (out, 0, 0, np.int64(1), 0, 0.0, 0.0, 0, 0))
    with pytest.raises(TypeError, match="argument 5 .* parameter 5"):
        stream.launch(k, 1, 1, (out, 0, 0, 0, 0, np.float64(1), 0.0, 0, 0))


def test_a_buffer_dropped_after_a_launch_is_not_freed_under_it(device,
                                                               stream):
    k = compile_kernel(device, "slow_write")
    keep = device.allocate(4)
    for value in range(5):
        out = device.allocate(4)
        stream.launch(k, 1, 1, (out, np.uint32(value), np.uint64(100000)))
        stream.copy(keep, out)
        del out
        gc.collect()
        assert stream.read(keep).wait().view(np.uint32)[0] == value


def test_a_kernel_closed_after_a_launch_still_runs(device, stream):
    k = compile_kernel(device, "slow_write")
    out = device.allocate(4)
    stream.launch(k, 1, 1, (out, np.uint32(5), np.uint64(100000)))
    k.close()
    assert stream.read(out).wait().view(np.uint32)[0] == 5
    with pytest.raises(hrx.FailedPreconditionError, match="kernel is closed"):
        stream.launch(k, 1, 1, (out, np.uint32(5), np.uint64(1)))


def test_many_threads_launch_on_their_own_streams(device):
    k = compile_kernel(device, "add_one")
    errors = []

    def worker(index):
        try:
            s = device.stream()
            b = device.allocate(64)
            s.fill(b, index)
            for _ in range(100):
                s.launch(k, 1, 64, (b, 64))
            assert set(s.read(b).wait()) == {(index + 100) % 256}
            s.close()
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_a_launch_keeps_the_gil_on_a_queue_with_room(device, stream):
    k = compile_kernel(device, "add_one")
    b = device.allocate(64)
    stream.synchronize()

    def launches_that_released():
        return sum(n for (kind, _), n in
                   hrx._hrx._testing_submissions_released_gil().items()
                   if kind == "kernel_launch")

    before = launches_that_released()
    for _ in range(20):
        stream.launch(k, 1, 64, (b, 64))
    stream.synchronize()
    assert launches_that_released() == before


def test_kernels_of_another_device_and_its_buffers_are_refused(
        device, second_device, stream):
    k = compile_kernel(device, "add_one")
    other = compile_kernel(second_device, "add_one")
    b, foreign = device.allocate(64), second_device.allocate(64)
    with pytest.raises(hrx.InvalidArgumentError, match="the kernel belongs"):
        stream.launch(other, 1, 1, (b, 64))
    with pytest.raises(hrx.InvalidArgumentError, match="argument 0 belongs"):
        stream.launch(k, 1, 1, (foreign, 64))


@pytest.mark.parametrize("batching", ["1", "0"])
def test_a_failed_launch_fails_its_stream(fresh, batching):
    """The fault wrapper refuses the second launch: the stream's next
    observation raises it with what was not run, then the stream works;
    an unobserved one is raised by device synchronize."""
    out = fresh("""
        from kernel_sources import compile_kernel
        dev = hrx.Device.open(0, backend=backend)
        k = compile_kernel(dev, "add_one")
        s = dev.stream()
        b = dev.allocate(64)
        s.fill(b, 0)
        s.launch(k, 1, 64, (b, 64))
        s.launch(k, 1, 64, (b, 64))          # refused by the device
        s.fill(b[0:8], 9)                    # not run
        try:
            s.synchronize()
        except hrx.DeviceError as e:
            assert "(kernel launch) failed" in str(e), str(e)
            assert "injected fault: launch call #2" in str(e), str(e)
            assert "1 later command of this stream was not run" in str(e), e
        else:
            raise AssertionError("the failed launch was not raised")
        got = s.read(b).wait()
        assert set(got) == {1}, got          # only the first launch ran
        s.launch(k, 1, 64, (b, 64))          # usable again (call #3 fails)
        t = dev.stream()
        t.launch(k, 1, 64, (b, 64))          # call #4 runs
        try:
            dev.synchronize()
        except hrx.DeviceError as e:
            assert "kernel launch" in str(e), str(e)
        else:
            raise AssertionError("device synchronize raised nothing")
        assert set(s.read(b).wait()) == {2}
        print("ok")
    """, env={"HRX_FAULTS": "launch:2,launch:3", "HRX_BATCHING": batching,
              "PYTHONPATH": _pythonpath()})
    assert out.strip() == "ok"


def _pythonpath() -> str:
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    return os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), here) if p)
