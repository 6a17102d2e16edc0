"""Foreign kernels on hrx queues, ordered with hrx events: a kernel compiled
with NVRTC and launched through the CUDA driver API (ctypes) on
``stream.native_handle``. Needs the hip backend on an NVIDIA GPU with NVRTC;
skipped elsewhere. The same checks with PyTorch: test_interop_torch.py."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import hrx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench" / "examples"))
import cuda_kernels  # noqa: E402


def _hip_device():
    if not any(b["name"] == "hip" and b["available"] for b in hrx.backends()):
        pytest.skip("no hip device")
    device = hrx.Device.open(0, backend="hip")
    reason = cuda_kernels.available(device)
    if reason:
        pytest.skip(reason)
    return device


@pytest.fixture(scope="module")
def gpu():
    device = _hip_device()
    return device, cuda_kernels.Kernels(device)


NBYTES = 64 << 20   # large enough that an unordered kernel would visibly race


def test_kernel_on_the_native_handle_follows_earlier_hrx_work(gpu):
    """Same queue: an hrx fill, published by record_event, then a kernel on
    the stream's native handle; the kernel sees the fill."""
    device, kernels = gpu
    stream = device.stream()
    buffer = device.allocate(NBYTES)
    stream.fill(buffer, 41)
    stream.record_event()          # publishes: the fill is on the queue
    kernels.add_one(stream.native_handle, cuda_kernels.device_address(buffer), NBYTES)
    out = np.empty(NBYTES, np.uint8)
    stream.read_blocking(buffer, out)
    assert (out == 42).all()


def test_events_order_a_foreign_kernel_between_hrx_streams(gpu):
    """Across queues: fill on stream a; b waits for it, runs the kernel on
    b's native handle; a waits for b and copies the result. Every byte must
    have been filled, incremented, then copied."""
    device, kernels = gpu
    device_streams = [device.stream() for _ in range(2)]
    a, b = device_streams
    if a.native_handle == b.native_handle:
        pytest.skip("both streams share one queue (pool size 1)")
    src, dst = device.allocate(NBYTES), device.allocate(NBYTES)
    for value in (7, 100, 200):
        a.fill(src, value)
        b.wait_event(a.record_event())
        b.record_event()           # publishes the wait before the launch
        kernels.add_one(b.native_handle, cuda_kernels.device_address(src), NBYTES)
        a.wait_event(b.record_event())   # the event covers the kernel
        a.copy(dst, src)
        out = np.empty(NBYTES, np.uint8)
        a.read_blocking(dst, out)
        assert (out == value + 1).all(), value


def test_fabric_queue_native_handle_runs_kernels(gpu):
    device, kernels = gpu
    queue = hrx.fabric.Queue(device)
    buffer = device.allocate(4096)
    queue.fill(buffer, 1)
    queue.record_event()
    kernels.add_one(queue.native_handle, cuda_kernels.device_address(buffer[1024:2048]), 1024)
    data = queue.read(buffer).wait()
    assert (data[:1024] == 1).all() and (data[1024:2048] == 2).all() and (data[2048:] == 1).all()


def test_dlpack_device_and_address_of_views(gpu):
    device, _ = gpu
    buffer = device.allocate(1 << 20)
    assert buffer.__dlpack_device__() == (2, device.info["index"])
    base = cuda_kernels.device_address(buffer)
    assert cuda_kernels.device_address(buffer[4096:8192]) == base + 4096
    with pytest.raises(hrx.InvalidArgumentError, match="ambiguous"):
        buffer.__dlpack__(stream=0)
    for stream in (None, 1, 2, -1, device.stream().native_handle):
        assert buffer.__dlpack__(stream=stream) is not None


def test_example_kernel_workload_runs_in_nvrtc_mode(gpu, monkeypatch):
    device, _ = gpu
    import importlib.util

    from hrx.bench.workload import run_workload

    path = Path(__file__).resolve().parent.parent / "bench/examples/kernel_workload.py"
    spec = importlib.util.spec_from_file_location("kernel_workload_gpu", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setenv("HRX_EXAMPLE_KERNEL", "nvrtc")
    result = run_workload("kernel", device, streams=4, warmup=1, samples=3,
                          function=module.round)
    assert result["round_median_ms"] > 0
