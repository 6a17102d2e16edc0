"""A stand-in for the Python interpreter a sweep starts its children with,
for testing the sweep without a device: ``sweep(..., python=...)`` and
``hrx-bench sweep --python`` take ``fake_python(directory)``, an executable
that runs this file with the child's own arguments
(``-P -m hrx.bench run|describe ...``), parsed by hrx-bench's own parser.

``describe`` prints a fake device's info. ``run`` behaves as the environment
variable HRX_BENCH_FAKE says for its (queues, repeat): a comma-separated
list of ``MODE``, ``Q=MODE`` or ``Q/R=MODE`` (the most specific entry wins;
unset means ``ok``). If HRX_BENCH_FAKE_PIDFILE is set, each run first
appends its process id to that file (so tests can check that no child
outlives the sweep).

  ok       print a synthetic, schema-valid result line and exit 0
  slow     sleep HRX_BENCH_FAKE_SLEEP seconds (default 1), then as ok
  crash    write a message to stderr and exit with status 3
  hang     sleep for an hour (for per-child timeouts)
  sigint   send itself SIGINT (as if Ctrl-C reached only the child)
  kill     send itself SIGKILL (as the kernel's out-of-memory killer would)
  orphan   start a grandchild that keeps stdout and stderr open and sleeps
           for an hour (its pid goes to stderr), then hang
  garbage  print a line that is not JSON and exit 0

With ``--only-workload``, ok and slow print a workload-only line whose
synthetic rounds are fastest from 4 queues on.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from hrx.bench.cli import _sizes, build_parser
from hrx.bench.config import BenchConfig, check_size_rule, preset_name, resolve_rule
from hrx.bench.drivers import WORKLOAD_ONLY
from hrx.bench.record import build_record, dumps_line
from hrx.bench.workload import build_workload_record, summarize_workload

__all__ = ["ENV", "MODES", "mode_for", "fake_python"]

ENV = "HRX_BENCH_FAKE"
MODES = ("ok", "slow", "crash", "hang", "sigint", "kill", "orphan", "garbage")


def mode_for(spec: str, queues: int, repeat: int) -> str:
    """The mode that ``spec`` (the HRX_BENCH_FAKE syntax) gives (queues, repeat).
    Raises ValueError for a malformed spec or an unknown mode."""
    chosen: Dict[int, str] = {0: "ok"}
    for entry in filter(None, (part.strip() for part in spec.split(","))):
        key, _, mode = entry.rpartition("=")
        if mode not in MODES:
            raise ValueError(f"{ENV}: unknown mode {mode!r} in {entry!r}")
        if not key:
            chosen.setdefault(1, mode)
            continue
        q, _, r = key.partition("/")
        if int(q) == queues and (not r or int(r) == repeat):
            chosen.setdefault(3 if r else 2, mode)
    return chosen[max(chosen)]


def _synthetic_result(queues: int, repeat: int, driver: str, config: BenchConfig) -> Dict[str, Any]:
    scale = 1.0 + 0.01 * repeat
    rounds, samples = config.samples, config.samples * config.lanes
    small = int(2e7 * scale / min(queues, 4))
    idle = 3000 + (500_000 if queues >= 16 else 0)
    return {
        "driver": driver, "queues": queues, **config.as_dict(),
        "stream_creation_ns": int(5e6 * queues * scale),
        "small_round_ns": [small + 1000 * i for i in range(rounds)],
        "threaded_round_ns": [int(small / queues ** 0.5) + 1000 * i for i in range(rounds)],
        "bulk_round_ns": [int(8e7 * scale) + 5000 * i for i in range(rounds)],
        "idle_sample_ns": [idle + 10 * i for i in range(samples)],
        "loaded_sample_ns": [int(2.2e7 * scale) + 100 * i for i in range(samples)],
    }


def fake_info() -> Dict[str, Any]:
    """What ``hrx-bench describe`` prints for a fake device."""
    return {"backend": "fake", "index": 0, "name": "fake device", "target": "fake",
            "runtime": None, "selection": "a fake child: no device is opened"}


def _synthetic_line(queues: int, repeat: int, driver: str, config: BenchConfig,
                    batching: bool = True, size_rule: str = "auto") -> Dict[str, Any]:
    environment = {
        "device_name": "fake device", "backend": "fake", "target": "fake", "runtime": None,
        "driver_version": None, "cpu_model": None, "logical_cpus": 1, "ram_bytes": None,
        "os": None, "kernel": None, "c_compiler": {"command": None, "version": None},
        "python_version": sys.version.split()[0], "host_memcpy_gb_s": 1.0,
    }
    memory = {key: None for key in (
        "peak_rss_bytes", "host_mem_available_before_bytes", "host_mem_available_after_bytes",
        "device_memory_total_bytes", "device_memory_used_before_bytes",
        "device_memory_used_after_bytes")}
    return build_record(
        _synthetic_result(queues, repeat, driver, config), repeat=repeat, target="fake",
        backend="fake", hrx_version=None, git_commit=None, timestamp="2000-01-01T00:00:00Z",
        environment=environment, memory=memory, preset=preset_name(config),
        extra={"batching": None if driver == "raw" else bool(batching), "size_rule": size_rule})


def _synthetic_workload_line(queues: int, repeat: int, config: BenchConfig, batching: bool,
                             name: str, streams: int) -> Dict[str, Any]:
    """A workload-only line whose rounds take 8 ms / min(queues, 4) plus
    1 % per repeat, and 0.1 ms per sample more each."""
    base = 8_000_000 / min(queues, 4) * (1.0 + 0.01 * repeat)
    rounds = [int(base) + 100_000 * i for i in range(config.samples)]
    line = _synthetic_line(queues, repeat, "native", config)
    return build_workload_record(
        summarize_workload(name, streams, rounds), queues=queues, repeat=repeat,
        warmup=config.warmup, batching=bool(batching), target="fake", backend="fake",
        hrx_version=None, git_commit=None, git_dirty=None, timestamp=line["timestamp"],
        environment=line["environment"], memory=line["memory"])


def behave(spec: str, queues: int, repeat: int, driver: str, config: BenchConfig,
           batching: bool = True, size_rule: str = "auto",
           workload: Optional[Tuple[str, int]] = None) -> str:
    """Acts out the mode for (queues, repeat): returns the line to print for
    ok/slow/garbage; exits, hangs or signals itself for the others."""
    mode = mode_for(spec, queues, repeat)
    pidfile = os.environ.get("HRX_BENCH_FAKE_PIDFILE")
    if pidfile:
        with open(pidfile, "a", encoding="ascii") as handle:
            handle.write(f"{os.getpid()}\n")
    if mode == "slow":
        time.sleep(float(os.environ.get("HRX_BENCH_FAKE_SLEEP", "1")))
    if mode in ("ok", "slow"):
        if driver == WORKLOAD_ONLY:
            assert workload is not None
            return dumps_line(_synthetic_workload_line(queues, repeat, config, batching,
                                                       *workload))
        return dumps_line(_synthetic_line(queues, repeat, driver, config, batching, size_rule))
    if mode == "garbage":
        return "this is not JSON"
    if mode == "crash":
        sys.stderr.write(f"fake child: crashing on purpose (queues={queues}, repeat={repeat})\n")
        sys.stderr.flush()
        os._exit(3)
    if mode == "hang":
        time.sleep(3600)
        os._exit(4)
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "orphan":
        pid = os.fork()
        if pid == 0:
            time.sleep(3600)
            os._exit(0)
        sys.stderr.write(f"fake child: grandchild pid {pid}\n")
        sys.stderr.flush()
        time.sleep(3600)
        os._exit(4)
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(60)
    os._exit(5)


def fake_python(directory: Path) -> str:
    """Writes an executable into ``directory`` that runs this file under the
    current interpreter with its arguments, and returns its path."""
    path = Path(directory) / "fake-python"
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{Path(__file__).resolve()}" "$@"\n')
    path.chmod(0o755)
    return str(path)


def main(argv: List[str]) -> int:
    """``argv``: what the sweep gives its interpreter, ``-P -m hrx.bench
    COMMAND ARGS``."""
    if argv[:3] != ["-P", "-m", "hrx.bench"]:
        sys.stderr.write(f"fake child: expected -P -m hrx.bench ..., got {argv!r}\n")
        return 2
    args = build_parser().parse_args(argv[3:])
    if args.command == "describe":
        sys.stdout.write(json.dumps(fake_info()) + "\n")
        return 0
    if args.command != "run":
        sys.stderr.write(f"fake child: only run and describe, got {args.command!r}\n")
        return 2
    rule = check_size_rule(args.preset, args.quick)
    config = resolve_rule(rule, "fake", dict(_sizes(args), samples=args.samples))
    driver = WORKLOAD_ONLY if args.only_workload else (args.driver or "native")
    text = behave(os.environ.get(ENV, "ok"), args.queues, args.repeat, driver, config,
                  batching=args.batching, size_rule=rule,
                  workload=(args.workload, args.workload_streams) if args.workload else None)
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
