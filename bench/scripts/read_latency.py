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

Then, each in a fresh process (--first-reads of them, 0 for none), the
first read of a device against the reads after it: open the device, make a
stream and a 64-byte buffer, fill it and synchronize, then time the first
read_blocking and 20 more. The first read must cost what the others cost
(its staging memory is allocated when the device opens, on the device's
cleanup thread, not on the read's path).

    python3 -P bench/scripts/read_latency.py --backend host
    python3 -P bench/scripts/read_latency.py --backend hip \\
        --backlog-bytes 1073741824 --backlog-copies 64
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import subprocess
import sys
import time

import numpy as np

import hrx


def nearest_rank(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(len(ordered) * p / 100) - 1)]


def summary(samples: list[float]) -> tuple[float, float]:
    return nearest_rank(samples, 50), nearest_rank(samples, 95)


def first_read_child(backend: str | None) -> None:
    """One fresh process: its device's first read and the 20 after it (us),
    as one JSON line."""
    dev = hrx.Device.open(0, backend=backend)
    stream = dev.stream()
    src = dev.allocate(64)
    stream.fill(src, 7)
    stream.synchronize()
    out = np.zeros(64, np.uint8)
    times = []
    for _ in range(21):
        t0 = time.perf_counter_ns()
        stream.read_blocking(src, out)
        times.append((time.perf_counter_ns() - t0) / 1e3)
    assert (out == 7).all()
    print(json.dumps({"first": times[0], "later": times[1:]}), flush=True)


def first_reads(backend: str | None, processes: int) -> None:
    firsts, later_medians = [], []
    for _ in range(processes):
        done = subprocess.run(
            [sys.executable, "-P", __file__, "--first-read-child"] +
            (["--backend", backend] if backend else []),
            capture_output=True, text=True, timeout=300, check=True)
        line = json.loads(done.stdout.strip().splitlines()[-1])
        firsts.append(line["first"])
        later_medians.append(nearest_rank(line["later"], 50))
    print(f"# first read of a device, {processes} fresh processes: the first "
          f"read_blocking of 64 bytes after open, fill and synchronize, "
          f"against the median of the 20 after it (us)")
    print(f"{'process':<8} {'first us':>10} {'later median us':>16} "
          f"{'first / later':>14}")
    for i, (first, later) in enumerate(zip(firsts, later_medians), 1):
        print(f"{i:<8} {first:>10.1f} {later:>16.1f} {first / later:>14.2f}")
    ratios = sorted(f / m for f, m in zip(firsts, later_medians))
    print(f"first / later: median {nearest_rank(ratios, 50):.2f}, "
          f"largest {ratios[-1]:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default=None, help="host or hip")
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--backlog-bytes", type=int, default=128 << 20,
                        help="size of each backlog copy")
    parser.add_argument("--backlog-copies", type=int, default=8)
    parser.add_argument("--first-reads", type=int, default=10,
                        help="fresh processes timing a device's first read")
    parser.add_argument("--first-read-child", action="store_true",
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.first_read_child:
        first_read_child(args.backend)
        return 0

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
    if args.first_reads:
        first_reads(args.backend, args.first_reads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
