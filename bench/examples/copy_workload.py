"""The smallest workload (``--workload bench/examples/copy_workload.py:round``):
on every stream, 64 copies of 64 KiB between two buffers of its own. Only
hrx calls, so it runs on every backend. The buffers are made on the first
call of a run and kept in ``streams.state`` (the warm-up rounds absorb
that)."""
from __future__ import annotations

from typing import Any

COPIES = 64
NBYTES = 64 * 1024


def round(device: Any, streams: Any) -> None:  # noqa: A001 - the workload's name
    state = streams.state
    if not state:
        state["pairs"] = [(device.allocate(NBYTES), device.allocate(NBYTES)) for _ in streams]
    for stream, (src, dst) in zip(streams, state["pairs"]):
        for _ in range(COPIES):
            stream.copy(dst, src)
