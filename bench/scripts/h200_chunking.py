"""Transfer chunking calibration: how long an urgent small transfer waits
behind a bulk backlog, and what chunking costs the backlog.

For each direction (d2h: Stream.read_into, h2d: Stream.upload) and each setting
(chunking off, or HRX_CHUNK_BYTES x HRX_CHUNK_WINDOW_BYTES), a fresh process
(the variables are read when the live device is created) repeats:
  a backlog of COUNT x SIZE transfers on one normal stream, then at once a
  4 KiB probe of the same direction on a high-priority stream; the probe's
  latency (call to completion), and the backlog's bandwidth (bytes over the
  time from its first call to its last completion).
Prints a table (probe median and p95 in us, backlog GB/s and its ratio to
the unchunked run of the same direction) and a JSON line per setting.
Pick defaults where p95 <= 250 us and bandwidth >= 0.9x unchunked.

--memory pinned takes the backlog's host memory from Device.empty_pinned
(direct copies, paced in place, docs/host-memory.md) instead of numpy
arrays (staged copies); --directions picks the directions. --settings
picks settings instead of the calibration grid: `off`, `default` (the
variables unset: the library's defaults) or CHUNK_MIBxWINDOW_CHUNKS, e.g.
`off,default,1x1`. --queues runs each setting at each of the given pool
sizes (Device.set_stream_queue_count before first use; default: the
library's), so that the probe's target can be checked at every queue
count, 1 included: with one queue the probe's stream shares the backlog's.

  python3 -P bench/scripts/h200_chunking.py --backend hip          # H200
  python3 -P bench/scripts/h200_chunking.py --backend hip --memory pinned
  python3 -P bench/scripts/h200_chunking.py --backend hip \
      --settings off,default --queues 1,2,4,8,16
  python3 -P bench/scripts/h200_chunking.py --backend host --quick # CI box
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

MIB = 1 << 20

CHILD = r"""
import json, sys, time
import numpy as np
import hrx
backend, direction, size, count, samples, memory, queues = sys.argv[1:8]
size, count, samples = int(size), int(count), int(samples)
dev = hrx.Device.open(0, backend=backend)
if queues != "-":
    dev.set_stream_queue_count(int(queues))
bulk = dev.stream()
urgent = dev.stream(priority="high")
big = [dev.allocate(size) for _ in range(count)]
small = dev.allocate(4096)
def host_array():
    if memory == "pinned":
        array = dev.empty_pinned(size)
        array[:] = 1
        return array
    return np.ones(size, np.uint8)               # touched: no page faults
host = host_array()
outs = [host_array() for _ in big]
tiny = np.ones(4096, np.uint8)
out = np.empty(4096, np.uint8)
for b in big:
    bulk.fill(b, 1)
dev.synchronize()
def backlog():
    if direction == "d2h":
        # Into memory allocated once, so that the backlog's time is the
        # transfers', not the host's first touch of fresh result arrays.
        return [bulk.read_into(b, o) for b, o in zip(big, outs)]
    for b in big:
        bulk.upload(b, host)
    return []
def probe():
    if direction == "d2h":
        urgent.read_blocking(small, out)
    else:
        urgent.upload(small, tiny)
        urgent.synchronize()
probe(); backlog(); dev.synchronize()         # warm-up: staging, threads
latencies, rates = [], []
for _ in range(samples):
    t0 = time.perf_counter()
    reads = backlog()
    t1 = time.perf_counter()
    probe()
    t2 = time.perf_counter()
    for r in reads:
        r.wait()
    bulk.synchronize()
    t3 = time.perf_counter()
    for r in reads:
        r.close()
    latencies.append((t2 - t1) * 1e6)
    rates.append(size * count / (t3 - t0) / 1e9)
print(json.dumps({"probe_us": latencies, "gbps": rates}))
"""


def percentile(values, p):
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))  # nearest rank
    return ordered[int(rank) - 1]


# A setting: (chunk bytes, window chunks); OFF is chunking off, DEFAULT the
# variables unset.
OFF = (None, None)
DEFAULT = ("default", "default")


def parse_settings(text):
    settings = []
    for item in (part.strip() for part in text.split(",")):
        if item == "off":
            settings.append(OFF)
        elif item == "default":
            settings.append(DEFAULT)
        else:
            chunk, _, window = item.partition("x")
            try:
                settings.append((int(float(chunk) * MIB), int(window)))
            except ValueError:
                raise argparse.ArgumentTypeError(
                    f"a setting is off, default or CHUNK_MIBxWINDOW_CHUNKS "
                    f"(e.g. 4x1), got {item!r}") from None
    return settings


def run_setting(args, direction, chunk, window, queues=None):
    env = dict(os.environ)
    for name in ("HRX_CHUNKING", "HRX_CHUNK_BYTES", "HRX_CHUNK_WINDOW_BYTES"):
        env.pop(name, None)
    if chunk is None:
        env["HRX_CHUNKING"] = "0"
    elif chunk != "default":
        env["HRX_CHUNKING"] = "1"
        env["HRX_CHUNK_BYTES"] = str(chunk)
        env["HRX_CHUNK_WINDOW_BYTES"] = str(chunk * window)
    result = subprocess.run(
        [sys.executable, "-P", "-c", CHILD, args.backend, direction,
         str(args.size), str(args.count), str(args.samples), args.memory,
         str(queues) if queues else "-"],
        capture_output=True, text=True, env=env, timeout=args.timeout)
    if result.returncode != 0:
        raise SystemExit(f"setting {direction} {chunk} x {window} failed:\n"
                         f"{result.stderr[-2000:]}")
    raw = json.loads(result.stdout.strip().splitlines()[-1])
    return {
        "direction": direction,
        "memory": args.memory,
        "queues": queues,
        "chunking": chunk is not None,
        "chunk_bytes": chunk,
        "window_chunks": window,
        "probe_median_us": percentile(raw["probe_us"], 50),
        "probe_p95_us": percentile(raw["probe_us"], 95),
        "backlog_gbps": percentile(raw["gbps"], 50),
        "samples": args.samples,
        "raw": raw,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default="hip")
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and few settings (host backend)")
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--jsonl", help="also write the JSON lines here")
    parser.add_argument("--memory", choices=("pageable", "pinned"),
                        default="pageable",
                        help="the backlog's host memory (default pageable)")
    parser.add_argument("--directions", default="d2h,h2d",
                        help="comma-separated, of d2h and h2d (default both)")
    parser.add_argument("--settings", type=parse_settings, default=None,
                        help="off, default and CHUNK_MIBxWINDOW_CHUNKS items, "
                             "comma-separated (default: chunking off, then "
                             "the calibration grid)")
    parser.add_argument("--queues", default=None,
                        help="pool sizes, comma-separated: each setting at "
                             "each (default: the library's pool size)")
    args = parser.parse_args()
    try:
        queue_counts = ([int(q) for q in args.queues.split(",") if q]
                        if args.queues else [None])
    except ValueError:
        parser.error(f"--queues takes counts separated by commas, got "
                     f"{args.queues!r}")
    directions = [d for d in args.directions.split(",") if d]
    if not directions or any(d not in ("d2h", "h2d") for d in directions):
        parser.error(f"--directions takes d2h and h2d, got {args.directions!r}")
    if args.quick:
        args.size, args.count = 4 * MIB, 8
        chunks = [MIB // 4, MIB]
        windows = [1, 2]
        args.samples = min(args.samples, 10)
    else:
        args.size, args.count = 64 * MIB, 16
        chunks = [MIB, 2 * MIB, 4 * MIB, 8 * MIB, 16 * MIB]
        windows = [1, 2, 4]
    settings = args.settings or [OFF] + [(c, w) for c in chunks
                                         for w in windows]
    print(f"# python3 -P bench/scripts/h200_chunking.py "
          f"{' '.join(sys.argv[1:])}")
    print(f"# backlog {args.count} x {args.size // MIB} MiB of {args.memory} "
          f"host memory on a normal "
          f"stream, 4 KiB probe on a high-priority stream, "
          f"{args.samples} samples; {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
    print("x off: the backlog's bandwidth over the first setting's at the "
          "same direction and queue count")
    print(f"{'dir':4} {'queues':>6} {'chunk MiB':>9} {'window':>7} "
          f"{'probe med us':>12} {'probe p95 us':>12} {'GB/s':>7} "
          f"{'x off':>6}")
    lines = []
    jsonl = open(args.jsonl, "w") if args.jsonl else None
    for direction in directions:
        for queues in queue_counts:
            first = None
            # One row as each setting ends, so that a run cut short keeps
            # what it measured.
            for chunk, window in settings:
                s = run_setting(args, direction, chunk, window, queues)
                first = first or s
                s["bandwidth_ratio"] = (s["backlog_gbps"]
                                        / first["backlog_gbps"])
                if not s["chunking"]:
                    chunk, window = "off", "-"
                elif s["chunk_bytes"] == "default":
                    chunk, window = "default", "default"
                else:
                    chunk = f"{s['chunk_bytes'] / MIB:g}"
                    window = str(s["window_chunks"])
                print(f"{direction:4} {queues or '-':>6} {chunk:>9} "
                      f"{window:>7} {s['probe_median_us']:12.1f} "
                      f"{s['probe_p95_us']:12.1f} {s['backlog_gbps']:7.2f} "
                      f"{s['bandwidth_ratio']:6.2f}", flush=True)
                lines.append(s)
                if jsonl:
                    jsonl.write(json.dumps(s) + "\n")
                    jsonl.flush()
    for s in lines:
        print(json.dumps(s))
    if jsonl:
        jsonl.close()


if __name__ == "__main__":
    main()
