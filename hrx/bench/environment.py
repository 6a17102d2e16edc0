"""The machine a result was measured on: device, runtime, driver, CPU, RAM,
OS, compiler, Python, and the host's one-thread memcpy bandwidth measured in
the same process (of one hot block, and of the bulk case's own copies). Every
probe degrades to None rather than failing a run."""
from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
import sysconfig
import time
from typing import Any, Dict, Mapping, Optional

import numpy as np

from .memory import host_mem_total_bytes
from .stats import median

__all__ = ["collect", "cpu_model", "c_compiler", "gpu_driver_version", "host_memcpy_gb_s",
           "host_memcpy_bulk_gb_s"]


def cpu_model() -> Optional[str]:
    """The CPU's model name (/proc/cpuinfo on Linux, else platform)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for row in handle:
                key, _, value = row.partition(":")
                if key.strip() in ("model name", "Model", "Hardware", "cpu model"):
                    return value.strip() or None
    except OSError:
        pass
    return platform.processor() or None


def c_compiler() -> Dict[str, Optional[str]]:
    """The C compiler Python builds extensions with (sysconfig CC) and the
    first line of its ``--version``."""
    command = sysconfig.get_config_var("CC")
    version: Optional[str] = None
    if command:
        try:
            done = subprocess.run(shlex.split(command) + ["--version"], capture_output=True,
                                  text=True, timeout=10, check=False)
            lines = (done.stdout or done.stderr).strip().splitlines()
            version = lines[0].strip() if lines else None
        except (OSError, ValueError, subprocess.SubprocessError):
            version = None
    return {"command": command, "version": version}


def gpu_driver_version(backend: str) -> Optional[str]:
    """The kernel driver's version where the OS exposes it (NVIDIA's
    /proc/driver/nvidia/version, amdgpu's module version), else None."""
    if backend == "host":
        return None
    for path in ("/proc/driver/nvidia/version", "/sys/module/amdgpu/version"):
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                first = handle.readline().strip()
        except OSError:
            continue
        if first:
            return first
    return None


def host_memcpy_gb_s(block_bytes: int, reps: int = 5) -> float:
    """One-thread host copy bandwidth for blocks of block_bytes, in GB/s
    counting reads and writes: 2 * block_bytes / median(time of one
    ``np.copyto``). Pages are touched before timing."""
    src = np.full(block_bytes, 0x5A, dtype=np.uint8)
    dst = np.zeros(block_bytes, dtype=np.uint8)
    np.copyto(dst, src)
    times = []
    for _ in range(max(1, reps)):
        start = time.perf_counter_ns()
        np.copyto(dst, src)
        times.append(max(1, time.perf_counter_ns() - start))
    return 2 * block_bytes / median(times)


def host_memcpy_bulk_gb_s(block_bytes: int, lanes: int, copies: int, reps: int = 3) -> float:
    """One-thread host copy bandwidth of the bulk case's own copies, in GB/s
    counting reads and writes: ``lanes`` distinct source/destination pairs
    of block_bytes, each copied ``copies`` times in the order the bulk case
    submits them (every lane's n-th copy before any lane's next), timed as
    one burst; the median over ``reps`` bursts. Unlike host_memcpy_gb_s (one
    block copied again and again, so it stays in cache once it fits), this
    is the memory traffic the bulk case itself makes: what a runtime that
    added nothing would reach with one thread."""
    sources = [np.full(block_bytes, 0x5A, dtype=np.uint8) for _ in range(lanes)]
    targets = [np.zeros(block_bytes, dtype=np.uint8) for _ in range(lanes)]
    for source, target in zip(sources, targets):
        np.copyto(target, source)
    times = []
    for _ in range(max(1, reps)):
        start = time.perf_counter_ns()
        for _ in range(copies):
            for source, target in zip(sources, targets):
                np.copyto(target, source)
        times.append(max(1, time.perf_counter_ns() - start))
    return 2 * block_bytes * lanes * copies / median(times)


def _os_name() -> str:
    if sys.platform.startswith("linux"):
        try:
            with open("/etc/os-release", encoding="utf-8") as handle:
                for row in handle:
                    if row.startswith("PRETTY_NAME="):
                        return row.split("=", 1)[1].strip().strip('"')
        except OSError:
            pass
    return platform.system()


def collect(info: Mapping[str, Any], memcpy_block_bytes: int, *,
            bulk_lanes: Optional[int] = None, bulk_copies: Optional[int] = None,
            connections: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """The ``environment`` object of a result line. ``info`` is the device's
    ``info`` dict (backend, index, name, target, runtime, total_memory);
    ``connections`` its ``pool_stats()["connections"]`` (the hardware
    connection budget the run had: CUDA_DEVICE_MAX_CONNECTIONS or
    GPU_MAX_HW_QUEUES, its value and whether the user or hrx set it), taken
    after the run, once the native context exists. With ``bulk_lanes`` and
    ``bulk_copies`` (the run's sizes) it also measures the memcpy of the bulk
    case's own copies (host_memcpy_bulk_gb_s)."""
    backend = str(info.get("backend", ""))
    return {
        "device_name": info.get("name"),
        "device_index": info.get("index"),
        "backend": backend,
        "target": info.get("target"),
        "runtime": info.get("runtime"),
        "driver_version": gpu_driver_version(backend),
        "device_total_memory_bytes": info.get("total_memory"),
        "cpu_model": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "ram_bytes": host_mem_total_bytes(),
        "os": _os_name(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "c_compiler": c_compiler(),
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "numpy_version": np.__version__,
        "host_memcpy_block_bytes": int(memcpy_block_bytes),
        "host_memcpy_gb_s": host_memcpy_gb_s(int(memcpy_block_bytes)),
        "host_memcpy_bulk_gb_s": (
            host_memcpy_bulk_gb_s(int(memcpy_block_bytes), int(bulk_lanes), int(bulk_copies))
            if bulk_lanes and bulk_copies else None),
        "connections": dict(connections) if connections is not None else None,
    }
