"""The bad-input catalogue: every public call of hrx with each class of bad
argument, the exact exception it must raise, and what is checked to be
unchanged afterwards.

tests/test_bad_input.py runs every case; docs/bad-input.md is generated from
the same table:

    python3 tests/bad_input_cases.py --markdown > docs/bad-input.md

This module imports neither hrx nor numpy at import time, so the document can
be regenerated without a built extension. Each case's `call` receives a
`Context` (built by the test) whose buffers hold known bytes.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import re
import sys
from typing import Any, Callable

SIZE = 256          # bytes in the context's buffers a, b and foreign
FOREIGN = "second_device"
# The kernels' parameter types are recorded (the host backend; NVIDIA, for
# kernels hrx compiled): the case is skipped where they are not.
TYPED = "typed_params"
# ... and pointers are told from integers and unsigned from signed ones
# (the host backend; PTX records neither for every kernel).
TYPED_POINTERS = "typed_pointers"

HOST_ONLY = "host_backend"   # a refusal of the host backend's kernel compiler


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    function: str            # the public call, e.g. "Stream.copy"
    argument: str            # what is wrong with the arguments
    raises: str              # exception class required by the contract
    call: Callable[[Any], object]
    # FOREIGN: a second device of the backend; HOST_ONLY: runs on the host
    # backend only.
    needs: tuple[str, ...] = ()
    # Makes what the call needs (a launched graph, a completion) before the
    # snapshot, so its own submissions are not counted against the call;
    # the call finds the result in c.prepared.
    setup: Callable[[Any], object] | None = None

    def checked(self) -> str:
        parts = ["no command submitted", "bytes of a, b", "pool_info()"]
        if FOREIGN in self.needs:
            parts.append("second device's bytes and pool_info()")
        if self.function.endswith(("read_blocking", "read_into")):
            parts.append("the output buffer")
        return ", ".join(parts)


CASES: list[Case] = []


def case(id: str, function: str, argument: str, raises: str, call,
         **kwargs) -> None:
    CASES.append(Case(id, function, argument, raises, call, **kwargs))


class DLPackOnly:
    """Host memory offered only through DLPack (no buffer protocol), as a
    torch CPU tensor is: wraps a numpy array."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


class DLPackOnGPU:
    """A DLPack producer on a CUDA device (type 2): never host memory."""

    def __dlpack__(self, **kwargs):
        raise AssertionError("a device tensor must be refused before export")

    def __dlpack_device__(self):
        return (2, 0)


# Bugs shared by several cases (see the report in test_bad_input.py).

# ----------------------------------------------------------------- Device.open

case("open-index-str", "Device.open", 'index "0" (str)', "TypeError",
     lambda c: c.hrx.Device.open("0", backend=c.backend))
case("open-index-float", "Device.open", "index 0.0 (float)", "TypeError",
     lambda c: c.hrx.Device.open(0.0, backend=c.backend))
case("open-index-bool", "Device.open", "index True (bool)", "TypeError",
     lambda c: c.hrx.Device.open(True, backend=c.backend))
case("open-index-none", "Device.open", "index None", "TypeError",
     lambda c: c.hrx.Device.open(None, backend=c.backend))
case("open-index-negative", "Device.open", "index -1", "OutOfRangeError",
     lambda c: c.hrx.Device.open(-1, backend=c.backend))
case("open-index-beyond-count", "Device.open",
     "index 4096 (beyond the device count)", "OutOfRangeError",
     lambda c: c.hrx.Device.open(4096, backend=c.backend))
case("open-index-beyond-int32", "Device.open", "index 2**31",
     "OutOfRangeError",
     lambda c: c.hrx.Device.open(2**31, backend=c.backend))
case("open-index-beyond-int64", "Device.open", "index 2**64",
     "OutOfRangeError",
     lambda c: c.hrx.Device.open(2**64, backend=c.backend))
case("open-backend-int", "Device.open", "backend 1 (int)", "TypeError",
     lambda c: c.hrx.Device.open(0, backend=1))
case("open-backend-bytes", "Device.open", 'backend b"host" (bytes)',
     "TypeError", lambda c: c.hrx.Device.open(0, backend=c.backend.encode()))
case("open-backend-unknown", "Device.open", 'backend "nonsense"',
     "InvalidArgumentError",
     lambda c: c.hrx.Device.open(0, backend="nonsense"))
case("open-backend-case", "Device.open", "backend name in upper case",
     "InvalidArgumentError",
     lambda c: c.hrx.Device.open(0, backend=c.backend.upper()))
case("open-extra-argument", "Device.open", "three positional arguments",
     "TypeError", lambda c: c.hrx.Device.open(0, c.backend, 1))
case("open-unknown-keyword", "Device.open", "keyword idx=", "TypeError",
     lambda c: c.hrx.Device.open(idx=0))
case("device-ctor-index-negative", "Device()", "index -1", "OutOfRangeError",
     lambda c: c.hrx.Device(-1, backend=c.backend))
case("device-ctor-backend-unknown", "Device()", 'backend "nonsense"',
     "InvalidArgumentError", lambda c: c.hrx.Device(0, "nonsense"))
case("open-batching-str", "Device.open", 'batching "yes" (str)', "TypeError",
     lambda c: c.hrx.Device.open(0, backend=c.backend, batching="yes"))
case("open-batching-int", "Device.open", "batching 1 (int, not a bool)",
     "TypeError", lambda c: c.hrx.Device.open(0, backend=c.backend, batching=1))
case("open-batching-positional", "Device.open",
     "batching passed positionally (keyword only)", "TypeError",
     lambda c: c.hrx.Device.open(0, c.backend, True))
case("device-ctor-batching-float", "Device()", "batching 1.0 (float)",
     "TypeError", lambda c: c.hrx.Device(0, c.backend, batching=1.0))

# ----------------------------------------------------------------- Stream.open

case("stream-open-index-negative", "Stream.open", "index -1",
     "OutOfRangeError", lambda c: c.hrx.Stream.open(-1, backend=c.backend))
case("stream-open-index-str", "Stream.open", 'index "0" (str)', "TypeError",
     lambda c: c.hrx.Stream.open("0", backend=c.backend))
case("stream-open-backend-unknown", "Stream.open", 'backend "nonsense"',
     "InvalidArgumentError",
     lambda c: c.hrx.Stream.open(0, backend="nonsense"))
case("stream-open-index-float", "Stream.open", "index 0.0 (float)",
     "TypeError", lambda c: c.hrx.Stream.open(0.0, backend=c.backend))
case("stream-open-index-bool", "Stream.open", "index True (bool)",
     "TypeError", lambda c: c.hrx.Stream.open(True, backend=c.backend))
case("stream-open-index-none", "Stream.open", "index None", "TypeError",
     lambda c: c.hrx.Stream.open(None, backend=c.backend))
case("stream-open-index-beyond-count", "Stream.open",
     "index 4096 (beyond the device count)", "OutOfRangeError",
     lambda c: c.hrx.Stream.open(4096, backend=c.backend))
case("stream-open-index-beyond-int64", "Stream.open", "index 2**64",
     "OutOfRangeError",
     lambda c: c.hrx.Stream.open(2**64, backend=c.backend))
case("stream-open-backend-int", "Stream.open", "backend 1 (int)",
     "TypeError", lambda c: c.hrx.Stream.open(0, backend=1))
case("stream-open-batching-int", "Stream.open", "batching 2 (int)",
     "TypeError",
     lambda c: c.hrx.Stream.open(0, backend=c.backend, batching=2))

# ------------------------------------------------------------ fabric.Queue

case("queue-device-none", "fabric.Queue", "device None", "TypeError",
     lambda c: c.hrx.fabric.Queue(None))
case("queue-device-stream", "fabric.Queue", "a Stream instead of a Device",
     "TypeError", lambda c: c.hrx.fabric.Queue(c.stream))
case("queue-device-closed", "fabric.Queue", "closed Device handle",
     "FailedPreconditionError", lambda c: c.hrx.fabric.Queue(c.closed_device))
case("queue-no-argument", "fabric.Queue", "no argument", "TypeError",
     lambda c: c.hrx.fabric.Queue())
case("queue-extra-argument", "fabric.Queue", "two arguments", "TypeError",
     lambda c: c.hrx.fabric.Queue(c.device, 1))
case("queue-device-keyword-none", "fabric.Queue", "device=None (keyword)",
     "TypeError", lambda c: c.hrx.fabric.Queue(device=None))
case("queue-open-index-negative", "fabric.Queue.open", "index -1",
     "OutOfRangeError",
     lambda c: c.hrx.fabric.Queue.open(-1, backend=c.backend))
case("queue-open-backend-unknown", "fabric.Queue.open", 'backend "nonsense"',
     "InvalidArgumentError",
     lambda c: c.hrx.fabric.Queue.open(0, backend="nonsense"))

# ---------------------------------------------- Device.set_stream_queue_count

for _id, _value, _text, _raises in [
        ("zero", 0, "0", "InvalidArgumentError"),
        ("negative", -1, "-1", "InvalidArgumentError"),
        ("above-max", 65, "65 (MAX_STREAM_QUEUE_COUNT + 1)",
         "InvalidArgumentError"),
        ("huge", 2**64, "2**64", "InvalidArgumentError"),
        ("bool", True, "True (bool)", "TypeError"),
        ("float", 2.0, "2.0 (float)", "TypeError"),
        ("str", "2", '"2" (str)', "TypeError"),
        ("none", None, "None", "TypeError")]:
    case(f"set-count-{_id}", "Device.set_stream_queue_count", _text, _raises,
         lambda c, v=_value: c.device.set_stream_queue_count(v))
case("set-count-missing", "Device.set_stream_queue_count", "no argument",
     "TypeError", lambda c: c.device.set_stream_queue_count())
case("set-count-closed", "Device.set_stream_queue_count",
     "closed Device handle", "FailedPreconditionError",
     lambda c: c.closed_device.set_stream_queue_count(8))
case("set-count-two-arguments", "Device.set_stream_queue_count",
     "two arguments", "TypeError",
     lambda c: c.device.set_stream_queue_count(1, 2))
case("set-count-numpy-zero", "Device.set_stream_queue_count",
     "numpy.int64(0)", "InvalidArgumentError",
     lambda c: c.device.set_stream_queue_count(c.np.int64(0)))

# ------------------------------------------- Device.set_stream_queue_policy

for _id, _value, _text, _raises in [
        ("unknown", "fastest", '"fastest"', "InvalidArgumentError"),
        ("empty", "", '""', "InvalidArgumentError"),
        ("int", 1, "1 (int)", "TypeError"),
        ("none", None, "None", "TypeError")]:
    case(f"set-policy-{_id}", "Device.set_stream_queue_policy", _text,
         _raises, lambda c, v=_value: c.device.set_stream_queue_policy(v))
case("set-policy-closed", "Device.set_stream_queue_policy",
     "closed Device handle", "FailedPreconditionError",
     lambda c: c.closed_device.set_stream_queue_policy("round_robin"))

# ---------------------------------------------- Device.stream(priority, ...)

for _id, _kwargs, _text, _raises in [
        ("priority-unknown", {"priority": "urgent"}, 'priority "urgent"',
         "InvalidArgumentError"),
        ("priority-above", {"priority": 2}, "priority 2 (above high = 1)",
         "InvalidArgumentError"),
        ("priority-below", {"priority": -2}, "priority -2 (below low = -1)",
         "InvalidArgumentError"),
        ("priority-huge", {"priority": 2**70}, "priority 2**70",
         "InvalidArgumentError"),
        ("priority-bool", {"priority": True}, "priority True (bool)",
         "TypeError"),
        ("priority-float", {"priority": 1.0}, "priority 1.0 (float)",
         "TypeError"),
        ("reserve-int", {"reserve": 1}, "reserve 1 (int)", "TypeError"),
        ("reserve-none", {"reserve": None}, "reserve None", "TypeError"),
        ("positional", None, "priority given positionally", "TypeError")]:
    if _kwargs is None:
        case(f"device-stream-{_id}", "Device.stream", _text, _raises,
             lambda c: c.device.stream("high"))
    else:
        case(f"device-stream-{_id}", "Device.stream", _text, _raises,
             lambda c, k=_kwargs: c.device.stream(**k))

# ------------------------------------------------------ Device.set_batching

for _id, _value, _text in [("int", 1, "1 (int, not a bool)"),
                           ("zero", 0, "0 (int, not a bool)"),
                           ("none", None, "None"),
                           ("str", "on", '"on" (str)'),
                           ("numpy-bool", "numpy", "numpy.bool_(True)")]:
    case(f"set-batching-{_id}", "Device.set_batching", _text, "TypeError",
         lambda c, v=_value: c.device.set_batching(
             c.np.bool_(True) if v == "numpy" else v))
case("set-batching-missing", "Device.set_batching", "no argument",
     "TypeError", lambda c: c.device.set_batching())
case("set-batching-two-arguments", "Device.set_batching", "two arguments",
     "TypeError", lambda c: c.device.set_batching(True, False))
case("set-batching-closed", "Device.set_batching", "closed Device handle",
     "FailedPreconditionError", lambda c: c.closed_device.set_batching(True))

# ------------------------------------------------------------ allocate

for _owner in ("Device", "Stream"):
    _get = (lambda c: c.device) if _owner == "Device" else (lambda c: c.stream)
    _fn = f"{_owner}.allocate"
    _p = _owner.lower()
    case(f"{_p}-allocate-zero", _fn, "nbytes 0", "InvalidArgumentError",
         lambda c, g=_get: g(c).allocate(0))
    case(f"{_p}-allocate-negative", _fn, "nbytes -1", "InvalidArgumentError",
         lambda c, g=_get: g(c).allocate(-1))
    case(f"{_p}-allocate-beyond-uint64", _fn, "nbytes 2**64",
         "InvalidArgumentError", lambda c, g=_get: g(c).allocate(2**64))
    case(f"{_p}-allocate-huge", _fn, "nbytes 2**62 (more than any device)",
         "OutOfMemoryError", lambda c, g=_get: g(c).allocate(2**62))
    case(f"{_p}-allocate-max-uint64", _fn, "nbytes 2**64 - 1",
         "OutOfMemoryError", lambda c, g=_get: g(c).allocate(2**64 - 1))
    case(f"{_p}-allocate-float", _fn, "nbytes 16.0 (float)", "TypeError",
         lambda c, g=_get: g(c).allocate(16.0))
    case(f"{_p}-allocate-str", _fn, 'nbytes "16" (str)', "TypeError",
         lambda c, g=_get: g(c).allocate("16"))
    case(f"{_p}-allocate-bool", _fn, "nbytes True (bool)", "TypeError",
         lambda c, g=_get: g(c).allocate(True))
    case(f"{_p}-allocate-none", _fn, "nbytes None", "TypeError",
         lambda c, g=_get: g(c).allocate(None))
case("device-allocate-closed", "Device.allocate", "closed Device handle",
     "FailedPreconditionError", lambda c: c.closed_device.allocate(16))
case("stream-allocate-closed", "Stream.allocate", "closed Stream",
     "FailedPreconditionError", lambda c: c.closed_stream.allocate(16))
case("device-allocate-missing", "Device.allocate", "no argument",
     "TypeError", lambda c: c.device.allocate())
case("device-allocate-two-arguments", "Device.allocate", "two arguments",
     "TypeError", lambda c: c.device.allocate(16, 16))
case("device-allocate-numpy-negative", "Device.allocate",
     "numpy.int64(-1)", "InvalidArgumentError",
     lambda c: c.device.allocate(c.np.int64(-1)))
case("queue-allocate-closed", "fabric.Queue.allocate", "closed Queue",
     "FailedPreconditionError", lambda c: c.closed_queue.allocate(16))

# ------------------------------------------------------------ Buffer.slice

for _id, _args, _text, _raises in [
        ("offset-negative", (-1, 4), "offset -1", "OutOfRangeError"),
        ("length-negative", (0, -1), "length -1", "OutOfRangeError"),
        ("end-past-size", (SIZE - 1, 2), "offset + length = size + 1",
         "OutOfRangeError"),
        ("offset-past-size", (SIZE + 1, 0), "offset = size + 1",
         "OutOfRangeError"),
        ("length-past-size", (0, SIZE + 1), "length = size + 1",
         "OutOfRangeError"),
        ("sum-overflows-int64", (2**62, 2**62),
         "offset 2**62, length 2**62 (sum overflows int64)",
         "OutOfRangeError"),
        ("int64-max", (1, 2**63 - 1), "offset 1, length 2**63 - 1",
         "OutOfRangeError"),
        ("beyond-int64", (2**63, 2**63),
         "offset 2**63, length 2**63 (sum overflows uint64)",
         "OutOfRangeError"),
        ("length-beyond-uint64", (0, 2**64), "length 2**64",
         "OutOfRangeError"),
        ("offset-str", ("1", 2), 'offset "1" (str)', "TypeError"),
        ("offset-float", (1.0, 2), "offset 1.0 (float)", "TypeError"),
        ("length-bool", (0, True), "length True (bool)", "TypeError"),
        ("offset-none", (None, 2), "offset None", "TypeError")]:
    case(f"slice-{_id}", "Buffer.slice", _text, _raises,
         lambda c, a=_args: c.a.slice(*a))
case("slice-nested-past-parent-view", "Buffer.slice",
     "view [0:16] sliced at (8, 16): past the parent view, inside the "
     "allocation", "OutOfRangeError", lambda c: c.a[0:16].slice(8, 16))
case("slice-missing-length", "Buffer.slice", "no length", "TypeError",
     lambda c: c.a.slice(0))
case("slice-closed", "Buffer.slice", "closed Buffer",
     "FailedPreconditionError", lambda c: c.closed_buffer.slice(0, 1))

# ------------------------------------------------------------ Buffer[a:b]

for _id, _key, _text, _raises in [
        ("stop-past-size", slice(0, SIZE + 1), "[0:size+1]",
         "OutOfRangeError"),
        ("start-before-zero", slice(-SIZE - 1, None), "[-size-1:]",
         "OutOfRangeError"),
        ("start-after-stop", slice(10, 5), "[10:5]", "OutOfRangeError"),
        ("neg-start-after-stop", slice(-5, -10), "[-5:-10]",
         "OutOfRangeError"),
        ("beyond-int64", slice(2**63, None), "[2**63:]", "OutOfRangeError"),
        ("step-2", slice(None, None, 2), "[::2]", "InvalidArgumentError"),
        ("step-negative", slice(None, None, -1), "[::-1]",
         "InvalidArgumentError"),
        ("step-zero", slice(0, 4, 0), "[0:4:0]", "InvalidArgumentError"),
        ("int-index", 0, "[0] (an integer, not a slice)", "TypeError"),
        ("str-key", "x", '["x"]', "TypeError"),
        ("float-bound", slice(0, 1.5), "[0:1.5]", "TypeError"),
        ("bool-bound", slice(True, 2), "[True:2]", "TypeError"),
        ("tuple-key", (slice(0, 2), 1), "[0:2, 1]", "TypeError")]:
    case(f"getitem-{_id}", "Buffer[a:b]", _text, _raises,
         lambda c, k=_key: c.a[k])
case("getitem-nested-past-parent-view", "Buffer[a:b]",
     "view [0:16] indexed [0:17]", "OutOfRangeError",
     lambda c: c.a[0:16][0:17])
case("getitem-closed", "Buffer[a:b]", "closed Buffer",
     "FailedPreconditionError", lambda c: c.closed_buffer[0:1])

# ------------------------------------------------------- Buffer.__dlpack__

case("dlpack-positional", "Buffer.__dlpack__", "stream passed positionally",
     "TypeError", lambda c: c.a.__dlpack__(None))
case("dlpack-stream-str", "Buffer.__dlpack__", 'stream "0" (str)',
     "TypeError", lambda c: c.a.__dlpack__(stream="0"))
case("dlpack-stream-below-minus-one", "Buffer.__dlpack__", "stream -2",
     "InvalidArgumentError", lambda c: c.a.__dlpack__(stream=-2))
case("dlpack-max-version-int", "Buffer.__dlpack__", "max_version 1 (int)",
     "TypeError", lambda c: c.a.__dlpack__(max_version=1))
case("dlpack-max-version-triple", "Buffer.__dlpack__",
     "max_version (1, 0, 0)", "TypeError",
     lambda c: c.a.__dlpack__(max_version=(1, 0, 0)))
case("dlpack-other-device", "Buffer.__dlpack__", "dl_device (99, 0)",
     "BufferError", lambda c: c.a.__dlpack__(dl_device=(99, 0)))
case("dlpack-copy-true", "Buffer.__dlpack__", "copy=True (hrx never copies)",
     "BufferError", lambda c: c.a.__dlpack__(copy=True))
case("dlpack-copy-int", "Buffer.__dlpack__", "copy=1 (int)", "TypeError",
     lambda c: c.a.__dlpack__(copy=1))
case("dlpack-closed", "Buffer.__dlpack__", "closed Buffer",
     "FailedPreconditionError", lambda c: c.closed_buffer.__dlpack__())
case("dlpack-device-closed", "Buffer.__dlpack_device__", "closed Buffer",
     "FailedPreconditionError", lambda c: c.closed_buffer.__dlpack_device__())

# ------------------------------------------------------------ Stream.fill

for _id, _byte, _text, _raises in [
        ("byte-256", 256, "byte 256", "InvalidArgumentError"),
        ("byte-negative", -1, "byte -1", "InvalidArgumentError"),
        ("byte-huge", 2**64, "byte 2**64", "InvalidArgumentError"),
        ("byte-bool", True, "byte True (bool)", "TypeError"),
        ("byte-float", 1.0, "byte 1.0 (float)", "TypeError"),
        ("byte-str", "1", 'byte "1" (str)', "TypeError"),
        ("byte-bytes", b"\x01", 'byte b"\\x01" (bytes)', "TypeError"),
        ("byte-none", None, "byte None", "TypeError")]:
    case(f"fill-{_id}", "Stream.fill", _text, _raises,
         lambda c, v=_byte: c.stream.fill(c.a, v))
case("fill-dst-empty", "Stream.fill", "empty view a[5:5]",
     "InvalidArgumentError", lambda c: c.stream.fill(c.a[5:5], 1))
case("fill-dst-bytearray", "Stream.fill", "dst bytearray (not a Buffer)",
     "TypeError", lambda c: c.stream.fill(bytearray(4), 1))
case("fill-dst-none", "Stream.fill", "dst None", "TypeError",
     lambda c: c.stream.fill(None, 1))
case("fill-dst-foreign", "Stream.fill", "dst on another device",
     "InvalidArgumentError", lambda c: c.stream.fill(c.foreign, 1),
     needs=(FOREIGN,))
case("fill-dst-closed", "Stream.fill", "closed dst", "FailedPreconditionError",
     lambda c: c.stream.fill(c.closed_buffer, 1))
case("fill-stream-closed", "Stream.fill", "closed Stream",
     "FailedPreconditionError", lambda c: c.closed_stream.fill(c.a, 1))
case("fill-one-argument", "Stream.fill", "one argument", "TypeError",
     lambda c: c.stream.fill(c.a))
case("fill-three-arguments", "Stream.fill", "three arguments", "TypeError",
     lambda c: c.stream.fill(c.a, 1, 2))
case("fill-keyword", "Stream.fill", "keyword byte=", "TypeError",
     lambda c: c.stream.fill(c.a, byte=1))
case("fill-byte-numpy-256", "Stream.fill", "byte numpy.int64(256)",
     "InvalidArgumentError", lambda c: c.stream.fill(c.a, c.np.int64(256)))
case("fill-view-of-closed-buffer", "Stream.fill",
     "dst a closed view of an open buffer", "FailedPreconditionError",
     lambda c: c.stream.fill(c.closed_view, 1))
case("queue-fill-foreign", "fabric.Queue.fill", "dst on another device",
     "InvalidArgumentError", lambda c: c.queue.fill(c.foreign, 1),
     needs=(FOREIGN,))
case("queue-fill-closed", "fabric.Queue.fill", "closed Queue",
     "FailedPreconditionError", lambda c: c.closed_queue.fill(c.a, 1))
case("queue-fill-byte-negative", "fabric.Queue.fill", "byte -1",
     "InvalidArgumentError", lambda c: c.queue.fill(c.a, -1))

# ------------------------------------------------------------ Stream.copy

case("copy-unequal-lengths", "Stream.copy", "dst 16 bytes, src 15 bytes",
     "InvalidArgumentError", lambda c: c.stream.copy(c.a[0:16], c.b[0:15]))
case("copy-overlap", "Stream.copy", "a[0:100] <- a[50:150]",
     "InvalidArgumentError", lambda c: c.stream.copy(c.a[0:100], c.a[50:150]))
case("copy-overlap-one-byte", "Stream.copy", "a[0:10] <- a[9:19]",
     "InvalidArgumentError", lambda c: c.stream.copy(c.a[0:10], c.a[9:19]))
case("copy-overlap-reverse", "Stream.copy", "a[9:19] <- a[0:10]",
     "InvalidArgumentError", lambda c: c.stream.copy(c.a[9:19], c.a[0:10]))
case("copy-same-view", "Stream.copy", "a <- a", "InvalidArgumentError",
     lambda c: c.stream.copy(c.a, c.a))
case("copy-overlap-other-view-path", "Stream.copy",
     "a[0:64] <- a.slice(32, 64) (different view objects, same allocation)",
     "InvalidArgumentError",
     lambda c: c.stream.copy(c.a[0:64], c.a.slice(32, 64)))
case("copy-both-empty", "Stream.copy", "a[0:0] <- b[0:0]",
     "InvalidArgumentError", lambda c: c.stream.copy(c.a[0:0], c.b[0:0]))
case("copy-dst-empty", "Stream.copy", "a[3:3] <- b[0:4]",
     "InvalidArgumentError", lambda c: c.stream.copy(c.a[3:3], c.b[0:4]))
case("copy-src-foreign", "Stream.copy", "src on another device",
     "InvalidArgumentError", lambda c: c.stream.copy(c.a, c.foreign),
     needs=(FOREIGN,))
case("copy-dst-foreign", "Stream.copy", "dst on another device",
     "InvalidArgumentError", lambda c: c.stream.copy(c.foreign, c.a),
     needs=(FOREIGN,))
case("copy-src-closed", "Stream.copy", "closed src",
     "FailedPreconditionError",
     lambda c: c.stream.copy(c.a, c.closed_buffer))
case("copy-dst-closed", "Stream.copy", "closed dst",
     "FailedPreconditionError",
     lambda c: c.stream.copy(c.closed_buffer, c.a))
case("copy-src-bytes", "Stream.copy", "src bytes (not a Buffer)",
     "TypeError", lambda c: c.stream.copy(c.a, bytes(SIZE)))
case("copy-dst-numpy", "Stream.copy", "dst numpy array (not a Buffer)",
     "TypeError", lambda c: c.stream.copy(c.np.zeros(SIZE, c.np.uint8), c.a))
case("copy-one-argument", "Stream.copy", "one argument", "TypeError",
     lambda c: c.stream.copy(c.a))
case("copy-stream-closed", "Stream.copy", "closed Stream",
     "FailedPreconditionError", lambda c: c.closed_stream.copy(c.a, c.b))
case("copy-both-foreign", "Stream.copy",
     "dst and src both on another device", "InvalidArgumentError",
     lambda c: c.stream.copy(c.foreign[0:16], c.foreign[16:32]),
     needs=(FOREIGN,))
case("copy-dst-none", "Stream.copy", "dst None", "TypeError",
     lambda c: c.stream.copy(None, c.a))
case("copy-peer-both-foreign", "Stream.copy_peer",
     "dst and src both on another device than the stream's",
     "InvalidArgumentError",
     lambda c: c.stream.copy_peer(c.foreign[0:16], c.foreign[16:32]),
     needs=(FOREIGN,))
case("copy-peer-lengths", "Stream.copy_peer", "foreign[0:16] <- a[0:8]",
     "InvalidArgumentError",
     lambda c: c.stream.copy_peer(c.foreign[0:16], c.a[0:8]),
     needs=(FOREIGN,))
case("copy-peer-empty", "Stream.copy_peer", "foreign[0:0] <- a[0:0]",
     "InvalidArgumentError",
     lambda c: c.stream.copy_peer(c.foreign[0:0], c.a[0:0]),
     needs=(FOREIGN,))
case("copy-peer-src-closed", "Stream.copy_peer", "closed src",
     "FailedPreconditionError",
     lambda c: c.stream.copy_peer(c.foreign, c.closed_buffer),
     needs=(FOREIGN,))
case("copy-peer-dst-none", "Stream.copy_peer", "dst None", "TypeError",
     lambda c: c.stream.copy_peer(None, c.a))
case("copy-peer-one-argument", "Stream.copy_peer", "one argument",
     "TypeError", lambda c: c.stream.copy_peer(c.a))
case("copy-peer-stream-closed", "Stream.copy_peer", "closed Stream",
     "FailedPreconditionError",
     lambda c: c.closed_stream.copy_peer(c.foreign, c.a), needs=(FOREIGN,))
case("copy-src-none", "Stream.copy", "src None", "TypeError",
     lambda c: c.stream.copy(c.a, None))
case("copy-three-arguments", "Stream.copy", "three arguments", "TypeError",
     lambda c: c.stream.copy(c.a, c.b, 1))
case("copy-dst-past-end-of-view", "Stream.copy",
     "dst a[SIZE-8:SIZE] <- b[0:16] (src longer than what is left)",
     "InvalidArgumentError",
     lambda c: c.stream.copy(c.a[SIZE - 8:SIZE], c.b[0:16]))
case("queue-copy-foreign", "fabric.Queue.copy", "src on another device",
     "InvalidArgumentError", lambda c: c.queue.copy(c.a, c.foreign),
     needs=(FOREIGN,))
case("queue-copy-overlap", "fabric.Queue.copy", "a[0:100] <- a[50:150]",
     "InvalidArgumentError", lambda c: c.queue.copy(c.a[0:100], c.a[50:150]))
case("queue-copy-closed", "fabric.Queue.copy", "closed Queue",
     "FailedPreconditionError", lambda c: c.closed_queue.copy(c.a, c.b))

# ------------------------------------------------------------ Stream.upload

case("upload-short", "Stream.upload", "SIZE - 1 bytes into SIZE",
     "InvalidArgumentError", lambda c: c.stream.upload(c.a, bytes(SIZE - 1)))
case("upload-long", "Stream.upload", "SIZE + 1 bytes into SIZE",
     "InvalidArgumentError", lambda c: c.stream.upload(c.a, bytes(SIZE + 1)))
case("upload-view-length", "Stream.upload", "16 bytes into a 15-byte view",
     "InvalidArgumentError", lambda c: c.stream.upload(c.a[1:16], bytes(16)))
case("upload-numpy-wider-dtype", "Stream.upload",
     "SIZE int32 elements (4 * SIZE bytes) into SIZE bytes",
     "InvalidArgumentError",
     lambda c: c.stream.upload(c.a, c.np.zeros(SIZE, c.np.int32)))
case("upload-noncontiguous-numpy", "Stream.upload",
     "numpy arr[::2] (strided)", "InvalidArgumentError",
     lambda c: c.stream.upload(c.a, c.np.zeros(2 * SIZE, c.np.uint8)[::2]))
case("upload-fortran-numpy", "Stream.upload", "Fortran-ordered 2-D array",
     "InvalidArgumentError",
     lambda c: c.stream.upload(c.a, c.np.zeros((16, SIZE // 16), c.np.uint8,
                                               order="F")))
case("upload-noncontiguous-memoryview", "Stream.upload",
     "memoryview(bytes)[::2]", "InvalidArgumentError",
     lambda c: c.stream.upload(c.a, memoryview(bytes(2 * SIZE))[::2]))
case("upload-empty", "Stream.upload", "empty view and empty data",
     "InvalidArgumentError", lambda c: c.stream.upload(c.a[0:0], b""))
case("upload-dlpack-gpu-tensor", "Stream.upload",
     "a DLPack producer on a CUDA device", "InvalidArgumentError",
     lambda c: c.stream.upload(c.a, DLPackOnGPU()))
case("upload-dlpack-strided", "Stream.upload",
     "a DLPack-only producer of numpy arr[::2]", "InvalidArgumentError",
     lambda c: c.stream.upload(
         c.a, DLPackOnly(c.np.zeros(2 * SIZE, c.np.uint8)[::2])))
case("upload-dlpack-short", "Stream.upload",
     "a DLPack-only producer of SIZE - 1 bytes", "InvalidArgumentError",
     lambda c: c.stream.upload(c.a, DLPackOnly(c.np.zeros(SIZE - 1,
                                                          c.np.uint8))))
case("upload-list", "Stream.upload", "data list of ints", "TypeError",
     lambda c: c.stream.upload(c.a, [0] * SIZE))
case("upload-str", "Stream.upload", "data str", "TypeError",
     lambda c: c.stream.upload(c.a, "x" * SIZE))
case("upload-int", "Stream.upload", "data int", "TypeError",
     lambda c: c.stream.upload(c.a, SIZE))
case("upload-none", "Stream.upload", "data None", "TypeError",
     lambda c: c.stream.upload(c.a, None))
case("upload-dst-foreign", "Stream.upload", "dst on another device",
     "InvalidArgumentError", lambda c: c.stream.upload(c.foreign, bytes(SIZE)),
     needs=(FOREIGN,))
case("upload-dst-closed", "Stream.upload", "closed dst",
     "FailedPreconditionError",
     lambda c: c.stream.upload(c.closed_buffer, bytes(SIZE)))
case("upload-dst-bytearray", "Stream.upload", "dst bytearray (not a Buffer)",
     "TypeError", lambda c: c.stream.upload(bytearray(SIZE), bytes(SIZE)))
case("upload-stream-closed", "Stream.upload", "closed Stream",
     "FailedPreconditionError",
     lambda c: c.closed_stream.upload(c.a, bytes(SIZE)))
case("upload-object-array", "Stream.upload",
     "numpy dtype=object array of SIZE bytes (object pointers)",
     "InvalidArgumentError",
     lambda c: c.stream.upload(c.a, c.np.array([None] * (SIZE // 8),
                                               dtype=object)))
case("upload-structured-object-field", "Stream.upload",
     "structured numpy array with an object field", "InvalidArgumentError",
     lambda c: c.stream.upload(
         c.a[0:16], c.np.zeros(1, dtype=[("x", "O"), ("y", "<i8")])))
case("upload-float64-short", "Stream.upload",
     "float64 array of SIZE // 8 - 1 elements (8 bytes short)",
     "InvalidArgumentError",
     lambda c: c.stream.upload(c.a, c.np.zeros(SIZE // 8 - 1, c.np.float64)))
case("upload-dst-none", "Stream.upload", "dst None", "TypeError",
     lambda c: c.stream.upload(None, bytes(SIZE)))
case("upload-one-argument", "Stream.upload", "one argument", "TypeError",
     lambda c: c.stream.upload(c.a))
case("queue-upload-foreign", "fabric.Queue.upload", "dst on another device",
     "InvalidArgumentError", lambda c: c.queue.upload(c.foreign, bytes(SIZE)),
     needs=(FOREIGN,))
case("queue-upload-short", "fabric.Queue.upload", "SIZE - 1 bytes into SIZE",
     "InvalidArgumentError", lambda c: c.queue.upload(c.a, bytes(SIZE - 1)))

# ------------------------------------------------------------ Stream.read

case("read-empty", "Stream.read", "empty view a[7:7]", "InvalidArgumentError",
     lambda c: c.stream.read(c.a[7:7]))
case("read-foreign", "Stream.read", "src on another device",
     "InvalidArgumentError", lambda c: c.stream.read(c.foreign),
     needs=(FOREIGN,))
case("read-closed", "Stream.read", "closed src", "FailedPreconditionError",
     lambda c: c.stream.read(c.closed_buffer))
case("read-bytearray", "Stream.read", "src bytearray (not a Buffer)",
     "TypeError", lambda c: c.stream.read(bytearray(4)))
case("read-none", "Stream.read", "src None", "TypeError",
     lambda c: c.stream.read(None))
case("read-stream-closed", "Stream.read", "closed Stream",
     "FailedPreconditionError", lambda c: c.closed_stream.read(c.a))
case("read-no-argument", "Stream.read", "no argument", "TypeError",
     lambda c: c.stream.read())
case("read-two-arguments", "Stream.read", "two arguments", "TypeError",
     lambda c: c.stream.read(c.a, c.b))
case("read-closed-view", "Stream.read", "a closed view of an open buffer",
     "FailedPreconditionError", lambda c: c.stream.read(c.closed_view))
case("queue-read-foreign", "fabric.Queue.read", "src on another device",
     "InvalidArgumentError", lambda c: c.queue.read(c.foreign),
     needs=(FOREIGN,))
case("queue-read-closed", "fabric.Queue.read", "closed Queue",
     "FailedPreconditionError", lambda c: c.closed_queue.read(c.a))

# -------------------------------------------------------- Stream.read_into

case("read-into-short", "Stream.read_into", "out shorter than src",
     "InvalidArgumentError",
     lambda c: c.stream.read_into(c.a, c.out(bytearray(SIZE - 1))))
case("read-into-long", "Stream.read_into", "out longer than src",
     "InvalidArgumentError",
     lambda c: c.stream.read_into(c.a, c.out(bytearray(SIZE + 1))))
case("read-into-bytes", "Stream.read_into", "out bytes (read-only)",
     "InvalidArgumentError",
     lambda c: c.stream.read_into(c.a, c.out(bytes(SIZE))))
case("read-into-noncontiguous-numpy", "Stream.read_into",
     "out numpy arr[::2] (strided)", "InvalidArgumentError",
     lambda c: c.stream.read_into(
         c.a, c.out(c.np.full(2 * SIZE, 0xEE, c.np.uint8))[::2]))
case("read-into-int", "Stream.read_into", "out an int (no buffer)",
     "InvalidArgumentError", lambda c: c.stream.read_into(c.a, 5))
case("read-into-closed", "Stream.read_into", "closed Stream",
     "FailedPreconditionError",
     lambda c: c.closed_stream.read_into(c.a, c.out(bytearray(SIZE))))
case("read-into-foreign", "Stream.read_into", "src on another device",
     "InvalidArgumentError",
     lambda c: c.stream.read_into(c.foreign, c.out(bytearray(SIZE))),
     needs=(FOREIGN,))

# ---------------------------------------------------- Stream.read_blocking

case("read-blocking-bytes", "Stream.read_blocking", "out bytes (read-only)",
     "InvalidArgumentError",
     lambda c: c.stream.read_blocking(c.a, c.out(bytes(SIZE))))
case("read-blocking-readonly-memoryview", "Stream.read_blocking",
     "out read-only memoryview", "InvalidArgumentError",
     lambda c: c.stream.read_blocking(
         c.a, memoryview(c.out(bytearray(SIZE))).toreadonly()))
case("read-blocking-readonly-numpy", "Stream.read_blocking",
     "out numpy array with writeable=False", "InvalidArgumentError",
     lambda c: c.stream.read_blocking(c.a, c.out(c.readonly_array(SIZE))))
case("read-blocking-noncontiguous-numpy", "Stream.read_blocking",
     "out numpy arr[::2] (strided)", "InvalidArgumentError",
     lambda c: c.stream.read_blocking(
         c.a, c.out(c.np.full(2 * SIZE, 0xEE, c.np.uint8))[::2]))
case("read-blocking-noncontiguous-memoryview", "Stream.read_blocking",
     "out memoryview(bytearray)[::2]", "InvalidArgumentError",
     lambda c: c.stream.read_blocking(
         c.a, memoryview(c.out(bytearray(b"\xee" * 2 * SIZE)))[::2]))
case("read-blocking-too-small", "Stream.read_blocking",
     "out of SIZE - 1 bytes", "InvalidArgumentError",
     lambda c: c.stream.read_blocking(c.a,
                                      c.out(bytearray(b"\xee" * (SIZE - 1)))))
case("read-blocking-too-small-numpy", "Stream.read_blocking",
     "out numpy int32 array of SIZE // 4 - 1 elements", "InvalidArgumentError",
     lambda c: c.stream.read_blocking(
         c.a, c.out(c.np.full(SIZE // 4 - 1, -1, c.np.int32))))
case("read-blocking-dlpack-readonly", "Stream.read_blocking",
     "out a DLPack-only read-only numpy array", "InvalidArgumentError",
     lambda c: c.stream.read_blocking(
         c.a, DLPackOnly(c.out(c.readonly_array(SIZE)))))
case("read-blocking-dlpack-gpu-tensor", "Stream.read_blocking",
     "out a DLPack producer on a CUDA device", "InvalidArgumentError",
     lambda c: c.stream.read_blocking(c.a, DLPackOnGPU()))
case("read-blocking-list", "Stream.read_blocking", "out list", "TypeError",
     lambda c: c.stream.read_blocking(c.a, [0] * SIZE))
case("read-blocking-none", "Stream.read_blocking", "out None", "TypeError",
     lambda c: c.stream.read_blocking(c.a, None))
case("read-blocking-src-empty", "Stream.read_blocking", "src a[0:0]",
     "InvalidArgumentError",
     lambda c: c.stream.read_blocking(c.a[0:0], c.out(bytearray(b"\xee" * 8))))
case("read-blocking-src-foreign", "Stream.read_blocking",
     "src on another device", "InvalidArgumentError",
     lambda c: c.stream.read_blocking(c.foreign,
                                      c.out(bytearray(b"\xee" * SIZE))),
     needs=(FOREIGN,))
case("read-blocking-src-closed", "Stream.read_blocking", "closed src",
     "FailedPreconditionError",
     lambda c: c.stream.read_blocking(c.closed_buffer,
                                      c.out(bytearray(b"\xee" * SIZE))))
case("read-blocking-stream-closed", "Stream.read_blocking", "closed Stream",
     "FailedPreconditionError",
     lambda c: c.closed_stream.read_blocking(c.a,
                                             c.out(bytearray(b"\xee" * SIZE))))
case("read-blocking-one-argument", "Stream.read_blocking", "no out",
     "TypeError", lambda c: c.stream.read_blocking(c.a))
case("read-blocking-object-array", "Stream.read_blocking",
     "out numpy dtype=object array (object pointers)", "InvalidArgumentError",
     lambda c: c.stream.read_blocking(
         c.a, c.out(c.np.array([None] * SIZE, dtype=object))))
case("read-blocking-structured-object-field", "Stream.read_blocking",
     "out structured numpy array with an object field",
     "InvalidArgumentError",
     lambda c: c.stream.read_blocking(
         c.a[0:16], c.out(c.np.zeros(1, dtype=[("x", "O"), ("y", "<i8")]))))
case("read-blocking-too-small-float64", "Stream.read_blocking",
     "out float64 array of SIZE // 8 - 1 elements", "InvalidArgumentError",
     lambda c: c.stream.read_blocking(
         c.a, c.out(c.np.full(SIZE // 8 - 1, 1.5, c.np.float64))))
case("read-blocking-readonly-bytes-view", "Stream.read_blocking",
     "out memoryview of bytes (read-only)", "InvalidArgumentError",
     lambda c: c.stream.read_blocking(c.a, memoryview(bytes(SIZE))))
case("read-blocking-src-none", "Stream.read_blocking", "src None",
     "TypeError",
     lambda c: c.stream.read_blocking(None, c.out(bytearray(b"\xee" * SIZE))))
case("read-blocking-src-bytearray", "Stream.read_blocking",
     "src bytearray (not a Buffer)", "TypeError",
     lambda c: c.stream.read_blocking(bytearray(SIZE),
                                      c.out(bytearray(b"\xee" * SIZE))))
case("read-blocking-three-arguments", "Stream.read_blocking",
     "three arguments", "TypeError",
     lambda c: c.stream.read_blocking(c.a, c.out(bytearray(SIZE)), 1))
case("queue-read-blocking-foreign", "fabric.Queue.read_blocking",
     "src on another device", "InvalidArgumentError",
     lambda c: c.queue.read_blocking(c.foreign,
                                     c.out(bytearray(b"\xee" * SIZE))),
     needs=(FOREIGN,))
case("queue-read-blocking-readonly", "fabric.Queue.read_blocking",
     "out bytes (read-only)", "InvalidArgumentError",
     lambda c: c.queue.read_blocking(c.a, c.out(bytes(SIZE))))

# ------------------------------------------------------------ typed views

def _view_of_closed_parent(c):
    parent = c.device.allocate(16)
    view = parent.view(c.np.int32)
    parent.close()
    return view


for _id, _call, _text, _raises in [
        ("not-whole-elements", lambda c: c.a[0:10].view(c.np.float32),
         "a 10-byte view as float32", "InvalidArgumentError"),
        ("misaligned", lambda c: c.a[2:10].view(c.np.float32),
         "a view at byte 2 as float32", "InvalidArgumentError"),
        ("shape-mismatch", lambda c: c.a.view(c.np.float32, (3,)),
         "shape (3,) of float32 for SIZE bytes", "InvalidArgumentError"),
        ("shape-two-inferred", lambda c: c.a.view(c.np.float32, (-1, -1)),
         "shape (-1, -1)", "InvalidArgumentError"),
        ("shape-negative", lambda c: c.a.view(c.np.float32, (-2, 32)),
         "shape (-2, 32)", "InvalidArgumentError"),
        ("shape-not-inferable", lambda c: c.a.view(c.np.float32, (5, -1)),
         "shape (5, -1) of float32 for SIZE bytes", "InvalidArgumentError"),
        ("shape-str", lambda c: c.a.view(c.np.float32, "64"), 'shape "64"',
         "TypeError"),
        ("shape-float", lambda c: c.a.view(c.np.float32, (64.0,)),
         "shape (64.0,)", "TypeError"),
        ("dtype-big-endian", lambda c: c.a.view(">f4"),
         'dtype ">f4" (not native byte order)', "TypeError"),
        ("dtype-str", lambda c: c.a.view("U1"), 'dtype "U1" (strings)',
         "TypeError"),
        ("dtype-object", lambda c: c.a.view(object), "dtype object",
         "TypeError"),
        ("dtype-structured", lambda c: c.a.view([("x", "<f4")]),
         "a structured dtype", "TypeError"),
        ("dtype-unknown", lambda c: c.a.view("nonsense"), 'dtype "nonsense"',
         "TypeError"),
        ("untyped-with-shape", lambda c: c.a.view(None, (SIZE,)),
         "dtype None with a shape", "TypeError"),
        ("no-dtype", lambda c: c.a.view(), "no dtype", "TypeError"),
        ("closed", lambda c: c.closed_buffer.view(c.np.uint8),
         "closed Buffer", "FailedPreconditionError")]:
    case(f"view-{_id}", "Buffer.view", _text, _raises, _call)
case("getitem-typed-step-2", "Buffer[a:b]", "typed view [::2]",
     "InvalidArgumentError", lambda c: c.a.view(c.np.int32)[::2])
case("getitem-typed-past-end", "Buffer[a:b]",
     "int32 view of SIZE // 4 elements indexed [0:SIZE // 4 + 1]",
     "OutOfRangeError", lambda c: c.a.view(c.np.int32)[0:SIZE // 4 + 1])
case("getitem-typed-0d", "Buffer[a:b]", "a 0-d view [0:1]", "TypeError",
     lambda c: c.a[0:4].view(c.np.int32, ())[0:1])
case("slice-typed", "Buffer.slice", "a typed view (slice counts bytes)",
     "TypeError", lambda c: c.a.view(c.np.int32).slice(0, 4))
case("len-typed-0d", "len(Buffer)", "a 0-d view", "TypeError",
     lambda c: len(c.a[0:4].view(c.np.int32, ())))
case("view-of-closed-parent-read", "Stream.read",
     "a view whose parent buffer was closed", "FailedPreconditionError",
     lambda c: c.stream.read(_view_of_closed_parent(c)))

for _id, _call, _text, _raises in [
        ("shape-empty", lambda c: c.device.empty((4, 0), c.np.float32),
         "shape (4, 0) (no elements)", "InvalidArgumentError"),
        ("shape-negative", lambda c: c.device.empty(-1, c.np.float32),
         "shape -1", "InvalidArgumentError"),
        ("shape-none", lambda c: c.device.empty(None, c.np.float32),
         "shape None", "TypeError"),
        ("dtype-str", lambda c: c.device.empty(4, "U3"), 'dtype "U3"',
         "TypeError"),
        ("no-dtype", lambda c: c.device.empty(4), "no dtype", "TypeError"),
        ("dtype-none", lambda c: c.device.empty(4, None),
         "dtype None (numpy would read float64)", "TypeError"),
        ("huge", lambda c: c.device.empty(2**60, c.np.float64),
         "2**60 float64 elements (more than any device)",
         "OutOfMemoryError"),
        ("overflow", lambda c: c.device.empty((2**40, 2**40), c.np.float64),
         "shape (2**40, 2**40) (bytes overflow)", "InvalidArgumentError"),
        ("closed", lambda c: c.closed_device.empty(4, c.np.float32),
         "closed Device", "FailedPreconditionError")]:
    case(f"empty-{_id}", "Device.empty", _text, _raises, _call)
case("zeros-stream-device", "Device.zeros", "stream a Device", "TypeError",
     lambda c: c.device.zeros(4, c.np.float32, stream=c.device))
case("zeros-stream-closed", "Device.zeros", "closed stream",
     "FailedPreconditionError",
     lambda c: c.device.zeros(4, c.np.float32, stream=c.closed_stream))
case("zeros-stream-foreign", "Device.zeros", "stream of another device",
     "InvalidArgumentError",
     lambda c: c.device.zeros(4, c.np.float32, stream=c.foreign_stream),
     needs=(FOREIGN,))
case("zeros-dtype-object", "Device.zeros", "dtype object", "TypeError",
     lambda c: c.device.zeros(4, object))
case("asarray-buffer", "Device.asarray", "an hrx.Buffer (device memory)",
     "TypeError", lambda c: c.device.asarray(c.a))
case("asarray-strings", "Device.asarray", "a numpy array of strings",
     "TypeError", lambda c: c.device.asarray(c.np.array(["a", "b"])))
case("asarray-objects", "Device.asarray", "a list of None (dtype object)",
     "TypeError", lambda c: c.device.asarray([None, None]))
case("asarray-empty", "Device.asarray", "an empty array",
     "InvalidArgumentError",
     lambda c: c.device.asarray(c.np.zeros(0, c.np.float32)))
case("asarray-stream-int", "Device.asarray", "stream 1 (int)", "TypeError",
     lambda c: c.device.asarray(c.np.ones(4), stream=1))
case("to-device-objects", "Stream.to_device", "numpy dtype=object array",
     "TypeError", lambda c: c.stream.to_device(c.np.array([None])))
case("to-device-closed", "Stream.to_device", "closed Stream",
     "FailedPreconditionError",
     lambda c: c.closed_stream.to_device(c.np.ones(4)))
case("to-device-no-argument", "Stream.to_device", "no argument",
     "TypeError", lambda c: c.stream.to_device())

case("upload-typed-int32-into-float32", "Stream.upload",
     "int32 array into a float32 view", "TypeError",
     lambda c: c.stream.upload(c.a.view(c.np.float32),
                               c.np.ones(SIZE // 4, c.np.int32)))
case("upload-typed-uint8-array", "Stream.upload",
     "numpy uint8 array (typed, not a byte image) into a float32 view",
     "TypeError",
     lambda c: c.stream.upload(c.a.view(c.np.float32),
                               c.np.zeros(SIZE, c.np.uint8)))
case("upload-typed-dlpack-int32", "Stream.upload",
     "DLPack int32 tensor into a float32 view", "TypeError",
     lambda c: c.stream.upload(c.a.view(c.np.float32),
                               DLPackOnly(c.np.ones(SIZE // 4, c.np.int32))))
case("upload-typed-count", "Stream.upload",
     "SIZE // 4 - 1 float32 elements into SIZE // 4", "InvalidArgumentError",
     lambda c: c.stream.upload(c.a.view(c.np.float32),
                               c.np.ones(SIZE // 4 - 1, c.np.float32)))
case("upload-typed-bytes-short", "Stream.upload",
     "SIZE - 1 bytes into a float32 view", "InvalidArgumentError",
     lambda c: c.stream.upload(c.a.view(c.np.float32), bytes(SIZE - 1)))
case("read-into-typed-dtype", "Stream.read_into",
     "float32 out for an int32 view", "TypeError",
     lambda c: c.stream.read_into(c.a.view(c.np.int32),
                                  c.out(c.np.zeros(SIZE // 4, c.np.float32))))
case("read-into-typed-count", "Stream.read_into",
     "int32 out of one element more", "InvalidArgumentError",
     lambda c: c.stream.read_into(
         c.a.view(c.np.int32), c.out(c.np.zeros(SIZE // 4 + 1, c.np.int32))))
case("read-blocking-typed-dtype", "Stream.read_blocking",
     "int64 out for an int32 view", "TypeError",
     lambda c: c.stream.read_blocking(
         c.a.view(c.np.int32), c.out(c.np.zeros(SIZE // 4, c.np.int64))))
case("read-blocking-typed-short", "Stream.read_blocking",
     "int32 out of one element fewer", "InvalidArgumentError",
     lambda c: c.stream.read_blocking(
         c.a.view(c.np.int32), c.out(c.np.zeros(SIZE // 4 - 1, c.np.int32))))
case("copy-typed-dtypes-differ", "Stream.copy", "int32 dst, float32 src",
     "TypeError",
     lambda c: c.stream.copy(c.a.view(c.np.int32), c.b.view(c.np.float32)))
case("graph-copy-typed-dtypes-differ", "Graph.copy",
     "int32 dst, float32 src", "TypeError",
     lambda c: c.hrx.Graph(c.device).copy(c.a.view(c.np.int32),
                                          c.b.view(c.np.float32)))
case("graph-fill-typed-wide", "Graph.fill",
     "value 5 in an int32 view (not one repeated byte)",
     "InvalidArgumentError",
     lambda c: c.hrx.Graph(c.device).fill(c.a.view(c.np.int32), 5))
for _id, _dtype, _value, _text, _raises in [
        ("float-into-int", "int32", 1.5, "1.5 into int32", "TypeError"),
        ("bool-into-int", "int32", True, "True into int32", "TypeError"),
        ("int-into-bool", "bool", 1, "1 into bool", "TypeError"),
        ("complex-into-float", "float32", 1j, "1j into float32",
         "TypeError"),
        ("str-into-float", "float32", "1", '"1" into float32', "TypeError"),
        ("none-into-complex", "complex64", None, "None into complex64",
         "TypeError"),
        ("int8-overflow", "int8", 128, "128 into int8", "OutOfRangeError"),
        ("uint8-negative", "uint8", -1, "-1 into uint8", "OutOfRangeError"),
        ("uint64-overflow", "uint64", 2**64, "2**64 into uint64",
         "OutOfRangeError"),
        ("float16-overflow", "float16", 70000.0, "70000.0 into float16",
         "OutOfRangeError"),
        ("float32-overflow", "float32", 1e39, "1e39 into float32",
         "OutOfRangeError")]:
    case(f"fill-typed-{_id}", "Stream.fill", _text, _raises,
         lambda c, t=_dtype, v=_value: c.stream.fill(c.a.view(t), v))
# ------------------------------------------------------ pinned host memory


def _pin_twice(c):
    """Pins memory, then pins the same memory again inside the scope."""
    memory = bytearray(SIZE)
    with c.device.pin(memory):
        with c.device.pin(memory):
            pass


def _pin_overlapping(c):
    """Pins a part of memory that an outer scope already pins."""
    memory = c.np.zeros(2 * SIZE, c.np.uint8)
    with c.device.pin(memory):
        with c.device.pin(memory[SIZE:]):
            pass


def _pinned_readonly(c):
    """A pinned array marked read-only."""
    array = c.device.empty_pinned(SIZE)
    array[:] = 0xEE
    array.setflags(write=False)
    return c.out(array)


def _pinned_out(c, n):
    """A pinned array of n bytes holding 0xEE."""
    array = c.device.empty_pinned(n)
    array[:] = 0xEE
    return c.out(array)


case("pin-noncontiguous", "Device.pin", "numpy arr[::2] (strided)",
     "InvalidArgumentError",
     lambda c: c.device.pin(c.np.zeros(2 * SIZE, c.np.uint8)[::2]))
case("pin-empty", "Device.pin", "an empty bytearray", "InvalidArgumentError",
     lambda c: c.device.pin(bytearray()))
case("pin-int", "Device.pin", "an int (no buffer)", "TypeError",
     lambda c: c.device.pin(5))
case("pin-twice", "Device.pin", "the same memory pinned again inside its "
     "scope", "InvalidArgumentError", _pin_twice)
case("pin-overlapping", "Device.pin", "a part of memory already pinned",
     "InvalidArgumentError", _pin_overlapping)
case("pin-pinned-allocation", "Device.pin", "an empty_pinned array",
     "InvalidArgumentError",
     lambda c: c.device.pin(c.device.empty_pinned(SIZE)).__enter__())
case("pin-closed", "Device.pin", "closed Device handle",
     "FailedPreconditionError",
     lambda c: c.closed_device.pin(bytearray(SIZE)))
case("empty-pinned-negative", "Device.empty_pinned", "shape (-1,)",
     "InvalidArgumentError", lambda c: c.device.empty_pinned((-1,)))
case("empty-pinned-shape-str", "Device.empty_pinned", 'shape "4" (str)',
     "TypeError", lambda c: c.device.empty_pinned("4"))
case("empty-pinned-shape-float", "Device.empty_pinned", "shape (4.0,)",
     "TypeError", lambda c: c.device.empty_pinned((4.0,)))
case("empty-pinned-object-dtype", "Device.empty_pinned", "dtype object",
     "InvalidArgumentError", lambda c: c.device.empty_pinned(4, object))
case("empty-pinned-bad-dtype", "Device.empty_pinned", 'dtype "nonsense"',
     "TypeError", lambda c: c.device.empty_pinned(4, "nonsense"))
case("empty-pinned-closed", "Device.empty_pinned", "closed Device handle",
     "FailedPreconditionError", lambda c: c.closed_device.empty_pinned(4))
case("is-pinned-int", "Device.is_pinned", "an int (no buffer)", "TypeError",
     lambda c: c.device.is_pinned(5))
case("is-pinned-closed", "Device.is_pinned", "closed Device handle",
     "FailedPreconditionError",
     lambda c: c.closed_device.is_pinned(bytearray(4)))
case("read-into-pinned-readonly", "Stream.read_into",
     "out a pinned array marked read-only", "InvalidArgumentError",
     lambda c: c.stream.read_into(c.a, _pinned_readonly(c)))
case("read-into-pinned-short", "Stream.read_into",
     "out a pinned array shorter than src", "InvalidArgumentError",
     lambda c: c.stream.read_into(c.a, _pinned_out(c, SIZE - 1)))
case("read-blocking-pinned-short", "Stream.read_blocking",
     "out a pinned array shorter than src", "InvalidArgumentError",
     lambda c: c.stream.read_blocking(c.a, _pinned_out(c, SIZE - 1)))
case("upload-pinned-long", "Stream.upload",
     "data a pinned array longer than dst", "InvalidArgumentError",
     lambda c: c.stream.upload(c.a, c.device.empty_pinned(SIZE + 1)))

# -------------------------------------------------------- events, streams

case("wait-event-none", "Stream.wait_event", "event None", "TypeError",
     lambda c: c.stream.wait_event(None))
case("wait-event-stream", "Stream.wait_event", "a Stream instead of an Event",
     "TypeError", lambda c: c.stream.wait_event(c.stream))
case("wait-event-closed", "Stream.wait_event", "closed Event",
     "FailedPreconditionError", lambda c: c.stream.wait_event(c.closed_event))
case("wait-event-stream-closed", "Stream.wait_event", "closed Stream",
     "FailedPreconditionError", lambda c: c.closed_stream.wait_event(c.event))
case("wait-event-no-argument", "Stream.wait_event", "no argument",
     "TypeError", lambda c: c.stream.wait_event())
case("wait-event-readback", "Stream.wait_event",
     "a Readback instead of an Event", "TypeError",
     lambda c: c.stream.wait_event(c.readback))
case("queue-wait-event-closed", "fabric.Queue.wait_event", "closed Queue",
     "FailedPreconditionError", lambda c: c.closed_queue.wait_event(c.event))
case("queue-record-event-closed", "fabric.Queue.record_event",
     "closed Queue", "FailedPreconditionError",
     lambda c: c.closed_queue.record_event())
case("queue-synchronize-closed", "fabric.Queue.synchronize", "closed Queue",
     "FailedPreconditionError", lambda c: c.closed_queue.synchronize())
case("record-event-argument", "Stream.record_event", "an argument",
     "TypeError", lambda c: c.stream.record_event(1))
case("record-event-closed", "Stream.record_event", "closed Stream",
     "FailedPreconditionError", lambda c: c.closed_stream.record_event())
case("record-event-timing-int", "Stream.record_event", "timing=1 (int)",
     "TypeError", lambda c: c.stream.record_event(timing=1))
case("record-event-unknown-keyword", "Stream.record_event",
     "unknown keyword clock=True", "TypeError",
     lambda c: c.stream.record_event(clock=True))
case("stream-query-argument", "Stream.query", "an argument", "TypeError",
     lambda c: c.stream.query(1))
case("stream-query-closed", "Stream.query", "closed Stream",
     "FailedPreconditionError", lambda c: c.closed_stream.query())
case("elapsed-time-not-event", "Event.elapsed_time", "end 3 (int)",
     "TypeError", lambda c: c.event.elapsed_time(3))
case("elapsed-time-no-timing", "Event.elapsed_time",
     "events recorded without timing", "InvalidArgumentError",
     lambda c: c.event.elapsed_time(c.event))
case("elapsed-time-closed", "Event.elapsed_time", "closed end Event",
     "FailedPreconditionError", lambda c: c.event.elapsed_time(c.closed_event))
case("elapsed-time-foreign", "Event.elapsed_time", "Event of another device",
     "InvalidArgumentError", lambda c: c.event.elapsed_time(c.foreign_event),
     needs=(FOREIGN,))
case("stream-constructor", "Stream()", "direct construction", "TypeError",
     lambda c: c.hrx.Stream())
case("buffer-constructor", "Buffer()", "direct construction", "TypeError",
     lambda c: c.hrx.Buffer())
case("buffer-numpy-asarray", "numpy.asarray(Buffer)",
     "device memory numpy cannot view", "TypeError",
     lambda c: c.np.asarray(c.a))
case("stream-synchronize-argument", "Stream.synchronize", "an argument",
     "TypeError", lambda c: c.stream.synchronize(1))
case("stream-synchronize-closed", "Stream.synchronize", "closed Stream",
     "FailedPreconditionError", lambda c: c.closed_stream.synchronize())
case("event-query-closed", "Event.query", "closed Event",
     "FailedPreconditionError", lambda c: c.closed_event.query())
case("event-query-argument", "Event.query", "an argument", "TypeError",
     lambda c: c.event.query(1))
case("event-synchronize-argument", "Event.synchronize", "an argument",
     "TypeError", lambda c: c.event.synchronize(1))
case("readback-wait-argument", "Readback.wait", "an argument", "TypeError",
     lambda c: c.readback.wait(1))
case("readback-done-argument", "Readback.done", "an argument", "TypeError",
     lambda c: c.readback.done(1))
case("event-synchronize-closed", "Event.synchronize", "closed Event",
     "FailedPreconditionError", lambda c: c.closed_event.synchronize())
case("readback-wait-closed", "Readback.wait", "closed Readback",
     "FailedPreconditionError", lambda c: c.closed_readback.wait())
case("readback-done-closed", "Readback.done", "closed Readback",
     "FailedPreconditionError", lambda c: c.closed_readback.done())
case("device-stream-closed", "Device.stream", "closed Device handle",
     "FailedPreconditionError", lambda c: c.closed_device.stream())
case("device-synchronize-closed", "Device.synchronize",
     "closed Device handle", "FailedPreconditionError",
     lambda c: c.closed_device.synchronize())
case("device-pool-info-closed", "Device.pool_info", "closed Device handle",
     "FailedPreconditionError", lambda c: c.closed_device.pool_info())
case("device-pool-stats-closed", "Device.pool_stats", "closed Device handle",
     "FailedPreconditionError", lambda c: c.closed_device.pool_stats())
case("device-clone-closed", "Device.clone", "closed Device handle",
     "FailedPreconditionError", lambda c: c.closed_device.clone())
for _fn, _call in [("Device.stream", lambda c: c.device.stream(1)),
                   ("Device.synchronize", lambda c: c.device.synchronize(1)),
                   ("Device.pool_info", lambda c: c.device.pool_info(1)),
                   ("Device.clone", lambda c: c.device.clone(1))]:
    case(f"{_fn.split('.')[1].replace('_', '-')}-argument", _fn,
         "an argument", "TypeError", _call)
case("backends-argument", "backends", "an argument", "TypeError",
     lambda c: c.hrx.backends(1))

# ------------------------------------- properties and `with` of closed objects

for _fn, _what, _call in [
        ("Device.info", "closed Device handle", lambda c: c.closed_device.info),
        ("Device.free_memory", "closed Device handle",
         lambda c: c.closed_device.free_memory),
        ("Device.stream_queue_count", "closed Device handle",
         lambda c: c.closed_device.stream_queue_count),
        ("Device.batching", "closed Device handle",
         lambda c: c.closed_device.batching),
        ("with Device", "closed Device handle",
         lambda c: c.closed_device.__enter__()),
        ("Stream.device", "closed Stream", lambda c: c.closed_stream.device),
        ("Stream.queue_index", "closed Stream",
         lambda c: c.closed_stream.queue_index),
        ("Stream.native_handle", "closed Stream",
         lambda c: c.closed_stream.native_handle),
        ("with Stream", "closed Stream", lambda c: c.closed_stream.__enter__()),
        ("with fabric.Queue", "closed Queue",
         lambda c: c.closed_queue.__enter__()),
        ("Buffer.nbytes", "closed Buffer", lambda c: c.closed_buffer.nbytes),
        ("len(Buffer)", "closed Buffer", lambda c: len(c.closed_buffer)),
        ("Buffer.offset", "closed Buffer", lambda c: c.closed_buffer.offset),
        ("Buffer.dtype", "closed Buffer", lambda c: c.closed_buffer.dtype),
        ("Buffer.shape", "closed Buffer", lambda c: c.closed_buffer.shape),
        ("Buffer.size", "closed Buffer", lambda c: c.closed_buffer.size),
        ("Buffer.itemsize", "closed Buffer",
         lambda c: c.closed_buffer.itemsize),
        ("Buffer.allocation_size", "closed Buffer",
         lambda c: c.closed_buffer.allocation_size),
        ("Buffer.device", "closed Buffer", lambda c: c.closed_buffer.device),
        ("with Buffer", "closed Buffer", lambda c: c.closed_buffer.__enter__()),
        ("Event.device", "closed Event", lambda c: c.closed_event.device),
        ("with Event", "closed Event", lambda c: c.closed_event.__enter__()),
        ("with Readback", "closed Readback",
         lambda c: c.closed_readback.__enter__())]:
    _slug = _fn.replace("with ", "with-").replace("len(Buffer)", "buffer-len")
    case(f"closed-{_slug.lower().replace('.', '-').replace('_', '-')}", _fn,
         _what, "FailedPreconditionError", _call)

# ------------------------------------------------------------ Graph

def _graph(c):
    return c.hrx.Graph(c.device)


def _graph_with_node(c):
    """A graph and one fill node of it (on scratch memory, not a or b)."""
    g = _graph(c)
    return g, g.fill(c.device.allocate(8), 1)


def _cycle(c):
    g, first = _graph_with_node(c)
    second = g.fill(c.device.allocate(8), 2, after=[first])
    g.add_dependency(first, second)


def _self_dependency(c):
    g, node = _graph_with_node(c)
    g.add_dependency(node, node)


def _other_graph_node(c):
    _, foreign_node = _graph_with_node(c)
    return _graph(c).fill(c.a, 1, after=[foreign_node])


def _other_graph_dependency(c):
    g, node = _graph_with_node(c)
    _, foreign_node = _graph_with_node(c)
    g.add_dependency(node, foreign_node)


def _sealed_graph(c):
    g, _ = _graph_with_node(c)
    g.launch(c.stream)
    c.stream.synchronize()
    return g


def _closed_graph(c):
    g = _graph(c)
    g.close()
    return g.fill(c.a, 1)


def _completion(c):
    g = _graph(c)
    g.callback(lambda: None)
    return g.launch(c.stream)


case("graph-device-none", "Graph()", "device None", "TypeError",
     lambda c: c.hrx.Graph(None))
case("graph-device-stream", "Graph()", "a Stream instead of a Device",
     "TypeError", lambda c: c.hrx.Graph(c.stream))
case("graph-device-closed", "Graph()", "closed Device handle",
     "FailedPreconditionError", lambda c: c.hrx.Graph(c.closed_device))
case("graph-no-argument", "Graph()", "no argument", "TypeError",
     lambda c: c.hrx.Graph())
case("graph-copy-unequal-lengths", "Graph.copy", "dst 16 bytes, src 15 bytes",
     "InvalidArgumentError", lambda c: _graph(c).copy(c.a[0:16], c.b[0:15]))
case("graph-copy-overlap", "Graph.copy", "a[0:100] <- a[50:150]",
     "InvalidArgumentError", lambda c: _graph(c).copy(c.a[0:100], c.a[50:150]))
case("graph-copy-empty", "Graph.copy", "a[3:3] <- b[0:0]",
     "InvalidArgumentError", lambda c: _graph(c).copy(c.a[3:3], c.b[0:0]))
case("graph-copy-src-foreign", "Graph.copy", "src on another device",
     "InvalidArgumentError", lambda c: _graph(c).copy(c.a, c.foreign),
     needs=(FOREIGN,))
case("graph-copy-dst-closed", "Graph.copy", "closed dst",
     "FailedPreconditionError",
     lambda c: _graph(c).copy(c.closed_buffer, c.a))
case("graph-copy-src-bytes", "Graph.copy", "src bytes (not a Buffer)",
     "TypeError", lambda c: _graph(c).copy(c.a, bytes(SIZE)))
case("graph-copy-one-argument", "Graph.copy", "one argument", "TypeError",
     lambda c: _graph(c).copy(c.a))
for _id, _byte, _text, _raises in [
        ("byte-256", 256, "byte 256", "InvalidArgumentError"),
        ("byte-negative", -1, "byte -1", "InvalidArgumentError"),
        ("byte-float", 1.0, "byte 1.0 (float)", "TypeError"),
        ("byte-none", None, "byte None", "TypeError")]:
    case(f"graph-fill-{_id}", "Graph.fill", _text, _raises,
         lambda c, v=_byte: _graph(c).fill(c.a, v))
case("graph-fill-empty", "Graph.fill", "empty view a[5:5]",
     "InvalidArgumentError", lambda c: _graph(c).fill(c.a[5:5], 1))
case("graph-fill-foreign", "Graph.fill", "dst on another device",
     "InvalidArgumentError", lambda c: _graph(c).fill(c.foreign, 1),
     needs=(FOREIGN,))
case("graph-fill-closed-dst", "Graph.fill", "closed dst",
     "FailedPreconditionError", lambda c: _graph(c).fill(c.closed_buffer, 1))
case("graph-fill-closed-graph", "Graph.fill", "closed Graph",
     "FailedPreconditionError", _closed_graph)
case("graph-fill-sealed", "Graph.fill",
     "a graph that was launched (sealed)", "FailedPreconditionError",
     lambda c: c.prepared.fill(c.a, 1), setup=_sealed_graph)
case("graph-after-other-graph", "Graph.fill",
     "after=[a node of another graph]", "InvalidArgumentError",
     _other_graph_node)
case("graph-after-int", "Graph.fill", "after=[1] (not a GraphNode)",
     "TypeError", lambda c: _graph(c).fill(c.a, 1, after=[1]))
case("graph-after-none", "Graph.fill", "after=None", "TypeError",
     lambda c: _graph(c).fill(c.a, 1, after=None))
case("graph-after-node", "Graph.fill",
     "after=node (a GraphNode, not a list of them)", "TypeError",
     lambda c: _graph(c).fill(c.a, 1, after=_graph_with_node(c)[1]))
case("graph-after-positional", "Graph.fill", "after passed positionally",
     "TypeError", lambda c: _graph(c).fill(c.a, 1, []))
case("graph-callback-not-callable", "Graph.callback", "fn 1 (not callable)",
     "TypeError", lambda c: _graph(c).callback(1))
case("graph-callback-no-argument", "Graph.callback", "no argument",
     "TypeError", lambda c: _graph(c).callback())
case("graph-dependency-cycle", "Graph.add_dependency",
     "an edge that closes a cycle", "InvalidArgumentError", _cycle)
case("graph-dependency-self", "Graph.add_dependency", "node after itself",
     "InvalidArgumentError", _self_dependency)
case("graph-dependency-other-graph", "Graph.add_dependency",
     "after = a node of another graph", "InvalidArgumentError",
     _other_graph_dependency)
case("graph-dependency-int", "Graph.add_dependency", "node 1 (not a node)",
     "TypeError",
     lambda c: _graph_with_node(c)[0].add_dependency(1, _graph_with_node(c)[1]))
case("graph-launch-empty", "Graph.launch", "a graph with no nodes",
     "InvalidArgumentError", lambda c: _graph(c).launch(c.stream))
case("graph-launch-foreign-stream", "Graph.launch",
     "a stream of another device", "InvalidArgumentError",
     lambda c: _graph_with_node(c)[0].launch(c.foreign_stream),
     needs=(FOREIGN,))
case("graph-launch-closed-stream", "Graph.launch", "closed Stream",
     "FailedPreconditionError",
     lambda c: _graph_with_node(c)[0].launch(c.closed_stream))
case("graph-launch-device", "Graph.launch", "a Device instead of a Stream",
     "TypeError", lambda c: _graph_with_node(c)[0].launch(c.device))
case("wait-completion-event", "Stream.wait_completion",
     "an Event instead of a Completion", "TypeError",
     lambda c: c.stream.wait_completion(c.event))
case("wait-completion-none", "Stream.wait_completion", "None", "TypeError",
     lambda c: c.stream.wait_completion(None))
case("wait-completion-stream-closed", "Stream.wait_completion",
     "closed Stream", "FailedPreconditionError",
     lambda c: c.closed_stream.wait_completion(c.prepared),
     setup=_completion)
case("completion-wait-negative", "Completion.wait", "timeout -1",
     "InvalidArgumentError", lambda c: c.prepared.wait(-1),
     setup=_completion)
case("completion-wait-nan", "Completion.wait", "timeout nan",
     "InvalidArgumentError", lambda c: c.prepared.wait(float("nan")),
     setup=_completion)
case("completion-wait-str", "Completion.wait", 'timeout "1" (str)',
     "TypeError", lambda c: c.prepared.wait("1"), setup=_completion)
case("completion-result-bool", "Completion.result", "timeout True (bool)",
     "TypeError", lambda c: c.prepared.result(True), setup=_completion)

# ------------------------------------------------------------ kernels

def _kernel(c, name="add_one", device=None):
    """A kernel of tests/kernel_sources.py for the context's device (or
    `device`): add_one(unsigned char* p, unsigned int n)."""
    import kernel_sources
    return kernel_sources.compile_kernel(device or c.device, name)


def _module_source():
    """add_one and saxpy of tests/kernel_sources.py in one source."""
    import kernel_sources
    return "".join(kernel_sources.EXTERN_C + kernel_sources.SOURCES[n]
                   for n in ("add_one", "saxpy"))


def _module(c):
    """A module of add_one and saxpy for the context's device."""
    return c.device.compile_module(_module_source(), ["add_one", "saxpy"])


def _closed_kernel(c):
    k = _kernel(c)
    k.close()
    return k


def _launch(c, grid=1, block=1, args=None, **kwargs):
    """Stream.launch of add_one on a (n = 1) unless told otherwise."""
    return c.stream.launch(_kernel(c), grid, block,
                           (c.a, 1) if args is None else args, **kwargs)


class DLPackElsewhere:
    """A DLPack producer on a device no backend's kernels address."""

    def __dlpack__(self, **kwargs):
        raise AssertionError("a foreign tensor must be refused before export")

    def __dlpack_device__(self):
        return (9999, 0)


case("launch-kernel-none", "Stream.launch", "kernel None", "TypeError",
     lambda c: c.stream.launch(None, 1, 1, (c.a, 1)))
case("launch-kernel-closed", "Stream.launch", "closed Kernel",
     "FailedPreconditionError",
     lambda c: c.stream.launch(_closed_kernel(c), 1, 1, (c.a, 1)))
case("launch-kernel-foreign", "Stream.launch",
     "a kernel of another device", "InvalidArgumentError",
     lambda c: c.stream.launch(_kernel(c, device=c.second_device), 1, 1,
                               (c.a, 1)), needs=(FOREIGN,))
for _id, _grid, _block, _text, _raises in [
        ("grid-zero", 0, 1, "grid 0", "InvalidArgumentError"),
        ("grid-y-zero", (1, 0), 1, "grid (1, 0)", "InvalidArgumentError"),
        ("block-zero", 1, (0,), "block (0,)", "InvalidArgumentError"),
        ("grid-negative", -1, 1, "grid -1", "InvalidArgumentError"),
        ("grid-over-limit", 2**31, 1, "grid 2**31 (over max_grid_dim.x)",
         "InvalidArgumentError"),
        ("grid-y-over-limit", (1, 2**16), 1,
         "grid (1, 2**16) (over max_grid_dim.y)", "InvalidArgumentError"),
        ("grid-beyond-32-bits", 2**40, 1, "grid 2**40",
         "InvalidArgumentError"),
        ("block-over-limit", 1, 2048, "block 2048 (over max_block_dim.x)",
         "InvalidArgumentError"),
        ("block-threads-over-limit", 1, (32, 64),
         "block (32, 64): 2048 threads (over max_threads_per_block)",
         "InvalidArgumentError"),
        ("grid-four-extents", (1, 1, 1, 1), 1, "grid of 4 extents",
         "InvalidArgumentError"),
        ("grid-empty", (), 1, "grid ()", "InvalidArgumentError"),
        ("grid-str", "1", 1, 'grid "1" (str)', "TypeError"),
        ("grid-float", 1.0, 1, "grid 1.0 (float)", "TypeError"),
        ("grid-bool", True, 1, "grid True (bool)", "TypeError"),
        ("block-none", 1, None, "block None", "TypeError")]:
    case(f"launch-{_id}", "Stream.launch", _text, _raises,
         lambda c, g=_grid, b=_block: _launch(c, g, b))
case("launch-shared-negative", "Stream.launch", "shared -1",
     "InvalidArgumentError", lambda c: _launch(c, shared=-1))
case("launch-shared-over-limit", "Stream.launch",
     "shared = max_shared_bytes_per_block + 1", "InvalidArgumentError",
     lambda c: _launch(
         c, shared=c.device.info["max_shared_bytes_per_block"] + 1))
case("launch-shared-str", "Stream.launch", 'shared "0" (str)', "TypeError",
     lambda c: _launch(c, shared="0"))
case("launch-args-str", "Stream.launch", 'args "ab" (a string)',
     "TypeError", lambda c: _launch(c, args="ab"))
case("launch-args-int", "Stream.launch", "args 5 (not a sequence)",
     "TypeError", lambda c: _launch(c, args=5))
case("launch-arg-str", "Stream.launch", 'an argument "x" (str)',
     "TypeError", lambda c: _launch(c, args=(c.a, "x")))
case("launch-arg-bytes", "Stream.launch", "an argument of bytes",
     "TypeError", lambda c: _launch(c, args=(bytes(8), 1)))
case("launch-arg-none", "Stream.launch", "an argument None", "TypeError",
     lambda c: _launch(c, args=(None, 1)))
case("launch-arg-closed-buffer", "Stream.launch", "a closed Buffer",
     "FailedPreconditionError",
     lambda c: _launch(c, args=(c.closed_buffer, 1)))
case("launch-arg-foreign-buffer", "Stream.launch",
     "a buffer of another device", "InvalidArgumentError",
     lambda c: _launch(c, args=(c.foreign, 1)), needs=(FOREIGN,))
case("launch-arg-foreign-dlpack", "Stream.launch",
     "a DLPack tensor on a device kernels do not address",
     "InvalidArgumentError",
     lambda c: _launch(c, args=(DLPackElsewhere(), 1)))
case("launch-too-many-args", "Stream.launch", "129 arguments",
     "InvalidArgumentError", lambda c: _launch(c, args=(1,) * 129))
case("launch-too-few-args", "Stream.launch",
     "1 argument for 2 parameters", "InvalidArgumentError",
     lambda c: _launch(c, args=(c.a,)))
case("launch-int-does-not-fit", "Stream.launch",
     "2**32 for an unsigned int parameter", "InvalidArgumentError",
     lambda c: _launch(c, args=(c.a, 2**32)))
case("launch-numpy-size", "Stream.launch",
     "numpy.int64 for a 4-byte parameter", "TypeError",
     lambda c: _launch(c, args=(c.a, c.np.int64(1))))
case("launch-float-for-int", "Stream.launch",
     "a float for a 1-byte integer parameter", "TypeError",
     lambda c: c.stream.launch(_kernel(c, "record"), 1, 1,
                               (c.a, 1.0, 0, 0, 0, 0.0, 0.0, 0, 0)),
     needs=(TYPED,))
case("launch-float-for-unsigned", "Stream.launch",
     "1024.0 for an unsigned int parameter", "TypeError",
     lambda c: _launch(c, args=(c.a, 1024.0)), needs=(TYPED,))
case("launch-numpy-float-for-int", "Stream.launch",
     "numpy.float32 for an unsigned int parameter", "TypeError",
     lambda c: _launch(c, args=(c.a, c.np.float32(1))), needs=(TYPED,))
case("launch-numpy-int-for-float", "Stream.launch",
     "numpy.int32 for a float parameter", "TypeError",
     lambda c: c.stream.launch(_kernel(c, "saxpy"), 1, 1,
                               (c.a, c.b, c.np.int32(2), 1)),
     needs=(TYPED,))
case("launch-numpy-float64-for-float", "Stream.launch",
     "numpy.float64 for a float parameter", "TypeError",
     lambda c: c.stream.launch(_kernel(c, "saxpy"), 1, 1,
                               (c.a, c.b, c.np.float64(2), 1)),
     needs=(TYPED,))
case("launch-bool-for-int", "Stream.launch",
     "True for an unsigned int parameter", "TypeError",
     lambda c: _launch(c, args=(c.a, True)), needs=(TYPED,))
case("launch-numpy-bool-for-float", "Stream.launch",
     "numpy.bool_ for a float parameter", "TypeError",
     lambda c: c.stream.launch(_kernel(c, "saxpy"), 1, 1,
                               (c.a, c.b, c.np.bool_(True), 1)),
     needs=(TYPED,))
case("launch-buffer-for-int", "Stream.launch",
     "a buffer for an unsigned int parameter", "TypeError",
     lambda c: _launch(c, args=(c.a, c.b)), needs=(TYPED,))
case("launch-int-too-large-for-float", "Stream.launch",
     "10**40 for a float parameter", "InvalidArgumentError",
     lambda c: c.stream.launch(_kernel(c, "saxpy"), 1, 1,
                               (c.a, c.b, 10**40, 1)),
     needs=(TYPED,))
case("launch-int-for-pointer", "Stream.launch",
     "the int 5 for a pointer parameter", "TypeError",
     lambda c: _launch(c, args=(5, 1)), needs=(TYPED_POINTERS,))
case("launch-negative-for-unsigned", "Stream.launch",
     "-1 for an unsigned int parameter", "InvalidArgumentError",
     lambda c: _launch(c, args=(c.a, -1)), needs=(TYPED_POINTERS,))
case("launch-no-block", "Stream.launch", "kernel and grid only",
     "TypeError", lambda c: c.stream.launch(_kernel(c), 1))
case("launch-unknown-keyword", "Stream.launch", "keyword threads=",
     "TypeError", lambda c: _launch(c, threads=1))
case("launch-stream-closed", "Stream.launch", "closed Stream",
     "FailedPreconditionError",
     lambda c: c.closed_stream.launch(_kernel(c), 1, 1, (c.a, 1)))
case("launch-queue-grid-zero", "fabric.Queue.launch", "grid 0",
     "InvalidArgumentError",
     lambda c: c.queue.launch(_kernel(c), 0, 1, (c.a, 1)))
case("compile-source-none", "Device.compile", "source None", "TypeError",
     lambda c: c.device.compile(None, "k"))
case("compile-source-bytes", "Device.compile", "source as bytes",
     "TypeError", lambda c: c.device.compile(b"void k(void) {}", "k"))
case("compile-source-empty", "Device.compile", 'source ""',
     "InvalidArgumentError", lambda c: c.device.compile("", "k"))
case("compile-name-not-identifier", "Device.compile", 'name "1k"',
     "InvalidArgumentError",
     lambda c: c.device.compile("void k(void) {}", "1k"))
case("compile-name-nul", "Device.compile", 'name "k\\0"',
     "InvalidArgumentError",
     lambda c: c.device.compile("void k(void) {}", "k\0"))
case("compile-name-missing", "Device.compile",
     "a name the source does not define", "InvalidArgumentError",
     lambda c: c.device.compile(
         '#ifdef __cplusplus\nextern "C"\n#endif\n'
         "__global__ void k(int* p) { p[0] = 1; }\n", "other"))
case("compile-syntax-error", "Device.compile",
     "a source the compiler rejects", "InvalidArgumentError",
     lambda c: c.device.compile("this is not a kernel", "k"))
case("compile-extern-shared-sized", "Device.compile",
     "host backend: `extern __shared__ float s[4];` (a sized array)",
     "InvalidArgumentError",
     lambda c: c.device.compile(
         "__global__ void k(float* p) {\n"
         "  extern __shared__ float s[4];\n  p[0] = s[0];\n}\n", "k"),
     needs=(HOST_ONLY,))
case("compile-warp-intrinsic", "Device.compile",
     "host backend: a warp intrinsic (`__shfl_sync`)", "InvalidArgumentError",
     lambda c: c.device.compile(
         "__global__ void k(int* p) { p[0] = __shfl_sync(~0u, p[0], 1); }\n",
         "k"),
     needs=(HOST_ONLY,))
case("compile-options-str", "Device.compile", 'options "-O2" (one string)',
     "TypeError",
     lambda c: c.device.compile("void k(void) {}", "k", options="-O2"))
case("compile-options-int", "Device.compile", "options [1]", "TypeError",
     lambda c: c.device.compile("void k(void) {}", "k", options=[1]))
case("compile-option-empty", "Device.compile", 'options [""]',
     "InvalidArgumentError",
     lambda c: c.device.compile("void k(void) {}", "k", options=[""]))
case("compile-closed-device", "Device.compile", "closed Device handle",
     "FailedPreconditionError",
     lambda c: c.closed_device.compile("void k(void) {}", "k"))
case("compile-module-names-str", "Device.compile_module",
     'names "add_one" (one string)', "TypeError",
     lambda c: c.device.compile_module(_module_source(), "add_one"))
case("compile-module-names-int", "Device.compile_module", "names [1]",
     "TypeError", lambda c: c.device.compile_module(_module_source(), [1]))
case("compile-module-names-empty", "Device.compile_module", "names []",
     "InvalidArgumentError",
     lambda c: c.device.compile_module(_module_source(), []))
case("compile-module-name-twice", "Device.compile_module",
     'names ["add_one", "add_one"]', "InvalidArgumentError",
     lambda c: c.device.compile_module(_module_source(),
                                       ["add_one", "add_one"]))
case("compile-module-name-missing", "Device.compile_module",
     "a name the source does not define", "InvalidArgumentError",
     lambda c: c.device.compile_module(_module_source(),
                                       ["add_one", "other"]))
case("compile-module-too-many", "Device.compile_module",
     "KERNEL_MAX_MODULE_NAMES + 1 names", "InvalidArgumentError",
     lambda c: c.device.compile_module(
         _module_source(),
         [f"k{i}" for i in range(c.hrx.KERNEL_MAX_MODULE_NAMES + 1)]))
case("compile-module-closed-device", "Device.compile_module",
     "closed Device handle", "FailedPreconditionError",
     lambda c: c.closed_device.compile_module(_module_source(), ["add_one"]))
case("module-get-missing", "Module.get", "a name not compiled", "KeyError",
     lambda c: _module(c).get("other"))
case("module-get-int", "Module.get", "name 1", "TypeError",
     lambda c: _module(c).get(1))
case("module-subscript-missing", "Module[name]", "a name not compiled",
     "KeyError", lambda c: _module(c)["other"])
case("module-direct", "Module()", "instantiated directly", "TypeError",
     lambda c: c.hrx.Module())
case("load-kernel-str", "Device.load_kernel", 'image "x" (str)',
     "TypeError", lambda c: c.device.load_kernel("x", "k"))
case("load-kernel-empty", "Device.load_kernel", 'image b""',
     "InvalidArgumentError", lambda c: c.device.load_kernel(b"", "k"))
case("load-kernel-garbage", "Device.load_kernel",
     "an image of 4096 zero bytes", "InvalidArgumentError",
     lambda c: c.device.load_kernel(bytes(4096), "k"))
case("load-kernel-name-missing", "Device.load_kernel",
     "a name the image does not define", "InvalidArgumentError",
     lambda c: c.device.load_kernel(_kernel(c).image, "other"))
case("load-kernel-closed-device", "Device.load_kernel",
     "closed Device handle", "FailedPreconditionError",
     lambda c: c.closed_device.load_kernel(b"x", "k"))
case("kernel-compiler-closed-device", "Device.kernel_compiler",
     "closed Device handle", "FailedPreconditionError",
     lambda c: c.closed_device.kernel_compiler())
case("kernel-direct", "Kernel()", "instantiated directly", "TypeError",
     lambda c: c.hrx.Kernel())
case("kernel-name-closed", "Kernel.name", "closed Kernel",
     "FailedPreconditionError", lambda c: _closed_kernel(c).name)
case("kernel-image-closed", "Kernel.image", "closed Kernel",
     "FailedPreconditionError", lambda c: _closed_kernel(c).image)
case("graph-kernel-grid-zero", "Graph.kernel", "grid 0",
     "InvalidArgumentError",
     lambda c: _graph(c).kernel(_kernel(c), 0, 1, (c.a, 1)))
case("graph-kernel-foreign", "Graph.kernel", "a kernel of another device",
     "InvalidArgumentError",
     lambda c: _graph(c).kernel(_kernel(c, device=c.second_device), 1, 1,
                                (c.a, 1)), needs=(FOREIGN,))
case("graph-kernel-arg-foreign", "Graph.kernel",
     "a buffer of another device", "InvalidArgumentError",
     lambda c: _graph(c).kernel(_kernel(c), 1, 1, (c.foreign, 1)),
     needs=(FOREIGN,))
case("graph-kernel-float-for-int", "Graph.kernel",
     "a float for an unsigned int parameter", "TypeError",
     lambda c: _graph(c).kernel(_kernel(c), 1, 1, (c.a, 1.5)),
     needs=(TYPED,))
case("graph-kernel-closed", "Graph.kernel", "closed Kernel",
     "FailedPreconditionError",
     lambda c: _graph(c).kernel(_closed_kernel(c), 1, 1, (c.a, 1)))
case("graph-kernel-after-int", "Graph.kernel", "after=[1]", "TypeError",
     lambda c: _graph(c).kernel(_kernel(c), 1, 1, (c.a, 1), after=[1]))
case("graph-kernel-sealed", "Graph.kernel",
     "a graph that was launched (sealed)", "FailedPreconditionError",
     lambda c: c.prepared.kernel(_kernel(c), 1, 1, (c.a, 1)),
     setup=_sealed_graph)

# ------------------------------------------------------------ bench_run

case("bench-device-none", "_hrx.bench_run", "device None", "TypeError",
     lambda c: c.hrx._hrx.bench_run(None))
case("bench-device-closed", "_hrx.bench_run", "closed Device handle",
     "FailedPreconditionError",
     lambda c: c.hrx._hrx.bench_run(c.closed_device, samples=1, warmup=1))
case("bench-lanes-zero", "_hrx.bench_run", "lanes=0", "InvalidArgumentError",
     lambda c: c.hrx._hrx.bench_run(c.device, lanes=0))
case("bench-lanes-bool", "_hrx.bench_run", "lanes=True", "TypeError",
     lambda c: c.hrx._hrx.bench_run(c.device, lanes=True))
case("bench-samples-huge", "_hrx.bench_run", "samples=2**64", "InvalidArgumentError",
     lambda c: c.hrx._hrx.bench_run(c.device, samples=2**64))
case("bench-driver-unknown", "_hrx.bench_run", 'driver="nonsense"',
     "InvalidArgumentError",
     lambda c: c.hrx._hrx.bench_run(c.device, driver="nonsense"))
case("bench-driver-int", "_hrx.bench_run", "driver=1", "TypeError",
     lambda c: c.hrx._hrx.bench_run(c.device, driver=1))
case("bench-unknown-keyword", "_hrx.bench_run", "keyword threads=",
     "TypeError", lambda c: c.hrx._hrx.bench_run(c.device, threads=1))
case("bench-device-stream", "_hrx.bench_run", "a Stream instead of a Device",
     "TypeError", lambda c: c.hrx._hrx.bench_run(c.stream))
for _name, _value, _text, _raises in [
        ("samples", -1, "-1", "InvalidArgumentError"),
        ("samples", 0, "0", "InvalidArgumentError"),
        ("warmup", -1, "-1", "InvalidArgumentError"),
        ("retained_streams", -1, "-1", "InvalidArgumentError"),
        ("small_bytes", 0, "0", "InvalidArgumentError"),
        ("small_copies", 0, "0", "InvalidArgumentError"),
        ("bulk_bytes", 2**62, "2**62", "InvalidArgumentError"),
        ("bulk_copies", 0, "0", "InvalidArgumentError"),
        ("loaded_copies", -1, "-1", "InvalidArgumentError"),
        ("lanes", 2**31, "2**31", "InvalidArgumentError"),
        ("lanes", 1.0, "1.0 (float)", "TypeError"),
        ("small_bytes", "4096", '"4096" (str)', "TypeError"),
        ("kernel_spin_ns", 0, "0", "InvalidArgumentError"),
        ("kernel_spin_ns", 2 * 10**9, "2*10**9", "InvalidArgumentError"),
        ("kernel_launches", 0, "0", "InvalidArgumentError"),
        ("backlog_blocks", 0, "0", "InvalidArgumentError"),
        ("backlog_blocks", 2**31, "2**31", "InvalidArgumentError"),
        ("backlog_kernels", 0, "0", "InvalidArgumentError"),
        ("transfer_bytes", 0, "0", "InvalidArgumentError"),
        ("transfer_copies", 0, "0", "InvalidArgumentError"),
        ("compute_samples", 0, "0", "InvalidArgumentError"),
        ("transfer_samples", 0, "0", "InvalidArgumentError"),
        ("contention", 1, "1 (int)", "TypeError")]:
    _slug = (_name + "-" + _text.split(" ")[0].strip('"')).replace(
        "_", "-").replace("**", "pow").replace(".", "-")
    _kwargs = {"samples": 1, "warmup": 1, _name: _value}
    case(f"bench-{_slug}", "_hrx.bench_run", f"{_name}={_text}", _raises,
         lambda c, k=_kwargs: c.hrx._hrx.bench_run(c.device, **k))


case("bench-launch-threads-zero", "_hrx.bench_launch", "threads=0",
     "InvalidArgumentError",
     lambda c: c.hrx._hrx.bench_launch(c.device, threads=0))
case("bench-launch-kernel-unknown", "_hrx.bench_launch", 'kernel="huge"',
     "InvalidArgumentError",
     lambda c: c.hrx._hrx.bench_launch(c.device, kernel="huge"))
case("bench-launch-driver-int", "_hrx.bench_launch", "driver=1",
     "TypeError", lambda c: c.hrx._hrx.bench_launch(c.device, driver=1))
case("bench-launch-grid-over-limit", "_hrx.bench_launch",
     "grid over max_grid_dim.x", "InvalidArgumentError",
     lambda c: c.hrx._hrx.bench_launch(
         c.device, grid=c.device.info["max_grid_dim"][0] + 1, warmup=1,
         launches=1))
case("bench-launch-closed-device", "_hrx.bench_launch",
     "closed Device handle", "FailedPreconditionError",
     lambda c: c.hrx._hrx.bench_launch(c.closed_device))
case("bench-kernel-source-int", "_hrx.bench_kernel_source", "language 1",
     "TypeError", lambda c: c.hrx._hrx.bench_kernel_source(1))


# ------------------------------------------------- hrx.bench: your workload
# Refused in the calling process before any child starts or any device is
# opened (WorkloadError, SweepError: ValueErrors of hrx.bench).

case("bench-sweep-workload-lambda", "bench.sweep_workload",
     "a lambda (not importable by a fresh process)", "WorkloadError",
     lambda c: c.hrx.bench.sweep_workload(lambda device, streams: None, (1, 2),
                                          progress=False))
case("bench-sweep-workload-int", "bench.sweep_workload", "workload 42",
     "WorkloadError", lambda c: c.hrx.bench.sweep_workload(42, (1, 2), progress=False))
case("bench-sweep-only-workload-driver", "bench.sweep",
     'only_workload=True with driver="raw"', "SweepError",
     lambda c: c.hrx.bench.sweep((1, 2), workload="w.py:f", only_workload=True,
                                 driver="raw", progress=False))
case("bench-sweep-only-workload-none", "bench.sweep",
     "only_workload=True without a workload", "WorkloadError",
     lambda c: c.hrx.bench.sweep((1, 2), only_workload=True, progress=False))
case("bench-run-workload-driver-alone", "bench.run",
     'driver="workload" without a workload', "WorkloadError",
     lambda c: c.hrx.bench.run(1, driver="workload"))


# ------------------------------------------------------------ the document

def markdown() -> str:
    lines = [
        "# Bad input: what each call raises",
        "",
        "Generated from `tests/bad_input_cases.py`; regenerate with",
        "",
        "    python3 tests/bad_input_cases.py --markdown > docs/bad-input.md",
        "",
        "`tests/test_bad_input.py` runs every row on every available backend.",
        "Each row's buffers `a` and `b` (and, for foreign-device rows, a buffer",
        "of a second device) hold known bytes before the call; after it, the",
        "test checks that the device's count of commands handed to native",
        "queues (`_testing_commands_submitted`, a hook of the testing build) did not move,",
        "then synchronizes and checks that those bytes, `device.pool_info()`",
        "and any output buffer are unchanged, and that the exception's type",
        "is exactly the one listed. Rows that need a prepared object (a",
        "launched graph, a completion) make it before the snapshot.",
        "Rows marked *(types recorded)* run where the backend records the",
        "kernels' parameter types (the host backend; NVIDIA, for kernels hrx",
        "compiled) and *(pointers recorded)* only where it also tells",
        "pointers from integers and unsigned from signed ones (the host",
        "backend); elsewhere they are skipped",
        "([kernels.md](kernels.md#arguments)).",
        "`fabric.Queue.*` rows run on a queue",
        "outside the pool (same code as `Stream`, its own native queue). Hierarchy: `InvalidArgumentError` is also",
        "a `ValueError`; `OutOfRangeError` also an `IndexError` and a",
        "`ValueError`; `OutOfMemoryError` a `MemoryError`;",
        "`FailedPreconditionError` a `RuntimeError`; `WorkloadError` and",
        "`SweepError` (of `hrx.bench`, the `bench.*` rows) are `ValueError`s.",
        f"`SIZE` is {SIZE}.",
        "",
        f"The catalogue has {len(CASES)} rows over "
        f"{len({c.function for c in CASES})} calls, properties and `with` "
        f"statements; {sum(FOREIGN in c.needs for c in CASES)} of them use a "
        "second device. By exception: " + ", ".join(
            f"{count} `{name}`" for name, count in
            collections.Counter(c.raises for c in CASES).most_common()) + ".",
    ]
    by_object: dict[str, list[Case]] = {}
    for c in CASES:
        by_object.setdefault(_object_of(c.function), []).append(c)
    for name, cases in by_object.items():
        lines += ["", f"## {name}", "",
                  "| function | bad argument | exception raised | checked that "
                  "nothing changed |",
                  "| --- | --- | --- | --- |"]
        for c in cases:
            raised = f"`{c.raises}`"
            argument = c.argument.replace("|", "\\|")
            if TYPED_POINTERS in c.needs:
                argument += " *(pointers recorded)*"
            elif TYPED in c.needs:
                argument += " *(types recorded)*"
            lines.append(f"| `{c.function}` | {argument} | {raised} | "
                         f"{c.checked()} |")
    lines += ["", f"{len(CASES)} cases.", ""]
    return "\n".join(lines)


def _object_of(function: str) -> str:
    """The document's section for a row: the object whose call it is
    (`with Buffer`, `Buffer[a:b]` and `len(Buffer)` under Buffer), or
    "Module functions" for `hrx.backends` and `_hrx.bench_run`."""
    name = function.removeprefix("with ").removeprefix("len(")
    if name.startswith("fabric.Queue"):
        return "fabric.Queue"
    head = re.split(r"[.\[() ]", name, maxsplit=1)[0]
    return head if head[:1].isupper() else "Module functions"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true",
                        help="print docs/bad-input.md")
    args = parser.parse_args(argv)
    if args.markdown:
        sys.stdout.write(markdown())
    else:
        for c in CASES:
            print(f"{c.id}: {c.function} {c.argument} -> {c.raises}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
