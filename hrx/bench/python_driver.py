"""The benchmark's cases through the public Python API (driver "python").

It follows the native driver's protocol (csrc/bench/bench.h) with Python
calls: the same streams, buffers, cases, round structure and output check,
and returns the same dict shape as ``hrx._hrx.bench_run``. Its numbers
include the cost of the Python layer and the GIL, which is the point: they
show what a Python program driving hrx can reach.

Streams, in creation order: ``retained_streams`` empty streams (their
creation is the timed "stream creation", so it includes creating the pool's
queues lazily), then one stream per small lane, then one per bulk lane.
Every lane has its own source and destination buffers.
"""
from __future__ import annotations

import time
from typing import Any, Dict, List, Sequence

from .config import BenchConfig
from .rounds import barrier_rounds, timed_rounds

__all__ = ["run", "OutputMismatch", "CHECK_BYTES"]

CHECK_BYTES = 64
"""Length of the destination prefix checked after the run."""

_now = time.perf_counter_ns


class OutputMismatch(RuntimeError):
    """A destination's checked prefix differs from its source: the run's
    numbers describe work that was not done correctly."""


def _pattern(lane: int, salt: int, length: int) -> bytes:
    return bytes((lane * 67 + index * 13 + salt) & 0xFF for index in range(length))


class _Lane:
    """One lane: its stream and its source/destination views."""

    def __init__(self, device: Any, stream: Any, size: int, lane: int, salt: int) -> None:
        self.stream = stream
        self.src_buffer = device.allocate(size)
        self.dst_buffer = device.allocate(size)
        self.src = self.src_buffer[0:size]
        self.dst = self.dst_buffer[0:size]
        self.check = min(CHECK_BYTES, size)
        self.expected = _pattern(lane, salt, self.check)
        self.name = f"lane {lane}"

    def prepare(self) -> None:
        self.stream.fill(self.src, self.expected[0] ^ 0x3C)
        self.stream.upload(self.src_buffer[0:self.check], self.expected)
        self.stream.fill(self.dst, self.expected[0] ^ 0xC3)

    def copy(self) -> None:
        self.stream.copy(self.dst, self.src)

    def verify(self, kind: str) -> None:
        out = bytearray(self.check)
        self.stream.read_blocking(self.dst_buffer[0:self.check], out)
        if bytes(out) != self.expected:
            index = next(i for i, (a, b) in enumerate(zip(out, self.expected)) if a != b)
            raise OutputMismatch(
                f"{kind} {self.name}: destination byte {index} is {out[index]:#04x}, "
                f"expected {self.expected[index]:#04x}")


def _sync_all(lanes: Sequence[_Lane]) -> None:
    for lane in lanes:
        lane.stream.synchronize()


def _burst(config: BenchConfig, lanes: Sequence[_Lane], copies: int) -> List[int]:
    """Rounds of `copies` copies on every lane in turn, then a sync of all."""
    def body() -> int:
        start = _now()
        for _ in range(copies):
            for lane in lanes:
                lane.copy()
        _sync_all(lanes)
        return _now() - start
    return timed_rounds(body, config.warmup, config.samples)


def _threaded(config: BenchConfig, lanes: Sequence[_Lane]) -> List[int]:
    """One thread per lane, released together by a barrier each round; a round
    lasts from the earliest start to the latest end (the slowest thread)."""
    def body(index: int) -> None:
        lane = lanes[index]
        for _ in range(config.small_copies):
            lane.copy()
        lane.stream.synchronize()
    return barrier_rounds(len(lanes), body, config.warmup, config.samples)


def _idle(config: BenchConfig, lanes: Sequence[_Lane]) -> List[int]:
    samples: List[int] = []
    for round_index in range(config.warmup + config.samples):
        for lane in lanes:
            start = _now()
            lane.copy()
            lane.stream.synchronize()
            elapsed = _now() - start
            if round_index >= config.warmup:
                samples.append(elapsed)
    return samples


def _loaded(config: BenchConfig, small: Sequence[_Lane], bulk: Sequence[_Lane]) -> List[int]:
    samples: List[int] = []
    for round_index in range(config.warmup + config.samples):
        for lane in small:
            for backlog in bulk:
                for _ in range(config.loaded_copies):
                    backlog.copy()
            start = _now()
            lane.copy()
            lane.stream.synchronize()
            elapsed = _now() - start
            _sync_all(bulk)
            if round_index >= config.warmup:
                samples.append(elapsed)
    return samples


def run(device: Any, queues: int, config: BenchConfig) -> Dict[str, Any]:
    """Runs every case on ``device``, whose pool size the caller has set to
    ``queues`` and which has no pool stream yet. Returns the dict shape of
    ``hrx._hrx.bench_run`` with ``driver="python"``. Raises OutputMismatch
    when a checked destination prefix is wrong, and lets every hrx error
    through."""
    start = _now()
    retained = [device.stream() for _ in range(config.retained_streams)]
    stream_creation_ns = _now() - start

    small = [_Lane(device, device.stream(), config.small_bytes, index, 0x11)
             for index in range(config.lanes)]
    bulk = [_Lane(device, device.stream(), config.bulk_bytes, index, 0x77)
            for index in range(config.lanes)]
    for lane in small + bulk:
        lane.prepare()
    _sync_all(small + bulk)

    result: Dict[str, Any] = {
        "driver": "python",
        "queues": int(queues),
        "queues_used": min(int(queues), config.retained_streams + 2 * config.lanes),
        **config.as_dict(),
        "stream_creation_ns": int(stream_creation_ns),
    }
    result["small_round_ns"] = _burst(config, small, config.small_copies)
    result["threaded_round_ns"] = _threaded(config, small)
    result["bulk_round_ns"] = _burst(config, bulk, config.bulk_copies)
    result["idle_sample_ns"] = _idle(config, small)
    result["loaded_sample_ns"] = _loaded(config, small, bulk)
    _sync_all(small + bulk)

    for lane in small:
        lane.verify("small")
    for lane in bulk:
        lane.verify("bulk")
    del retained
    return result
