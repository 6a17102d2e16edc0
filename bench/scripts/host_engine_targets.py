"""The host backend's performance targets, per queue count, from sweep
files (JSON lines with native and python driver lines of the host backend):

  idle p95 <= 5 us                       median over runs of the run's p95
  bulk >= 0.9 x memcpy                   median over runs of bulk_copy_gb_s /
                                         environment.host_memcpy_bulk_gb_s (one
                                         thread's memcpy of the bulk case's own
                                         copies; "–" for lines without it), and
                                         beside it the ratio to the one hot
                                         block's figure, host_memcpy_gb_s
  one host thread (native), M/s          median over runs (compare with the
                                         baseline figure given)
  python / native one host thread >= 0.5 ratio of the two medians
  reserved + high / round-robin <= 0.1   ratio of the medians of the probes'
    at 8 and 16 queues                   p95s (native driver)

Usage: python3 bench/scripts/host_engine_targets.py FILE.jsonl [...] [-o OUT]
Prints one Markdown table per file and batching setting; numbers only
(the verdicts are for the reader). With -o, writes them to OUT after a line
naming the command that writes OUT again from its directory
(hrx/bench/report.py).
"""
from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict

from hrx.bench.lines import read_lines
from hrx.bench.report import relative_to, write_report
from hrx.bench.stats import run_median


def _median_or_none(values):
    values = [v for v in values if v is not None]
    return run_median(values) if values else None


def _fmt(value, digits):
    return "–" if value is None else f"{value:.{digits}f}"


def _bulk_ratio(lines, baseline):
    """Median over runs of the bulk bandwidth over the run's memcpy figure."""
    return _median_or_none(line["bulk_copy_gb_s"] / line["environment"][baseline]
                           for line in lines if line["environment"].get(baseline))


def summarize(path: str) -> str:
    lines, _ = read_lines([path])
    groups = defaultdict(list)
    for line in lines:
        if line.get("backend") != "host" or "error" in line:
            continue
        key = (line.get("sizes", {}).get("preset", "custom"), line.get("batching", True))
        groups[key].append(line)
    out = []
    for (preset, batching), group in sorted(groups.items(), key=str):
        by_queues = defaultdict(lambda: defaultdict(list))
        for line in group:
            by_queues[line["queues"]][line["driver"]].append(line)
        out.append(f"## {os.path.basename(path)}: {preset} sizes, batching {'on' if batching else 'off'}\n")
        out.append("| Queues | Idle p95, µs (native) | Bulk ÷ memcpy of its copies "
                   "| Bulk ÷ memcpy of one hot block | One thread native, M/s "
                   "| Python ÷ native, one thread | Reserved + high ÷ round-robin |")
        out.append("|---:|---:|---:|---:|---:|---:|---:|")
        for queues in sorted(by_queues):
            native = by_queues[queues].get("native", [])
            python = by_queues[queues].get("python", [])
            idle = _median_or_none(l["idle_latency_p95_us"] for l in native)
            bulk = _bulk_ratio(native, "host_memcpy_bulk_gb_s")
            bulk_hot = _bulk_ratio(native, "host_memcpy_gb_s")
            one = _median_or_none(l["small_commands_per_second"] / 1e6 for l in native)
            one_py = _median_or_none(l["small_commands_per_second"] / 1e6 for l in python)
            ratio_py = one_py / one if one and one_py else None
            probe = _median_or_none(l.get("loaded_reserved_high_latency_p95_us") for l in native)
            round_robin = _median_or_none(l["loaded_latency_p95_us"] for l in native)
            ratio_probe = probe / round_robin if probe and round_robin else None
            out.append(f"| {queues} | {_fmt(idle, 2)} | {_fmt(bulk, 2)} | {_fmt(bulk_hot, 2)} "
                       f"| {_fmt(one, 3)} "
                       f"| {_fmt(ratio_py, 2)} | {_fmt(ratio_probe, 4)} |")
        out.append("")
    return "\n".join(out)


def main(argv) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     usage="%(prog)s FILE.jsonl [...] [-o OUT]")
    parser.add_argument("files", nargs="+", metavar="FILE.jsonl")
    parser.add_argument("-o", "--output", metavar="OUT",
                        help="write the tables to OUT, after the command that makes it")
    args = parser.parse_args(argv)
    text = "".join(summarize(path) + "\n" for path in args.files)
    if not args.output:
        sys.stdout.write(text)
        return 0
    command = (["python3", "-P", relative_to(__file__, args.output)]
               + [relative_to(path, args.output) for path in args.files]
               + ["-o", os.path.basename(args.output)])
    write_report(args.output, text, command)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
