"""Example workload for ``hrx-bench sweep --workload``: a compute kernel on
every stream, per round.

    hrx-bench sweep --workload bench/examples/kernel_workload.py:round

``round(device, streams)`` issues one round and returns without waiting
(the benchmark synchronizes every stream and times the round). What it
launches depends on what the machine has; the first that works is used, or
the one named by ``HRX_EXAMPLE_KERNEL`` (torch, nvrtc, copies):

- torch: with PyTorch on CUDA and the hip backend on NVIDIA,
  ``MATMULS`` float32 matmuls of ``SIZE`` x ``SIZE`` per stream, launched on
  the hrx queue through ``torch.cuda.ExternalStream(stream.native_handle)``.
- nvrtc: without torch, on NVIDIA: ``KERNELS`` launches per stream of a
  compute-bound kernel (``ITERATIONS`` dependent multiply-adds on each of
  ``FLOATS`` floats), compiled with NVRTC and launched with the CUDA driver
  API through ctypes (cuda_kernels.py). Each launch occupies only part of
  the GPU (FLOATS / 256 blocks), so kernels of different streams can run
  side by side only when their streams are on different native queues:
  this is the case where the pool size matters for compute.
- copies: anywhere (the host backend included): per stream, a fill and
  ``KERNELS`` copies of ``COPY_BYTES``, a memory-bound stand-in.

Sizes come from the environment (``HRX_EXAMPLE_<NAME>``), read once per
process. State (buffers, the compiled module) is made on the first call of
a run and kept in ``streams.state``: the warm-up rounds absorb it.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cuda_kernels  # noqa: E402

SIZE = int(os.environ.get("HRX_EXAMPLE_SIZE", "512"))
MATMULS = int(os.environ.get("HRX_EXAMPLE_MATMULS", "4"))
FLOATS = int(os.environ.get("HRX_EXAMPLE_FLOATS", str(32 * 1024)))
ITERATIONS = int(os.environ.get("HRX_EXAMPLE_ITERATIONS", "20000"))
KERNELS = int(os.environ.get("HRX_EXAMPLE_KERNELS", "4"))
COPY_BYTES = int(os.environ.get("HRX_EXAMPLE_COPY_BYTES", str(1 << 20)))

MODES = ("torch", "nvrtc", "copies")


def _torch_reason(device: Any) -> Optional[str]:
    if device.info.get("platform") != "nvidia":
        return "torch mode needs the hip backend on an NVIDIA GPU"
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed"
    if not torch.cuda.is_available():
        return "PyTorch has no CUDA device"
    return None


def choose_mode(device: Any) -> str:
    """The mode HRX_EXAMPLE_KERNEL names, else the first that can run.
    ValueError when the named mode cannot run here, saying why."""
    wanted = os.environ.get("HRX_EXAMPLE_KERNEL")
    checks = {"torch": _torch_reason, "nvrtc": cuda_kernels.available,
              "copies": lambda d: None}
    if wanted:
        if wanted not in checks:
            raise ValueError(f"HRX_EXAMPLE_KERNEL={wanted!r}: choose one of {', '.join(MODES)}")
        reason = checks[wanted](device)
        if reason:
            raise ValueError(f"HRX_EXAMPLE_KERNEL={wanted}: {reason}")
        return wanted
    return next(mode for mode in MODES if checks[mode](device) is None)


def _setup(device: Any, streams: List[Any], state: Dict[str, Any]) -> None:
    mode = choose_mode(device)
    state["mode"] = mode
    if mode == "torch":
        import torch

        ordinal = int(device.info["index"])
        state["torch_streams"] = [torch.cuda.ExternalStream(s.native_handle, device=ordinal)
                                  for s in streams]
        state["operands"] = []
        for external in state["torch_streams"]:
            with torch.cuda.stream(external):
                a = torch.rand(SIZE, SIZE, device=f"cuda:{ordinal}")
                state["operands"].append((a, torch.empty_like(a)))
        torch.cuda.synchronize(ordinal)
    elif mode == "nvrtc":
        kernels = cuda_kernels.Kernels(device)
        buffers = [device.allocate(FLOATS * 4) for _ in streams]
        for stream, buffer in zip(streams, buffers):
            stream.fill(buffer, 0)
        state.update(kernels=kernels, buffers=buffers,
                     addresses=[cuda_kernels.device_address(b) for b in buffers])
        # The fills are published before any kernel is launched on the
        # queues, so the kernels follow them (docs/interop.md).
        for stream in streams:
            stream.record_event()
    else:
        state["pairs"] = [(device.allocate(COPY_BYTES), device.allocate(COPY_BYTES))
                          for _ in streams]


def round(device: Any, streams: Any) -> None:  # noqa: A001 - the workload's name
    """One round of the workload on every stream (see the module doc)."""
    state = streams.state
    if not state:
        _setup(device, streams, state)
    mode = state["mode"]
    if mode == "torch":
        import torch

        for external, (a, out) in zip(state["torch_streams"], state["operands"]):
            with torch.cuda.stream(external):
                for _ in range(MATMULS):
                    torch.matmul(a, a, out=out)
    elif mode == "nvrtc":
        kernels = state["kernels"]
        for stream, address in zip(streams, state["addresses"]):
            for _ in range(KERNELS):
                kernels.fma_loop(stream.native_handle, address, FLOATS, ITERATIONS)
    else:
        for stream, (src, dst) in zip(streams, state["pairs"]):
            stream.fill(src, 0x5A)
            for _ in range(KERNELS):
                stream.copy(dst, src)

