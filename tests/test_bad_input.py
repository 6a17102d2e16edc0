"""Conformance: the bad-input catalogue (tests/bad_input_cases.py).

For every case: the buffers the call could touch hold known bytes first;
the call must raise exactly the listed exception; then, after
synchronizing, every byte, `pool_info()` and any output buffer must be as
before.

The last tests close objects *during* a call (from an argument's
__index__): the call must fail cleanly or finish on what it retained.
"""
from __future__ import annotations

import builtins

import numpy as np
import pytest

import hrx
import hrx._hrx
import hrx.fabric

try:
    import bad_input_cases as catalogue
except ImportError:  # run from another rootdir: load it beside this file
    import importlib.util
    import pathlib
    _spec = importlib.util.spec_from_file_location(
        "bad_input_cases",
        pathlib.Path(__file__).with_name("bad_input_cases.py"))
    catalogue = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(catalogue)

SIZE = catalogue.SIZE


def exception_class(name: str) -> type[BaseException]:
    """hrx's exception `name`, else hrx.bench's (WorkloadError,
    SweepError), else the builtin."""
    import importlib

    homes = [hrx] + [importlib.import_module(f"hrx.bench.{module}")
                     for module in ("workload", "sweep")]
    for home in homes:
        found = getattr(home, name, None)
        if isinstance(found, type) and issubclass(found, BaseException):
            return found
    return getattr(builtins, name)


class Context:
    """What a case's `call` may use. Buffers a, b (and foreign) hold
    distinct known bytes."""

    def __init__(self, backend, device, second_device=None):
        self.hrx, self.np, self.backend = hrx, np, backend
        self.device = device
        self.stream = device.stream()
        self.a = device.allocate(SIZE)
        self.b = device.allocate(SIZE)
        rng = np.random.default_rng(SIZE)
        self.stream.upload(self.a, rng.integers(0, 256, SIZE, dtype=np.uint8))
        self.stream.upload(self.b, rng.integers(0, 256, SIZE, dtype=np.uint8))
        self.event = self.stream.record_event()
        self.closed_stream = device.stream()
        self.closed_stream.close()
        self.closed_buffer = device.allocate(SIZE)
        self.closed_buffer.close()
        self.closed_event = self.stream.record_event()
        self.closed_event.close()
        self.closed_readback = self.stream.read(self.a)
        self.closed_readback.close()
        self.closed_device = device.clone()
        self.closed_device.close()
        self.closed_view = self.a[0:16]
        self.closed_view.close()
        self.queue = hrx.fabric.Queue(device)
        self.closed_queue = hrx.fabric.Queue(device)
        self.closed_queue.close()
        self.readback = self.stream.read(self.b)
        self.second_device = second_device
        if second_device is not None:
            self.foreign_stream = second_device.stream()
            self.foreign = second_device.allocate(SIZE)
            self.foreign_stream.upload(
                self.foreign, rng.integers(0, 256, SIZE, dtype=np.uint8))
            self.foreign_event = self.foreign_stream.record_event()
            self.foreign_stream.synchronize()
        self.stream.synchronize()
        self.outputs: list[tuple[object, bytes]] = []

    def out(self, obj):
        """Registers an output buffer that must come back unchanged."""
        self.outputs.append((obj, bytes(memoryview(obj).cast("B"))))
        return obj

    def readonly_array(self, n: int) -> np.ndarray:
        arr = np.full(n, 0xEE, np.uint8)
        arr.flags.writeable = False
        return arr

    def snapshot(self) -> dict:
        self.device.synchronize()
        state = {
            "a": self.stream.read(self.a).wait().copy(),
            "b": self.stream.read(self.b).wait().copy(),
            "pool": self.device.pool_info(),
            "queue_count": self.device.stream_queue_count,
            "batching": self.device.batching,
        }
        if self.second_device is not None:
            self.second_device.synchronize()
            state["foreign"] = self.foreign_stream.read(
                self.foreign).wait().copy()
            state["foreign_pool"] = self.second_device.pool_info()
        return state

    def commands(self) -> tuple[int, ...]:
        """Commands handed to native queues so far, per device."""
        devices = [self.device] + ([self.second_device]
                                   if self.second_device is not None else [])
        return tuple(hrx._hrx._testing_commands_submitted(d) for d in devices)

    def check_unchanged(self, before: dict) -> None:
        after = self.snapshot()
        assert after.keys() == before.keys()
        for key in before:
            if isinstance(before[key], np.ndarray):
                assert np.array_equal(after[key], before[key]), (
                    f"bytes of {key} changed")
            else:
                assert after[key] == before[key], f"{key} changed"
        for obj, original in self.outputs:
            assert bytes(memoryview(obj).cast("B")) == original, (
                "the output buffer changed")

    def close(self) -> None:
        self.readback.wait()
        for obj in (self.readback, self.queue, self.stream, self.a, self.b,
                    self.event):
            obj.close()
        if self.second_device is not None:
            self.foreign_event.close()
            self.foreign.close()
            self.foreign_stream.close()


@pytest.fixture
def context(request, backend, device):
    case = request.node.callspec.params["case"]
    if catalogue.TYPED in case.needs or catalogue.TYPED_POINTERS in case.needs:
        import kernel_sources
        params = kernel_sources.compile_kernel(device, "add_one").params
        if not params or params[1]["type"] == "unknown":
            pytest.skip("the backend does not record parameter types")
        if (catalogue.TYPED_POINTERS in case.needs and
                (params[0]["type"], params[1]["type"]) != ("pointer",
                                                           "uint32")):
            pytest.skip("the backend does not tell pointers from integers "
                        "and unsigned from signed ones")

    if catalogue.HOST_ONLY in case.needs and backend != "host":
        pytest.skip("a refusal of the host backend's kernel compiler")
    second = (request.getfixturevalue("second_device")
              if catalogue.FOREIGN in case.needs else None)
    ctx = Context(backend, device, second)
    yield ctx
    ctx.close()


def _raise(case, context):
    """Runs the case; returns the exception after the safety checks."""
    if case.setup is not None:
        context.prepared = case.setup(context)
    before = context.snapshot()
    commands = context.commands()
    with pytest.raises(BaseException) as info:
        result = case.call(context)
        # Fails the test, naming what came back instead of an exception.
        pytest.fail(f"{case.function} accepted {case.argument}: {result!r}")
    if isinstance(info.value, pytest.fail.Exception):
        raise info.value
    assert context.commands() == commands, (
        f"{case.function} submitted work before raising "
        f"(commands {commands} -> {context.commands()})")
    context.check_unchanged(before)
    return info.value


@pytest.mark.parametrize("case", catalogue.CASES,
                         ids=[c.id for c in catalogue.CASES])
def test_bad_input(case, context):
    exc = _raise(case, context)
    assert type(exc) is exception_class(case.raises), (
        f"{case.function} with {case.argument} raised "
        f"{type(exc).__name__}: {exc}; expected {case.raises}")
    assert str(exc), "the error has no message"


# ------------------------------------------------------- the table itself

def test_case_ids_are_unique():
    ids = [c.id for c in catalogue.CASES]
    assert len(ids) == len(set(ids))


def test_every_listed_exception_exists():
    for c in catalogue.CASES:
        assert issubclass(exception_class(c.raises), Exception), c.id


def test_catalogue_covers_every_public_call():
    """Every method of Device, Stream, Buffer, Event and Readback that takes
    arguments, and each class of bad argument, has at least one row."""
    functions = {c.function for c in catalogue.CASES}
    required = {
        "Device.open", "Device()", "Device.set_stream_queue_count",
        "Device.allocate", "Device.stream", "Device.synchronize",
        "Device.pool_info", "Device.clone", "Stream.open", "Stream.allocate",
        "Stream.copy", "Stream.fill", "Stream.upload", "Stream.read",
        "Stream.read_blocking", "Stream.synchronize", "Stream.record_event",
        "Stream.wait_event", "Buffer.slice", "Buffer[a:b]", "Event.query",
        "Event.synchronize", "Readback.wait", "Readback.done",
        "fabric.Queue", "_hrx.bench_run", "Graph()", "Graph.copy",
        "Graph.fill", "Graph.callback", "Graph.add_dependency",
        "Graph.launch", "Stream.wait_completion", "Completion.wait",
        "Completion.result",
        "fabric.Queue.open",
        "fabric.Queue.copy", "fabric.Queue.fill", "fabric.Queue.upload",
        "fabric.Queue.read", "fabric.Queue.read_blocking",
        "fabric.Queue.wait_event", "fabric.Queue.record_event",
        "fabric.Queue.synchronize", "fabric.Queue.allocate", "backends",
        "Device.info", "Device.free_memory", "Device.stream_queue_count",
        "Device.set_batching", "Device.batching",
        "Stream.device", "Stream.queue_index", "Stream.native_handle",
        "Buffer.nbytes", "len(Buffer)", "Buffer.offset", "Buffer.view",
        "Device.empty", "Device.zeros", "Device.asarray", "Stream.to_device",
        "Buffer.allocation_size", "Buffer.device", "Event.device",
        "with Device", "with Stream", "with fabric.Queue", "with Buffer",
        "with Event", "with Readback", "Stream.query", "Event.elapsed_time",
        "Stream()", "Buffer()", "numpy.asarray(Buffer)",
        "Stream.launch", "fabric.Queue.launch", "Device.compile",
        "Device.load_kernel", "Device.kernel_compiler", "Kernel()",
        "Kernel.name", "Kernel.image", "Graph.kernel",
    }
    assert required <= functions, required - functions
    raised = {c.raises for c in catalogue.CASES}
    assert {"TypeError", "InvalidArgumentError", "OutOfRangeError",
            "OutOfMemoryError", "FailedPreconditionError"} <= raised
    assert any(catalogue.FOREIGN in c.needs for c in catalogue.CASES)


def test_docs_table_is_current():
    """docs/bad-input.md is exactly what the catalogue generates."""
    import pathlib
    doc = pathlib.Path(__file__).resolve().parent.parent / "docs" / (
        "bad-input.md")
    assert doc.read_text() == catalogue.markdown(), (
        "regenerate: python3 tests/bad_input_cases.py --markdown > "
        "docs/bad-input.md")


def test_runner_detects_a_call_that_does_not_raise(backend, device):
    """A row whose call succeeds fails the runner (it cannot pass
    silently)."""
    ctx = Context(backend, device)
    accepted = catalogue.Case("ok", "Stream.fill", "a valid byte",
                              "InvalidArgumentError",
                              lambda c: c.stream.fill(c.a[0:1], 1))
    with pytest.raises(pytest.fail.Exception, match="accepted"):
        _raise(accepted, ctx)
    ctx.close()


def test_runner_detects_submitted_work(backend, device):
    """A call that submits a command (even one that changes no checked byte)
    before raising fails the nothing-submitted check."""
    ctx = Context(backend, device)
    scratch = device.allocate(16)

    def submit_then_raise(c):
        c.stream.fill(scratch, 0)
        raise hrx.InvalidArgumentError("late")

    sneaky = catalogue.Case("sneaky", "Stream.fill", "x",
                            "InvalidArgumentError", submit_then_raise)
    with pytest.raises(AssertionError, match="submitted work"):
        _raise(sneaky, ctx)
    ctx.close()
    scratch.close()


def test_commands_submitted_counts_every_queued_command(backend, device):
    """The hook behind the nothing-submitted check counts each accepted
    command once (a read is a download plus its completion event)."""
    s = device.stream()
    buf = device.allocate(64)
    start = hrx._hrx._testing_commands_submitted(device)
    s.fill(buf, 1)
    s.upload(buf, bytes(64))
    s.copy(buf[0:32], buf[32:64])
    assert hrx._hrx._testing_commands_submitted(device) == start + 3
    s.read(buf).wait()
    s.read_blocking(buf, bytearray(64))
    assert hrx._hrx._testing_commands_submitted(device) == start + 7
    event = s.record_event()
    s.wait_event(event)
    assert hrx._hrx._testing_commands_submitted(device) == start + 9
    s.synchronize()
    assert hrx._hrx._testing_commands_submitted(device) == start + 9
    s.close()
    buf.close()
    event.close()


def test_runner_detects_changed_bytes(backend, device):
    """A call that writes before raising fails the unchanged-bytes check
    (on its own: the nothing-submitted check is switched off here)."""
    ctx = Context(backend, device)
    ctx.commands = lambda: ()

    def write_then_raise(c):
        c.stream.fill(c.b, 0)
        raise hrx.InvalidArgumentError("late")

    sneaky = catalogue.Case("sneaky", "Stream.fill", "x",
                            "InvalidArgumentError", write_then_raise)
    with pytest.raises(AssertionError, match="bytes of b changed"):
        _raise(sneaky, ctx)
    ctx.close()


def test_adjacent_ranges_are_not_an_overlap(backend, device):
    """The overlap rule refuses shared bytes only: touching ranges of one
    buffer copy fine, in both directions."""
    ctx = Context(backend, device)
    before = ctx.snapshot()["a"]
    ctx.stream.copy(ctx.a[0:10], ctx.a[10:20])
    ctx.stream.copy(ctx.a[30:40], ctx.a[20:30])
    ctx.stream.copy(ctx.a.slice(SIZE - 1, 1), ctx.a.slice(0, 1))
    expected = before.copy()
    expected[0:10] = before[10:20]
    expected[30:40] = before[20:30]
    expected[SIZE - 1] = expected[0]
    assert np.array_equal(ctx.stream.read(ctx.a).wait(), expected)
    ctx.close()


# -------------------- objects closed by an argument's __index__ mid-call

CLOSE_DURING_CALL = """
which = {which!r}
dev = hrx.Device.open(0, backend=backend)      # the only handle
s = dev.stream()
buf = dev.allocate(1 << 24)

class Closes:
    def __init__(self, target, value):
        self.target, self.value = target, value
    def __index__(self):
        self.target.close()
        return self.value

try:
    if which == "fill-closes-dst":
        s.fill(buf, Closes(buf, 7))
        s.synchronize()
    elif which == "fill-closes-stream":
        s.fill(buf, Closes(s, 7))
    elif which == "slice-closes-buffer":
        view = buf.slice(Closes(buf, 0), 4)
        assert not view.closed, "a closed view came back"
    elif which == "getitem-closes-buffer":
        view = buf[Closes(buf, 0):4]
        assert not view.closed, "a closed view came back"
    elif which == "set-count-closes-device":
        del s, buf
        dev.set_stream_queue_count(Closes(dev, 2))
    elif which == "allocate-closes-device":
        del s, buf
        dev.allocate(Closes(dev, 16))
    elif which == "stream-allocate-closes-stream":
        del buf
        dev.close()
        s.allocate(Closes(s, 16))
    print("accepted")
except hrx.FailedPreconditionError:
    print("FailedPreconditionError")
"""

@pytest.mark.parametrize("which", [
    "fill-closes-dst", "fill-closes-stream", "set-count-closes-device",
    "allocate-closes-device", "stream-allocate-closes-stream",
    "slice-closes-buffer", "getitem-closes-buffer"])
def test_object_closed_during_argument_conversion(fresh, which):
    """Closing an object from inside its own call (the only handle, so the C
    object goes) either fails cleanly with FailedPreconditionError or
    completes on an object the call retained; it never crashes, uses freed
    memory or returns a closed object. MALLOC_PERTURB_ fills freed memory,
    so a use after free shows every time."""
    lines = fresh(CLOSE_DURING_CALL.format(which=which),
                  env={"MALLOC_PERTURB_": "85"}).splitlines()
    assert lines and lines[-1] in ("FailedPreconditionError", "accepted")
