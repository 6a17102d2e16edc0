"""No public call hangs while host callbacks drop the last reference to
device memory.

A Python host callback that drops a buffer's last reference has the
release deferred (it cannot free memory on its own queue's thread); the
release waits for every queue of the device, callbacks included, and a
callback needs the GIL. So a call that held the GIL while it ran (or waited
for) such a release would wait for a callback that waits for it: the
process would hang for good. Deferred releases run on the device's cleanup
thread only (csrc/core/cleanup.h), so no call can.

The scenario keeps callbacks dropping buffers on one stream while every
public call of the API (module functions, Device, Stream, fabric.Queue,
Buffer, Event, Readback, Graph, GraphNode, Completion, Kernel: methods,
properties, protocol dunders) runs against it, a few times each, in one
fresh process with one device; the calls that meet a second device run
again with two, where the backend has them.
faulthandler's watchdog ends the process with every thread's stack when a
call takes too long, so a hang fails the test (naming the call) instead of
stalling the suite. The table must cover every public member: a new one
without a row fails the test.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(r"""
    import faulthandler, gc, inspect, sys, time
    import numpy as np
    import hrx, hrx._hrx, hrx.fabric

    PROTOCOL = {"__new__", "__enter__", "__exit__", "__getitem__", "__len__",
                "__eq__", "__hash__", "__dlpack__", "__dlpack_device__",
                "__array__", "__cuda_array_interface__", "__cuda_stream__"}

    def public_members():
        out = {"module": sorted(
            name for name, value in vars(hrx._hrx).items()
            if not name.startswith("_") and inspect.isbuiltin(value))}
        for cls in (hrx.Device, hrx.Stream, hrx.fabric.Queue, hrx.Buffer,
                    hrx.Event, hrx.Readback, hrx.Graph, hrx.GraphNode,
                    hrx.Completion, hrx.Kernel, hrx.PinnedMemory,
                    hrx.PinnedScope):
            names = set()
            for klass in cls.__mro__[:-1]:
                names.update(name for name in vars(klass)
                              if not name.startswith("_") or name in PROTOCOL)
            out[cls.__name__] = sorted(names)
        return out

    backend, rounds, per_call = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    devices = int(sys.argv[4])  # 2: the rows that meet a second device use it
    only = set(sys.argv[5:])  # run only these rows ("Device.allocate")
    dev = hrx.Device.open(0, backend=backend)
    s = dev.stream()          # runs the callbacks
    t = dev.stream()          # the calls' own stream
    q = hrx.fabric.Queue(dev)
    # With one device, copy_peer copies within it and __eq__ compares with
    # another handle of it.
    other = hrx.Device.open(devices - 1, backend=backend)
    pool = [dev.allocate(64) for _ in range(20000)]

    def drop():               # the last reference of a buffer, in a callback
        if pool:
            pool.pop()
    dropper = hrx.Graph(dev)
    dropper.callback(drop)
    dropper.callback(drop)
    behind = hrx.Graph(dev)   # a callback that needs the GIL, queued later
    behind.callback(lambda: None)
    big = [dev.allocate(16 << 20) for _ in range(2)]
    s.fill(big[0], 1)
    s.copy(big[1], big[0])
    s.synchronize()
    t0 = time.monotonic()
    for _ in range(4):
        s.copy(big[1], big[0])
    s.synchronize()
    copies = max(2, int(0.02 / ((time.monotonic() - t0) / 4)))

    def drops():
        # When the call runs, releases made by callbacks are deferred and
        # wait for the queue's tail: about 20 ms of copies, then a callback
        # that needs the GIL.
        dropped = dropper.launch(s)
        for _ in range(copies):
            s.copy(big[1], big[0])
        behind.launch(s)
        dropped.wait()

    a, b = dev.allocate(256), dev.allocate(256)
    far = other.allocate(256)
    # A built-in kernel in the device's language (compiled once; the
    # memory cache serves the compiles below).
    language = dev.kernel_compiler()["language"]
    source = hrx._hrx.bench_kernel_source(language)
    kern = dev.compile(source, "hrx_bench_tiny")
    counts = dev.allocate(64)
    t.fill(a, 1)
    t.synchronize()

    def on(stream):
        # The Stream methods, for a pool stream and for a fabric queue.
        def completion():
            g = hrx.Graph(dev)
            g.callback(lambda: None)
            return g.launch(t)
        return {
            "allocate": lambda: stream.allocate(64),
            "to_device": lambda: stream.to_device(np.arange(4.0)),
            "copy": lambda: stream.copy(b, a),
            "copy_peer": lambda: stream.copy_peer(far, a),
            "fill": lambda: stream.fill(b, 2),
            "launch": lambda: stream.launch(kern, 1, 1, (counts,)),
            "upload": lambda: stream.upload(b[:4], b"abcd"),
            "read": lambda: stream.read(a).wait(),
            "read_blocking": lambda: stream.read_blocking(
                a, np.zeros(256, np.uint8)),
            "read_into": lambda: stream.read_into(
                a, np.zeros(256, np.uint8)).wait(),
            "synchronize": stream.synchronize,
            "flush": stream.flush,
            "record_event": lambda: stream.record_event(),
            "query": stream.query,
            "__cuda_stream__": lambda: stream.__cuda_stream__(),
            "wait_event": lambda: stream.wait_event(t.record_event()),
            "wait_completion": lambda: stream.wait_completion(completion()),
            "open": lambda: type(stream).open(0, backend=backend).close(),
            "__new__": lambda: type(stream)(dev).close(),
            "close": lambda: dev.stream().close(),
            "__enter__": lambda: dev.stream().__enter__().close(),
            "__exit__": lambda: dev.stream().__exit__(None, None, None),
            "device": lambda: stream.device,
            "queue_index": lambda: stream.queue_index,
            "priority": lambda: stream.priority,
            "reserved": lambda: stream.reserved,
            "native_handle": lambda: stream.native_handle,
            "closed": lambda: stream.closed,
        }

    def timing_pair():
        first = t.record_event(timing=True)
        return first, t.record_event(timing=True)

    def graph():
        g = hrx.Graph(dev)
        n = g.fill(b, 3)
        g.copy(a[:8], b[:8], after=[n])
        return g

    def pinned_upload():
        memory = np.zeros(64, np.uint8)
        with dev.pin(memory):
            t.upload(b[:64], memory)

    def launched():
        g = hrx.Graph(dev)
        g.callback(lambda: None)
        return g.launch(t)

    calls = {
        "module": {
            "backends": hrx._hrx.backends,
            "now_ns": hrx._hrx.now_ns,
            "bench_kernel_source": lambda: hrx._hrx.bench_kernel_source(
                language),
            "bench_launch": lambda: hrx._hrx.bench_launch(
                dev, launches=4, warmup=1),
            "bench_run": lambda: hrx._hrx.bench_run(
                dev, lanes=1, retained_streams=1, small_copies=2,
                bulk_bytes=4096, bulk_copies=1, loaded_copies=1, warmup=0,
                samples=1, loaded_probes=False),
        },
        "Device": {
            "__new__": lambda: hrx.Device(0, backend=backend).close(),
            "open": lambda: hrx.Device.open(0, backend=backend).close(),
            "clone": lambda: dev.clone().close(),
            "close": lambda: hrx.Device.open(0, backend=backend).close(),
            "__enter__": lambda: dev.clone().__enter__().close(),
            "__exit__": lambda: dev.clone().__exit__(None, None, None),
            "set_stream_queue_count": lambda: dev.set_stream_queue_count(
                dev.stream_queue_count),
            "set_batching": lambda: dev.set_batching(dev.batching),
            "set_stream_queue_policy": lambda: dev.set_stream_queue_policy(
                dev.stream_queue_policy),
            "stream": lambda: dev.stream().close(),
            "pool_stats": dev.pool_stats,
            "allocate": lambda: dev.allocate(64),
            "empty": lambda: dev.empty((2, 2), np.float32),
            "zeros": lambda: dev.zeros(4, np.int32),
            "asarray": lambda: dev.asarray(np.arange(4.0)),
            "empty_pinned": lambda: dev.empty_pinned(64),
            "is_pinned": lambda: dev.is_pinned(b"abcd"),
            "pin": pinned_upload,
            "compile": lambda: dev.compile(source, "hrx_bench_tiny").close(),
            "compile_module": lambda: dev.compile_module(
                source, ["hrx_bench_tiny"])["hrx_bench_tiny"].close(),
            "load_kernel": lambda: dev.load_kernel(
                kern.image, "hrx_bench_tiny").close(),
            "kernel_compiler": dev.kernel_compiler,
            "synchronize": dev.synchronize,
            "pool_info": dev.pool_info,
            "info": lambda: dev.info,
            "free_memory": lambda: dev.free_memory,
            "stream_queue_count": lambda: dev.stream_queue_count,
            "stream_queue_policy": lambda: dev.stream_queue_policy,
            "batching": lambda: dev.batching,
            "closed": lambda: dev.closed,
            "__eq__": lambda: dev == other,
            "__hash__": lambda: hash(dev),
        },
        "Stream": on(t),
        "Queue": on(q),
        "Buffer": {
            "__new__": lambda: hrx.Buffer(),
            "slice": lambda: a.slice(8, 8),
            "view": lambda: a.view(np.float32),
            "dtype": lambda: a.dtype,
            "shape": lambda: a.shape,
            "size": lambda: a.size,
            "itemsize": lambda: a.itemsize,
            "close": lambda: dev.allocate(64).close(),
            "__enter__": lambda: dev.allocate(64).__enter__().close(),
            "__exit__": lambda: dev.allocate(64).__exit__(None, None, None),
            "__getitem__": lambda: a[8:16],
            "__len__": lambda: len(a),
            "__dlpack__": lambda: a.__dlpack__(),
            "__dlpack_device__": a.__dlpack_device__,
            "__array__": lambda: a.__array__(),
            "__cuda_array_interface__": lambda: a.__cuda_array_interface__,
            "nbytes": lambda: a.nbytes,
            "offset": lambda: a.offset,
            "allocation_size": lambda: a.allocation_size,
            "device": lambda: a.device,
            "closed": lambda: a.closed,
        },
        "Event": {
            "query": lambda: t.record_event().query(),
            "elapsed_time": lambda: (lambda p: p[0].elapsed_time(p[1]))(
                timing_pair()),
            "timing": lambda: t.record_event().timing,
            "synchronize": lambda: t.record_event().synchronize(),
            "close": lambda: t.record_event().close(),
            "__enter__": lambda: t.record_event().__enter__().close(),
            "__exit__": lambda: t.record_event().__exit__(None, None, None),
            "device": lambda: t.record_event().device,
            "closed": lambda: t.record_event().closed,
        },
        "Readback": {
            "wait": lambda: t.read(a).wait(),
            "done": lambda: t.read(a).done(),
            "close": lambda: t.read(a).close(),
            "__enter__": lambda: t.read(a).__enter__().close(),
            "__exit__": lambda: t.read(a).__exit__(None, None, None),
        },
        "Graph": {
            "__new__": lambda: hrx.Graph(dev).close(),
            "copy": lambda: hrx.Graph(dev).copy(b, a),
            "fill": lambda: hrx.Graph(dev).fill(b, 4),
            "kernel": lambda: hrx.Graph(dev).kernel(kern, 1, 1, (counts,)),
            "callback": lambda: hrx.Graph(dev).callback(lambda: None),
            "add_dependency": lambda: (lambda g: g.add_dependency(
                g.fill(b, 1), g.fill(a[:8], 2)))(hrx.Graph(dev)),
            "launch": lambda: graph().launch(t),
            "close": lambda: graph().close(),
            "__enter__": lambda: graph().__enter__().close(),
            "__exit__": lambda: graph().__exit__(None, None, None),
            "device": lambda: graph().device,
            "node_count": lambda: graph().node_count,
            "native": lambda: graph().native,
            "closed": lambda: graph().closed,
        },
        "GraphNode": {
            "index": lambda: hrx.Graph(dev).fill(b, 1).index,
        },
        "Completion": {
            "done": lambda: launched().done(),
            "wait": lambda: launched().wait(),
            "result": lambda: launched().result(),
        },
        "PinnedMemory": {
            "nbytes": lambda: dev.empty_pinned(64).base.nbytes,
            "address": lambda: dev.empty_pinned(64).base.address,
            "device": lambda: dev.empty_pinned(64).base.device,
        },
        "PinnedScope": {
            "__enter__": pinned_upload,
            "__exit__": pinned_upload,
            "pinned": lambda: dev.pin(bytearray(64)).pinned,
        },
        "Kernel": {
            "__new__": lambda: hrx.Kernel(),
            "close": lambda: dev.compile(source, "hrx_bench_tiny").close(),
            "__enter__": lambda: dev.compile(
                source, "hrx_bench_tiny").__enter__().close(),
            "__exit__": lambda: dev.compile(
                source, "hrx_bench_tiny").__exit__(None, None, None),
            "name": lambda: kern.name,
            "device": lambda: kern.device,
            "image": lambda: kern.image,
            "attributes": lambda: kern.attributes,
            "params": lambda: kern.params,
            "origin": lambda: kern.origin,
            "cache_path": lambda: kern.cache_path,
            "cache_note": lambda: kern.cache_note,
            "closed": lambda: kern.closed,
        },
    }

    # Every public member has a row.
    missing = []
    for owner, members in public_members().items():
        for name in members:
            if name not in calls.get(owner, {}):
                missing.append(f"{owner}.{name}")
    if missing:
        print("missing rows:", ", ".join(sorted(missing)), flush=True)
        sys.exit(3)

    done = 0
    for owner, table in calls.items():
        for name, call in table.items():
            if only and f"{owner}.{name}" not in only:
                continue
            print(f"{owner}.{name}", flush=True)
            faulthandler.dump_traceback_later(per_call, exit=True)
            for _ in range(rounds):
                drops()
                try:
                    call()
                except (hrx.Error, TypeError, BufferError, AttributeError):
                    pass  # refusals are other tests' business
            faulthandler.cancel_dump_traceback_later()
            done += 1
    gc.collect()
    faulthandler.dump_traceback_later(per_call, exit=True)
    dev.synchronize()
    print(f"done {done} calls, {20000 - len(pool)} buffers dropped", flush=True)
""")



# The rows where a second device makes a difference.
SECOND_DEVICE_ROWS = ("Stream.copy_peer", "Queue.copy_peer", "Device.__eq__")


def run_child(backend: str, devices: int, rows: tuple = ()) -> int:
    """Runs the scenario; returns how many calls ran."""
    env = dict(os.environ)
    if backend == "host":
        env["HRX_HOST_DEVICE_COUNT"] = str(devices)
    result = subprocess.run(
        [sys.executable, "-c", CHILD, backend, "1", "20", str(devices), *rows],
        capture_output=True, text=True, timeout=600, env=env)
    last = result.stdout.strip().splitlines()[-1:] or ["(nothing)"]
    assert result.returncode == 0, (
        f"the process ended with {result.returncode} during {last[0]} "
        f"(a hang is ended by the watchdog):\n{result.stderr[-6000:]}")
    assert last[0].startswith("done"), result.stdout[-2000:]
    _, calls, _, dropped, _, _ = last[0].split()
    # Each call ran with two releases deferred: the scenario really ran.
    assert int(dropped) == 2 * int(calls), last[0]
    return int(calls)


def test_no_call_hangs_while_callbacks_drop_buffers(backend):
    """Every row, on one device (what a one-GPU machine has)."""
    assert run_child(backend, 1) > 100


def test_no_call_between_devices_hangs_while_callbacks_drop_buffers(
        backend, second_device):
    """The rows that meet a second device, with one."""
    assert run_child(backend, 2, SECOND_DEVICE_ROWS) == len(SECOND_DEVICE_ROWS)
