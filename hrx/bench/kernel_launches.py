"""Kernel launches through the public Python API (driver "python"), beside
the C driver's ``hrx._hrx.bench_launch`` (drivers "native" and "raw").

The benchmark's built-in kernels (csrc/bench/bench_kernel_sources.h) are
compiled from the same source as the C driver's, so both use one cache
entry: ``hrx_bench_tiny(out)`` adds 1 to out[block]; ``hrx_bench_spin(ns,
out)`` busy-waits ``ns`` nanoseconds per block first.

``launch_rate`` returns the dict shape of ``bench_launch`` with
driver "python": each of ``threads`` Python threads launches on a stream of
its own, the threads start together, and the elapsed time runs from the
first start to the slowest thread's synchronize. Its numbers include the
Python layer and the GIL, which is the point. ``call_ns`` gives each
thread's time from its start until its last launch call returned (before
its synchronize): per launch, what the launch calls themselves cost that
thread, GIL waits included.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Dict, List

import numpy as np

from hrx import _hrx

__all__ = ["KERNELS", "builtin_kernel", "launch_latency", "launch_rate"]

KERNELS = {"tiny": "hrx_bench_tiny", "spin": "hrx_bench_spin"}
"""Built-in kernel name -> its symbol."""


def builtin_kernel(device: Any, name: str) -> Any:
    """The built-in kernel ``name`` ('tiny' or 'spin') for the device's
    kernel language, compiled through the cache."""
    if name not in KERNELS:
        raise ValueError(f"unknown benchmark kernel {name!r}; one of "
                         f"{sorted(KERNELS)}")
    language = device.kernel_compiler()["language"]
    source = _hrx.bench_kernel_source(language)
    if source is None:
        raise _hrx.UnavailableError(
            f"no benchmark kernels in language {language!r}")
    return device.compile(source, KERNELS[name])


def launch_rate(device: Any, *, kernel: str = "tiny", grid: int = 1,
                block: int = 1, spin_ns: int = 0, launches: int = 1000,
                warmup: int = 100, threads: int = 1,
                priority: str = "normal") -> Dict[str, Any]:
    """Times ``launches`` launches per thread through Stream.launch (see
    the module's docstring); checks every block's output afterwards."""
    if threads < 1 or launches < 1 or grid < 1 or block < 1:
        raise ValueError("threads, launches, grid and block must be >= 1")
    k = builtin_kernel(device, kernel)
    streams = [device.stream(priority=priority) for _ in range(threads)]
    outputs = [device.allocate(4 * grid) for _ in range(threads)]
    for stream, out in zip(streams, outputs):
        stream.fill(out, 0)
    args = [((np.uint64(spin_ns), out) if kernel == "spin" else (out,))
            for out in outputs]
    starts: List[int] = [0] * threads
    called: List[int] = [0] * threads   # when the last launch call returned
    ends: List[int] = [0] * threads
    errors: List[BaseException] = []
    gate = threading.Barrier(threads)

    def body(index: int) -> None:
        try:
            stream, a = streams[index], args[index]
            launch = stream.launch
            for _ in range(warmup):
                launch(k, grid, block, a)
            stream.synchronize()
            gate.wait()
            starts[index] = time.perf_counter_ns()
            for _ in range(launches):
                launch(k, grid, block, a)
            called[index] = time.perf_counter_ns()
            stream.synchronize()
            ends[index] = time.perf_counter_ns()
        except BaseException as error:  # noqa: BLE001 - re-raised below
            errors.append(error)
            gate.abort()

    workers = [threading.Thread(target=body, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if errors:
        raise errors[0]
    for index, out in enumerate(outputs):
        values = streams[index].read(out).wait().view(np.uint32)
        if not (values == warmup + launches).all():
            raise RuntimeError(f"benchmark kernel {kernel}: thread {index}'s "
                               f"blocks counted {values.tolist()} launches, "
                               f"expected {warmup + launches} each")
    for stream in streams:
        stream.close()
    return {"driver": "python", "kernel": kernel, "grid": grid,
            "block": block, "spin_ns": spin_ns, "threads": threads,
            "launches": launches * threads,
            "elapsed_ns": max(ends) - min(starts),
            "thread_ns": [e - s for s, e in zip(starts, ends)],
            "call_ns": [c - s for s, c in zip(starts, called)]}


def launch_latency(device: Any, *, launches: int = 1000,
                   warmup: int = 100) -> Dict[str, Any]:
    """Isolated launches: ``launches`` times a launch of the tiny kernel on
    an idle stream, then that stream's synchronize, from one Python thread;
    ``elapsed_ns`` covers them all."""
    if launches < 1:
        raise ValueError("launches must be >= 1")
    k = builtin_kernel(device, "tiny")
    stream = device.stream()
    out = device.allocate(4)
    stream.fill(out, 0)
    launch, synchronize = stream.launch, stream.synchronize
    for _ in range(warmup):
        launch(k, 1, 1, (out,))
        synchronize()
    start = time.perf_counter_ns()
    for _ in range(launches):
        launch(k, 1, 1, (out,))
        synchronize()
    elapsed = time.perf_counter_ns() - start
    value = int(stream.read(out).wait().view(np.uint32)[0])
    if value != warmup + launches:
        raise RuntimeError(f"isolated launches: the kernel counted {value}, "
                           f"expected {warmup + launches}")
    stream.close()
    return {"driver": "python", "kernel": "tiny", "launches": launches,
            "elapsed_ns": elapsed}

