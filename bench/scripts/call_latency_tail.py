"""Call latency beside a flooding thread: the tail, not the median.

One Python thread floods a stream (fill, fill, a copy of --copy-bytes, in a
loop, never waiting); another calls, every --interval-ms in turn:

  idle    record_event, query, synchronize on a stream of its own (another
          pool queue, nothing queued): calls that need no wait, which must
          not wait for the flooding thread nor give the GIL away
  flooded record_event, query, read (not waited), fill, flush on the
          flooded stream: they may wait for about one command (a slot in a
          full host ring, the flooding thread's publication), never for
          the flood

and times each call. Each batching setting runs in --processes fresh
processes of --duration seconds; the table gives, per call, the median
over processes of each process's median and p99 (nearest rank), and the
median and largest of the processes' worst call, in microseconds. The
target (worst idle-stream call at most 2 ms on the host backend, 1 ms on a
GPU, in every process) is checked at the end.

Why a call was slow: the calling thread's context switches during the
call (getrusage(RUSAGE_THREAD)) tell a wait of the runtime's (the thread
blocked: a voluntary switch, on a lock or a condition) from the
scheduler's preemption (an involuntary switch: the thread was runnable but
another one had the CPU), its CPU time (time.thread_time) tells work
on the CPU from time the machine did not run it at all, and Python's
collector counts tell a garbage collection run inside the call (CPU work
of the interpreter's, in any thread). Every idle-stream call that took
more than --slow-us is listed with all of them, after the table.

    python3 -P bench/scripts/call_latency_tail.py --backend host
    python3 -P bench/scripts/call_latency_tail.py --backend hip
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import resource
import subprocess
import sys
import threading
import time

CALLS = [("idle", "record_event"), ("idle", "query"), ("idle", "synchronize"),
         ("flooded", "record_event"), ("flooded", "query"),
         ("flooded", "read"), ("flooded", "fill"), ("flooded", "flush")]
TARGET_US = {"host": 2000.0, "hip": 1000.0}


def nearest_rank(ordered: list[float], p: float) -> float:
    return ordered[max(0, math.ceil(len(ordered) * p / 100) - 1)]


def child(args: argparse.Namespace) -> None:
    import hrx
    dev = hrx.Device.open(0, backend=args.backend,
                          batching=args.batching == "on")
    dev.set_stream_queue_count(2)
    flooded, idle = dev.stream(), dev.stream()
    assert flooded.queue_index != idle.queue_index
    a, b = dev.allocate(args.copy_bytes), dev.allocate(args.copy_bytes)
    small, mine = dev.allocate(4096), dev.allocate(4096)
    for buf in (a, b, small):
        flooded.fill(buf, 1)
    idle.fill(mine, 2)
    flooded.synchronize()
    idle.synchronize()
    kept = []  # reads not waited: dropped outside the timed calls
    calls = {
        ("idle", "record_event"): idle.record_event,
        ("idle", "query"): idle.query,
        ("idle", "synchronize"): idle.synchronize,
        ("flooded", "record_event"): flooded.record_event,
        ("flooded", "query"): flooded.query,
        ("flooded", "read"): lambda: kept.append(flooded.read(small[:64])),
        ("flooded", "fill"): lambda: flooded.fill(small[64:], 3),
        ("flooded", "flush"): flooded.flush,
    }
    for call in calls.values():  # warm-up: staging, events, the flusher
        call()
    flooded.synchronize()
    stop = threading.Event()

    def flood():
        while not stop.is_set():
            flooded.fill(small[:64], 1)
            flooded.fill(small[:64], 2)
            flooded.copy(b, a)

    flooder = threading.Thread(target=flood, daemon=True)
    flooder.start()
    time.sleep(0.2)  # the queue fills
    samples = {key: [] for key in CALLS}
    slow = []  # [stream, call, us, CPU us, voluntary, involuntary, swept]
    interval = args.interval_ms / 1000
    end = time.monotonic() + args.duration
    i = 0
    while time.monotonic() < end:
        key = CALLS[i % len(CALLS)]
        collections = [g["collections"] for g in gc.get_stats()]
        before = resource.getrusage(resource.RUSAGE_THREAD)
        cpu0 = time.thread_time_ns()
        t0 = time.perf_counter_ns()
        calls[key]()
        us = (time.perf_counter_ns() - t0) / 1e3
        cpu_us = (time.thread_time_ns() - cpu0) / 1e3
        after = resource.getrusage(resource.RUSAGE_THREAD)
        samples[key].append(us)
        if us > args.slow_us:
            # The oldest generation Python's collector swept in the call
            # (in any thread: -1 for none).
            swept = [i for i, g in enumerate(gc.get_stats())
                     if g["collections"] > collections[i]]
            slow.append([key[0], key[1], us, cpu_us,
                         after.ru_nvcsw - before.ru_nvcsw,
                         after.ru_nivcsw - before.ru_nivcsw,
                         max(swept, default=-1)])
        if len(kept) > 64:
            kept.clear()
        i += 1
        time.sleep(interval)
    stop.set()
    summary = {}
    for key, values in samples.items():
        # A call stalled past the run leaves the later kinds without one.
        ordered = sorted(values) or [math.nan]
        summary[f"{key[0]} {key[1]}"] = {
            "n": len(values), "p50": nearest_rank(ordered, 50),
            "p99": nearest_rank(ordered, 99), "worst": ordered[-1]}
    print(json.dumps({"batching": args.batching, "calls": summary,
                      "slow": slow}), flush=True)
    # The flood's backlog is left: draining it measures nothing here.
    os._exit(0)


def median(values: list[float]) -> float:
    """Over the processes that ran the call (nan when none did)."""
    ran = sorted(v for v in values if v == v)
    return nearest_rank(ran, 50) if ran else math.nan


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default="host", help="host or hip")
    parser.add_argument("--processes", type=int, default=10,
                        help="fresh processes per batching setting")
    parser.add_argument("--duration", type=float, default=3.0,
                        help="seconds of calls per process")
    parser.add_argument("--interval-ms", type=float, default=2.0)
    parser.add_argument("--copy-bytes", type=int, default=64 << 20)
    parser.add_argument("--batching", default="on,off")
    parser.add_argument("--slow-us", type=float, default=1000.0,
                        help="list the idle-stream calls slower than this, "
                             "with their context switches")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return 0

    results = {}
    slow = []  # (batching, process, [stream, call, us, CPU us, switches...])
    for batching in args.batching.split(","):
        for process in range(1, args.processes + 1):
            out = subprocess.run(
                [sys.executable, "-P", __file__, "--child", "--backend",
                 args.backend, "--batching", batching, "--duration",
                 str(args.duration), "--interval-ms", str(args.interval_ms),
                 "--copy-bytes", str(args.copy_bytes), "--slow-us",
                 str(args.slow_us)],
                capture_output=True, text=True, timeout=args.duration + 300)
            if out.returncode != 0:
                print(out.stderr[-3000:], file=sys.stderr)
                return 1
            line = json.loads(out.stdout.strip().splitlines()[-1])
            results.setdefault(batching, []).append(line["calls"])
            slow.extend((batching, process, call) for call in line["slow"])

    import hrx
    from hrx.bench.provenance import source_commit
    info = hrx.Device.open(0, backend=args.backend).info
    commit, dirty = source_commit()
    target = TARGET_US.get(args.backend, TARGET_US["hip"])
    print(f"# call latency beside a flooding thread: {info['backend']} "
          f"backend, {info['name']} ({platform.machine()}, Python "
          f"{platform.python_version()}, {os.cpu_count()} CPUs)")
    print(f"# command: python3 -P bench/scripts/call_latency_tail.py "
          f"{' '.join(sys.argv[1:])}")
    print(f"# hrx built from {commit or 'an unknown commit'}"
          f"{' (with local changes)' if dirty else ''}")
    print(f"# flood: fill, fill, copy of {args.copy_bytes} bytes in a loop; "
          f"a call every {args.interval_ms} ms for {args.duration} s; "
          f"{args.processes} fresh processes per batching setting")
    print("# microseconds; p50 and p99: median over processes of each "
          "process's; worst: median and largest of the processes' worst "
          "('stalled': a process ran no such call, an earlier one took the "
          "rest of its run)")
    header = (f"{'batching':<9}{'stream':<8}{'call':<13}{'calls':>6}"
              f"{'p50':>11}{'p99':>11}{'worst med':>11}{'worst max':>11}"
              f"{'within target':>15}")

    def us(value: float) -> str:
        # nan: a process where an earlier call stalled past the run.
        return f"{value:>11.1f}" if value == value else f"{'stalled':>11}"

    print(header)
    met = True
    for batching, runs in results.items():
        for stream, call in CALLS:
            key = f"{stream} {call}"
            per = [run[key] for run in runs]
            worst = [p["worst"] for p in per]
            within = sum(w <= target for w in worst)  # nan: never within
            if stream == "idle" and within < len(per):
                met = False
            mark = f"{within}/{len(per)}" if stream == "idle" else ""
            largest = math.nan if any(w != w for w in worst) else max(worst)
            print(f"{batching:<9}{stream:<8}{call:<13}"
                  f"{sum(p['n'] for p in per):>6}"
                  f"{us(median([p['p50'] for p in per]))}"
                  f"{us(median([p['p99'] for p in per]))}"
                  f"{us(median(worst))}{us(largest)}{mark:>15}")
    print(f"target: every idle-stream call at most {target:.0f} us in every "
          f"process: {'met' if met else 'NOT met'}")
    idle_slow = [(b, p, c) for b, p, c in slow if c[0] == "idle"]
    print(f"idle-stream calls over {args.slow_us:.0f} us, with the calling "
          f"thread's CPU time and context switches during the call "
          f"(voluntary: it waited; involuntary: the scheduler preempted it; "
          f"neither, with CPU time far below the call's: the machine did "
          f"not run the thread, e.g. a virtual CPU's steal time): "
          f"{len(idle_slow)}")
    for batching, process, (_, call, us, cpu, voluntary, involuntary,
                            swept) in idle_slow:
        collector = (f"Python's collector swept generation {swept}"
                     if swept >= 0 else "no garbage collection")
        print(f"  batching {batching}, process {process}: {call} {us:.1f} us, "
              f"{cpu:.1f} us on the CPU, {voluntary} voluntary, "
              f"{involuntary} involuntary; {collector}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
