"""``hrx-bench`` (also ``python -m hrx.bench``): the queue-pool benchmark's
command line; DESCRIPTION is what ``hrx-bench --help`` prints first.

Exit status: 0 when the command did what it was asked; 1 when it ran but has
nothing to show (no successful run to tabulate or plot, nothing to compare,
a sweep with failed runs); 2 for bad arguments, a missing file or a device
that cannot be opened; 74 when the sweep's results file cannot take a line;
130 after Ctrl-C or SIGTERM.
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import traceback
from typing import Any, Dict, List, Optional, Sequence

from .compare import BATCHING_OFF
from .config import DEFAULT, QUICK, SIZE_FIELDS, SIZE_RULES
from .drivers import DRIVERS, WORKLOAD_ONLY
from .workload import DEFAULT_STREAMS, WorkloadError

SPLITS = ("connections",)
"""What ``hrx-bench table --split-by`` splits the lines by."""

__all__ = ["main", "build_parser", "parse_size", "DESCRIPTION"]

DESCRIPTION = """\
The queue-pool benchmark: how many native queues the stream pool should have.

  hrx-bench run QUEUES [SAMPLES]    one run in this process; one JSON line on stdout
  hrx-bench sweep                   every (queue count, repeat) in a fresh process
                                    (--workload module:function adds your own work;
                                    --only-workload times it alone)
  hrx-bench describe                the device a run opens, and why that backend
  hrx-bench table FILE...           the table, ranges, decisive differences, default
  hrx-bench compare FILE...         one driver's medians divided by a baseline's
  hrx-bench plot FILE... --out P    the columns against queue count, as a PNG

Each command's options: hrx-bench COMMAND --help. Exit status: 0 done; 1 nothing
to show (no successful run, nothing to compare, failed runs in a sweep); 2 bad
arguments or no device; 74 results file full; 130 interrupted.
"""

_UNITS = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}


def parse_size(text: str) -> int:
    """A positive count or byte size: ``4096``, ``4K``, ``4KiB``, ``32M``, ``1G``
    (binary multiples)."""
    match = re.fullmatch(r"\s*(\d+)\s*([kmgKMG]?)(?:i?[bB])?\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r}")
    value = int(match.group(1)) * _UNITS[match.group(2).lower()]
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {text!r}")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {text!r}")
    return value


def _queue_list(text: str) -> List[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a comma-separated list of counts: {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"queue counts must be >= 1: {text!r}")
    return values


def _batching_one(text: str) -> bool:
    value = {"on": True, "off": False}.get(text.strip().lower())
    if value is None:
        raise argparse.ArgumentTypeError(f"batching is on or off; got {text!r}")
    return value


def _batching_list(text: str) -> List[bool]:
    values = [_batching_one(part) for part in text.split(",")]
    if len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"batching settings repeat: {text!r}")
    return values


def _driver_list(text: str) -> List[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in DRIVERS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"drivers are {', '.join(DRIVERS)}; got {text!r}")
    return names


def _device_choice(text: str) -> Any:
    """--device of the sweep: an index >= 0 or "all"."""
    if text == "all":
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a device index or 'all', got {text!r}")
    if value < 0:
        raise argparse.ArgumentTypeError(f"a device index is >= 0, got {value}")
    return value


def _add_device_options(parser: argparse.ArgumentParser, several: bool = False) -> None:
    parser.add_argument("--backend", help="hip or host (default: HRX_BACKEND, else hip if it "
                                          "has a device, else host)")
    if several:
        parser.add_argument("--device", type=_device_choice, default=0,
                            help="device index (default 0), or 'all': every device of the "
                                 "backend, swept in turn (or at once with "
                                 "--concurrent-devices); every line names its device")
    else:
        parser.add_argument("--device", type=int, default=0, help="device index (default 0)")


def _add_workload_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "workload", "your own work, timed after the driver's cases in the same process: "
                    "SPEC is module:function or path/to/file.py:function, called as "
                    "function(device, streams) once per round (see hrx.bench.workload)")
    group.add_argument("--workload", metavar="SPEC", help="the workload to run")
    group.add_argument("--workload-streams", type=_positive, default=DEFAULT_STREAMS,
                       metavar="N", help=f"pool streams handed to it (default {DEFAULT_STREAMS})")
    group.add_argument("--only-workload", action="store_true",
                       help="time the workload alone: none of the driver's cases, only "
                            "--warmup + SAMPLES rounds of it (lines name driver 'workload')")


def _add_size_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "sizes", f"default (--preset auto): the quick sizes on the host backend (a CPU "
                 f"device: bulk {QUICK.bulk_copies}x{QUICK.bulk_bytes // 2 ** 20} MiB, "
                 f"{QUICK.small_copies} small copies per lane), the reference protocol on a "
                 f"GPU; each option below overrides one value")
    group.add_argument("--preset", choices=SIZE_RULES, default="auto",
                       help="auto (the rule above), reference (the reference protocol's "
                            "sizes on any device) or quick")
    group.add_argument("--quick", action="store_true", help="same as --preset quick")
    for name in SIZE_FIELDS:
        if name == "samples":
            continue
        kind = parse_size if name.endswith("bytes") else _positive
        group.add_argument("--" + name.replace("_", "-"), type=kind, metavar="N",
                           help=_size_default(name))


def _size_default(name: str) -> str:
    """The default of one size option: one value where both presets agree,
    else the value of each (the size rule picks the preset by backend)."""
    reference, quick = getattr(DEFAULT, name), getattr(QUICK, name)
    if reference == quick:
        return f"default {reference}"
    return f"default {reference} on a GPU, {quick} on the host backend (--preset auto)"


def _sizes(args: argparse.Namespace) -> Dict[str, Optional[int]]:
    return {name: getattr(args, name, None) for name in SIZE_FIELDS if name != "samples"}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(prog="hrx-bench", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="one run in this process; prints one JSON line")
    run.add_argument("queues", type=_positive, metavar="QUEUES", help="pool size")
    run.add_argument("samples", type=_positive, nargs="?", metavar="SAMPLES",
                     help=f"measured rounds per case (default {DEFAULT.samples}); "
                          f"also --samples N")
    run.add_argument("--samples", type=_positive, dest="samples_option", metavar="N",
                     help="the same as SAMPLES")
    run.add_argument("--driver", choices=DRIVERS, default=None,
                     help="native: the timed loops in C through the public C API (default); "
                          "raw: the same loops straight on the backend's native queues, "
                          "without hrx's stream layer; python: through the Python API")
    run.add_argument("--batching", type=_batching_one, default=True, metavar="on|off",
                     help="submission batching (default on)")
    run.add_argument("--repeat", type=_positive, default=1, help="repeat number to record")
    _add_device_options(run)
    _add_size_options(run)
    _add_workload_options(run)

    sweep = commands.add_parser("sweep", help="each (queue count, repeat) in a fresh process")
    sweep.add_argument("--queues", type=_queue_list, default=[1, 2, 4, 8, 16],
                       help="comma-separated pool sizes (default 1,2,4,8,16)")
    sweep.add_argument("--repeats", type=_positive, default=3, help="(default 3)")
    sweep.add_argument("--samples", type=_positive, help=f"(default {DEFAULT.samples})")
    sweep.add_argument("--driver", type=_driver_list, default=None,
                       help="one or more of native,raw,python, comma-separated (default native)")
    sweep.add_argument("--batching", type=_batching_list, default=[True], metavar="on,off",
                       help="batching settings to run each driver with but raw, "
                            "comma-separated (default on)")
    sweep.add_argument("-o", "--output", help="results file to append to "
                                              "(default hrx-sweep-<UTC time>.jsonl)")
    sweep.add_argument("--timeout", type=float, default=600.0,
                       help="seconds per child before it is killed and recorded as an error "
                            "(default 600; 0 = none)")
    sweep.add_argument("--resume", action="store_true",
                       help="continue the sweep in --output: skip (queues, repeat, driver, "
                            "batching) already recorded there as successful")
    sweep.add_argument("--append", action="store_true",
                       help="add this sweep's runs to an --output file that already holds "
                            "lines (else refused: the table would aggregate both)")
    sweep.add_argument("--no-progress", action="store_true", help="no progress display on stderr")
    sweep.add_argument("--python", default=sys.executable, metavar="PATH",
                       help="the Python interpreter each child runs under, with hrx importable "
                            "there (default: this one)")
    _add_device_options(sweep, several=True)
    sweep.add_argument("--concurrent-devices", action="store_true",
                       help="with --device all: run each step on every device at once, one "
                            "process per device started together (lines say "
                            "concurrent_devices)")
    _add_size_options(sweep)
    _add_workload_options(sweep)

    describe = commands.add_parser(
        "describe", help="open the device as a run would; print its info as one JSON line")
    _add_device_options(describe)
    describe.add_argument("-v", "--verbose", action="store_true",
                          help="print the info as readable lines instead, with every "
                               "reason the automatic backend selection gave")

    output_help = ("write the report to FILE instead of stdout, after a first line naming "
                   "the command that writes it again from FILE's directory")
    table = commands.add_parser("table", help="the table and analysis of results files")
    table.add_argument("files", nargs="+", metavar="FILE")
    table.add_argument("--brief", action="store_true", help="the table only")
    table.add_argument("--split-by", choices=SPLITS,
                       help="connections: one report per hardware connection budget the "
                            "runs had (environment.connections), which groups do not tell "
                            "apart")
    table.add_argument("-o", "--output", metavar="FILE", help=output_help)

    compare = commands.add_parser(
        "compare", help="each driver's medians as ratios of a baseline driver's")
    compare.add_argument("files", nargs="+", metavar="FILE")
    compare.add_argument("--baseline", default="raw", choices=list(DRIVERS) + [BATCHING_OFF],
                         help="the driver to divide by (default raw), or batching-off: "
                              "each driver with batching on divided by itself with it off")
    compare.add_argument("-o", "--output", metavar="FILE", help=output_help)

    plot = commands.add_parser("plot", help="plot results files (needs matplotlib)")
    plot.add_argument("files", nargs="+", metavar="FILE")
    plot.add_argument("--out", required=True, metavar="FILE.png", help="the PNG to write")
    parser.set_defaults(commands={name: commands.choices[name] for name in commands.choices})
    return parser


def _command_run(args: argparse.Namespace) -> int:
    from .config import check_size_rule
    from .record import dumps_line

    try:
        rule = check_size_rule(args.preset, args.quick)
    except ValueError as error:
        sys.stderr.write(f"hrx-bench run: {error}\n")
        return 2
    samples = args.samples_option or args.samples
    driver = args.driver or "native"
    if args.only_workload:
        if not args.workload:
            sys.stderr.write("hrx-bench run: --only-workload times your workload alone; "
                             "give it with --workload SPEC\n")
            return 2
        if args.driver is not None:
            sys.stderr.write("hrx-bench run: --only-workload runs no driver's cases; leave "
                             "--driver out\n")
            return 2
        driver = WORKLOAD_ONLY
    if args.samples_option and args.samples and args.samples_option != args.samples:
        sys.stderr.write(f"hrx-bench run: SAMPLES {args.samples} and --samples "
                         f"{args.samples_option} disagree; give one\n")
        return 2
    stdout = sys.stdout
    saved = os.dup(1)
    try:
        sys.stdout.flush()
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        from .runner import run

        text = dumps_line(run(args.queues, samples, backend=args.backend,
                              device=args.device, driver=driver,
                              batching=args.batching, repeat=args.repeat, preset=rule,
                              sizes=_sizes(args),
                              workload=args.workload,
                              workload_streams=args.workload_streams))
    except WorkloadError as error:
        sys.stderr.write(f"hrx-bench run: {error}\n")
        return 2
    except Exception:  # noqa: BLE001 - reported on stderr, status 1
        traceback.print_exc()
        return 1
    finally:
        sys.stderr.flush()
        os.dup2(saved, 1)
        os.close(saved)
        sys.stdout = stdout
    stdout.write(text + "\n")
    stdout.flush()
    return 0


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _command_describe(args: argparse.Namespace) -> int:
    import json

    import hrx

    try:
        handle = hrx.Device.open(index=args.device, backend=args.backend)
    except Exception as error:  # noqa: BLE001 - reported on stderr, status 2
        sys.stderr.write(f"hrx-bench describe: {type(error).__name__}: {error}\n")
        return 2
    info = dict(handle.info)
    handle.close()
    if args.verbose:
        sys.stdout.write("".join(f"{line}\n" for line in describe_lines(info)))
    else:
        sys.stdout.write(json.dumps(info) + "\n")
    return 0


def describe_lines(info: Dict[str, Any]) -> List[str]:
    """``hrx-bench describe --verbose``: the device's info as "key: value"
    lines; the selection's reasons (why each earlier backend was passed
    over, and each library tried) one per line below it."""
    lines = []
    for key, value in info.items():
        if key == "selection":
            head, *reasons = str(value).split("; ")
            lines.append(f"selection: {head}")
            lines += [f"  {reason}" for reason in reasons]
        else:
            lines.append(f"{key}: {value}")
    return lines


def _command_sweep(args: argparse.Namespace) -> int:
    from .sweep import ResultsFileError, SweepError, default_output, sweep

    output = args.output if (args.output or args.resume) else default_output()
    # SIGTERM (kill, a batch system) ends the sweep like Ctrl-C: the running
    # child is killed and the file keeps whole lines.
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        results = sweep(args.queues, args.repeats, args.samples, driver=args.driver,
                        batching=args.batching,
                        backend=args.backend, device=args.device,
                        concurrent_devices=args.concurrent_devices, output=output,
                        quick=args.quick, preset=args.preset, sizes=_sizes(args),
                        timeout=args.timeout or None, resume=args.resume, append=args.append,
                        progress=not args.no_progress, python=args.python,
                        workload=args.workload, workload_streams=args.workload_streams,
                        only_workload=args.only_workload)
    except SweepError as error:
        sys.stderr.write(f"hrx-bench sweep: {error.cli}\n")
        return 2
    except WorkloadError as error:
        sys.stderr.write(f"hrx-bench sweep: {error}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write(f"\ninterrupted; the finished runs are in {output}; "
                         f"rerun with --resume --output {output} to continue\n")
        return 130
    except ResultsFileError as error:
        sys.stderr.write(f"\nhrx-bench sweep: {error}\nthe file holds the finished runs as "
                         f"whole lines; make room, then rerun with --resume --output "
                         f"{output} to continue\n")
        return 74
    finally:
        signal.signal(signal.SIGTERM, previous)
    sys.stdout.write(f"Results: {output}\n\n{results.table()}")
    return 1 if results.errors else 0


def _report(args: argparse.Namespace, text: str, options: List[str]) -> None:
    """The report on stdout, or with --output in that file after the line
    naming the command (its paths relative to the file's directory)."""
    if not args.output:
        sys.stdout.write(text)
        return
    from .report import relative_to, write_report

    files = [relative_to(path, args.output) for path in args.files]
    command = ["hrx-bench", args.command] + options + files + [
        "-o", os.path.basename(args.output)]
    write_report(args.output, text, command)


def _connections_label(line: Dict[str, Any]) -> str:
    budget = (line.get("environment") or {}).get("connections") or {}
    return f"{budget.get('variable')}={budget.get('value')} ({budget.get('source')})"


def _split_table(lines: List[Dict[str, Any]], analysis: bool) -> str:
    """One report per connection budget, in order of the labels."""
    from .results import Results

    by: Dict[str, List[Dict[str, Any]]] = {}
    for line in lines:
        by.setdefault(_connections_label(line), []).append(line)
    return "\n".join(f"# {label}: {len(group)} runs\n\n{Results(group).table(analysis=analysis)}"
                     for label, group in sorted(by.items()))


def _command_table(args: argparse.Namespace) -> int:
    from .results import load

    results = load(*args.files)
    if not results.groups:
        sys.stderr.write(f"hrx-bench table: no successful runs in {', '.join(args.files)}\n"
                         + results.table())
        return 1
    if args.split_by:
        text = _split_table(results.records, analysis=not args.brief)
    else:
        text = results.table(analysis=not args.brief)
    options = (["--brief"] if args.brief else []) + (
        ["--split-by", args.split_by] if args.split_by else [])
    _report(args, text, options)
    return 0


def _command_compare(args: argparse.Namespace) -> int:
    from .compare import compare_groups, format_comparison
    from .results import load

    records = load(*args.files).records
    if not compare_groups(records, args.baseline):
        sys.stderr.write(f"hrx-bench compare: {format_comparison(records, args.baseline)}")
        return 1
    _report(args, format_comparison(records, args.baseline), ["--baseline", args.baseline])
    return 0


def _command_plot(args: argparse.Namespace) -> int:
    from .plot import PlotUnavailable, plot_files

    try:
        plot_files(args.files, args.out)
    except PlotUnavailable as error:
        sys.stderr.write(f"hrx-bench plot: {error}\n")
        return 2
    except ValueError as error:
        sys.stderr.write(f"hrx-bench plot: {error} in {', '.join(args.files)}\n")
        return 1
    sys.stdout.write(f"wrote {args.out}\n")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``hrx-bench``; returns the exit status."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:   # the usage of the command that was given, not the top-level one
        args.commands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    handlers: Dict[str, Any] = {"run": _command_run, "sweep": _command_sweep,
                                "table": _command_table, "plot": _command_plot,
                                "describe": _command_describe,
                                "compare": _command_compare}
    try:
        return int(handlers[args.command](args))
    except FileNotFoundError as error:
        sys.stderr.write(f"hrx-bench {args.command}: {error}\n")
        return 2
    except BrokenPipeError:
        return 0
