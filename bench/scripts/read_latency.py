"""Read latency of one stream, idle and beside another stream's backlog.

Measures in one process, on the backend chosen (--backend host|hip):
  copy+sync idle      a 64-byte copy then Stream.synchronize, idle device
  read idle           a 64-byte Stream.read_blocking, idle device
  read loaded         the same read on one stream while another stream (on
                      another pool queue) works through a long backlog of
                      large copies
and prints each one's median and p95 (nearest rank) and the two ratios the
runtime promises to keep small: read idle p95 / copy+sync idle p95, and
read loaded p95 / read idle p95. A read samples only while the backlog is
still running (checked with an event after the read), so the loaded figure
is never taken on an idle device.

    python3 -P bench/scripts/read_latency.py --backend host
    python3 -P bench/scripts/read_latency.py --backend hip \\
        --backlog-bytes 1073741824 --backlog-copies 64
"""
from __future__ import annotations

import argparse
import math
import platform
import sys
import time

import numpy as np

import hrx


def nearest_rank(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(len(ordered) * p / 100) - 1)]


def summary(samples: list[float]) -> tuple[float, float]:
    return nearest_rank(samples, 50), nearest_rank(samples, 95)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default=None, help="host or hip")
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--backlog-bytes", type=int, default=128 << 20,
                        help="size of each backlog copy")
    parser.add_argument("--backlog-copies", type=int, default=8)
    args = parser.parse_args()

    dev = hrx.Device.open(0, backend=args.backend)
    dev.set_stream_queue_count(2)
    reader, busy = dev.stream(), dev.stream()
    assert reader.queue_index != busy.queue_index
    src, dst = dev.allocate(64), dev.allocate(64)
    reader.fill(src, 7)
    reader.synchronize()
    out = np.zeros(64, np.uint8)
    for _ in range(20):  # warm-up: kernels, staging pool
        reader.copy(dst, src)
        reader.synchronize()
        reader.read_blocking(src, out)

    copy_sync, read_idle, read_loaded = [], [], []
    for _ in range(args.samples):
        t0 = time.perf_counter_ns()
        reader.copy(dst, src)
        reader.synchronize()
        copy_sync.append((time.perf_counter_ns() - t0) / 1e3)
        t0 = time.perf_counter_ns()
        reader.read_blocking(src, out)
        read_idle.append((time.perf_counter_ns() - t0) / 1e3)

    big = [dev.allocate(args.backlog_bytes) for _ in range(2)]
    backlog = None
    started = time.perf_counter()
    while len(read_loaded) < args.samples:
        if backlog is None or backlog.query():
            if backlog is not None:
                backlog.close()
            for _ in range(args.backlog_copies):
                busy.copy(big[1], big[0])
            backlog = busy.record_event()
        t0 = time.perf_counter_ns()
        reader.read_blocking(src, out)
        elapsed = (time.perf_counter_ns() - t0) / 1e3
        if not backlog.query():  # the backlog ran during the whole read
            read_loaded.append(elapsed)
        if time.perf_counter() - started > 600:
            break
    busy.synchronize()
    if backlog is not None:
        backlog.close()

    info = dev.info
    print(f"# read latency: {info['backend']} {info['name']} "
          f"({platform.machine()}, Python {platform.python_version()})")
    print(f"# command: python3 -P bench/scripts/read_latency.py "
          f"{' '.join(sys.argv[1:])}")
    print(f"# backlog: {args.backlog_copies} copies of {args.backlog_bytes} "
          f"bytes on another pool queue; {len(read_loaded)} loaded samples")
    print(f"{'case':<20} {'median us':>10} {'p95 us':>10}")
    rows = {"copy+sync idle": copy_sync, "read idle": read_idle,
            "read loaded": read_loaded}
    p95 = {}
    for name, samples in rows.items():
        median, p95[name] = summary(samples) if samples else (float("nan"),) * 2
        print(f"{name:<20} {median:>10.1f} {p95[name]:>10.1f}")
    print(f"read idle p95 / copy+sync idle p95 = "
          f"{p95['read idle'] / p95['copy+sync idle']:.2f}")
    print(f"read loaded p95 / read idle p95 = "
          f"{p95['read loaded'] / p95['read idle']:.2f}")
    for obj in big + [src, dst, reader, busy, dev]:
        obj.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
