"""Conformance: a program written the CuPy way runs unchanged on every
backend and matches numpy (docs/from-cupy-and-pytorch.md, the mapping;
docs/kernels.md, the dialect and modules).

The program is what a CuPy user writes in a first hour: one source with a
saxpy and a shared-memory tree reduction compiled once as a module, typed
device arrays made from host arrays, four Python threads each running
saxpy then the reduction on a stream of its own, events that order a
final step on a fifth stream after all four, reads that come back as
arrays of their dtype and shape, element slices and dtype views, typed
fills, pinned host memory, and timing events. Every value is checked
against numpy.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

import hrx
from test_kernel_cuda_dialect import REDUCE, SAXPY

# The saxpy and the tree reduction of the dialect's suite, and a row sum.
SOURCE = SAXPY + REDUCE + r"""
extern "C" __global__ void add_rows(const float* rows, float* total,
                                   int count, int width) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= width) return;
  float sum = 0.0f;
  for (int r = 0; r < count; ++r) sum += rows[r * width + j];
  total[j] = sum;
}
"""

N = 4096
BLOCK = 128
PARTS = N // BLOCK
WORKERS = 4


def test_four_threads_saxpy_and_reduce_then_a_final_step(device):
    kernels = device.compile_module(SOURCE, ["saxpy", "block_sum",
                                             "add_rows"])
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal(N).astype(np.float32) for _ in range(WORKERS)]
    ys = [rng.standard_normal(N).astype(np.float32) for _ in range(WORKERS)]
    a = 0.5
    # One row of partial sums per worker, written by its own stream.
    partials = device.zeros((WORKERS, PARTS), np.float32)
    events = [None] * WORKERS
    errors = []

    def work(w):
        try:
            s = device.stream()
            x = s.to_device(xs[w])
            y = s.to_device(ys[w])
            s.launch(kernels["saxpy"], N // BLOCK, BLOCK, (x, y, a, N))
            row = partials[w:w + 1]      # row w, as numpy slices rows
            s.launch(kernels["block_sum"], PARTS, BLOCK, (y, row, N),
                     shared=4 * BLOCK)
            events[w] = s.record_event()
            # The worker's own result, read as an array of y's dtype.
            got = s.read(y).wait()
            assert got.dtype == np.float32 and got.shape == (N,)
            np.testing.assert_allclose(got, a * xs[w] + ys[w], rtol=1e-6,
                                       atol=1e-6)
        except BaseException as error:  # noqa: BLE001 - re-raised below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(w,))
               for w in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]

    final = device.stream()
    for event in events:
        final.wait_event(event)
    total = device.empty((PARTS,), np.float32)
    final.launch(kernels["add_rows"], 1, PARTS,
                 (partials, total, WORKERS, PARTS))
    got = final.read(total).wait()

    expected_rows = np.stack([
        (a * xs[w].astype(np.float64) + ys[w]).reshape(PARTS, BLOCK).sum(1)
        for w in range(WORKERS)])
    assert got.dtype == np.float32 and got.shape == (PARTS,)
    np.testing.assert_allclose(got, expected_rows.sum(0), rtol=1e-4,
                               atol=1e-4)
    rows = final.read(partials).wait()
    assert rows.shape == (WORKERS, PARTS)
    np.testing.assert_allclose(rows, expected_rows, rtol=1e-4, atol=1e-4)


def test_the_mapping_of_arrays(device, stream):
    """The table's array rows: asarray, empty, zeros, typed reads, read_into,
    upload, element slices, dtype views, copies and typed fills."""
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = device.asarray(host, stream=stream)          # cupy.asarray
    assert (x.dtype, x.shape, x.nbytes) == (np.dtype(np.float32), (3, 4), 48)
    np.testing.assert_array_equal(stream.read(x).wait(), host)  # x.get()

    out = np.empty_like(host)
    stream.read_into(x, out).wait()                  # x.get(out=a)
    np.testing.assert_array_equal(out, host)

    flat = device.empty((12,), np.float32)
    stream.upload(flat, host.ravel() * 2)            # x.set(a)
    part = flat[2:5]                                 # x[2:5]
    assert (part.shape, part.nbytes) == ((3,), 12)
    np.testing.assert_array_equal(stream.read(part).wait(), [4.0, 6.0, 8.0])

    bits = flat.view(np.int32)                       # x.view(cupy.int32)
    assert stream.read(bits).wait()[1] == np.float32(2.0).view(np.int32)

    y = device.zeros((12,), np.float32, stream=stream)   # cupy.zeros
    stream.copy(y, flat)                                 # y[...] = x
    stream.fill(y[6:], 1.5)                              # x.fill(1.5)
    expected = np.concatenate([host.ravel()[:6] * 2, np.full(6, 1.5)])
    np.testing.assert_array_equal(stream.read(y).wait(), expected)

    # Uploads are checked against the dtype.
    with pytest.raises((TypeError, hrx.InvalidArgumentError)):
        stream.upload(flat, np.ones(12, np.int32))


def test_pinned_memory_and_timing_events(device, stream):
    """cupyx.empty_pinned, a direct upload and read, and elapsed_time."""
    pinned = device.empty_pinned((1024,), np.float32)   # cupyx.empty_pinned
    pinned[:] = np.arange(1024, dtype=np.float32)
    assert device.is_pinned(pinned)
    x = device.empty((1024,), np.float32)
    start = stream.record_event(timing=True)
    stream.upload(x, pinned)
    back = device.empty_pinned((1024,), np.float32)
    stream.read_into(x, back).wait()
    end = stream.record_event(timing=True)
    end.synchronize()
    np.testing.assert_array_equal(back, np.arange(1024, dtype=np.float32))
    assert start.elapsed_time(end) >= 0.0


def test_a_wrong_scalar_is_refused_not_reinterpreted(backend, device, stream):
    """What CuPy's RawKernel would pass as wrong bits: a Python float for
    an int parameter raises, naming the parameter by its index and, where
    the backend records names (the host backend reads the declaration;
    NVIDIA's PTX keeps only types), by its name; an int for a float is
    converted to its value."""
    saxpy = device.compile(SOURCE, "saxpy")
    x = device.asarray(np.ones(8, np.float32), stream=stream)
    y = device.zeros((8,), np.float32, stream=stream)
    named = " 'n'" if backend == "host" else ""
    with pytest.raises(TypeError,
                       match=f"parameter 3{named} of kernel 'saxpy' \\(int32"):
        stream.launch(saxpy, 1, 8, (x, y, 2.0, 8.0))
    stream.launch(saxpy, 1, 8, (x, y, 3, 8))    # the int 3 becomes 3.0f
    np.testing.assert_array_equal(stream.read(y).wait(), np.full(8, 3.0))
