"""What one Stream.launch call costs the calling Python thread, for builds
of hrx side by side: each build (`--build LABEL=PATH`, PATH the directory
a child imports hrx from, e.g. a testing build's build/testing; without
one, the installed hrx) times `--launches` launches of the built-in tiny
kernel on one stream of device 0 of `--backend` in a fresh process,
`--repeat` times, the builds taking turns; the table gives each build's
median and range in nanoseconds per call and the ratio of each median to
the first build's.

The time runs from the first call to the return of the last, before the
stream's synchronize: what the launches hold the calling thread (and the
GIL) for, the part of a launch that Python threads cannot overlap. The
launches go to one stream after a warm-up, so they are gathered into
batches as a launch loop's are.

    python3 -P bench/scripts/launch_call_cost.py --backend host \\
        --build before=/path/to/old/build/testing --build after=build/testing
"""
import argparse
import json
import statistics
import subprocess
import sys

from hrx.bench.builds import parse_builds, python_env

CHILD = r"""
import json, sys, time
import hrx
from hrx.bench.kernel_launches import builtin_kernel
backend, launches = sys.argv[1], int(sys.argv[2])
device = hrx.Device.open(0, backend=backend)
kernel = builtin_kernel(device, "tiny")
stream = device.stream()
out = device.allocate(4)
stream.fill(out, 0)
launch, args = stream.launch, (out,)

def run(count):
    for _ in range(count):
        launch(kernel, 1, 1, args)

run(1000)
stream.synchronize()
start = time.perf_counter_ns()
run(launches)
called = time.perf_counter_ns()
stream.synchronize()
print(json.dumps({"ns_per_call": (called - start) / launches}))
"""


def measure(path, backend, launches):
    done = subprocess.run([sys.executable, "-P", "-c", CHILD, backend,
                           str(launches)], capture_output=True, text=True,
                          env=python_env(path), timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"build {path or '(installed)'} failed:\n"
                         f"{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])["ns_per_call"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", action="append", default=[],
                        metavar="LABEL=PATH",
                        help="a build of hrx to time, importing hrx from "
                             "PATH (repeatable; the builds take turns); "
                             "default: the installed hrx")
    parser.add_argument("--backend", default="host")
    parser.add_argument("--launches", type=int, default=200000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    builds = (parse_builds(parser, args.build, "--build") or
              [("hrx", None)])
    times = {name: [] for name, _ in builds}
    for _ in range(args.repeat):
        for name, path in builds:
            times[name].append(measure(path, args.backend, args.launches))
    print(f"# command: python3 -P bench/scripts/launch_call_cost.py "
          f"{' '.join(sys.argv[1:])}")
    print(f"# {args.launches} launches of the tiny kernel on one stream per "
          f"process, {args.repeat} processes per build, builds in turn")
    first = statistics.median(times[builds[0][0]])
    print(f"{'build':12} {'median ns/call':>15} {'range':>15} "
          f"{'ratio':>7}")
    for name, path in builds:
        values = times[name]
        median = statistics.median(values)
        span = f"{min(values):.0f}-{max(values):.0f}"
        print(f"{name:12} {median:15.0f} {span:>15} "
              f"{median / first:7.2f}  {path or '(installed)'}")


if __name__ == "__main__":
    main()
