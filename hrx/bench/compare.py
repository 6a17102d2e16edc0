"""Ratios of one driver's table against a baseline driver's, measured on the
same target, backend, sizes and workload (``hrx-bench compare FILE...
--baseline raw``), or of each driver with batching on against the same
driver with batching off (``--baseline batching-off``); runs with a workload
also compare its columns.

Each cell is median(driver) / median(baseline) for that queue count and
column, the medians being those of the table (stats.run_median over runs). A
ratio above 1 is better for the throughput columns and worse for the latency
and creation columns; the header says which. Whether the two drivers' ranges
overlap is marked with "~" (within run-to-run variation), so a ratio is
never read as a difference that the runs do not support.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Tuple

from .contention_report import COLUMNS as CONTENTION_COLUMNS, has_contention
from .table import COLUMNS, Group, group_lines, markdown_table

__all__ = ["compare_groups", "format_comparison", "ratio_cell"]

_Key = Tuple[str, Any, Any, str, Any, Any]


def _context(group: Group) -> _Key:
    return (group.key.target, group.key.backend, group.key.sizes, group.key.workload,
            group.key.device, group.key.concurrent_devices)


BATCHING_OFF = "batching-off"


def compare_groups(lines: Iterable[Mapping[str, Any]], baseline: str
                   ) -> List[Tuple[Group, Group]]:
    """(driver group, baseline group) pairs that share target, backend,
    sizes and workload, for every driver other than ``baseline``; with
    ``baseline`` = "batching-off", (batching on, batching off) pairs of the
    same driver."""
    groups = group_lines(lines)
    if baseline == BATCHING_OFF:
        offs = {(_context(g), g.key.driver): g for g in groups if g.key.batching is False}
        return [(g, offs[(_context(g), g.key.driver)]) for g in groups
                if g.key.batching is True and (_context(g), g.key.driver) in offs]
    bases: Dict[_Key, Group] = {_context(g): g for g in groups
                                if g.key.driver == baseline}
    return [(g, bases[_context(g)]) for g in groups
            if g.key.driver != baseline and _context(g) in bases]


def ratio_cell(group: Group, base: Group, queues: int, key: str) -> str:
    """median(group) / median(base) of column ``key`` at ``queues``, with
    " ~" when their run-to-run ranges overlap; "–" where either has no run."""
    row = next((r for r in group.rows if r.queues == queues), None)
    ref = next((r for r in base.rows if r.queues == queues), None)
    if row is None or ref is None or ref.median(key) == 0:
        return "–"
    overlap = row.low(key) <= ref.high(key) and ref.low(key) <= row.high(key)
    return f"{row.median(key) / ref.median(key):.2f}{' ~' if overlap else ''}"


def format_comparison(lines: Iterable[Mapping[str, Any]],
                      baseline: str = "raw") -> str:
    """The ratio tables as Markdown text; says so when nothing pairs up."""
    pairs = compare_groups(list(lines), baseline)
    if not pairs:
        if baseline == BATCHING_OFF:
            return "No driver ran both with batching on and off on the same target, " \
                   "backend, sizes and workload.\n"
        return f"No driver shares target, backend, sizes and workload with '{baseline}'.\n"
    out: List[str] = []
    for group, base in pairs:
        columns = group.columns if group.columns == base.columns else COLUMNS
        header = ["Queues"] + [
            f"{group.header(c, short=True)} ({'higher' if c.higher_is_better else 'lower'}"
            " is better)" for c in columns]
        queues = sorted({r.queues for r in group.rows} | {r.queues for r in base.rows})
        rows = [[str(q)] + [ratio_cell(group, base, q, c.key) for c in columns]
                for q in queues]
        against = ("batching off" if baseline == BATCHING_OFF else base.key.driver)
        out.append(f"## {group.label} ÷ {against}\n")
        out.append(markdown_table(header, rows))
        legend = ("the run-to-run ranges with batching on and with it off overlap"
                  if baseline == BATCHING_OFF else "the two drivers' run-to-run ranges overlap")
        out.append(f"\n~ : {legend} (within variation).\n")
        if has_contention(group.lines) and has_contention(base.lines):
            header = ["Queues"] + [
                f"{c.short} ({'higher' if c.higher_is_better else 'lower'} is better)"
                for c in CONTENTION_COLUMNS]
            rows = [[str(q)] + [ratio_cell(group, base, q, c.key) for c in CONTENTION_COLUMNS]
                    for q in queues]
            out.append(f"Contention cases, {group.label} ÷ {against} (p95 of each probe):\n")
            out.append(markdown_table(header, rows) + "\n")
    return "\n".join(out)
