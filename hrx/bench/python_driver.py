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


class _Counter:
    """A kernel output of ``words`` words and the launches that wrote it."""

    def __init__(self, device: Any, stream: Any, words: int) -> None:
        self.buffer = device.allocate(4 * words)
        self.launched = 0
        stream.fill(self.buffer, 0)

    def verify(self, stream: Any, kind: str) -> None:
        import numpy as np
        words = stream.read(self.buffer[0:min(self.buffer.nbytes, 64)]).wait().view(np.uint32)
        if not (words == self.launched).all():
            raise OutputMismatch(f"{kind}: kernel blocks counted {words.tolist()} launches, "
                                 f"expected {self.launched}")


def _contention(device: Any, config: BenchConfig, small: Sequence[_Lane],
                bulk: Sequence[_Lane]) -> Dict[str, Any]:
    """The contention cases (csrc/bench/bench_contention.h) through the
    Python API: the raw arrays of contention.py."""
    import numpy as np

    from .contention import COMPUTE_OPS, KINDS, TRANSFER_OPS, sample_key
    from .kernel_launches import builtin_kernel

    kernel = builtin_kernel(device, "spin")
    spin, zero = np.uint64(config.kernel_spin_ns), np.uint64(0)
    probes = [_Lane(device, device.stream(priority=priority, reserve=reserve),
                    config.small_bytes, config.lanes * 2 + index, 0x29)
              for index, (priority, reserve) in enumerate(
                  (("high", False), ("normal", True), ("high", True)))]
    for lane in probes:
        lane.prepare()
    counters = {id(lane): _Counter(device, lane.stream, 1) for lane in list(small) + probes}
    backlog = {id(lane): _Counter(device, lane.stream, config.backlog_blocks) for lane in bulk}
    transfers = [device.allocate(config.transfer_bytes) for _ in bulk]
    for lane, buffer in zip(bulk, transfers):
        lane.stream.fill(buffer, 0x3C)
    source = np.full(config.transfer_bytes, 0xA5, dtype=np.uint8)
    _sync_all(list(small) + list(bulk) + probes)

    def launch(lane: _Lane, counter: _Counter, grid: int, ns: Any) -> None:
        lane.stream.launch(kernel, grid, 1, (ns, counter.buffer))
        counter.launched += 1

    def kernel_round(count: int) -> int:
        start = _now()
        for n in range(config.kernel_launches):
            lane = small[n % count]
            launch(lane, counters[id(lane)], 1, spin)
        _sync_all(small[:count])
        return _now() - start

    out: Dict[str, Any] = {"kernel_one_lane_round_ns": [], "kernel_lanes_round_ns": []}
    for n in range(config.warmup + config.samples):
        one, spread = kernel_round(1), kernel_round(config.lanes)
        if n >= config.warmup:
            out["kernel_one_lane_round_ns"].append(one)
            out["kernel_lanes_round_ns"].append(spread)

    def fill(kind: str) -> List[Any]:
        pending: List[Any] = []
        rounds = config.backlog_kernels if kind == "compute" else config.transfer_copies
        for _ in range(rounds):
            for lane, buffer in zip(bulk, transfers):
                if kind == "compute":
                    launch(lane, backlog[id(lane)], config.backlog_blocks, spin)
                elif kind == "read":
                    pending.append(lane.stream.read(buffer))
                else:
                    lane.stream.upload(buffer, source)
        return pending

    def probe(op: str, lane: _Lane) -> None:
        if op == "compute_kernel":
            launch(lane, counters[id(lane)], 1, zero)
            lane.stream.synchronize()
        elif op == "compute_copy":
            lane.copy()
            lane.stream.synchronize()
        elif op == "transfer_read":
            data = bytearray(lane.src.nbytes)
            lane.stream.read_blocking(lane.src, data)
            if bytes(data[:lane.check]) != lane.expected:
                raise OutputMismatch(f"read probe {lane.name}: prefix differs from its source")
        else:
            data = bytearray([lane.expected[0] ^ 0x3C]) * lane.src.nbytes
            data[:lane.check] = lane.expected
            lane.stream.upload(lane.dst, data)   # the source's own bytes
            lane.stream.synchronize()

    for ops, kind, samples in ((COMPUTE_OPS, "compute", config.compute_samples),
                               (TRANSFER_OPS[:1], "read", config.transfer_samples),
                               (TRANSFER_OPS[1:], "upload", config.transfer_samples)):
        for op in ops:
            for position, name in enumerate(KINDS):
                series: List[int] = []
                for n in range(config.warmup + samples):
                    lane = small[n % config.lanes] if position == 0 else probes[position - 1]
                    pending = fill(kind)
                    start = _now()
                    probe(op, lane)
                    elapsed = _now() - start
                    for readback in pending:
                        readback.wait()
                    _sync_all(bulk)
                    if n >= config.warmup:
                        series.append(elapsed)
                out[sample_key(op, name)] = series
    for lane in probes:
        lane.verify("probe")
    for lane in list(small) + probes:
        counters[id(lane)].verify(lane.stream, f"small {lane.name}")
    for lane in bulk:
        backlog[id(lane)].verify(lane.stream, f"bulk {lane.name}")
    for lane in probes:
        lane.stream.close()
    return out


def run(device: Any, queues: int, config: BenchConfig,
        contention: bool = True) -> Dict[str, Any]:
    """Runs every case on ``device``, whose pool size the caller has set to
    ``queues`` and which has no pool stream yet. Returns the dict shape of
    ``hrx._hrx.bench_run`` with ``driver="python"``; ``contention=False``
    leaves the contention cases out (as ``bench_run``'s switch does).
    Raises OutputMismatch when a checked destination prefix is wrong, and
    lets every hrx error through."""
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
    if contention:
        result.update(_contention(device, config, small, bulk))

    for lane in small:
        lane.verify("small")
    for lane in bulk:
        lane.verify("bulk")
    del retained
    return result
