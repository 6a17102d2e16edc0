"""Small copies from Python threads: hrx's python driver beside PyTorch and
CuPy streams, in one run on one machine.

Each implementation runs the queue-pool protocol's two small-copy cases
(16 lanes, each with its own stream and 4 KiB source and destination;
1024 copies per lane per round; 3 warm-up and 15 measured rounds; the
median round): "one thread" submits every lane's copies from one thread,
"16 threads" gives each lane its own thread, released together by a
barrier, a round lasting from the first start to the last end. hrx runs as
`hrx-bench run --driver python QUEUES` in a fresh process per repeat
(its one-thread and 16-thread columns); PyTorch copies with
`dst.copy_(src, non_blocking=True)` under `torch.cuda.stream(s)`, CuPy with
`dst.data.copy_from_device_async(src.data, n, stream)`; both are skipped
(with the reason) where they cannot run, e.g. on the host backend.

    python3 -P bench/scripts/python_threads.py --backend hip --output FILE
    python3 -P bench/scripts/python_threads.py --backend host --quick

Prints one line per implementation and writes every repeat's numbers as
JSON lines to --output (if given).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time

LANES = 16
SMALL_BYTES = 4096


def median(values):
    return sorted(values)[(len(values) + 1) // 2 - 1]  # nearest rank


def hrx_run(args, queues):
    command = [sys.executable, "-P", "-m", "hrx.bench", "run", "--driver",
               "python", "--backend", args.backend, str(queues),
               str(args.samples)]
    if args.quick:
        command.insert(-2, "--quick")
    line = subprocess.run(command, check=True, capture_output=True,
                          text=True).stdout.strip().splitlines()[-1]
    record = json.loads(line)
    return {"implementation": f"hrx python driver, {queues} queues",
            "one_thread_mcps": record["small_commands_per_second"] / 1e6,
            "threads16_mcps": record["threaded_commands_per_second"] / 1e6,
            "git_commit": record.get("git_commit"),
            "command": " ".join(command[1:])}


def rounds(body, warmup, samples):
    return [body() for _ in range(warmup + samples)][warmup:]


def peer_run(name, make_lane, copy, sync, stream_context, copies, samples):
    """The two cases with one library's streams; a lane is (stream, dst,
    src)."""
    lanes = [make_lane() for _ in range(LANES)]

    def one_thread():
        start = time.perf_counter_ns()
        for _ in range(copies):
            for lane in lanes:
                copy(lane)
        for lane in lanes:
            sync(lane)
        return time.perf_counter_ns() - start

    total = 3 + samples
    starts = [[0] * LANES for _ in range(total)]
    ends = [[0] * LANES for _ in range(total)]
    barrier = threading.Barrier(LANES)
    failures = []

    def worker(index):
        lane = lanes[index]
        try:
            with stream_context(lane):
                for r in range(total):
                    barrier.wait()
                    starts[r][index] = time.perf_counter_ns()
                    for _ in range(copies):
                        copy(lane)
                    sync(lane)
                    ends[r][index] = time.perf_counter_ns()
        except BaseException as error:  # reported below
            failures.append(error)
            barrier.abort()

    single = rounds(one_thread, 3, samples)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(LANES)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    threaded = [max(ends[r]) - min(starts[r]) for r in range(3, total)]
    commands = LANES * copies
    return {"implementation": name,
            "one_thread_mcps": commands / median(single) * 1e3,
            "threads16_mcps": commands / median(threaded) * 1e3}


def torch_run(copies, samples):
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("PyTorch has no CUDA device")

    def make_lane():
        return (torch.cuda.Stream(),
                torch.empty(SMALL_BYTES, dtype=torch.uint8, device="cuda"),
                torch.ones(SMALL_BYTES, dtype=torch.uint8, device="cuda"))

    def copy(lane):
        with torch.cuda.stream(lane[0]):
            lane[1].copy_(lane[2], non_blocking=True)

    return peer_run("PyTorch streams", make_lane, copy,
                    lambda lane: lane[0].synchronize(),
                    lambda lane: torch.cuda.stream(lane[0]), copies, samples)


def cupy_run(copies, samples):
    import contextlib
    import cupy

    def make_lane():
        return (cupy.cuda.Stream(non_blocking=True),
                cupy.empty(SMALL_BYTES, dtype=cupy.uint8),
                cupy.ones(SMALL_BYTES, dtype=cupy.uint8))

    def copy(lane):
        lane[1].data.copy_from_device_async(lane[2].data, SMALL_BYTES, lane[0])

    return peer_run("CuPy streams", make_lane, copy,
                    lambda lane: lane[0].synchronize(),
                    lambda lane: contextlib.nullcontext(), copies, samples)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="hip", choices=("hip", "host"))
    parser.add_argument("--queues", type=int, default=8)
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument("--repeat", type=int, default=3,
                        help="fresh hrx processes (the peers run once each)")
    parser.add_argument("--quick", action="store_true",
                        help="the CPU preset (256 copies per lane per round)")
    parser.add_argument("--output", help="JSON lines file to append to")
    args = parser.parse_args(argv)
    copies = 256 if args.quick else 1024
    results = []
    for repeat in range(args.repeat):
        result = hrx_run(args, args.queues)
        result["repeat"] = repeat
        results.append(result)
    if args.backend == "hip":
        for run in (torch_run, cupy_run):
            try:
                results.append(run(copies, args.samples))
            except Exception as error:  # a missing peer is reported, not fatal
                results.append({"implementation": run.__name__,
                                "skipped": f"{type(error).__name__}: {error}"})
    else:
        results.append({"implementation": "PyTorch and CuPy streams",
                        "skipped": "they need a CUDA GPU (backend hip)"})
    for result in results:
        if "skipped" in result:
            print(f"{result['implementation']}: skipped ({result['skipped']})")
            continue
        ratio = result["threads16_mcps"] / result["one_thread_mcps"]
        print(f"{result['implementation']}: one thread "
              f"{result['one_thread_mcps']:.3f} M/s, 16 threads "
              f"{result['threads16_mcps']:.3f} M/s ({ratio:.2f}x)")
    hrx_results = [r for r in results if "repeat" in r]
    ratios = [r["threads16_mcps"] / r["one_thread_mcps"] for r in hrx_results]
    print(f"hrx 16 threads / one thread, per repeat: "
          f"{', '.join(f'{x:.2f}' for x in ratios)} "
          f"(median {statistics.median(ratios):.2f})")
    if args.output:
        with open(args.output, "a") as out:
            for result in results:
                out.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
