"""PyTorch kernels on hrx queues (torch.cuda.ExternalStream on
``stream.native_handle``), hrx memory seen by torch through DLPack, and the
ordering of both with hrx events. Skipped without torch, CUDA or the hip
backend on NVIDIA; test_interop_native.py does the same without torch."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

NBYTES = 64 << 20


@pytest.fixture(scope="module")
def device(request):
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA device")
    return request.getfixturevalue("nvidia_hip_device")


def test_a_refused_hrx_call_leaves_no_error_for_torch(device):
    """The runtime keeps the last failed call of each thread, and PyTorch
    reads it after each of its launches: hrx reports its own refusals and
    must leave that slot clean, or torch's next kernel fails with hrx's
    out-of-memory."""
    with pytest.raises(MemoryError):
        device.allocate(device.info["total_memory"] * 4)
    tensor = torch.ones(256, dtype=torch.int32, device=f"cuda:{device.info['index']}")
    assert int(tensor.sum()) == 256


def test_torch_sees_hrx_memory_without_a_copy(device):
    stream = device.stream()
    buffer = device.allocate(4096)
    stream.fill(buffer, 3)
    tensor = torch.from_dlpack(buffer[1024:2048])
    assert tensor.device.type == "cuda" and tensor.dtype == torch.uint8
    assert tensor.shape == (1024,)
    assert int(tensor.sum()) == 3 * 1024
    tensor.fill_(9)
    torch.cuda.synchronize()
    data = stream.read(buffer).wait()
    assert (data[1024:2048] == 9).all() and (data[:1024] == 3).all()
    del buffer, stream
    assert int(tensor.sum()) == 9 * 1024   # the tensor keeps the memory alive


def test_torch_sees_typed_views_with_their_dtype_and_shape(device):
    import numpy as np
    stream = device.stream()
    grid = device.asarray(np.arange(12, dtype=np.int32).reshape(3, 4))
    tensor = torch.from_dlpack(grid)
    assert tensor.device.type == "cuda" and tensor.dtype == torch.int32
    assert tensor.shape == (3, 4)
    assert int(torch.from_dlpack(grid[2:]).sum()) == 8 + 9 + 10 + 11
    half = torch.from_dlpack(device.zeros((2, 2), np.float16))
    assert half.dtype == torch.float16 and half.shape == (2, 2)
    tensor.add_(1)
    torch.cuda.synchronize()
    assert (stream.read(grid).wait() == np.arange(1, 13).reshape(3, 4)).all()


def test_torch_kernel_on_an_hrx_stream_ordered_with_events(device):
    a, b = device.stream(), device.stream()
    src, dst = device.allocate(NBYTES), device.allocate(NBYTES)
    view = torch.from_dlpack(src)
    external = torch.cuda.ExternalStream(b.native_handle, device=device.info["index"])
    for value in (5, 60, 250):
        a.fill(src, value)
        b.wait_event(a.record_event())
        b.record_event()                     # publish the wait before torch launches
        with torch.cuda.stream(external):
            view.add_(1)                     # a torch kernel on b's queue
        a.wait_event(b.record_event())       # covers the torch kernel
        a.copy(dst, src)
        out = a.read(dst).wait()
        assert (out == (value + 1) % 256).all(), value


def test_torch_tensors_as_hrx_kernel_arguments(device):
    """A torch CUDA tensor is passed to an hrx kernel as its data pointer
    (__cuda_array_interface__), a view from its own first element; the
    kernel's result is torch's to read once the hrx stream is done."""
    import numpy as np
    from kernel_sources import compile_kernel
    k = compile_kernel(device, "saxpy")
    target = f"cuda:{device.info['index']}"
    x = torch.arange(1024, dtype=torch.float32, device=target)
    y = torch.ones(1024, dtype=torch.float32, device=target)
    torch.cuda.synchronize()
    stream = device.stream()
    stream.launch(k, 4, 256, (x, y[512:], np.float32(2.0), np.int32(512)))
    stream.synchronize()
    expected = torch.ones(1024, dtype=torch.float32)
    expected[512:] = 2 * torch.arange(512, dtype=torch.float32) + 1
    assert torch.equal(y.cpu(), expected)
    # DLPack, for a producer without the CUDA interface.

    class OnlyDLPack:
        def __init__(self, tensor):
            self.tensor = tensor

        def __dlpack__(self, **kwargs):
            return self.tensor.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.tensor.__dlpack_device__()

    stream.launch(k, 2, 256, (x, OnlyDLPack(y), np.float32(1.0), np.int32(512)))
    stream.synchronize()
    assert float(y[0].cpu()) == 1.0 + 0.0 and float(y[1].cpu()) == 2.0
