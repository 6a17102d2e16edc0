"""The contention cases in the report: their columns, their tables and which
probe streams meet their latency targets at each queue count.

Columns (medians over runs of per-run values, each with its run-to-run
range): kernels at once and kernel launches/s, then the p95 in µs of every
operation (contention.OPS) on every probe kind (contention.KINDS). A group
has them only when every line of it ran the cases, so older lines and the
reference file print exactly as before.

Targets (TARGETS, the one table of them) compare a probe's median-over-runs
p95 either with the round-robin probe's (a ratio) or with a fixed bound in
µs; GPU targets apply to every backend but host, HOST_TARGETS to the host
backend. The recommended default is not changed by them (analysis.RULE).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Sequence, Tuple

from . import contention
from .stats import run_median
from .table import Column, Group, markdown_table

__all__ = ["Target", "TARGETS", "HOST_TARGETS", "CONCURRENCY_COLUMNS", "LATENCY_COLUMNS",
           "COLUMNS", "has_contention", "targets_for", "target_met", "format_contention"]

KIND_TITLES = {"round_robin": "Round-robin", "high": "High", "reserved": "Reserved",
               "reserved_high": "Reserved + high"}
OP_TITLES = {"compute_kernel": "behind kernels: 1-block kernel",
             "compute_copy": "behind kernels: small copy",
             "transfer_read": "behind reads: small read",
             "transfer_upload": "behind uploads: small upload"}


@dataclass(frozen=True)
class Target:
    """A probe kind's p95 for the ops must be at most ``ratio`` x the
    round-robin probe's p95 (when ratio is set) or at most ``bound_us``."""

    ops: Tuple[str, ...]
    kinds: Tuple[str, ...]
    ratio: Optional[float] = None
    bound_us: Optional[float] = None

    def describe(self) -> str:
        limit = (f"<= {self.ratio:g} x round-robin" if self.ratio is not None
                 else f"<= {self.bound_us:g} µs")
        kinds = " and ".join(KIND_TITLES[kind] for kind in self.kinds)
        return f"{kinds} p95 {limit} ({', '.join(self.ops)})"


TARGETS: Tuple[Target, ...] = (
    Target(contention.COMPUTE_OPS, ("high", "reserved_high"), ratio=0.05),
    Target(contention.TRANSFER_OPS, ("high",), bound_us=250.0),
)
"""On a GPU: behind compute, the high and reserved high-priority probes wait
at most 5% of the round-robin probe's p95 (about one block instead of the
backlog); behind transfers, the high-priority 4 KiB read and upload p95 is
at most 250 µs."""

HOST_TARGETS: Tuple[Target, ...] = (
    Target(contention.OPS, ("reserved_high",), ratio=0.1),
)
"""On the host backend: the reserved high-priority probe p95 is at most 10%
of the round-robin probe's, for every operation."""


def targets_for(backend: Optional[str]) -> Tuple[Target, ...]:
    """HOST_TARGETS for the host backend, TARGETS for any other."""
    return HOST_TARGETS if backend == "host" else TARGETS


def _latency(op: str, kind: str) -> Column:
    key = contention.latency_key(op, kind, "p95")
    return Column(f"{op}_{kind}", f"{KIND_TITLES[kind]}, p95 µs", f"{op} {kind}", 1, False,
                  lambda line, key=key: line[key])


CONCURRENCY_COLUMNS: Tuple[Column, ...] = (
    Column("kernels_at_once", "Kernels at once", "Kernels at once", 2, True,
           lambda line: line["kernels_at_once"]),
    Column("kernel_rate", "Kernel launches, k/s", "Kernel launches", 1, True,
           lambda line: line["kernel_launches_per_second"] / 1e3),
)
LATENCY_COLUMNS: Tuple[Column, ...] = tuple(
    _latency(op, kind) for op in contention.OPS for kind in contention.KINDS)
COLUMNS: Tuple[Column, ...] = CONCURRENCY_COLUMNS + LATENCY_COLUMNS
"""Every contention column; the compare and plot read them too."""


def has_contention(lines: Sequence[Mapping[str, Any]]) -> bool:
    """True when there are lines and every one has the contention summary."""
    return bool(lines) and all(all(key in line for key in contention.SUMMARY_KEYS)
                               for line in lines)


def _by_queues(group: Group) -> List[Tuple[int, List[Mapping[str, Any]]]]:
    by: dict = {}
    for line in group.lines:
        by.setdefault(int(line["queues"]), []).append(line)
    return sorted(by.items())


def _cell(column: Column, runs: Sequence[Mapping[str, Any]]) -> str:
    values = [float(column.value(line)) for line in runs]
    d = column.decimals
    return f"{run_median(values):.{d}f} ({min(values):.{d}f}–{max(values):.{d}f})"


def target_met(target: Target, op: str, kind: str,
               runs: Sequence[Mapping[str, Any]]) -> Tuple[bool, str]:
    """Whether the median over runs of the probe's p95 meets the target,
    and the comparison in words."""
    value = run_median([line[contention.latency_key(op, kind, "p95")] for line in runs])
    if target.ratio is not None:
        base = run_median([line[contention.latency_key(op, "round_robin", "p95")]
                           for line in runs])
        ratio = value / base if base > 0 else float("inf")
        return ratio <= target.ratio, f"{ratio:.3f} x round-robin"
    return value <= float(target.bound_us or 0), f"{value:.1f} µs"


def _target_lines(group: Group) -> List[str]:
    targets = targets_for(group.key.backend)
    rows = []
    for queues, runs in _by_queues(group):
        met, missed = [], []
        for target in targets:
            for op in target.ops:
                for kind in target.kinds:
                    ok, text = target_met(target, op, kind, runs)
                    (met if ok else missed).append(f"{KIND_TITLES[kind]} {op} ({text})")
        verdict = "all met" if not missed else "missed: " + "; ".join(missed)
        rows.append(f"- {queues} queue{'s' if queues != 1 else ''}: {verdict}"
                    + (f"; met: {len(met)} of {len(met) + len(missed)}" if missed else ""))
    where = "host backend" if group.key.backend == "host" else "GPU"
    return ([f"Latency targets ({where}; p95, median of runs): "
             + "; ".join(t.describe() for t in targets) + "."] + rows)


def format_contention(group: Group) -> Optional[str]:
    """The group's contention tables and target report as Markdown (cells:
    median over runs, then the run-to-run min–max), or None when not every
    line ran the cases."""
    if not has_contention(group.lines):
        return None
    rows = _by_queues(group)
    parts = ["Kernel concurrency: one host thread, 1-block spin kernels round-robin over "
             "the small lanes (kernels at once = launches/s x one kernel's back-to-back "
             "duration on one stream):", "",
             markdown_table(["Queues"] + [c.header for c in CONCURRENCY_COLUMNS],
                            [[str(q)] + [_cell(c, runs) for c in CONCURRENCY_COLUMNS]
                             for q, runs in rows])]
    for op in contention.OPS:
        columns = [c for c in LATENCY_COLUMNS if c.key.startswith(op + "_")]
        parts += ["", f"Latency {OP_TITLES[op]}, by the probe's stream:", "",
                  markdown_table(["Queues"] + [c.header for c in columns],
                                 [[str(q)] + [_cell(c, runs) for c in columns]
                                  for q, runs in rows])]
    parts += [""] + _target_lines(group)
    return "\n".join(parts)
