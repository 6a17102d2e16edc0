"""Tiny-kernel launches per second: hrx from Python and from C beside CuPy,
PyTorch and a plain C runtime loop, in one run on one device; and steps per
second of a launch-bound step workload through hrx and CuPy.

Every launch row launches the built-in benchmark kernel hrx_bench_tiny (one
block of one thread writing one word; csrc/bench/bench_kernels.c), or
PyTorch's in-place add on a 1-element tensor as PyTorch's stand-in,
`--launches` times per thread after a warm-up, then synchronizes; a rate is
launches in all over the time from the threads' common start to the slowest
one's end. Rows:

  hrx python, 1 / 16 threads   Stream.launch from Python threads, each on
                               a pool stream of its own (hrx.bench.
                               kernel_launches.launch_rate)
  hrx C, 1 / 16 threads        hrx_stream_launch from C threads, each on a
                               pool stream of its own (hrx._hrx.bench_launch,
                               driver native)
  hrx C raw, 1 thread          the backend's kernel_launch on a native queue
                               of its own, past the stream layer (driver raw)
  hrx python, batching off, 1 thread / hrx C, batching off, 16 threads
                               the same with the device's batching switch
                               off: one driver call per launch, the
                               baseline of gathered launches in this run
  CuPy RawKernel, 1 thread     the same CUDA source through cupy.RawKernel
  PyTorch, 1 thread            torch.Tensor.add_(1) on a 1-element tensor
  c-runtime, 1 / 16 threads    a plain C loop of cudaLaunchKernel (AMD:
                               hipModuleLaunchKernel), each thread on a
                               non-blocking stream of its own, `--launches`
                               each (bench/baselines/kernel_launch.c, run
                               by bench/scripts/kernel_launch_baseline.sh:
                               one JSON line); its time ends when the
                               slowest thread's last launch call returns
  c-function, 16 threads       the same loop through the CUDA driver API's
                               cuLaunchKernel on the kernel's CUfunction:
                               whether the runtime's launch path caps the
                               16-thread rate (NVIDIA only)

Then the step workload (hrx/bench/launch_step.py): 21 launches of four
small kernels per step, with grids of several shapes, the step number
passed by value and two buffers trading places every step; `--steps` steps
after `--step-warmup`, one Python thread, one stream, each version checked
against a numpy reference of two steps first (a mismatch fails the row and
the run):

  step, hrx Stream.launch      hrx_step_rate: one Stream.launch per kernel
  step, CuPy eager             the same kernels through cupy.RawKernel
  step, CuPy graph replay      the step captured once with CuPy's stream
                               capture and replayed (Graph.launch) once per
                               step; its kernels read the step from a
                               counter in device memory that the step's
                               last kernel advances

Then isolated launches, where batching must cost nothing: `--latency-
launches` times one launch on an idle stream and that stream's
synchronize, one thread; the table gives microseconds per launch and
synchronize:

  isolated, hrx python         Stream.launch + Stream.synchronize
                               (kernel_launches.launch_latency)
  isolated, hrx python, batching off   the same with the device's batching
                               switch off
  isolated, hrx C              hrx_stream_launch + hrx_stream_synchronize
                               (bench_launch, synchronize_each)
  isolated, c-runtime          the plain C loop with --sync-each

CuPy, PyTorch, c-runtime and c-function rows need their library and a GPU
of the hip backend; elsewhere they are skipped with the reason. Each row
runs `--repeat` times, interleaved with the others; the tables give the
median and the range (for the hrx python rows also "call us": the median
over repeats of the mean thread's time per launch call, from its start
until its last call returned, its synchronize left out; with 16 threads,
what a call costs while the threads share the GIL; a step row's in
steps/s, with the launches per second they come to and, for hrx, the median of the mean gathered batch of its
timed steps and the share of its launches that went out in one, from
Device.pool_stats), and the ratios the runtime's goals name: hrx python 1 thread
against the C baseline (c-runtime where it ran, else hrx C raw) and against
CuPy, hrx python 16 threads against 1 thread, hrx python and hrx C at 16
threads against c-runtime at 16 threads (and, without a goal, c-function
against it), the hrx step against CuPy's captured graph and CuPy eager,
and the isolated launch's time: hrx C against c-runtime, and hrx python
with batching on against off.

    python3 -P bench/scripts/kernel_launch_rate.py --backend host
    python3 -P bench/scripts/kernel_launch_rate.py --backend hip \\
        --output kernel-launch-rate.json

Prints the tables (the command and the device first) and writes every
repeat's numbers, the medians (launches/s of every row; steps/s of the step
rows in step_medians), the skipped rows and the failed ones as one JSON
document to --output (if given). Exits with status 1 if a row failed its
check.
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
from hrx.bench import kernel_launches, launch_step  # noqa: E402
from hrx.bench.provenance import source_commit  # noqa: E402

BASELINE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "kernel_launch_baseline.sh")


class Skip(Exception):
    """A row that cannot run here, with the reason."""


def hrx_python(device, args, threads):
    r = kernel_launches.launch_rate(device, launches=args.launches,
                                    warmup=args.warmup, threads=threads)
    # The mean thread's time per launch call, synchronize left out.
    call_us = statistics.mean(r["call_ns"]) / args.launches / 1e3
    return r["launches"], r["elapsed_ns"] / 1e9, {"call_us": call_us}


def batching_off(runner):
    """`runner` with the device's batching switch off (restored after):
    every launch its own driver call, the baseline of gathered launches
    in the same run."""
    def run(device, args, threads):
        previous = device.batching
        device.set_batching(False)
        try:
            return runner(device, args, threads)
        finally:
            device.set_batching(previous)
    return run


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


def c_baseline(device, args, threads, driver, launches=None, extra=()):
    """The plain C program (bench/baselines/kernel_launch.c) with `driver`
    (c-runtime or c-function) from `threads` threads, `--launches` each;
    --baseline-args come last, so they override."""
    _gpu_index(device, f"the plain C loop ({driver})")
    if driver == "c-function" and device.info["platform"] != "nvidia":
        raise Skip("c-function launches through the CUDA driver API "
                   "(cuLaunchKernel); this GPU's runtime is HIP, which has "
                   "no separate driver entry points")
    if not os.path.exists(BASELINE):
        raise Skip(f"{os.path.relpath(BASELINE)} is not in this tree")
    command = ["bash", BASELINE, "--driver", driver, "--threads",
               str(threads), "--launches", str(launches or args.launches),
               *extra,
               *shlex.split(args.baseline_args)]
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
        if record.get("driver") == driver:
            # "launches" is per thread.
            return record["threads"] * record["launches"], record["seconds"]
    raise Skip(f"{' '.join(command)} printed no {driver} line")


def c_baseline_isolated(device, args, threads):
    """The plain C loop with --sync-each: (launches, seconds)."""
    return c_baseline(device, args, threads, "c-runtime",
                      launches=args.latency_launches, extra=["--sync-each"])


def hrx_python_isolated(device, args, threads):
    r = kernel_launches.launch_latency(device, launches=args.latency_launches,
                                       warmup=args.warmup // 10)
    return r["launches"], r["elapsed_ns"] / 1e9


def hrx_c_isolated(device, args, threads):
    r = hrx._hrx.bench_launch(device, launches=args.latency_launches,
                              warmup=args.warmup // 10, threads=1,
                              synchronize_each=True)
    return r["launches"], r["elapsed_ns"] / 1e9


def _steps(result):
    """(steps, seconds) and, where the run counted them, how its launches
    were gathered (launch_step._measure)."""
    extra = {key: result[key] for key in ("launches_per_batch",
                                          "share_batched") if key in result}
    return result["steps"], result["elapsed_ns"] / 1e9, extra


def step_hrx(device, args, threads):
    return _steps(launch_step.hrx_step_rate(
        device, steps=args.steps, warmup=args.step_warmup))


def _cupy_for_steps(device):
    index = _gpu_index(device, "CuPy")
    try:
        import cupy
    except ImportError as error:
        raise Skip(f"CuPy is not importable ({error})") from None
    return cupy, index


def step_cupy_eager(device, args, threads):
    cupy, index = _cupy_for_steps(device)
    with cupy.cuda.Device(index):
        return _steps(launch_step.cupy_eager_step_rate(
            cupy, steps=args.steps, warmup=args.step_warmup))


def step_cupy_graph(device, args, threads):
    cupy, index = _cupy_for_steps(device)
    with cupy.cuda.Device(index):
        return _steps(launch_step.cupy_graph_step_rate(
            cupy, steps=args.steps, warmup=args.step_warmup))


ROWS = [
    # (name, threads, runner): a runner returns (launches, seconds), a step
    # row's (steps, seconds)
    ("hrx python", 1, hrx_python),
    ("hrx python", 16, hrx_python),
    ("hrx C", 1, lambda d, a, t: hrx_c(d, a, t, "native")),
    ("hrx C", 16, lambda d, a, t: hrx_c(d, a, t, "native")),
    ("hrx C raw", 1, lambda d, a, t: hrx_c(d, a, t, "raw")),
    ("hrx python, batching off", 1, batching_off(hrx_python)),
    ("hrx C, batching off", 16,
     batching_off(lambda d, a, t: hrx_c(d, a, t, "native"))),
    ("CuPy RawKernel", 1, cupy_raw_kernel),
    ("PyTorch add_", 1, torch_add),
    ("c-runtime", 1, lambda d, a, t: c_baseline(d, a, t, "c-runtime")),
    ("c-runtime", 16, lambda d, a, t: c_baseline(d, a, t, "c-runtime")),
    ("c-function", 16, lambda d, a, t: c_baseline(d, a, t, "c-function")),
    ("step, hrx Stream.launch", 1, step_hrx),
    ("step, CuPy eager", 1, step_cupy_eager),
    ("step, CuPy graph replay", 1, step_cupy_graph),
    ("isolated, hrx python", 1, hrx_python_isolated),
    ("isolated, hrx python, batching off", 1,
     batching_off(hrx_python_isolated)),
    ("isolated, hrx C", 1, hrx_c_isolated),
    ("isolated, c-runtime", 1, c_baseline_isolated),
]

STEP_ROWS = {name for name, _, _ in ROWS if name.startswith("step, ")}
"""The step workload's rows: one Python thread each, named without it."""

ISOLATED_ROWS = {name for name, _, _ in ROWS if name.startswith("isolated, ")}
"""Isolated launch + synchronize: one thread each, named without it."""


def label(name, threads):
    if name in STEP_ROWS or name in ISOLATED_ROWS:
        return name
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
                        help="more arguments for kernel_launch_baseline.sh "
                             "(after --driver, --threads and --launches)")
    parser.add_argument("--steps", type=int, default=5000,
                        help="timed steps of the step workload per repeat")
    parser.add_argument("--step-warmup", type=int, default=100,
                        help="steps of the step workload before the timed "
                             "ones")
    parser.add_argument("--latency-launches", type=int, default=2000,
                        help="isolated launches (each followed by a "
                             "synchronize) per repeat of the isolated rows")
    parser.add_argument("--row", action="append", default=[],
                        metavar="PREFIX",
                        help="run only the rows whose label starts with "
                             "PREFIX (repeat for more: --row 'hrx python' "
                             "--row 'step, hrx'); default: every row")
    parser.add_argument("--output", help="a JSON file of every repeat")
    args = parser.parse_args()
    rows = [(n, t, r) for n, t, r in ROWS
            if not args.row or label(n, t).startswith(tuple(args.row))]
    if not rows:
        parser.error(f"--row {' --row '.join(map(repr, args.row))} matches "
                     f"no row; the rows: "
                     f"{'; '.join(label(n, t) for n, t, _ in ROWS)}")

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
    shape = launch_step.StepShape()
    print(f"# {args.launches} launches per thread after {args.warmup} "
          f"warm-up, {args.repeat} repeats interleaved; pool of "
          f"{args.queues} queues")
    print(f"# step workload: N={shape.n}, M={shape.m}, {shape.reps} "
          f"repetitions, {shape.launches_per_step} launches per step; "
          f"{args.steps} steps after {args.step_warmup} warm-up, each "
          f"version checked against numpy first")

    rates = {label(n, t): [] for n, t, _ in rows}     # launches/s
    step_rates = {label(n, t): [] for n, t, _ in rows if n in STEP_ROWS}
    skipped = {}
    failed = {}
    records = []
    for repeat in range(args.repeat):
        for name, threads, runner in rows:
            key = label(name, threads)
            if key in skipped or key in failed:
                continue
            try:
                count, seconds, *extra = runner(device, args, threads)
            except Skip as reason:
                skipped[key] = str(reason)
                continue
            except launch_step.CheckFailed as error:
                failed[key] = str(error)
                print(f"# FAILED {key}: {error}", file=sys.stderr)
                continue
            record = {"row": key, "repeat": repeat, "threads": threads}
            for more in extra:
                record.update(more)
            if key in step_rates:
                launches = count * shape.launches_per_step
                step_rates[key].append(count / seconds)
                record.update(steps=count, steps_per_s=count / seconds,
                              launches_per_step=shape.launches_per_step)
            else:
                launches = count
            rates[key].append(launches / seconds)
            record.update(launches=launches, seconds=seconds,
                          launches_per_s=launches / seconds)
            records.append(record)

    medians = {k: statistics.median(v) for k, v in rates.items() if v}
    step_medians = {k: statistics.median(v)
                    for k, v in step_rates.items() if v}
    if args.output:
        with open(args.output, "w") as output:
            json.dump({"device": info, "compiler": compiler,
                       "git_commit": commit, "argv": sys.argv[1:],
                       "step_shape": {"n": shape.n, "m": shape.m,
                                      "reps": shape.reps,
                                      "launches_per_step":
                                          shape.launches_per_step},
                       "repeats": records, "medians": medians,
                       "step_medians": step_medians,
                       "skipped": skipped, "failed": failed}, output,
                      indent=1)
            output.write("\n")

    def unmeasured(key):
        if key in failed:
            print(f"{key:36} {'FAILED':>11}  {failed[key]}")
        elif key in skipped:
            print(f"{key:36} {'skipped':>11}  {skipped[key]}")
        return key in failed or key in skipped

    launch_keys = [k for k in rates
                   if k not in step_rates and k not in ISOLATED_ROWS]
    if launch_keys:
        print(f"{'row':36} {'median M/s':>11} {'range M/s':>17} "
              f"{'call us':>8}")
    for key, values in rates.items():
        if key in step_rates or key in ISOLATED_ROWS or unmeasured(key):
            continue
        low, high = min(values) / 1e6, max(values) / 1e6
        calls = [r["call_us"] for r in records
                 if r["row"] == key and "call_us" in r]
        call = f" {statistics.median(calls):8.3f}" if calls else ""
        print(f"{key:36} {medians[key] / 1e6:11.3f} "
              f"{f'{low:.3f}-{high:.3f}':>17}{call}")
    if step_rates:
        print(f"{'step row':36} {'median k steps/s':>17} "
              f"{'range k steps/s':>17} {'M launches/s':>13} "
              f"{'per batch':>10} {'gathered':>9}")
    for key, values in step_rates.items():
        if unmeasured(key):
            continue
        low, high = min(values) / 1e3, max(values) / 1e3
        per_batch = [r["launches_per_batch"] for r in records
                     if r["row"] == key and "launches_per_batch" in r]
        gathered = [r["share_batched"] for r in records
                    if r["row"] == key and "share_batched" in r]
        batching = (f" {statistics.median(per_batch):10.1f} "
                    f"{statistics.median(gathered):9.0%}"
                    if per_batch and gathered else "")
        print(f"{key:36} {step_medians[key] / 1e3:17.2f} "
              f"{f'{low:.2f}-{high:.2f}':>17} {medians[key] / 1e6:13.3f}"
              f"{batching}")

    if any(k in ISOLATED_ROWS for k in rates):
        print(f"{'isolated row':36} {'median us':>10} {'range us':>15}")
    for key in (k for k in rates if k in ISOLATED_ROWS):
        if unmeasured(key):
            continue
        values = rates[key]
        low, high = 1e6 / max(values), 1e6 / min(values)
        print(f"{key:36} {1e6 / medians[key]:10.2f} "
              f"{f'{low:.2f}-{high:.2f}':>15}")

    one = medians.get(label("hrx python", 1))
    baseline_key = (label("c-runtime", 1) if label("c-runtime", 1) in medians
                    else label("hrx C raw", 1))
    print("ratios (medians; goals in brackets):")
    if one:
        print(f"  hrx python 1 thread: {one / 1e6:.3f} M/s [>= 1.0]")
    if one and baseline_key in medians:
        # The goal is against the plain C loop; hrx C raw only stands in.
        goal = " [>= 4]" if baseline_key == label("c-runtime", 1) else ""
        print(f"  hrx python 1 thread / {baseline_key}: "
              f"{one / medians[baseline_key]:.2f}{goal}")
    cupy_key = label("CuPy RawKernel", 1)
    if one and cupy_key in medians:
        print(f"  hrx python 1 thread / {cupy_key}: "
              f"{one / medians[cupy_key]:.2f} [>= 5]")
    sixteen = medians.get(label("hrx python", 16))
    if one and sixteen:
        print(f"  hrx python 16 threads / 1 thread: {sixteen / one:.2f} "
              f"[> 1]")
    for numerator, denominator, goal in (
            (label("hrx python", 1), label("hrx python, batching off", 1),
             ""),
            (label("hrx C", 16), label("hrx C, batching off", 16), ""),
            (label("hrx python", 16), label("c-runtime", 16), " [>= 1]"),
            (label("hrx C", 16), label("c-runtime", 16), " [>= 2]"),
            (label("c-function", 16), label("c-runtime", 16), ""),
            ("step, hrx Stream.launch", "step, CuPy graph replay",
             " [>= 0.9]"),
            ("step, hrx Stream.launch", "step, CuPy eager", " [>= 3]")):
        if numerator in medians and denominator in medians:
            print(f"  {numerator} / {denominator}: "
                  f"{medians[numerator] / medians[denominator]:.2f}{goal}")
    for slower, faster, goal in (
            ("isolated, hrx C", "isolated, c-runtime", " [<= 1.1]"),
            ("isolated, hrx python", "isolated, hrx python, batching off",
             "")):
        if slower in medians and faster in medians:
            # Time per launch: the inverse ratio of the rates.
            print(f"  time of {slower} / {faster}: "
                  f"{medians[faster] / medians[slower]:.2f}{goal}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
