"""CuPy and Numba beside hrx on NVIDIA: hrx memory seen by CuPy without a
copy (DLPack and the CUDA Array Interface) and written by either side, the
consumer stream ordered by events (__dlpack__(stream=...)), CuPy kernels on
an hrx queue through the CUDA stream protocol, and Numba's
cuda.as_cuda_array. Skipped without CuPy, CUDA or the hip backend on
NVIDIA (the Numba test also without Numba)."""
from __future__ import annotations

import threading

import pytest

import hrx

cupy = pytest.importorskip("cupy")

NBYTES = 64 << 20


@pytest.fixture(scope="module")
def device(request):
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("CuPy sees no CUDA device")
    except cupy.cuda.runtime.CUDARuntimeError as error:
        pytest.skip(f"CuPy has no CUDA device: {error}")
    return request.getfixturevalue("nvidia_hip_device")


def test_cupy_sees_and_writes_hrx_memory_without_a_copy(device):
    stream = device.stream()
    buffer = device.allocate(4096)
    stream.fill(buffer, 3)
    through_dlpack = cupy.from_dlpack(buffer[1024:2048])
    through_cai = cupy.asarray(buffer[2048:4096])
    assert through_dlpack.dtype == cupy.uint8 and through_dlpack.size == 1024
    assert through_cai.data.ptr == (
        buffer.__cuda_array_interface__["data"][0] + 2048)
    assert int(through_dlpack.sum()) == 3 * 1024
    assert int(through_cai.sum()) == 3 * 2048
    through_dlpack.fill(9)                    # CuPy writes, hrx reads
    cupy.cuda.runtime.deviceSynchronize()
    data = stream.read(buffer).wait()
    assert (data[1024:2048] == 9).all() and (data[:1024] == 3).all()
    del buffer, stream
    assert int(through_dlpack.sum()) == 9 * 1024   # the array keeps it alive


def test_cupy_sees_typed_views_with_their_dtype_and_shape(device):
    import numpy as np
    stream = device.stream()
    grid = device.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    through_dlpack = cupy.from_dlpack(grid)
    assert through_dlpack.dtype == cupy.float32
    assert through_dlpack.shape == (3, 4)
    rows = cupy.asarray(grid[1:3])                 # the CUDA Array Interface
    assert rows.dtype == cupy.float32 and rows.shape == (2, 4)
    assert rows.data.ptr == through_dlpack.data.ptr + 16
    assert grid.__cuda_array_interface__["typestr"] == "<f4"
    assert float(rows.sum()) == float(sum(range(4, 12)))
    through_dlpack *= 2                             # CuPy writes, hrx reads
    cupy.cuda.runtime.deviceSynchronize()
    assert (stream.read(grid).wait() == 2 * np.arange(12).reshape(3, 4)).all()
    flags = cupy.from_dlpack(device.zeros(5, np.bool_))
    assert flags.dtype == cupy.bool_ and not bool(flags.any())


def test_dlpack_orders_the_consumer_stream_without_blocking_the_host(device):
    """The consumer's stream waits on the device for hrx's submitted work:
    the export returns while that work is held behind a closed gate (a
    graph's host callback on the stream), and a copy queued on the consumer
    meanwhile sees that work's result once the gate opens. The gate makes
    the check independent of how long the export takes on a loaded host."""
    stream = device.stream()
    buffer = device.allocate(NBYTES)
    stream.fill(buffer, 1)
    stream.synchronize()
    snapshot = cupy.zeros(NBYTES, dtype=cupy.uint8)
    cupy.cuda.runtime.deviceSynchronize()
    gate = threading.Event()
    graph = hrx.Graph(device)
    graph.callback(gate.wait)
    opener = threading.Timer(30, gate.set)   # a blocking export cannot hang
    opener.start()
    try:
        callbacks = graph.launch(stream)
        stream.fill(buffer, 7)               # held behind the gate
        consumer = cupy.cuda.Stream(non_blocking=True)
        with consumer:
            array = cupy.from_dlpack(buffer)     # passes stream=consumer.ptr
            returned_while_held = not gate.is_set()
            cupy.copyto(snapshot, array)         # queued behind hrx's fill
    finally:
        gate.set()
        opener.cancel()
    callbacks.wait()
    stream.synchronize()
    consumer.synchronize()
    assert returned_while_held, "__dlpack__ waited for the work on the host"
    assert int((snapshot == 7).sum()) == NBYTES


def test_cuda_array_interface_stream_orders_the_consumer(device):
    stream = device.stream()
    buffer = device.allocate(NBYTES)
    for value in range(1, 9):
        stream.fill(buffer, value)
    interface = buffer.__cuda_array_interface__
    assert interface["version"] == 3 and interface["stream"] == 1
    array = cupy.asarray(buffer)             # honours the interface's stream
    assert int(array[::4096].astype(cupy.uint64).sum()) == 8 * (NBYTES // 4096)


def test_cupy_kernel_on_an_hrx_stream_through_the_stream_protocol(device):
    a, b = device.stream(), device.stream()
    version, handle = b.__cuda_stream__()
    assert version == 0 and handle == b.native_handle
    if hasattr(cupy.cuda.Stream, "from_external"):   # CuPy 14: the protocol itself
        external = cupy.cuda.Stream.from_external(b)
        assert external.ptr == handle
    else:
        external = cupy.cuda.ExternalStream(handle)
    src, dst = device.allocate(NBYTES), device.allocate(NBYTES)
    view = cupy.from_dlpack(src)
    for value in (5, 60, 250):
        a.fill(src, value)
        b.wait_event(a.record_event())
        b.record_event()                     # publish the wait before CuPy
        with external:
            view += 1                        # a CuPy kernel on b's queue
        a.wait_event(b.record_event())       # covers the CuPy kernel
        a.copy(dst, src)
        out = a.read(dst).wait()
        assert (out == (value + 1) % 256).all(), value


def test_timing_events_time_device_work(device):
    stream = device.stream()
    buffer = device.allocate(1 << 30)
    start = stream.record_event(timing=True)
    for value in range(8):
        stream.fill(buffer, value)
    end = stream.record_event(timing=True)
    end.synchronize()
    ms = start.elapsed_time(end)
    # 8 GiB of fills at a few TB/s: about 2-4 ms.
    assert 0.2 < ms < 200, ms


def test_numba_as_cuda_array(device):
    numba_cuda = pytest.importorskip("numba.cuda")
    if not numba_cuda.is_available():
        pytest.skip("Numba sees no CUDA device")
    stream = device.stream()
    buffer = device.allocate(4096)
    stream.fill(buffer, 7)
    array = numba_cuda.as_cuda_array(buffer)
    assert array.shape == (4096,)
    assert int(array.copy_to_host().sum()) == 7 * 4096


def test_cupy_arrays_as_hrx_kernel_arguments(device):
    """A CuPy array is passed to an hrx kernel as its data pointer
    (__cuda_array_interface__); the same source runs as a cupy.RawKernel,
    and both agree."""
    import numpy as np
    from kernel_sources import compile_kernel, source
    k = compile_kernel(device, "saxpy")
    with cupy.cuda.Device(device.info["index"]):
        x = cupy.arange(1000, dtype=cupy.float32)
        y = cupy.ones(1000, dtype=cupy.float32)
        cupy.cuda.get_current_stream().synchronize()
        stream = device.stream()
        stream.launch(k, 4, 256, (x, y, np.float32(3.0), np.int32(1000)))
        stream.synchronize()
        theirs = cupy.ones(1000, dtype=cupy.float32)
        raw = cupy.RawKernel(source("saxpy"), "saxpy")
        raw((4,), (256,), (x, theirs, np.float32(3.0), np.int32(1000)))
        cupy.cuda.get_current_stream().synchronize()
        assert bool((y == theirs).all())
        assert float(y[10]) == 31.0
