"""hrx: a GPU stream runtime whose logical streams share a small,
configurable pool of native queues (HIP streams), with the benchmark that
tunes the pool's size.

    import hrx
    device = hrx.Device.open()            # hip if a GPU is found, else host
    device.set_stream_queue_count(4)      # before the first stream
    stream = device.stream()              # pool queue, round-robin
    buf = device.allocate(1 << 20)
    stream.fill(buf, 7)
    print(stream.read(buf[:16]).wait())   # bytes (uint8)
    x = device.asarray(numpy.arange(1024, dtype=numpy.float32))
    stream.fill(x[512:], 1.5)             # typed: elements, float32 values
    print(stream.read(x[510:514]).wait())

The C extension ``hrx._hrx`` holds every rule; this package re-exports it
and adds Python helpers.
"""

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

from hrx._version import __version__  # noqa: E402


def _missing_extension(error: ModuleNotFoundError) -> ImportError:
    """The error for a package whose C extension is not built: most often
    Python started in the source checkout, whose ``hrx`` directory shadows
    the installed one."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    checkout = _os.path.dirname(here)
    if _os.path.exists(_os.path.join(checkout, "setup.py")):
        advice = (f"{here} is the source checkout's hrx, which has no built extension. "
                  f"Build it in place with `pip install -e .` in {checkout}, or start "
                  f"Python outside {checkout} to use an installed hrx (`pip install .`).")
    else:
        advice = (f"the package at {here} is incomplete; reinstall it "
                  f"(`pip install --force-reinstall hrx`).")
    message = f"hrx's C extension hrx._hrx cannot be imported: {advice}"
    return ImportError(message, name="hrx._hrx", path=here)


try:
    import importlib as _importlib

    _importlib.import_module("hrx._hrx")
except ModuleNotFoundError as _error:
    if _error.name != "hrx._hrx":
        raise
    raise _missing_extension(_error) from None

from hrx._hrx import (  # noqa: E402
    DEFAULT_STREAM_QUEUE_COUNT,
    KERNEL_MAX_ARG_BYTES,
    KERNEL_MAX_ARGS,
    KERNEL_MAX_MODULE_NAMES,
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
    Kernel,
    Module,
    OutOfMemoryError,
    OutOfRangeError,
    PinnedMemory,
    PinnedScope,
    Readback,
    ResourceExhaustedError,
    ResultMemory,
    Stream,
    UnavailableError,
    backends,
)
from hrx import fabric  # noqa: E402
from hrx import _hrx as _ext  # noqa: E402

# Host workers must not take the GIL once the interpreter shuts down: graph
# host callbacks still queued then are skipped.
_atexit.register(_ext._interpreter_exiting)


def kernel_include_dir() -> str:
    """The directory holding ``hrx_kernel.h``, the header of host-backend
    kernels (the block and grid indices, dynamic shared memory; see
    docs/kernels.md). hrx puts it before every host kernel source itself;
    this is for editors, linters and building an image offline."""
    return _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "include")


def __getattr__(name: str):
    """``hrx.bench`` without importing it first (loaded on first use: it
    imports numpy and the benchmark's modules, which the runtime does not
    need)."""
    if name == "bench":
        import importlib

        return importlib.import_module("hrx.bench")
    raise AttributeError(f"module 'hrx' has no attribute {name!r}")

__all__ = [
    "DEFAULT_STREAM_QUEUE_COUNT",
    "KERNEL_MAX_ARGS",
    "KERNEL_MAX_ARG_BYTES",
    "KERNEL_MAX_MODULE_NAMES",
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
    "Kernel",
    "Module",
    "OutOfMemoryError",
    "OutOfRangeError",
    "PinnedMemory",
    "PinnedScope",
    "Readback",
    "ResourceExhaustedError",
    "ResultMemory",
    "Stream",
    "UnavailableError",
    "backends",
    "fabric",
    "kernel_include_dir",
    "__version__",
]
