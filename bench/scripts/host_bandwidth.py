"""Host-to-device and device-to-host bandwidth: hrx beside CuPy and PyTorch,
from pageable (numpy) and pinned host memory, at sizes from 64 KiB to
1 GiB, in one run on one device.

Rows (direction up: host to device, down: device to host):

  hrx, pageable, upload        Stream.upload(buf, numpy array)
  hrx, pinned, upload          the same from Device.empty_pinned(shape,
                               dtype)
  hrx, pin(), upload           the same from a numpy array inside
                               `with Device.pin(array):`
  hrx, pageable, read_into     Stream.read_into(buf, numpy array).wait()
  hrx, pageable, read().wait() Stream.read(buf).wait(), a new array each
                               time, dropped before the next read (a
                               large one's memory goes back to the result
                               pool, docs/host-memory.md)
  hrx, pinned, read_into       read_into an empty_pinned array
  hrx, pin(), read_into        read_into a numpy array inside pin()
  CuPy, pageable / pinned      cupy.ndarray.set(host, stream) and
                               .get(stream, out=host) on a non-blocking
                               stream; pinned from cupyx.empty_pinned
  PyTorch, pageable / pinned   Tensor.copy_(host, non_blocking=True) both
                               ways under torch.cuda.stream(s); pinned
                               from torch.empty(..., pin_memory=True)

A measurement moves `size` bytes `iters` times (enough for about
--target-bytes, at least one, at most --max-iters): uploads are issued back
to back and the stream synchronized once at the end; reads wait for each
read (each fills the same host memory). Its bandwidth is bytes over the
time from the first call to the end of the last wait. Each row checks its
bytes once per size (a mismatch fails the row and the run), then runs
--repeat times, the rows interleaved within each repeat. The table gives
the median and the range in GB/s (10^9 bytes per second).

The pinned hrx rows need Device.empty_pinned and Device.pin; CuPy and
PyTorch rows need their library and a GPU of the hip backend. A row that
cannot run here is skipped with the reason, printed under the table.

--single-thread-copies adds the hrx pageable rows once more from a child
process with HRX_STAGED_COPY_THREADS=0 (the staging copies of large
pageable transfers made by the calling thread alone; a paced read is still
copied out as its chunks land; docs/api.md, "Staged transfers"), labelled
", copy threads off". --cached-copies adds them from a child with
HRX_STAGED_COPY_STREAMING=0 (the large staging copies made with memcpy,
through the CPU caches, instead of around them), labelled ", cached
copies". Child rows run after the others, not interleaved with them.

    python3 -P bench/scripts/host_bandwidth.py --backend host --max-bytes 16777216
    python3 -P bench/scripts/host_bandwidth.py --backend hip \\
        --output host-bandwidth.jsonl

Prints the provenance header (device, commit, the command with the HRX_*
settings it was given), the table and the skipped rows; writes one JSON
line per measurement to --output (if given; `--output -` prints them after
the table, as a committed record keeps them). Exits with status 1 if a row
failed its check.
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
import tempfile
import time

# The runtime's settings this run was given, before `import hrx` adds its
# own (HRX_PYTHON_SITE_DIRS): the header puts them in front of the command.
GIVEN_SETTINGS = sorted((name, value) for name, value in os.environ.items()
                        if name.startswith("HRX_"))

import numpy as np  # noqa: E402

import hrx  # noqa: E402
from hrx.bench.provenance import source_commit  # noqa: E402

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30
DEFAULT_SIZES = [64 * KIB * 4 ** k for k in range(8)]  # 64 KiB .. 1 GiB


class Skip(Exception):
    """A row that cannot run here, with the reason."""


class CheckFailed(Exception):
    """A row whose bytes were wrong."""


def pattern(size, seed):
    """`size` bytes that differ between seeds and positions."""
    return (np.arange(size, dtype=np.uint64) * 2654435761 + seed).astype(
        np.uint8)


def size_label(size):
    for unit, name in ((GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")):
        if size >= unit and size % unit == 0:
            return f"{size // unit} {name}"
    return f"{size} B"


# ------------------------------------------------------------------- hrx

class HrxRow:
    """One hrx row: `memory` is pageable, pinned or pin; `op` is upload,
    read_into or read."""

    def __init__(self, device, memory, op):
        self.device, self.memory, self.op = device, memory, op
        self.direction = "up" if op == "upload" else "down"
        self.name = {"upload": "upload", "read_into": "read_into",
                     "read": "read().wait()"}[op]
        self.name = f"hrx, {memory}, {self.name}"

    def prepare(self, size):
        dev = self.device
        if self.memory == "pinned" and not hasattr(dev, "empty_pinned"):
            raise Skip("this hrx has no Device.empty_pinned")
        if self.memory == "pin" and not hasattr(dev, "pin"):
            raise Skip("this hrx has no Device.pin")
        stream = dev.stream()
        buf = dev.allocate(size)
        if self.memory == "pinned":
            host = dev.empty_pinned((size,), np.uint8)
        else:
            host = np.empty(size, np.uint8)
        pin = dev.pin(host) if self.memory == "pin" else None
        if pin is not None:
            pin.__enter__()
        return {"stream": stream, "buf": buf, "host": host, "pin": pin}

    def check(self, state, size):
        stream, buf, host = state["stream"], state["buf"], state["host"]
        expected = pattern(size, 1)
        if self.op == "upload":
            host[:] = expected
            stream.upload(buf, host)
            got = stream.read(buf).wait()
        else:
            stream.upload(buf, expected)
            if self.op == "read":
                got = stream.read(buf).wait()
            else:
                stream.read_into(buf, host).wait()
                got = host
        if not np.array_equal(got, expected):
            raise CheckFailed(f"{self.name}: wrong bytes at {size} bytes")

    def run(self, state, iters):
        stream, buf, host = state["stream"], state["buf"], state["host"]
        if self.op == "upload":
            for _ in range(iters):
                stream.upload(buf, host)
            stream.synchronize()
        elif self.op == "read_into":
            for _ in range(iters):
                stream.read_into(buf, host).wait()
        else:
            for _ in range(iters):
                stream.read(buf).wait()

    def release(self, state):
        if state.get("pin") is not None:
            state["pin"].__exit__(None, None, None)
        state["buf"].close()
        state["stream"].close()


# -------------------------------------------------------------- the peers

def gpu_index(device, what):
    info = device.info
    if info["backend"] != "hip":
        raise Skip(f"{what} needs a GPU of the hip backend; this device is "
                   f"{info['backend']}")
    return info["index"]


class CupyRow:
    def __init__(self, device, pinned, direction):
        self.device, self.pinned, self.direction = device, pinned, direction
        memory = "pinned" if pinned else "pageable"
        op = "set" if direction == "up" else "get"
        self.name = f"CuPy, {memory}, {op}"

    def prepare(self, size):
        index = gpu_index(self.device, "CuPy")
        try:
            import cupy
            import cupyx
        except ImportError as error:
            raise Skip(f"CuPy is not importable ({error})") from None
        self.cupy = cupy
        with cupy.cuda.Device(index):
            stream = cupy.cuda.Stream(non_blocking=True)
            buf = cupy.empty(size, dtype=cupy.uint8)
            host = (cupyx.empty_pinned((size,), np.uint8) if self.pinned
                    else np.empty(size, np.uint8))
        return {"index": index, "stream": stream, "buf": buf, "host": host}

    def check(self, state, size):
        expected = pattern(size, 2)
        with self.cupy.cuda.Device(state["index"]):
            if self.direction == "up":
                state["host"][:] = expected
                state["buf"].set(state["host"], stream=state["stream"])
                state["stream"].synchronize()
                got = state["buf"].get()
            else:
                state["buf"].set(expected)
                state["buf"].get(stream=state["stream"], out=state["host"])
                state["stream"].synchronize()
                got = state["host"]
        if not np.array_equal(got, expected):
            raise CheckFailed(f"{self.name}: wrong bytes at {size} bytes")

    def run(self, state, iters):
        stream, buf, host = state["stream"], state["buf"], state["host"]
        with self.cupy.cuda.Device(state["index"]):
            if self.direction == "up":
                for _ in range(iters):
                    buf.set(host, stream=stream)
                stream.synchronize()
            else:
                for _ in range(iters):
                    buf.get(stream=stream, out=host)
                    stream.synchronize()

    def release(self, state):
        state.clear()


class TorchRow:
    def __init__(self, device, pinned, direction):
        self.device, self.pinned, self.direction = device, pinned, direction
        memory = "pinned" if pinned else "pageable"
        self.name = f"PyTorch, {memory}, copy_ {direction}"

    def prepare(self, size):
        index = gpu_index(self.device, "PyTorch")
        try:
            import torch
        except ImportError as error:
            raise Skip(f"PyTorch is not importable ({error})") from None
        if not torch.cuda.is_available():
            raise Skip("torch.cuda is not available")
        self.torch = torch
        target = torch.device("cuda", index)
        stream = torch.cuda.Stream(device=target)
        buf = torch.empty(size, dtype=torch.uint8, device=target)
        if self.pinned:
            host = torch.empty(size, dtype=torch.uint8, pin_memory=True)
        else:
            host = torch.from_numpy(np.empty(size, np.uint8))
        return {"stream": stream, "buf": buf, "host": host}

    def check(self, state, size):
        torch = self.torch
        expected = pattern(size, 3)
        with torch.cuda.stream(state["stream"]):
            if self.direction == "up":
                state["host"].numpy()[:] = expected
                state["buf"].copy_(state["host"], non_blocking=True)
                state["stream"].synchronize()
                got = state["buf"].cpu().numpy()
            else:
                state["buf"].copy_(torch.from_numpy(expected.copy()))
                state["stream"].synchronize()
                state["host"].copy_(state["buf"], non_blocking=True)
                state["stream"].synchronize()
                got = state["host"].numpy()
        if not np.array_equal(got, expected):
            raise CheckFailed(f"{self.name}: wrong bytes at {size} bytes")

    def run(self, state, iters):
        stream, buf, host = state["stream"], state["buf"], state["host"]
        with self.torch.cuda.stream(stream):
            if self.direction == "up":
                for _ in range(iters):
                    buf.copy_(host, non_blocking=True)
                stream.synchronize()
            else:
                for _ in range(iters):
                    host.copy_(buf, non_blocking=True)
                    stream.synchronize()

    def release(self, state):
        state.clear()


def make_rows(device, only_hrx_pageable=False):
    rows = [HrxRow(device, "pageable", "upload"),
            HrxRow(device, "pageable", "read_into"),
            HrxRow(device, "pageable", "read")]
    if only_hrx_pageable:
        return rows
    rows += [HrxRow(device, "pinned", "upload"),
             HrxRow(device, "pinned", "read_into"),
             HrxRow(device, "pin", "upload"),
             HrxRow(device, "pin", "read_into")]
    for pinned in (False, True):
        for direction in ("up", "down"):
            rows.append(CupyRow(device, pinned, direction))
            rows.append(TorchRow(device, pinned, direction))
    return rows


# ------------------------------------------------------------ measuring

def iterations(size, args):
    return max(1, min(args.max_iters, -(-args.target_bytes // size)))


def measure(rows, sizes, args, suffix=""):
    """Every row at every size: JSON-ready records, skipped {row: reason},
    failed {row: message}."""
    records, skipped, failed = [], {}, {}
    for size in sizes:
        iters = iterations(size, args)
        states = {}
        for row in rows:
            if row.name in skipped or row.name in failed:
                continue
            try:
                state = row.prepare(size)
            except Skip as reason:
                skipped[row.name] = str(reason)
                continue
            try:
                row.check(state, size)
                row.run(state, 1)  # warm-up
            except CheckFailed as error:
                failed[row.name] = str(error)
                print(f"# FAILED {error}", file=sys.stderr)
                row.release(state)
                continue
            states[row.name] = (row, state)
        for repeat in range(args.repeat):
            for row, state in states.values():
                start = time.perf_counter()
                row.run(state, iters)
                seconds = time.perf_counter() - start
                records.append({
                    "row": row.name + suffix, "direction": row.direction,
                    "bytes": size, "iters": iters, "repeat": repeat,
                    "seconds": seconds,
                    "gb_per_s": size * iters / seconds / 1e9})
        for row, state in states.values():
            row.release(state)
    return records, skipped, failed


# The child runs of the hrx pageable rows: option, label suffix, settings.
CHILD_RUNS = {
    "single_thread_copies": (", copy threads off",
                             {"HRX_STAGED_COPY_THREADS": "0"}),
    "cached_copies": (", cached copies",
                      {"HRX_STAGED_COPY_STREAMING": "0"}),
}


def child_records(args, sizes, suffix, settings):
    """The hrx pageable rows from a child process given `settings`."""
    with tempfile.TemporaryDirectory() as scratch:
        output = os.path.join(scratch, "child.jsonl")
        command = [sys.executable, "-P", os.path.abspath(__file__),
                   "--device", str(args.device), "--repeat", str(args.repeat),
                   "--target-bytes", str(args.target_bytes),
                   "--max-iters", str(args.max_iters),
                   "--sizes", ",".join(str(s) for s in sizes),
                   "--child-suffix", suffix,
                   "--output", output]
        if args.backend:
            command += ["--backend", args.backend]
        env = dict(os.environ, **settings)
        env.pop("HRX_PYTHON_SITE_DIRS", None)
        result = subprocess.run(command, capture_output=True, text=True,
                                env=env)
        if result.returncode != 0:
            raise CheckFailed(f"the child run{suffix} failed: "
                              + result.stderr[-2000:])
        with open(output) as lines:
            return [json.loads(line) for line in lines if line.strip()]


def table(records):
    rows = {}
    for record in records:
        key = (record["bytes"], record["direction"], record["row"])
        rows.setdefault(key, []).append(record["gb_per_s"])
    lines = [f"{'size':>8}  {'dir':<4} {'row':<50} {'median GB/s':>11}  "
             f"{'range':>15}"]
    for (size, direction, name), values in sorted(
            rows.items(), key=lambda item: (item[0][0], item[0][1] != "up",
                                            item[0][2])):
        lines.append(f"{size_label(size):>8}  {direction:<4} {name:<50} "
                     f"{statistics.median(values):>11.2f}  "
                     f"{min(values):>6.2f} - {max(values):>6.2f}")
    return lines


def parse_sizes(text):
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--sizes takes byte counts separated by commas, got {text!r}")
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(
            f"--sizes needs positive byte counts, got {text!r}")
    return sizes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default=None, help="host or hip")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--sizes", type=parse_sizes, default=DEFAULT_SIZES,
                        help="byte counts separated by commas (default 64 KiB "
                             "to 1 GiB in powers of 4)")
    parser.add_argument("--max-bytes", type=int, default=None,
                        help="leave out sizes above this")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--target-bytes", type=int, default=256 * MIB,
                        help="bytes each measurement moves, about")
    parser.add_argument("--max-iters", type=int, default=64,
                        help="transfers per measurement at most")
    parser.add_argument("--single-thread-copies", action="store_true",
                        help="the hrx pageable rows again with "
                             "HRX_STAGED_COPY_THREADS=0 (a child process)")
    parser.add_argument("--cached-copies", action="store_true",
                        help="the hrx pageable rows again with "
                             "HRX_STAGED_COPY_STREAMING=0 (a child process)")
    parser.add_argument("--child-suffix", default=None,
                        help=argparse.SUPPRESS)
    parser.add_argument("--output", help="a file of JSON lines, one per "
                                         "measurement; -: print them after "
                                         "the table")
    args = parser.parse_args()
    sizes = [s for s in args.sizes
             if args.max_bytes is None or s <= args.max_bytes]
    if not sizes:
        parser.error("no size is left under --max-bytes")

    device = hrx.Device.open(args.device, backend=args.backend)
    if args.child_suffix is not None:
        records, _, failed = measure(make_rows(device, True), sizes, args,
                                     args.child_suffix)
        with open(args.output, "w") as output:
            for record in records:
                output.write(json.dumps(record) + "\n")
        return 1 if failed else 0

    info = device.info
    commit, dirty = source_commit()
    print(f"# host bandwidth: {info['backend']}:{info['index']} "
          f"{info['name']} ({platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, numpy {np.__version__}, "
          f"hrx {hrx.__version__})")
    print(f"# hrx built from {commit or 'an unknown commit'}"
          f"{' (modified)' if dirty else ''}")
    settings = " ".join(f"{name}={shlex.quote(value)}"
                        for name, value in GIVEN_SETTINGS)
    print(f"# command: {settings + ' ' if settings else ''}"
          f"python3 -P bench/scripts/host_bandwidth.py "
          f"{' '.join(shlex.quote(a) for a in sys.argv[1:])}")
    print(f"# sizes {', '.join(size_label(s) for s in sizes)}; about "
          f"{size_label(args.target_bytes)} per measurement (at most "
          f"{args.max_iters} transfers); {args.repeat} repeats, rows "
          f"interleaved; GB/s = 10^9 bytes/s")

    records, skipped, failed = measure(make_rows(device), sizes, args)
    for option, (suffix, settings) in CHILD_RUNS.items():
        if not getattr(args, option):
            continue
        try:
            records += child_records(args, sizes, suffix, settings)
        except CheckFailed as error:
            failed["hrx" + suffix] = str(error)
            print(f"# FAILED {error}", file=sys.stderr)
    commit_text = commit + ("+modified" if dirty else "") if commit else None
    lines = [json.dumps(dict(record, device=f"{info['backend']}:"
                             f"{info['index']} {info['name']}",
                             git_commit=commit_text)) for record in records]
    if args.output and args.output != "-":
        with open(args.output, "w") as output:
            output.writelines(line + "\n" for line in lines)
    for line in table(records):
        print(line)
    for name, reason in skipped.items():
        print(f"# skipped {name}: {reason}")
    for name, message in failed.items():
        print(f"# failed {name}: {message}")
    if args.output == "-":
        for line in lines:
            print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
