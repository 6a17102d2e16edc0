"""Tiny-kernel launches per second: hrx from Python and from C beside CuPy,
PyTorch and a plain C runtime loop, in one run on one device.

Every row launches the built-in benchmark kernel hrx_bench_tiny (one block
of one thread writing one word; csrc/bench/bench_kernels.c), or PyTorch's
in-place add on a 1-element tensor as PyTorch's stand-in, `--launches`
times per thread after a warm-up, then synchronizes; a rate is launches in
all over the time from the threads' common start to the slowest one's end.
Rows:

  hrx python, 1 / 16 threads   Stream.launch from Python threads, each on
                               a pool stream of its own (hrx.bench.
                               kernel_launches.launch_rate)
  hrx C, 1 / 16 threads        hrx_stream_launch from C threads, each on a
                               pool stream of its own (hrx._hrx.bench_launch,
                               driver native)
  hrx C raw, 1 thread          the backend's kernel_launch on a native queue
                               of its own, past the stream layer (driver raw)
  CuPy RawKernel, 1 thread     the same CUDA source through cupy.RawKernel
  PyTorch, 1 thread            torch.Tensor.add_(1) on a 1-element tensor
  c-runtime, 1 thread          a plain C cudaLaunchKernel / hipLaunchKernel
                               loop (bench/scripts/kernel_launch_baseline.sh,
                               one JSON line), where that script exists

CuPy, PyTorch and c-runtime rows need their library and a GPU of the hip
backend; elsewhere they are skipped with the reason. Each row runs
`--repeat` times, interleaved with the others; the table gives the median
and the range, and the ratios the runtime's goals name: hrx python 1 thread
against the C baseline (c-runtime where it ran, else hrx C raw) and against
CuPy, and hrx python 16 threads against 1 thread.

    python3 -P bench/scripts/kernel_launch_rate.py --backend host
    python3 -P bench/scripts/kernel_launch_rate.py --backend hip \\
        --output kernel-launch-rate.json

Prints the table (the command and the device first) and writes every
repeat's numbers, the medians and the skipped rows as one JSON document to
--output (if given).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import threading
import time

# The runtime's settings this run was given, before `import hrx` adds its
# own (HRX_PYTHON_SITE_DIRS): the header puts them in front of the command.
GIVEN_SETTINGS = sorted((name, value) for name, value in os.environ.items()
                        if name.startswith("HRX_"))

import hrx  # noqa: E402
import hrx._hrx  # noqa: E402
from hrx.bench import kernel_launches  # noqa: E402
from hrx.bench.provenance import source_commit  # noqa: E402

BASELINE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "kernel_launch_baseline.sh")


class Skip(Exception):
    """A row that cannot run here, with the reason."""


def hrx_python(device, args, threads):
    r = kernel_launches.launch_rate(device, launches=args.launches,
                                    warmup=args.warmup, threads=threads)
    return r["launches"], r["elapsed_ns"] / 1e9


def hrx_c(device, args, threads, driver):
    r = hrx._hrx.bench_launch(device, driver=driver, launches=args.launches,
                              warmup=args.warmup, threads=threads)
    return r["launches"], r["elapsed_ns"] / 1e9


def _gpu_index(device, what):
    info = device.info
    if info["backend"] != "hip":
        raise Skip(f"{what} needs a GPU of the hip backend; this device is "
                   f"{info['backend']}")
    return info["index"]


def cupy_raw_kernel(device, args, threads):
    index = _gpu_index(device, "CuPy")
    try:
        import cupy
    except ImportError as error:
        raise Skip(f"CuPy is not importable ({error})") from None
    language = device.kernel_compiler()["language"]
    source = hrx._hrx.bench_kernel_source(language)
    with cupy.cuda.Device(index):
        kernel = cupy.RawKernel(source, "hrx_bench_tiny")
        out = cupy.zeros(1, dtype=cupy.uint32)
        stream = cupy.cuda.Stream(non_blocking=True)
        with stream:
            for _ in range(args.warmup):
                kernel((1,), (1,), (out,))
            stream.synchronize()
            start = time.perf_counter_ns()
            for _ in range(args.launches):
                kernel((1,), (1,), (out,))
            stream.synchronize()
            elapsed = time.perf_counter_ns() - start
        # hrx_bench_tiny adds 1 to out[block] per launch.
        assert int(out[0]) == args.warmup + args.launches, int(out[0])
    return args.launches, elapsed / 1e9


def torch_add(device, args, threads):
    index = _gpu_index(device, "PyTorch")
    try:
        import torch
    except ImportError as error:
        raise Skip(f"PyTorch is not importable ({error})") from None
    if not torch.cuda.is_available():
        raise Skip("torch.cuda is not available")
    target = torch.device("cuda", index)
    tensor = torch.zeros(1, device=target)
    stream = torch.cuda.Stream(device=target)
    with torch.cuda.stream(stream):
        for _ in range(args.warmup):
            tensor.add_(1)
        stream.synchronize()
        start = time.perf_counter_ns()
        for _ in range(args.launches):
            tensor.add_(1)
        stream.synchronize()
        elapsed = time.perf_counter_ns() - start
    return args.launches, elapsed / 1e9


def c_runtime(device, args, threads):
    _gpu_index(device, "the plain C runtime loop")
    if not os.path.exists(BASELINE):
        raise Skip(f"{os.path.relpath(BASELINE)} is not in this tree")
    command = ["bash", BASELINE, *shlex.split(args.baseline_args)]
    done = subprocess.run(command, capture_output=True, text=True,
                          timeout=300)
    if done.returncode != 0:
        raise Skip(f"{' '.join(command)} failed ({done.returncode}): "
                   f"{done.stderr.strip()[-300:]}")
    for line in reversed(done.stdout.splitlines()):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("driver") == "c-runtime":
            return record["launches"], record["seconds"]
    raise Skip(f"{' '.join(command)} printed no c-runtime line")


ROWS = [
    # (name, threads, runner)
    ("hrx python", 1, hrx_python),
    ("hrx python", 16, hrx_python),
    ("hrx C", 1, lambda d, a, t: hrx_c(d, a, t, "native")),
    ("hrx C", 16, lambda d, a, t: hrx_c(d, a, t, "native")),
    ("hrx C raw", 1, lambda d, a, t: hrx_c(d, a, t, "raw")),
    ("CuPy RawKernel", 1, cupy_raw_kernel),
    ("PyTorch add_", 1, torch_add),
    ("c-runtime", 1, c_runtime),
]


def label(name, threads):
    return f"{name}, {threads} thread{'s' if threads > 1 else ''}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default=None, help="host or hip")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--launches", type=int, default=20000,
                        help="launches per thread per repeat")
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--queues", type=int, default=16,
                        help="the pool size: each of 16 threads gets a "
                             "queue of its own")
    parser.add_argument("--baseline-args", default="",
                        help="arguments for kernel_launch_baseline.sh")
    parser.add_argument("--output", help="a JSON file of every repeat")
    args = parser.parse_args()

    device = hrx.Device.open(args.device, backend=args.backend)
    device.set_stream_queue_count(args.queues)
    info = device.info
    compiler = device.kernel_compiler()
    print(f"# kernel launch rate: {info['backend']}:{info['index']} "
          f"{info['name']} ({info['target']}, {platform.machine()}, Python "
          f"{platform.python_version()}, hrx {hrx.__version__})")
    commit, dirty = source_commit()
    print(f"# compiler: {compiler['compiler']}; hrx built from "
          f"{commit or 'an unknown commit'}{' (modified)' if dirty else ''}")
    # The runtime's settings from the environment go in front of the
    # command, so that it reproduces the run.
    settings = " ".join(f"{name}={shlex.quote(value)}"
                        for name, value in GIVEN_SETTINGS)
    print(f"# command: {settings + ' ' if settings else ''}"
          f"python3 -P bench/scripts/kernel_launch_rate.py "
          f"{' '.join(shlex.quote(a) for a in sys.argv[1:])}")
    print(f"# {args.launches} launches per thread after {args.warmup} "
          f"warm-up, {args.repeat} repeats interleaved; pool of "
          f"{args.queues} queues")

    rates = {label(n, t): [] for n, t, _ in ROWS}
    skipped = {}
    records = []
    for repeat in range(args.repeat):
        for name, threads, runner in ROWS:
            key = label(name, threads)
            if key in skipped:
                continue
            try:
                launches, seconds = runner(device, args, threads)
            except Skip as reason:
                skipped[key] = str(reason)
                continue
            rate = launches / seconds
            rates[key].append(rate)
            records.append({"row": key, "repeat": repeat, "threads": threads,
                            "launches": launches, "seconds": seconds,
                            "launches_per_s": rate})

    medians = {k: statistics.median(v) for k, v in rates.items() if v}
    if args.output:
        with open(args.output, "w") as output:
            json.dump({"device": info, "compiler": compiler,
                       "git_commit": commit, "argv": sys.argv[1:],
                       "repeats": records, "medians": medians,
                       "skipped": skipped}, output, indent=1)
            output.write("\n")
    print(f"{'row':32} {'median M/s':>11} {'range M/s':>17}")
    for key, values in rates.items():
        if key in skipped:
            print(f"{key:32} {'skipped':>11}  {skipped[key]}")
            continue
        low, high = min(values) / 1e6, max(values) / 1e6
        print(f"{key:32} {medians[key] / 1e6:11.3f} "
              f"{f'{low:.3f}-{high:.3f}':>17}")

    one = medians.get(label("hrx python", 1))
    baseline_key = (label("c-runtime", 1) if label("c-runtime", 1) in medians
                    else label("hrx C raw", 1))
    print("ratios (medians; goals in brackets):")
    if one and baseline_key in medians:
        print(f"  hrx python 1 thread / {baseline_key}: "
              f"{one / medians[baseline_key]:.2f} [>= 0.8]")
    cupy_key = label("CuPy RawKernel", 1)
    if one and cupy_key in medians:
        print(f"  hrx python 1 thread / {cupy_key}: "
              f"{one / medians[cupy_key]:.2f} [>= 2]")
    sixteen = medians.get(label("hrx python", 16))
    if one and sixteen:
        print(f"  hrx python 16 threads / 1 thread: {sixteen / one:.2f} "
              f"[>= 0.8]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
