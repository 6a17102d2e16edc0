"""Small copies from Python threads: hrx's python driver beside PyTorch and
CuPy streams, in one run on one machine.

Each implementation runs the queue-pool protocol's two small-copy cases
(16 lanes, each with its own stream and 4 KiB source and destination;
1024 copies per lane per round; 3 warm-up and 15 measured rounds; the
median round): "one thread" submits every lane's copies from one thread,
"16 threads" gives each lane its own thread, released together by a
barrier, a round lasting from the first start to the last end (both timed
by hrx.bench.rounds). hrx runs as `hrx-bench run --driver python QUEUES` in
a fresh process per repeat (its one-thread and 16-thread columns);
PyTorch copies with `dst.copy_(src, non_blocking=True)` under
`torch.cuda.stream(s)`, CuPy with
`dst.data.copy_from_device_async(src.data, n, stream)`; both are skipped
(with the reason) where they cannot run, e.g. on the host backend.

    python3 -P bench/scripts/python_threads.py --backend hip --output FILE
    python3 -P bench/scripts/python_threads.py --backend host --quick

--build LABEL=PATH (repeatable) compares builds of hrx in one run: each
repeat runs every build in turn, interleaved, the hrx process importing hrx
from PATH (PYTHONPATH), e.g. a testing build made by `make testing-build`
in another checkout. --gil-releases PATH runs the two cases once more with
the testing build at PATH and reports how many submissions released the GIL
in each, and why (the testing build counts them).

Prints one line per implementation (and build) and writes every repeat's
numbers as JSON lines to --output (if given).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from hrx.bench.builds import parse_builds, python_env
from hrx.bench.rounds import barrier_rounds, timed_rounds
from hrx.bench.stats import median

LANES = 16
SMALL_BYTES = 4096


def hrx_run(args, queues, label="hrx", path=None):
    command = [sys.executable, "-P", "-m", "hrx.bench", "run", "--driver",
               "python", "--backend", args.backend, str(queues),
               str(args.samples)]
    if args.quick:
        command.insert(-2, "--quick")
    line = subprocess.run(command, check=True, capture_output=True, text=True,
                          env=python_env(path)).stdout.strip().splitlines()[-1]
    record = json.loads(line)
    return {"implementation": f"{label} python driver, {queues} queues",
            "build": label, "pythonpath": path,
            "one_thread_mcps": record["small_commands_per_second"] / 1e6,
            "threads16_mcps": record["threaded_commands_per_second"] / 1e6,
            "git_commit": record.get("git_commit"),
            "command": " ".join(command[1:])}


# The two cases once more with a testing build, counting the submissions
# that released the GIL (hrx._hrx._testing_submissions_released_gil) in each.
GIL_PROBE = r"""
import json, sys
import hrx
from hrx.bench.rounds import barrier_rounds, timed_rounds
backend, queues, copies, samples, lanes_count, size = sys.argv[1:]
copies, samples, lanes_count, size = map(int, (copies, samples, lanes_count, size))
counts = hrx._hrx._testing_submissions_released_gil
device = hrx.Device.open(0, backend=backend)
device.set_stream_queue_count(int(queues))
lanes = []
for index in range(lanes_count):
    stream, src, dst = device.stream(), device.allocate(size), device.allocate(size)
    stream.fill(src, index)
    lanes.append((stream, dst[0:size], src[0:size]))
for stream, _, _ in lanes:
    stream.synchronize()

def one_thread():
    for _ in range(copies):
        for stream, dst, src in lanes:
            stream.copy(dst, src)
    for stream, _, _ in lanes:
        stream.synchronize()
    return 0

def share(index):
    stream, dst, src = lanes[index]
    for _ in range(copies):
        stream.copy(dst, src)
    stream.synchronize()

def released(before):
    after = counts()
    return {f"{kind}: {reason}": n - before.get((kind, reason), 0)
            for (kind, reason), n in after.items()
            if n != before.get((kind, reason), 0)}

report = {}
before = counts()
timed_rounds(one_thread, 3, samples)
report["one thread"] = released(before)
before = counts()
barrier_rounds(lanes_count, share, 3, samples)
report["16 threads"] = released(before)
print(json.dumps(report))
"""


def gil_releases(args, copies):
    """{case: {"kind: reason": count}} of one run of the two cases with the
    testing build at args.gil_releases."""
    command = [sys.executable, "-P", "-c", GIL_PROBE, args.backend,
               str(args.queues), str(copies), str(args.samples), str(LANES),
               str(SMALL_BYTES)]
    done = subprocess.run(command, check=True, capture_output=True, text=True,
                          env=python_env(args.gil_releases))
    return json.loads(done.stdout.strip().splitlines()[-1])


def peer_run(name, make_lane, copy, sync, stream_context, copies, samples):
    """The two cases with one library's streams, timed as the python driver
    times them (hrx.bench.rounds); a lane is (stream, dst, src)."""
    lanes = [make_lane() for _ in range(LANES)]

    def one_thread():
        start = time.perf_counter_ns()
        for _ in range(copies):
            for lane in lanes:
                copy(lane)
        for lane in lanes:
            sync(lane)
        return time.perf_counter_ns() - start

    def share(index):
        lane = lanes[index]
        for _ in range(copies):
            copy(lane)
        sync(lane)

    single = timed_rounds(one_thread, 3, samples)
    threaded = barrier_rounds(LANES, share, 3, samples,
                              context=lambda index: stream_context(lanes[index]))
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
    parser.add_argument("--build", action="append", default=[],
                        metavar="LABEL=PATH",
                        help="a build of hrx to run, importing hrx from PATH "
                             "(repeatable; the builds alternate within each "
                             "repeat); default: the installed hrx")
    parser.add_argument("--gil-releases", metavar="PATH",
                        help="a testing build (make testing-build) to count "
                             "the submissions that release the GIL with")
    args = parser.parse_args(argv)
    builds = parse_builds(parser, args.build, "--build") or [("hrx", None)]
    copies = 256 if args.quick else 1024
    results = []
    for repeat in range(args.repeat):
        for label, path in builds:
            result = hrx_run(args, args.queues, label, path)
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
    for label, _ in builds:
        mine = [r for r in results if r.get("build") == label]
        ratios = [r["threads16_mcps"] / r["one_thread_mcps"] for r in mine]
        print(f"{label} 16 threads / one thread, per repeat: "
              f"{', '.join(f'{x:.2f}' for x in ratios)} "
              f"(median {statistics.median(ratios):.2f}); medians: one thread "
              f"{statistics.median(r['one_thread_mcps'] for r in mine):.3f} "
              f"M/s, 16 threads "
              f"{statistics.median(r['threads16_mcps'] for r in mine):.3f} M/s")
    if args.gil_releases:
        report = gil_releases(args, copies)
        results.append({"implementation": "GIL releases",
                        "pythonpath": args.gil_releases, "released": report})
        for case, reasons in report.items():
            total = sum(reasons.values())
            print(f"submissions that released the GIL ({args.gil_releases}), "
                  f"{case}: {total}"
                  + "".join(f"\n  {n} {why}" for why, n in reasons.items()))
    if args.output:
        with open(args.output, "a") as out:
            for result in results:
                out.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
