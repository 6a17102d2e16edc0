"""hrx: a GPU stream runtime whose logical streams share a small,
configurable pool of native queues (HIP streams), with the benchmark that
tunes the pool's size.

    import hrx
    device = hrx.Device.open()            # hip if a GPU is found, else host
    device.set_stream_queue_count(4)      # before the first stream
    stream = device.stream()              # pool queue, round-robin
    buf = device.allocate(1 << 20)
    stream.fill(buf, 7)
    print(stream.read(buf[:16]).wait())

The C extension ``hrx._hrx`` holds every rule; this package re-exports it
and adds Python helpers.
"""
from __future__ import annotations

import atexit as _atexit
import os as _os
import site as _site
import sys as _sys


def _advertise_site_dirs() -> None:
    """Lets the hip backend find a pip-installed CUDA runtime
    (``nvidia-cuda-runtime``): C cannot see ``sys.path``."""
    if "HRX_PYTHON_SITE_DIRS" in _os.environ:
        return
    dirs = [p for p in _sys.path if p and _os.path.isdir(p)]
    try:
        dirs += _site.getsitepackages()
    except AttributeError:  # virtualenv's old site module
        pass
    _os.environ["HRX_PYTHON_SITE_DIRS"] = _os.pathsep.join(dict.fromkeys(dirs))


_advertise_site_dirs()

from hrx._hrx import (  # noqa: E402
    DEFAULT_STREAM_QUEUE_COUNT,
    MAX_RESERVED_QUEUES,
    MAX_STREAM_QUEUE_COUNT,
    Buffer,
    BusyError,
    Completion,
    Device,
    DeviceError,
    Error,
    Event,
    FailedPreconditionError,
    Graph,
    GraphNode,
    InvalidArgumentError,
    OutOfMemoryError,
    OutOfRangeError,
    Readback,
    ResourceExhaustedError,
    Stream,
    UnavailableError,
    backends,
)
from hrx import fabric  # noqa: E402
from hrx import _hrx as _ext  # noqa: E402

# Host workers must not take the GIL once the interpreter shuts down: graph
# host callbacks still queued then are skipped.
_atexit.register(_ext._interpreter_exiting)

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_STREAM_QUEUE_COUNT",
    "MAX_RESERVED_QUEUES",
    "MAX_STREAM_QUEUE_COUNT",
    "Buffer",
    "BusyError",
    "Completion",
    "Device",
    "DeviceError",
    "Error",
    "Event",
    "FailedPreconditionError",
    "Graph",
    "GraphNode",
    "InvalidArgumentError",
    "OutOfMemoryError",
    "OutOfRangeError",
    "Readback",
    "ResourceExhaustedError",
    "Stream",
    "UnavailableError",
    "backends",
    "fabric",
    "__version__",
]
