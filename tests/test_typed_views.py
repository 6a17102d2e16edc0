"""Typed views of device buffers: a dtype and shape on a byte range
(Buffer.view, Device.empty/zeros/asarray, Stream.to_device), element
slicing, typed reads, the dtype and size checks of upload, read_into,
read_blocking and copy, typed fills, DLPack export of the dtype and shape,
and closing a buffer closing the views taken from it. Bad arguments are
also rows of bad_input_cases.py."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import hrx
from bad_input_cases import DLPackOnly

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
          np.uint16, np.uint32, np.uint64, np.float16, np.float32,
          np.float64, np.complex64, np.complex128]


def sample(dtype, n):
    """n distinct-ish values of dtype."""
    if np.dtype(dtype) == np.bool_:
        return np.arange(n) % 3 == 0
    values = np.arange(n) * 3 + 1
    if np.dtype(dtype).kind == "c":
        return (values + 1j * values).astype(dtype)
    return values.astype(dtype)


# ------------------------------------------------------------ views


def test_untyped_buffers_are_bytes_as_before(device, stream):
    buf = device.allocate(24)
    assert buf.dtype is None
    assert (buf.shape, buf.size, buf.itemsize, buf.nbytes, len(buf)) == (
        (24,), 24, 1, 24, 24)
    stream.upload(buf, np.arange(6, dtype=np.int32))   # any type of 24 bytes
    data = stream.read(buf).wait()
    assert data.dtype == np.uint8 and data.shape == (24,)
    assert buf[4:8].nbytes == 4 and buf.slice(4, 4).dtype is None


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
def test_a_typed_view_round_trips_its_dtype(device, stream, dtype):
    values = sample(dtype, 12)
    buf = device.allocate(values.nbytes)
    view = buf.view(dtype)
    assert view.dtype == np.dtype(dtype)
    assert view.shape == (12,) and view.size == 12 and len(view) == 12
    assert view.itemsize == np.dtype(dtype).itemsize
    assert view.nbytes == values.nbytes and view.offset == 0
    stream.upload(view, values)
    got = stream.read(view).wait()
    assert got.dtype == np.dtype(dtype) and got.shape == (12,)
    np.testing.assert_array_equal(got, values)


def test_view_takes_a_shape_and_infers_one_extent(device, stream):
    buf = device.allocate(96)
    assert buf.view(np.float32, (4, 6)).shape == (4, 6)
    assert buf.view("float32", (2, -1, 3)).shape == (2, 4, 3)
    assert buf.view(np.float64, 12).shape == (12,)
    assert buf[0:8].view(np.float64, ()).shape == ()
    grid = buf.view(np.int32, (4, 6))
    stream.upload(grid, np.arange(24, dtype=np.int32).reshape(4, 6))
    np.testing.assert_array_equal(stream.read(grid).wait(),
                                  np.arange(24).reshape(4, 6))
    # Reinterpreting a typed view, and back to bytes.
    assert grid.view(np.int16).shape == (48,)
    untyped = grid.view(None)
    assert untyped.dtype is None and untyped.nbytes == 96


@pytest.mark.parametrize("make, error, text", [
    (lambda b: b[0:10].view(np.float32), hrx.InvalidArgumentError,
     "whole number"),
    (lambda b: b[2:10].view(np.float32), hrx.InvalidArgumentError,
     "multiple of 4"),
    (lambda b: b.view(np.float32, (3,)), hrx.InvalidArgumentError,
     "slice the view"),
    (lambda b: b.view(np.float32, (-1, -1)), hrx.InvalidArgumentError, "-1"),
    (lambda b: b.view(np.float32, (5, -1)), hrx.InvalidArgumentError,
     "inferred"),
    (lambda b: b.view(np.float32, (-2, 8)), hrx.InvalidArgumentError, ">= 0"),
    (lambda b: b.view(np.float32, "8"), TypeError, "shape"),
    (lambda b: b.view(np.float32, (8.0,)), TypeError, "ints"),
    (lambda b: b.view(">f4"), TypeError, "native byte order"),
    (lambda b: b.view("U1"), TypeError, "float32"),
    (lambda b: b.view(object), TypeError, "float32"),
    (lambda b: b.view([("x", "<f4")]), TypeError, "float32"),
    (lambda b: b.view(np.longdouble), TypeError, "float64"),
    (lambda b: b.view("nonsense"), TypeError, "nonsense"),
    (lambda b: b.view(None, (4,)), TypeError, "untyped"),
    (lambda b: b.view(), TypeError, "dtype"),
])
def test_view_refuses(device, make, error, text):
    with pytest.raises(error, match=text):
        make(device.allocate(32))


def test_element_slicing(device, stream):
    view = device.asarray(np.arange(10, dtype=np.float32))
    part = view[2:5]
    assert part.dtype == np.float32 and part.shape == (3,)
    assert part.offset == 8 and part.nbytes == 12
    np.testing.assert_array_equal(stream.read(part).wait(), [2, 3, 4])
    np.testing.assert_array_equal(stream.read(view[-3:]).wait(), [7, 8, 9])
    np.testing.assert_array_equal(stream.read(part[1:]).wait(), [3, 4])
    assert view[:].shape == (10,) and view[4:4].shape == (0,)
    with pytest.raises(hrx.InvalidArgumentError, match="step must be 1"):
        view[::2]
    with pytest.raises(hrx.OutOfRangeError, match="10-element view"):
        view[0:11]
    with pytest.raises(TypeError, match="slice"):
        view[3]
    with pytest.raises(TypeError, match=r"v\[a:b\]"):
        view.slice(0, 4)


def test_row_slicing_of_a_typed_2d_view(device, stream):
    grid = device.asarray(np.arange(12, dtype=np.int16).reshape(4, 3))
    assert len(grid) == 4
    rows = grid[1:3]
    assert rows.shape == (2, 3) and rows.offset == 6
    np.testing.assert_array_equal(stream.read(rows).wait(),
                                  [[3, 4, 5], [6, 7, 8]])
    with pytest.raises(hrx.OutOfRangeError, match="4-row view"):
        grid[0:5]
    scalar = device.empty((), np.float64)
    with pytest.raises(TypeError, match="0-d"):
        len(scalar)
    with pytest.raises(TypeError, match="0-d"):
        scalar[0:1]


def test_repr_names_the_dtype_and_shape(device):
    view = device.empty((2, 3), np.float32)
    assert repr(view) == "<hrx.Buffer float32 (2, 3) at [0:24] of 24 bytes>"


# ------------------------------------------------------------ creation


def test_empty_zeros_asarray_and_to_device(device, stream):
    empty = device.empty((2, 5), "uint16")
    assert empty.dtype == np.uint16 and empty.shape == (2, 5)
    assert empty.nbytes == 20 and empty.allocation_size == 20
    stream.fill(empty.view(None), 0xFF)
    zeros = device.zeros((3, 2), np.complex64)        # synchronized
    np.testing.assert_array_equal(stream.read(zeros).wait(),
                                  np.zeros((3, 2), np.complex64))
    ordered = device.zeros(7, np.int64, stream=stream)  # ordered on stream
    np.testing.assert_array_equal(stream.read(ordered).wait(), np.zeros(7))
    host = np.arange(6, dtype=np.float64).reshape(3, 2)
    copied = device.asarray(host)
    host[:] = -1                                      # already on the device
    np.testing.assert_array_equal(stream.read(copied).wait(),
                                  np.arange(6).reshape(3, 2))
    converted = device.asarray([1, 2, 3], dtype=np.float32, stream=stream)
    assert converted.dtype == np.float32
    np.testing.assert_array_equal(stream.read(converted).wait(), [1, 2, 3])
    strided = device.asarray(np.arange(10, dtype=np.int32)[::2])
    np.testing.assert_array_equal(stream.read(strided).wait(), [0, 2, 4, 6, 8])
    on_stream = stream.to_device(np.array([[True, False]]))
    assert on_stream.dtype == np.bool_ and on_stream.shape == (1, 2)
    np.testing.assert_array_equal(stream.read(on_stream).wait(),
                                  [[True, False]])
    assert stream.to_device(DLPackOnly(np.arange(3.0))).shape == (3,)


def test_creation_refuses(device, stream):
    with pytest.raises(hrx.InvalidArgumentError, match="no elements"):
        device.empty((4, 0), np.float32)
    with pytest.raises(hrx.InvalidArgumentError, match=">= 0"):
        device.empty(-1, np.float32)
    with pytest.raises(TypeError, match="float32"):
        device.empty(4, "U3")
    with pytest.raises(TypeError):
        device.empty(4)
    with pytest.raises(TypeError, match="stream must be"):
        device.zeros(4, np.float32, stream=device)
    with pytest.raises(TypeError, match="stream.copy"):
        device.asarray(device.allocate(4))
    with pytest.raises(TypeError, match="float32"):
        device.asarray(np.array(["a"]))
    with pytest.raises(TypeError, match="float32"):
        stream.to_device(np.array([None]))
    with pytest.raises(hrx.InvalidArgumentError, match="no elements"):
        device.asarray(np.zeros(0, np.float32))


# ------------------------------------------------------------ transfers


def test_upload_checks_the_dtype_and_count(device, stream):
    view = device.empty(4, np.float32)
    with pytest.raises(TypeError, match="int32.*float32"):
        stream.upload(view, np.ones(4, np.int32))
    with pytest.raises(TypeError, match="uint8"):
        stream.upload(view, np.zeros(16, np.uint8))
    with pytest.raises(TypeError, match="int32"):
        stream.upload(view, DLPackOnly(np.ones(4, np.int32)))
    with pytest.raises(hrx.InvalidArgumentError, match="3 float32 elements"):
        stream.upload(view, np.ones(3, np.float32))
    with pytest.raises(hrx.InvalidArgumentError, match="15 bytes"):
        stream.upload(view, bytes(15))
    # The same dtype in any shape of that count, bytes images, DLPack.
    stream.upload(view, np.full((2, 2), 2.5, np.float32))
    np.testing.assert_array_equal(stream.read(view).wait(), [2.5] * 4)
    for image in (np.float32([1, 2, 3, 4]).tobytes(),
                  bytearray(np.float32([1, 2, 3, 4]).tobytes()),
                  memoryview(np.float32([1, 2, 3, 4]).tobytes())):
        stream.fill(view.view(None), 0)
        stream.upload(view, image)
        np.testing.assert_array_equal(stream.read(view).wait(), [1, 2, 3, 4])
    stream.upload(view, memoryview(np.float32([5, 6, 7, 8]).tobytes()).cast("f"))
    stream.upload(view, DLPackOnly(np.float32([5, 6, 7, 8])))
    np.testing.assert_array_equal(stream.read(view).wait(), [5, 6, 7, 8])


def test_read_into_and_read_blocking_check_the_destination(device, stream):
    view = device.asarray(np.arange(4, dtype=np.int32))
    with pytest.raises(TypeError, match="read output is float32.*int32"):
        stream.read_into(view, np.zeros(4, np.float32))
    with pytest.raises(hrx.InvalidArgumentError, match="5 int32 elements"):
        stream.read_into(view, np.zeros(5, np.int32))
    with pytest.raises(TypeError, match="int64"):
        stream.read_blocking(view, np.zeros(4, np.int64))
    with pytest.raises(hrx.InvalidArgumentError, match="at least 4"):
        stream.read_blocking(view, np.zeros(3, np.int32))
    out = np.zeros((2, 2), np.int32)
    assert stream.read_into(view, out).wait() is out
    np.testing.assert_array_equal(out.ravel(), [0, 1, 2, 3])
    raw = bytearray(16)
    stream.read_into(view, raw).wait()
    assert np.frombuffer(raw, np.int32).tolist() == [0, 1, 2, 3]
    more = np.full(6, -1, np.int32)
    stream.read_blocking(view, more)
    assert more.tolist() == [0, 1, 2, 3, -1, -1]
    through_dlpack = np.zeros(4, np.int32)
    stream.read_blocking(view, DLPackOnly(through_dlpack))
    assert through_dlpack.tolist() == [0, 1, 2, 3]


def test_copy_checks_the_dtypes(device, stream):
    src = device.asarray(np.arange(4, dtype=np.float32))
    with pytest.raises(TypeError, match="float32.*int32|int32.*float32"):
        stream.copy(device.empty(4, np.int32), src)
    dst = device.empty(4, np.float32)
    stream.copy(dst, src)
    bits = device.allocate(16)
    stream.copy(bits, src)                  # untyped takes any bytes
    stream.copy(device.empty(4, np.int32), src.view(np.int32))
    np.testing.assert_array_equal(stream.read(dst).wait(), [0, 1, 2, 3])


# ------------------------------------------------------------ fills


@pytest.mark.parametrize("dtype, value", [
    (np.float32, 1.5), (np.float16, -2.25), (np.float64, 1e300),
    (np.int8, -100), (np.uint16, 65535), (np.int64, -2**63),
    (np.uint64, 2**64 - 1), (np.int32, np.int16(7)), (np.float32, 3),
    (np.complex64, 1 + 2j), (np.complex128, 2.0), (np.bool_, True),
    (np.bool_, np.False_), (np.float32, float("inf")),
    (np.float32, np.float32(0.1)),
])
def test_fill_writes_a_typed_value(device, stream, dtype, value):
    buf = device.allocate(128)
    stream.fill(buf, 0xAB)
    view = buf[16:16 + 5 * np.dtype(dtype).itemsize].view(dtype)
    stream.fill(view, value)
    got = stream.read(view).wait()
    np.testing.assert_array_equal(got, np.full(5, value, dtype))
    around = stream.read(buf).wait()
    assert (around[:16] == 0xAB).all()
    assert (around[16 + view.nbytes:] == 0xAB).all()


@pytest.mark.parametrize("dtype, count", [
    (np.float32, 100_003), (np.complex128, 70_001), (np.int16, 3 << 16),
])
def test_a_wide_fill_covers_a_large_view_exactly(device, stream, dtype,
                                                 count):
    """A value that is not one repeated byte is uploaded once and doubled
    by device copies: every element, and nothing beyond the view."""
    itemsize = np.dtype(dtype).itemsize
    buf = device.allocate((count + 4) * itemsize)
    stream.fill(buf, 0x5A)
    view = buf[2 * itemsize:(count + 2) * itemsize].view(dtype)
    stream.fill(view, 7)
    assert (stream.read(view).wait() == 7).all()
    raw = stream.read(buf).wait()
    assert (raw[:2 * itemsize] == 0x5A).all()
    assert (raw[(count + 2) * itemsize:] == 0x5A).all()


@pytest.mark.parametrize("dtype, value, error", [
    (np.int8, 128, hrx.OutOfRangeError), (np.uint8, -1, hrx.OutOfRangeError),
    (np.uint64, 2**64, hrx.OutOfRangeError),
    (np.int64, -2**63 - 1, hrx.OutOfRangeError),
    (np.float16, 70000.0, hrx.OutOfRangeError),
    (np.float32, 1e39, hrx.OutOfRangeError),
    (np.float32, 10**400, hrx.OutOfRangeError),
    (np.int32, 1.5, TypeError), (np.int32, True, TypeError),
    (np.float32, 1j, TypeError), (np.float32, "1", TypeError),
    (np.bool_, 1, TypeError), (np.complex64, None, TypeError),
])
def test_fill_refuses_a_value_that_does_not_fit(device, stream, dtype, value,
                                                error):
    view = device.zeros(4, dtype)
    with pytest.raises(error):
        stream.fill(view, value)
    np.testing.assert_array_equal(stream.read(view).wait(), np.zeros(4, dtype))


def test_graph_fill_of_a_typed_view(device, stream):
    view = device.zeros(4, np.int32)
    graph = hrx.Graph(device)
    graph.fill(view, -1)
    with pytest.raises(hrx.InvalidArgumentError, match="one repeated byte"):
        graph.fill(view, 5)
    with pytest.raises(TypeError, match="int32.*float32|float32.*int32"):
        graph.copy(view, device.empty(4, np.float32))
    graph.launch(stream)
    np.testing.assert_array_equal(stream.read(view).wait(), [-1] * 4)


# ------------------------------------------------------------ DLPack


def test_dlpack_exports_the_dtype_and_shape_without_a_copy(device, stream):
    if device.info["platform"] != "cpu":
        pytest.skip("numpy reads host memory only")
    grid = device.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    array = np.from_dlpack(grid)
    assert array.dtype == np.float32 and array.shape == (2, 3)
    np.testing.assert_array_equal(array, np.arange(6).reshape(2, 3))
    stream.fill(grid, 4.0)
    stream.synchronize()
    assert (array == 4.0).all()                    # the same memory
    assert np.from_dlpack(grid[1:]).shape == (1, 3)
    assert np.from_dlpack(device.zeros((), np.complex128)).shape == ()
    assert np.from_dlpack(device.zeros(3, np.bool_)).dtype == np.bool_
    assert np.from_dlpack(device.allocate(5)).dtype == np.uint8
    # The consumer keeps the memory after the buffer is closed.
    grid.close()
    gc.collect()
    assert (array == 4.0).all()


def test_dlpack_capsules_of_both_versions(device):
    if device.info["platform"] != "cpu":
        pytest.skip("numpy reads host memory only")

    class Legacy:
        def __init__(self, view):
            self.view = view

        def __dlpack__(self, stream=None):
            return self.view.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return self.view.__dlpack_device__()

    view = device.zeros((3, 2), np.int16)
    assert np.from_dlpack(Legacy(view)).shape == (3, 2)
    assert np.from_dlpack(view).dtype == np.int16


# ------------------------------------------------------------ closing


def test_closing_a_buffer_closes_the_views_taken_from_it(device, stream):
    buf = device.allocate(4096)
    typed = buf.view(np.float32)
    child = typed[10:20]
    grandchild = child[2:4]
    byte_view = buf.slice(0, 16)
    sibling_root = device.allocate(16)
    buf.close()
    for view in (typed, child, grandchild, byte_view):
        assert view.closed
        with pytest.raises(hrx.FailedPreconditionError, match="closed"):
            stream.read(view)
        with pytest.raises(hrx.FailedPreconditionError, match="closed"):
            view.__dlpack__()
    assert not sibling_root.closed


def test_closing_a_view_closes_its_views_only(device, stream):
    buf = device.allocate(64)
    left, right = buf[0:32], buf[32:64]
    inner = left[0:8]
    left.close()
    assert left.closed and inner.closed
    assert not buf.closed and not right.closed
    stream.fill(right, 2)
    assert (stream.read(buf).wait()[32:] == 2).all()


def test_closing_many_and_deeply_nested_views(device):
    buf = device.allocate(1 << 12)
    flat = [buf[i:i + 1] for i in range(100)]
    chain = [buf]
    for _ in range(100):
        chain.append(chain[-1][1:])
    buf.close()
    assert all(v.closed for v in flat) and all(v.closed for v in chain)


def test_a_collected_parent_leaves_its_views_open(device, stream):
    view = device.allocate(32).view(np.int32)[2:6]
    gc.collect()
    stream.fill(view, 9)
    assert stream.read(view).wait().tolist() == [9] * 4
    view.close()
