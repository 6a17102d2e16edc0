"""DLPack: hrx buffers seen by numpy without a copy (host backend), kept
alive by the consumer; host DLPack producers accepted by upload and
read_blocking. Bad arguments are in bad_input_cases.py."""
from __future__ import annotations

import ctypes
import gc

import numpy as np
import pytest

import hrx
from bad_input_cases import DLPackOnly

HOST = "host"

_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_is_valid.restype = ctypes.c_int


def capsule_name(capsule) -> str:
    for name in ("dltensor", "used_dltensor", "dltensor_versioned",
                 "used_dltensor_versioned"):
        if _capsule_is_valid(capsule, name.encode()):
            return name
    raise AssertionError(f"{capsule!r} has no DLPack capsule name")


class LegacyOnly:
    """A consumer-side view of an hrx buffer through the unversioned
    protocol only (a producer that predates max_version)."""

    def __init__(self, buffer):
        self.buffer = buffer

    def __dlpack__(self, stream=None):
        return self.buffer.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.buffer.__dlpack_device__()


def test_dlpack_device_is_cpu_on_host(host):
    assert host.allocate(16).__dlpack_device__() == (1, 0)
    assert host.info["platform"] == "cpu"


def test_numpy_sees_buffer_bytes_without_copy(host):
    stream = host.stream()
    buffer = host.allocate(4096)
    stream.upload(buffer, np.arange(4096, dtype=np.uint8))
    array = np.from_dlpack(buffer)
    assert array.dtype == np.uint8 and array.shape == (4096,)
    assert np.array_equal(array, np.arange(4096, dtype=np.uint8))
    # Same memory: hrx work shows through the array and numpy writes show
    # through hrx reads.
    stream.fill(buffer[100:200], 0xAB)
    stream.synchronize()
    assert (array[100:200] == 0xAB).all()
    array[0:4] = [9, 8, 7, 6]
    assert bytes(stream.read(buffer[0:4]).wait()) == bytes([9, 8, 7, 6])


def test_views_export_their_own_range(host):
    stream = host.stream()
    buffer = host.allocate(256)
    stream.upload(buffer, np.arange(256, dtype=np.uint8))
    view = buffer[10:50].slice(5, 20)
    array = np.from_dlpack(view)
    assert array.shape == (20,)
    assert list(array) == list(range(15, 35))
    assert np.from_dlpack(buffer[7:7]).shape == (0,)


def test_export_waits_for_submitted_work(host):
    """Unless stream=-1, __dlpack__ waits for the device's queued work, so
    the consumer never reads bytes still being written."""
    stream = host.stream()
    buffer = host.allocate(64 << 20)
    for value in range(1, 9):
        stream.fill(buffer, value)
    array = np.from_dlpack(buffer)
    assert array[-1] == 8 and array[0] == 8


def test_versioned_and_legacy_capsules(host):
    buffer = host.allocate(32)
    assert capsule_name(buffer.__dlpack__()) == "dltensor"
    assert capsule_name(buffer.__dlpack__(max_version=(0, 8))) == "dltensor"
    assert capsule_name(buffer.__dlpack__(max_version=(1, 0))) == (
        "dltensor_versioned")
    assert capsule_name(buffer.__dlpack__(max_version=(2, 3))) == (
        "dltensor_versioned")
    # numpy consumes both forms.
    host.stream().fill(buffer, 3)
    assert np.from_dlpack(LegacyOnly(buffer)).sum() == 3 * 32
    assert np.from_dlpack(buffer).sum() == 3 * 32


def test_accepted_stream_and_device_arguments(host):
    buffer = host.allocate(8)
    assert capsule_name(buffer.__dlpack__(stream=None)) == "dltensor"
    assert capsule_name(buffer.__dlpack__(dl_device=(1, 0), copy=False))
    assert capsule_name(buffer.__dlpack__(copy=None))


@pytest.mark.parametrize("value", [0, 1, 2, 0x7F0000001000])
def test_host_memory_takes_the_stream_values_of_hip(host, value):
    """Code written for a GPU passes its consumer stream; host memory takes
    every value the hip backend takes and orders by waiting on the host."""
    stream = host.stream()
    buffer = host.allocate(64 << 20)
    for fill in range(1, 5):
        stream.fill(buffer, fill)
    capsule = buffer.__dlpack__(stream=value)
    assert capsule_name(capsule) == "dltensor"
    assert stream.query()


def test_stream_minus_one_leaves_ordering_to_the_caller(host):
    stream = host.stream()
    buffer = host.allocate(64 << 20)
    for fill in range(1, 9):
        stream.fill(buffer, fill)
    buffer.__dlpack__(stream=-1)
    assert not stream.query()  # eight 64 MiB fills are still running
    stream.synchronize()


@pytest.mark.parametrize("value", [-2, -100])
def test_stream_below_minus_one_is_refused(host, value):
    buffer = host.allocate(8)
    with pytest.raises(hrx.InvalidArgumentError, match="a stream must be -1"):
        buffer.__dlpack__(stream=value)


def test_unconsumed_capsule_keeps_the_buffer_alive(fresh_host):
    """A capsule that nobody consumes holds the allocation (and therefore
    the live device) until it is dropped."""
    out = fresh_host("""
        d = hrx.Device.open(0, backend="host")
        d.set_stream_queue_count(3)
        capsule = d.allocate(64).__dlpack__()
        del d
        print(hrx.Device.open(0, backend="host").stream_queue_count)
        del capsule
        print(hrx.Device.open(0, backend="host").stream_queue_count)
    """)
    assert out.split() == ["3", str(hrx.DEFAULT_STREAM_QUEUE_COUNT)]


def test_consumer_keeps_memory_alive_after_handles_go(fresh_host):
    """The array outlives the Buffer, its views and the Device handle: the
    capsule's deleter, run when numpy frees the array, drops the last
    reference and only then is the live device torn down."""
    out = fresh_host("""
        import gc
        d = hrx.Device.open(0, backend="host")
        d.set_stream_queue_count(5)
        s = d.stream()
        b = d.allocate(1 << 16)
        s.fill(b, 0x5A)
        arr = np.from_dlpack(b[4096:8192])
        del s, b, d
        gc.collect()
        big = [bytearray(1 << 16) for _ in range(64)]   # reuse freed memory
        print(int(arr.sum()) == 0x5A * 4096, arr.shape[0])
        print(hrx.Device.open(0, backend="host").stream_queue_count)
        del arr
        gc.collect()
        print(hrx.Device.open(0, backend="host").stream_queue_count)
    """)
    assert out.split() == ["True", "4096", "5",
                           str(hrx.DEFAULT_STREAM_QUEUE_COUNT)]


def test_closing_the_buffer_handle_does_not_free_exported_memory(host):
    stream = host.stream()
    buffer = host.allocate(1024)
    stream.fill(buffer, 0x11)
    array = np.from_dlpack(buffer)
    buffer.close()
    del buffer
    gc.collect()
    assert (array == 0x11).all()


# ------------------------------------------------ DLPack producers as input

def test_upload_from_a_dlpack_only_producer(host):
    stream = host.stream()
    buffer = host.allocate(64)
    source = np.arange(16, dtype=np.int32)          # 64 bytes
    stream.upload(buffer, DLPackOnly(source))
    assert bytes(stream.read(buffer).wait()) == source.tobytes()


def test_read_blocking_into_a_dlpack_only_producer(host):
    stream = host.stream()
    buffer = host.allocate(32)
    stream.upload(buffer, bytes(range(32)))
    target = np.zeros(8, dtype=np.uint32)
    wrapper = DLPackOnly(target)
    assert stream.read_blocking(buffer, wrapper) is wrapper
    assert target.tobytes() == bytes(range(32))


def test_upload_between_hrx_buffers_through_dlpack(host):
    """On the host backend an hrx buffer is host memory, so it can be the
    data of an upload (a DLPack CPU tensor)."""
    stream = host.stream()
    source, target = host.allocate(128), host.allocate(128)
    stream.upload(source, bytes(range(128)))
    stream.upload(target, source)
    assert bytes(stream.read(target).wait()) == bytes(range(128))


def test_buffer_protocol_is_preferred_over_dlpack(host):
    """numpy arrays have both; read-only arrays keep their buffer-protocol
    error (the DLPack path is only for objects without a buffer)."""
    stream = host.stream()
    buffer = host.allocate(16)
    array = np.zeros(16, np.uint8)
    array.flags.writeable = False
    with pytest.raises(hrx.InvalidArgumentError, match="read-only"):
        stream.read_blocking(buffer, array)


@pytest.fixture
def fresh_host():
    from conftest import run_fresh

    def runner(code: str) -> str:
        return run_fresh(code, backend=HOST)
    return runner


# ------------------------------------- hand-made capsules: the import checks

class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _Versioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER),
                ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class HandMade:
    """A producer of one versioned capsule over `array` with the given
    fields overridden; counts deleter calls."""

    def __init__(self, array, *, major=1, bits=8, lanes=1, strides=None,
                 shape=None, flags=0):
        self.array = array
        self.deleted = 0
        self._shape = (ctypes.c_int64 * 1)(shape if shape is not None else array.size)
        self._strides = None if strides is None else (ctypes.c_int64 * 1)(strides)
        self._deleter = _DELETER(self._delete)
        self.managed = _Versioned(
            major, 0, None, self._deleter, flags,
            _DLTensor(array.ctypes.data, 1, 0, 1, 1, bits, lanes,
                      ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64)),
                      ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64))
                      if self._strides is not None else None, 0))

    def _delete(self, pointer):
        self.deleted += 1

    def __dlpack__(self, **kwargs):
        return _capsule_new(ctypes.addressof(self.managed), b"dltensor_versioned", None)

    def __dlpack_device__(self):
        return (1, 0)


def test_hand_made_capsule_is_read_in_place_and_returned(host):
    stream = host.stream()
    buffer = host.allocate(32)
    source = np.arange(32, dtype=np.uint8)
    producer = HandMade(source, strides=1)
    stream.upload(buffer, producer)
    assert bytes(stream.read(buffer).wait()) == source.tobytes()
    assert producer.deleted == 1            # the consumer called the deleter once


@pytest.mark.parametrize("fields, message, deleted", [
    ({"major": 2}, "DLPack version 2.0 is not supported", 0),
    ({"bits": 1}, "not a whole number of bytes", 1),
    ({"bits": 0}, "not a whole number of bytes", 1),
    ({"strides": 2, "shape": 16}, "C-contiguous", 1),
    ({"shape": -1}, "negative extent", 1),
    ({"flags": 1}, "read-only", 1),
])
def test_hand_made_capsule_errors(host, fields, message, deleted):
    """Each problem is refused with what was wrong; a capsule this call
    consumed is handed back through its deleter exactly once, one it left
    unconsumed (an unsupported version) is not touched."""
    stream = host.stream()
    buffer = host.allocate(32)
    producer = HandMade(np.zeros(32, np.uint8), **fields)
    error = BufferError if "version" in message else hrx.InvalidArgumentError
    with pytest.raises(error, match=message):
        stream.read_blocking(buffer, producer)
    assert producer.deleted == deleted


def test_wider_elements_count_bytes(host):
    stream = host.stream()
    buffer = host.allocate(64)
    stream.upload(buffer, bytes(range(64)))
    target = np.zeros(8, np.uint64)
    stream.read_blocking(buffer, HandMade(target, bits=32, lanes=2))
    assert target.tobytes() == bytes(range(64))
