"""Type stub of ``hrx._hrx``, the C extension that holds every rule of hrx.

Hand-written from csrc/python/; tests/test_stub_parity.py checks, in both
directions, that every public name, method, property and function here
exists at run time and the other way round. Names starting with ``_`` are
stub-only helpers (typed dicts, type variables).
"""

import builtins
from types import TracebackType
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final, Literal, NoReturn, Protocol, TypedDict, TypeVar, final

import numpy
import numpy.typing
from typing_extensions import Buffer as _BufferProtocol
from typing_extensions import Self, TypeAlias, disjoint_base

# ------------------------------------------------------------------ constants

DEFAULT_STREAM_QUEUE_COUNT: Final = 8
"""Pool size of a live device until set_stream_queue_count changes it."""
MAX_STREAM_QUEUE_COUNT: Final = 64
"""Largest pool size set_stream_queue_count accepts."""
MAX_RESERVED_QUEUES: Final = 64
"""Reserved queues (stream(reserve=True)) a live device holds at once."""
KERNEL_MAX_ARGS: Final = 128
"""The most arguments one kernel launch passes."""
KERNEL_MAX_ARG_BYTES: Final = 4096
KERNEL_MAX_MODULE_NAMES: Final = 1024
"""The most bytes of argument values one kernel launch passes."""

# ------------------------------------------------------------ stub-only types

class _BackendReport(TypedDict):
    name: str
    available: bool
    reason: str  # "" when available, else the loader's or runtime's message
    library: str | None  # hip: the runtime library it settled on; else None
    platform: Literal["amd", "nvidia"] | None  # hip: that library's kind
    # hip: the process's connection budget variable; None for host
    connections: _ConnectionBudget | None

class _ConnectionBudget(TypedDict):
    # "CUDA_DEVICE_MAX_CONNECTIONS" / "GPU_MAX_HW_QUEUES" / "HRX_HOST_ENGINES"
    # (host: its engines); None when none applies
    variable: str | None
    value: int | None  # in effect or to be applied; None when unset / n/a
    wanted: int  # what the pool asks for: count * 3 lanes + 4
    # "user", "hrx", "pending", "unset" (backends() only), "runtime-started"
    # (a hip device opened after the runtime started with nothing set: no
    # budget could take effect; value None), "not applicable"
    source: str

class _PoolQueueStats(TypedDict):
    priority: Literal["high", "normal", "low"]
    slot: int | None  # None for a reserved queue
    reserved: bool
    native_priority: int  # hip: the runtime's priority; host: the lane's rank (0 high, 1 normal, 2 low)
    streams: int  # live streams on the queue
    streams_assigned: int  # streams ever assigned
    commands_submitted: int
    bytes_submitted: int
    commands_in_flight: int  # published minus known complete
    bytes_in_flight: int  # published since the queue was last seen idle
    batches_published: int  # gathered runs of 2+ commands, one backend call each
    commands_batched: int  # the commands those runs carried

class _PoolStats(TypedDict):
    queue_count: int  # per lane
    policy: Literal["round_robin", "least_loaded"]
    first_use: bool
    reserved_live: int
    reserved_created: int
    reserved_refused: int
    connections: _ConnectionBudget
    queues: list[_PoolQueueStats]

class _DeviceInfo(TypedDict):
    backend: str  # "hip", "host"
    index: int
    name: str
    target: str  # "sm_90", "gfx1151", "host-x86_64"
    runtime: str
    total_memory: int
    max_native_queues: int  # 0 when the runtime states no limit
    selection: str  # how the backend was chosen; automatic: what was passed over
    batch_publication: str  # how batched commands reach the device
    launch_publication: str  # how kernel launches reach it (gathered or not)
    platform: Literal["nvidia", "amd", "cpu"]  # where buffer memory lives
    engines: int  # host: engine threads serving the queues; 0 elsewhere
    device_count: int  # devices of the backend (indices 0 .. device_count - 1)
    # Each other device of the backend: how Stream.copy_peer reaches it.
    peer: dict[int, Literal["direct", "peer", "staged"]]
    # Kernel launch limits (all 0 where the backend runs no kernels).
    max_threads_per_block: int
    max_block_dim: tuple[int, int, int]
    max_grid_dim: tuple[int, int, int]
    max_shared_bytes_per_block: int

class _KernelCompiler(TypedDict):
    language: Literal["c", "cuda", "hip"]
    compiler: str  # the compiler and its version
    target: str  # "host-x86_64", "sm_90", "gfx1151"
    image_format: str  # "elf", "cubin", "ptx", "hsaco"

class _KernelAttributes(TypedDict):
    # None where the runtime cannot tell the parameters (argument counts
    # and sizes are then not checked)
    param_count: int | None
    param_sizes: tuple[int, ...] | None
    param_offsets: tuple[int, ...] | None
    max_threads_per_block: int
    static_shared_bytes: int
    max_dynamic_shared_bytes: int

class _KernelParam(TypedDict):
    name: str | None  # None where the declaration is not read
    # "pointer", "int32", "uint8", "int32/uint32" (signedness not
    # recorded; "int64/uint64/pointer" at pointer size), "float32", "bool",
    # "unknown" (only the size is checked)
    type: str
    size: int

class _CudaArray(Protocol):
    @property
    def __cuda_array_interface__(self) -> dict[str, Any]: ...

class _DLPackArray(Protocol):
    def __dlpack__(self, **kwargs: Any) -> Any: ...
    def __dlpack_device__(self) -> tuple[int, int]: ...

# What a kernel launch takes as one argument (docs/kernels.md).
_KernelArg: TypeAlias = (
    Buffer | int | float | bool | numpy.generic | _CudaArray | _DLPackArray
)
# A grid or block: an int, or 1 to 3 ints.
_Dims: TypeAlias = int | tuple[int] | tuple[int, int] | tuple[int, int, int] | list[int]

class _PoolInfo(TypedDict):
    queue_count: int
    queues_created: int
    next_slot: int
    first_use: bool
    live_streams: int
    fabric_queues: int

class _DLPackHost(Protocol):
    """A DLPack producer in host memory (CPU, CUDA host or ROCm host), e.g.
    a torch CPU tensor; used where an object has no buffer protocol."""

    def __dlpack__(self, **kwargs: Any) -> Any: ...
    def __dlpack_device__(self) -> tuple[int, int]: ...

# What a typed view's dtype may be given as: anything numpy.dtype() takes
# that names bool, int8..int64, uint8..uint64, float16/32/64 or
# complex64/128 in native byte order (docs/api.md#typed-buffers).
_DTypeLike: TypeAlias = numpy.typing.DTypeLike
# A shape: an int or a sequence of ints.
_ShapeLike: TypeAlias = int | Iterable[int]

# Host memory exposing the buffer protocol: bytes, bytearray, memoryview,
# numpy arrays (numpy declares __buffer__ only from Python 3.12 on).
_BufferLike: TypeAlias = _BufferProtocol | numpy.typing.NDArray[Any]
_Writable = TypeVar("_Writable", bound=_BufferLike | _DLPackHost)

# ------------------------------------------------------------------ errors

class Error(Exception):
    """Base class of every error hrx raises."""

class InvalidArgumentError(Error, ValueError):
    """An argument has a wrong value."""

class BusyError(Error, RuntimeError):
    """The setting is in use and cannot change now."""

class OutOfMemoryError(Error, MemoryError):
    """Device or host memory ran out."""

class UnavailableError(Error, RuntimeError):
    """A backend or device is not available."""

class ResourceExhaustedError(Error, RuntimeError):
    """The native runtime refused a resource such as a queue."""

class OutOfRangeError(Error, IndexError, ValueError):
    """An index or byte range is out of bounds."""

class FailedPreconditionError(Error, RuntimeError):
    """The object is not in a state that allows the call, e.g. it is closed."""

class DeviceError(Error, RuntimeError):
    """The native runtime reported an error."""

# ------------------------------------------------------------------ functions

def backends() -> list[_BackendReport]:
    """Every compiled-in backend, in automatic-selection order, probed.
    Probing never changes the environment: the connection budget is applied
    by opening a hip device (docs/lanes.md)."""

def now_ns() -> int:
    """The monotonic clock hrx times with, in nanoseconds."""

def bench_run(
    device: Device,
    *,
    driver: Literal["native", "raw"] = "native",
    lanes: int = 16,
    retained_streams: int = 16,
    small_bytes: int = 4096,
    small_copies: int = 1024,
    bulk_bytes: int = 33554432,
    bulk_copies: int = 16,
    loaded_copies: int = 4,
    warmup: int = 3,
    samples: int = 15,
    loaded_probes: bool = True,
    kernel_spin_ns: int = 20000,
    kernel_launches: int = 512,
    backlog_blocks: int = 16384,
    backlog_kernels: int = 4,
    transfer_bytes: int = 8388608,
    transfer_copies: int = 1,
    compute_samples: int = 16,
    transfer_samples: int = 8,
    contention: bool = True,
) -> dict[str, Any]:
    """Runs the queue-pool benchmark's cases in C; returns raw timings."""

class _LaunchTimings(TypedDict):
    driver: Literal["native", "raw", "python"]
    kernel: Literal["tiny", "spin"]
    grid: int
    block: int
    spin_ns: int
    threads: int
    launches: int  # in all threads
    elapsed_ns: int  # common start to the slowest thread's synchronize
    thread_ns: list[int]

def bench_launch(
    device: Device,
    *,
    driver: Literal["native", "raw"] = "native",
    kernel: Literal["tiny", "spin"] = "tiny",
    grid: int = 1,
    block: int = 1,
    spin_ns: int = 0,
    launches: int = 1000,
    warmup: int = 100,
    threads: int = 1,
    priority: Literal["high", "normal", "low"] = "normal",
    synchronize_each: bool = False,
) -> _LaunchTimings:
    """Times launches of a built-in benchmark kernel in C, each thread on
    a stream (native) or native queue (raw) of its own."""

def bench_kernel_source(language: str, /) -> str | None:
    """The built-in benchmark kernels' source in a kernel language."""

# ------------------------------------------------------------------ device

@final
class Device:
    """A handle on a live device. Handles of the same (backend, index) share
    one live device, its pool setting and queues."""

    def __new__(
        cls, index: int = 0, backend: str | None = None, *,
        batching: bool | None = None,
    ) -> Self:
        """Same as Device.open(index, backend, batching=batching)."""

    @classmethod
    def open(
        cls, index: int = 0, backend: str | None = None, *,
        batching: bool | None = None,
    ) -> Device:
        """backend None means $HRX_BACKEND, else the first available.
        batching True/False sets the live device's batching switch."""

    def clone(self) -> Device:
        """Another handle on the same live device."""

    def close(self) -> None:
        """Drops this handle only (idempotent): other handles, streams,
        buffers, events, graphs and kernels of the device keep working, and
        the live device (pool size, queues, settings) goes once nothing of
        it is left."""

    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> Literal[False]:
        """Closes this handle."""

    def set_stream_queue_count(self, n: int, /) -> None:
        """Pool size, 1..MAX_STREAM_QUEUE_COUNT, before the first pool queue
        exists (BusyError after, unless n is the current value; its message
        counts what still holds the live device)."""

    def set_batching(self, enabled: bool, /) -> None:
        """Submission batching on or off for the live device (all handles);
        off publishes pending work at once."""

    def set_stream_queue_policy(
        self, policy: Literal["round_robin", "least_loaded"], /
    ) -> None:
        """Queue policy, before the first pool queue exists (BusyError
        after, unless it is the current policy)."""

    def stream(
        self,
        *,
        priority: Literal["high", "normal", "low"] | int | None = "normal",
        reserve: bool = False,
    ) -> Stream:
        """A pool stream on a queue of the priority's lane (1 high, 0
        normal, -1 low; None is "normal"), chosen by the queue policy, or on
        a queue of its own with reserve=True."""

    def pool_stats(self) -> _PoolStats:
        """Per-queue counters and the connection budget."""

    def allocate(self, nbytes: int, /) -> Buffer:
        """Device memory of nbytes (>= 1) bytes, untyped."""

    def empty(self, shape: _ShapeLike, dtype: _DTypeLike) -> Buffer:
        """A typed buffer of shape and dtype, not initialized."""

    def zeros(
        self, shape: _ShapeLike, dtype: _DTypeLike, stream: Stream | None = None
    ) -> Buffer:
        """empty(shape, dtype) filled with zeros on stream (ordered there)
        or, with None, on a stream of its own, synchronized first."""

    def asarray(
        self,
        array: Any,
        dtype: _DTypeLike | None = None,
        stream: Stream | None = None,
    ) -> Buffer:
        """A typed buffer holding numpy.ascontiguousarray(array, dtype),
        uploaded on stream (ordered there) or, with None, on a stream of
        its own, synchronized first."""

    def empty_pinned(
        self,
        shape: int | Iterable[int],
        dtype: numpy.typing.DTypeLike = "uint8",
    ) -> numpy.typing.NDArray[Any]:
        """A new uninitialised array of pinned host memory of this device,
        from its pinned pool; its base (PinnedMemory) owns the memory.
        Uploads from it and reads into it copy directly and
        asynchronously."""

    def pin(self, obj: _BufferProtocol | _DLPackHost, /) -> PinnedScope:
        """A context manager pinning obj's C-contiguous host memory for
        this device inside the with block; its exit waits for the copies
        queued with the memory, then unpins it."""

    def is_pinned(self, obj: _BufferProtocol | _DLPackHost, /) -> bool:
        """Whether obj's host memory lies wholly in pinned memory of this
        device (what uploads and reads copy directly)."""

    def synchronize(self) -> None:
        """Waits for all work on the pool's queues."""

    def pool_info(self) -> _PoolInfo:
        """A snapshot of the pool's state."""

    def compile(
        self, source: str, name: str, *, options: Iterable[str] = ()
    ) -> Kernel:
        """Compiles source (cached in memory and on disk) and returns its
        kernel `name`; options pass through to the compiler. The compile
        covers every kernel the source declares, so compiling another of
        them finds the module."""

    def compile_module(
        self, source: str, names: Iterable[str], *, options: Iterable[str] = ()
    ) -> Module:
        """Compiles source once and returns its kernels `names` as a
        Module; cached like compile()."""

    def load_kernel(self, image: _BufferProtocol | bytes, name: str) -> Kernel:
        """The kernel `name` of an image (Kernel.image, or built offline)."""

    def kernel_compiler(self) -> _KernelCompiler:
        """The device's kernel compiler (UnavailableError when none)."""

    @property
    def info(self) -> _DeviceInfo: ...
    @property
    def free_memory(self) -> int:
        """Free device memory in bytes."""

    @property
    def stream_queue_count(self) -> int:
        """The pool size (per priority lane)."""

    @property
    def stream_queue_policy(self) -> Literal["round_robin", "least_loaded"]:
        """How a new pool stream's queue is chosen."""

    @property
    def batching(self) -> bool:
        """Whether submission batching is on."""

    @property
    def closed(self) -> bool: ...
    def __eq__(self, value: object, /) -> bool:
        """True when both handles are open on the same live device."""

    def __ne__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int:
        """The live device's hash: equal handles hash alike."""

# ------------------------------------------------------------------ streams

@disjoint_base
class Stream:
    """An ordered stream of device work on one pool queue, assigned
    round-robin for the stream's life. Not instantiable: use Device.stream()
    or Stream.open().

    ``with stream:`` closes the stream when the block ends; it does not make
    it a "current stream" as ``with cupy.cuda.Stream():`` does (hrx has no
    current stream: every call names its stream)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> NoReturn:
        """Refuses with a TypeError that says how to get a stream."""

    @classmethod
    def open(
        cls, index: int = 0, backend: str | None = None, *,
        batching: bool | None = None,
    ) -> Self:
        """Opens that live device as Device.open does and returns a stream
        of it: a pool stream for Stream.open, a queue outside the pool for
        hrx.fabric.Queue.open."""

    def allocate(self, nbytes: int, /) -> Buffer:
        """An untyped buffer of the stream's device."""

    def to_device(self, array: Any, /) -> Buffer:
        """A typed buffer of the stream's device holding
        numpy.ascontiguousarray(array), uploaded in this stream's order."""

    def copy(self, dst: Buffer, src: Buffer, /) -> None:
        """Device copy between equal-length, non-overlapping views."""

    def copy_peer(self, dst: Buffer, src: Buffer, /) -> None:
        """Copy between buffers of two devices of this stream's backend, one
        of them this stream's device, in this stream's order (path:
        Device.info["peer"]); the other device's work is ordered by events
        only."""

    def fill(self, dst: Buffer, value: int | float | complex, /) -> None:
        """Sets every byte of an untyped dst to value (0..255), or every
        element of a typed dst to value as its dtype (refused when it does
        not fit)."""

    def upload(self, dst: Buffer, data: _BufferLike | _DLPackHost, /) -> None:
        """Copies C-contiguous host memory (buffer protocol, else a host
        DLPack tensor) of exactly dst.nbytes bytes into dst; a typed dst
        takes data of its dtype (or bytes, bytearray, a byte memoryview);
        data may be reused as soon as this returns."""

    def read(self, src: Buffer, /) -> Readback:
        """An asynchronous read of src; its wait() returns an array of a
        typed src's dtype and shape, uint8 bytes for an untyped one."""

    def read_into(self, src: Buffer, out: _Writable, /) -> Readback:
        """An asynchronous read of src into out, a writable C-contiguous
        buffer of exactly src.nbytes bytes, held until the Readback is
        waited, closed or collected; wait() returns out."""

    def read_blocking(self, src: Buffer, out: _Writable, /) -> _Writable:
        """Reads src into the first src.nbytes bytes of writable
        C-contiguous host memory (buffer protocol, else a host DLPack
        tensor); returns out."""

    def synchronize(self) -> None:
        """Waits for the work published on this stream."""

    def flush(self) -> None:
        """Publishes the stream's pending batch now, without an event or a
        wait; raises an earlier command's failure like synchronize()."""

    def record_event(self, *, timing: bool = False) -> Event:
        """An event for the work published so far; with timing=True it also
        notes when that work completed (Event.elapsed_time)."""

    def query(self) -> bool:
        """Whether all work the stream accepted is done; never waits (False
        while work waits in a pending batch; on a shared queue, other
        streams' earlier work counts too)."""

    def __cuda_stream__(self) -> tuple[int, int]:
        """The CUDA stream protocol, (0, cudaStream_t handle). Only on NVIDIA
        GPUs; elsewhere the attribute is absent (AttributeError says why)."""

    def launch(
        self,
        kernel: Kernel,
        grid: _Dims,
        block: _Dims,
        args: Iterable[_KernelArg] = (),
        shared: int = 0,
    ) -> None:
        """Launches the kernel in this stream's order (a command like a
        copy); checked against the device's and kernel's limits first."""

    def wait_event(self, event: Event, /) -> None:
        """Later work on this stream's queue waits for event (device-side);
        the event may be of another device of the same backend."""

    def wait_completion(self, completion: Completion, /) -> None:
        """Later work on this stream runs after the completion (of any
        device): until it is done, the next submission, record_event() or
        synchronize() waits for it on the host (Ctrl-C interrupts it)."""

    def close(self) -> None:
        """Drops the stream; its queued work still completes (idempotent)."""

    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> Literal[False]:
        """Closes the stream."""

    @property
    def device(self) -> Device: ...
    @property
    def queue_index(self) -> int | None:
        """Pool slot of the stream's queue within its lane; None outside
        the pool and for a reserved queue."""

    @property
    def priority(self) -> Literal["high", "normal", "low"]:
        """The stream's priority lane."""

    @property
    def reserved(self) -> bool:
        """Whether the stream's queue is reserved for it alone."""

    @property
    def native_handle(self) -> int:
        """The native queue handle (hipStream_t / cudaStream_t) as an int:
        torch.cuda.ExternalStream(h) / cupy.cuda.ExternalStream(h) run
        their kernels on it. A host-backend queue's address otherwise."""

    @property
    def closed(self) -> bool: ...

@final
class FabricQueue(Stream):
    """hrx.fabric.Queue: a native queue outside the stream queue pool."""

    def __new__(cls, device: Device) -> Self: ...
    @property
    def queue_index(self) -> None:
        """Always None: the queue has no pool slot."""

# ------------------------------------------------------------------ buffers

@final
class Buffer:
    """Device memory, or a view (byte range) of it, usable by every stream
    of its device. Not instantiable: use Device.allocate or Stream.allocate."""

    def __new__(cls, *args: Any, **kwargs: Any) -> NoReturn:
        """Refuses with a TypeError that says how to allocate a buffer."""

    def slice(self, offset: int, length: int) -> Buffer:
        """An untyped view [offset, offset + length) of this untyped view,
        in bytes, bounds-checked (TypeError on a typed view)."""

    def view(self, dtype: _DTypeLike | None, shape: _ShapeLike | None = None) -> Buffer:
        """These bytes as a typed view of dtype and shape (None: 1-D, as
        many elements as fit; else exactly these bytes, one extent may be
        -1), without a copy; dtype None: an untyped view."""

    def close(self) -> None:
        """Drops this view and every view taken from it (idempotent);
        memory goes once no open view, queued command or DLPack consumer
        uses it."""

    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> Literal[False]:
        """Closes this view."""

    def __getitem__(self, key: builtins.slice, /) -> Buffer:
        """buf[a:b]: bytes of an untyped view, elements (1-D) or rows of
        the first axis of a typed one; negative bounds count from the end;
        no clamping; step must be 1."""

    def __len__(self) -> int:
        """Bytes of an untyped view; the first extent of a typed one."""
    def __dlpack__(
        self,
        *,
        stream: int | None = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """This view as a DLPack tensor of its dtype and shape (untyped: 1-D
        uint8), without a copy; the consumer holds a reference to the memory
        until it frees the tensor.
        A versioned (1.0) capsule when max_version asks for major >= 1.
        Unless stream is -1, the consumer's stream (None: the default
        stream) waits on the device, through events, for the work already
        submitted to the device's pool queues (host memory: the host waits
        for it). copy=True is a BufferError."""

    def __array__(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Refuses: numpy cannot view device memory; use Stream.read."""

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """The CUDA Array Interface v3 (its dtype and shape; untyped: 1-D
        uint8), for Numba and CuPy; its
        stream is the legacy default stream, made to wait for the device's
        submitted work. Only on NVIDIA GPUs; elsewhere the attribute is
        absent (AttributeError says why)."""

    def __dlpack_device__(self) -> tuple[int, int]:
        """(1, 0) on the host backend; (2, ordinal) for CUDA and
        (10, ordinal) for ROCm memory."""

    @property
    def nbytes(self) -> int:
        """Length of this view in bytes."""

    @property
    def dtype(self) -> numpy.dtype[Any] | None:
        """The element type; None for an untyped (byte) view."""

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape; (nbytes,) for an untyped view."""

    @property
    def size(self) -> int:
        """Elements; nbytes for an untyped view."""

    @property
    def itemsize(self) -> int:
        """Bytes per element; 1 for an untyped view."""

    @property
    def offset(self) -> int:
        """Offset of this view in its allocation."""

    @property
    def allocation_size(self) -> int: ...
    @property
    def device(self) -> Device: ...
    @property
    def closed(self) -> bool: ...

# ------------------------------------------------------------------ events

@final
class Event:
    """Completes when the work its stream had published at
    Stream.record_event() is done. Not instantiable."""

    def query(self) -> bool:
        """Whether the recorded work is done."""

    def elapsed_time(self, end: Event, /) -> float:
        """Milliseconds from this event's completion to end's (as
        torch.cuda.Event.elapsed_time); both recorded with timing=True on
        one device and complete. Never waits."""

    @property
    def timing(self) -> bool:
        """Whether the event was recorded with timing=True."""

    def synchronize(self) -> None:
        """Waits until the recorded work is done."""

    def close(self) -> None:
        """Drops this event (idempotent)."""

    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> Literal[False]:
        """Closes this event."""

    @property
    def device(self) -> Device: ...
    @property
    def closed(self) -> bool: ...

@final
class Readback:
    """An asynchronous device-to-host read (Stream.read). Not
    instantiable."""

    def wait(self) -> numpy.typing.NDArray[Any]:
        """Blocks until the read is done; returns its data (cached): an
        array of a typed view's dtype and shape, uint8 bytes otherwise,
        writable; a large one's memory is ResultMemory (pooled)."""

    def done(self) -> bool:
        """Whether the read has completed."""

    def close(self) -> None:
        """Drops the read's staging memory without waiting for it; closed
        from now on, also once a wait returned (arrays it returned stay)."""

    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> Literal[False]:
        """Closes the read."""

@final
class ResultMemory:
    """Pageable host memory of a large array that Readback.wait() returned
    (the array's base): exports its bytes with the buffer protocol; once
    nothing refers to it, it goes back to a process-wide pool
    (HRX_RESULT_CACHE_BYTES) that later results are copied into. Holds no
    device. Not instantiable."""

    def __buffer__(self, flags: int, /) -> memoryview: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def address(self) -> int: ...

# ------------------------------------------------------- pinned host memory

@final
class PinnedMemory:
    """Pinned host memory of a device, the base of Device.empty_pinned's
    arrays: exports its bytes with the buffer protocol; goes back to the
    device's pinned pool once nothing refers to it and its queued copies
    are done. Not instantiable."""

    def __buffer__(self, flags: int, /) -> memoryview: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def address(self) -> int: ...
    @property
    def device(self) -> Device: ...

@final
class PinnedScope:
    """Device.pin(obj): pins obj's memory for the device inside the with
    block. Not instantiable."""

    def __enter__(self) -> Any:
        """Pins the memory; returns the pinned object."""

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> Literal[False]:
        """Waits for the copies queued with the memory, then unpins it."""

    @property
    def pinned(self) -> bool: ...

# ------------------------------------------------------------------ graphs

@final
class GraphNode:
    """A node of a Graph (Graph.copy, fill, callback). Not instantiable."""

    @property
    def index(self) -> int:
        """Position in the graph's recording order."""

@final
class Graph:
    """Copies, fills, kernel launches and host callbacks with explicit
    dependencies, launched on streams of its device any number of times.
    Keeps its buffers and kernels alive."""

    def __new__(cls, device: Device) -> Self: ...
    def copy(
        self, dst: Buffer, src: Buffer, *, after: Iterable[GraphNode] = ()
    ) -> GraphNode:
        """A device copy between equal-length, non-overlapping views."""

    def fill(
        self, dst: Buffer, byte: int, *, after: Iterable[GraphNode] = ()
    ) -> GraphNode:
        """Sets every byte of dst to byte (0..255); for a typed dst, byte is
        an element value whose bytes must all be equal (0; -1 when signed)."""

    def kernel(
        self,
        kernel: Kernel,
        grid: _Dims,
        block: _Dims,
        args: Iterable[_KernelArg] = (),
        shared: int = 0,
        *,
        after: Iterable[GraphNode] = (),
    ) -> GraphNode:
        """A kernel launch node (arguments copied now; the graph keeps the
        kernel and buffers alive)."""

    def callback(
        self, fn: Callable[[], object], *, after: Iterable[GraphNode] = ()
    ) -> GraphNode:
        """Calls fn() on a host worker once the nodes in after are done;
        later nodes wait for it. fn must not submit, allocate or wait."""

    def add_dependency(self, node: GraphNode, after: GraphNode) -> None:
        """node runs after `after`; refused if it would close a cycle."""

    def launch(self, stream: Stream, /) -> Completion | None:
        """Runs the graph on the stream, in order with its other work. A
        Completion for graphs with host callbacks, else None. Seals the
        graph."""

    def close(self) -> None:
        """Drops this handle (idempotent); launches still complete."""

    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> Literal[False]:
        """Closes the graph."""

    @property
    def device(self) -> Device: ...
    @property
    def node_count(self) -> int: ...
    @property
    def native(self) -> bool:
        """Launches run as one native graph (hip, device work only)."""

    @property
    def closed(self) -> bool: ...

@final
class Kernel:
    """A kernel compiled or loaded for one device (Device.compile,
    Device.load_kernel); launched with Stream.launch or Graph.kernel."""

    def __new__(cls, *args: Any, **kwargs: Any) -> NoReturn:
        """Refuses: get one from Device.compile or Device.load_kernel."""

    def close(self) -> None:
        """Drops the kernel (idempotent); launches in flight still run."""

    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> Literal[False]:
        """Closes the kernel."""

    @property
    def name(self) -> str: ...
    @property
    def device(self) -> Device: ...
    @property
    def image(self) -> bytes:
        """The module's image, for Device.load_kernel."""

    @property
    def attributes(self) -> _KernelAttributes: ...
    @property
    def params(self) -> tuple[_KernelParam, ...] | None:
        """Each parameter's name, type and size; None where the runtime
        cannot tell the parameters."""

    @property
    def origin(self) -> Literal["compiled", "memory cache", "disk cache", "image"]:
        """Where the module came from."""

    @property
    def cache_path(self) -> str | None:
        """The disk cache entry read or written, or None."""

    @property
    def cache_note(self) -> str:
        """Why there is no disk cache entry, or that one was rebuilt."""

    @property
    def closed(self) -> bool: ...

@final
class Module:
    """The kernels of one compile of a source (Device.compile_module): a
    read-only mapping from each name to its Kernel."""

    def __new__(cls, *args: Any, **kwargs: Any) -> NoReturn:
        """Refuses: get one from Device.compile_module."""

    def get(self, name: str, /) -> Kernel:
        """The kernel `name`; KeyError for a name not compiled."""

    def __getitem__(self, key: str, /) -> Kernel: ...
    def __contains__(self, key: object, /) -> bool: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[str]: ...
    @property
    def names(self) -> tuple[str, ...]:
        """The kernels' names, in the order compiled."""

@final
class Completion:
    """Completes when every node of one graph launch, host callbacks
    included, has run: a host-side latch, never a native event. Not
    instantiable: Graph.launch returns it."""

    def done(self) -> bool:
        """Whether the launch is complete."""

    def wait(self, timeout: float | None = None) -> bool:
        """Blocks (GIL released) until complete or timeout seconds; True
        when complete."""

    def result(self, timeout: float | None = None) -> None:
        """Waits, then re-raises the first raising callback's exception
        (TimeoutError if not complete in time)."""
