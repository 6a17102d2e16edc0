"""What the table means: run-to-run ranges, which differences are decisive,
and the recommended default queue count.

Run-to-run variation of a column at one queue count is the range (min–max)
of its per-run values. Two queue counts differ *decisively* in a column when
their ranges do not overlap; when they overlap the difference is *within
run-to-run variation*. With one run per count a range is a single value, so
every difference looks decisive: repeat the sweep (three times, as the
reference does) before trusting any conclusion.

The recommendation rule (RULE) in full:

0. A queue count with a failed run (crash, timeout, wrong output) is not a
   candidate, unless every count has one.
1. Throughput: the candidates are the queue counts whose 16-thread
   throughput range overlaps the range of the count with the best median,
   i.e. that are within run-to-run variation of the best.
2. Latency guard: among the candidates, drop those whose idle p95 range lies
   entirely above the range of the candidate with the lowest idle p95
   median (a latency jump beyond run-to-run variation); the same for loaded
   p95. The candidate with the lowest median always survives its own guard.
3. Choose the smallest count left. Ties go to fewer queues: each queue is a
   native resource and stream creation grows with the count.

If the two guards together leave nothing (one count has the best idle
latency, another decisively better loaded latency), only the idle guard is
applied and the conflict is reported: idle latency is what every small
interactive command pays; loaded latency is reported in the table.

A group that measured one queue count only gets no recommendation: there
is nothing to compare it with (the report says so and how to sweep more).
"Only one count is left" (the others failed) still chooses it.

Your workload alone (``--only-workload``; WORKLOAD_RULE): the same rule
with the median workload round (lower is better) in place of the
throughput, and the workload round p95 as the only latency guard.

On reference/gfx1151.jsonl the rule picks 8, the reference's default:
16 has the best median (1.972), 8's range (1.506–2.178) overlaps 16's
(1.970–2.252) but 4's (1.239–1.919) does not, and 16's idle p95
(526.33–647.30 µs) lies wholly above 8's (3.46–4.27 µs).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional

from .table import COLUMNS, Column, Group, Row, format_range, format_value, markdown_table

__all__ = ["RULE", "WORKLOAD_RULE", "is_workload_group", "Change", "Recommendation", "overlap",
           "adjacent_changes", "recommend", "format_ranges", "format_changes",
           "format_group_analysis", "queues_text"]

RULE = ("the smallest queue count whose {threads}-thread throughput is within run-to-run "
        "variation of the best (its min-max range overlaps the range of the count with the "
        "best median) and whose idle and loaded p95 do not jump beyond variation of the other "
        "such counts (its range does not lie entirely above the range of the one with the "
        "lowest median); ties go to fewer queues; if the two latency guards conflict, only "
        "the idle one applies; counts with a failed run are left out")

WORKLOAD_RULE = ("the smallest queue count whose median workload round is within run-to-run "
                 "variation of the fastest (its min-max range overlaps the range of the count "
                 "with the lowest median) and whose workload p95 does not jump beyond "
                 "variation of the other such counts (its range does not lie entirely above "
                 "the range of the one with the lowest median); ties go to fewer queues; "
                 "counts with a failed run are left out")

_LATENCY_GUARDS = ("idle_p95", "loaded_p95")
_THROUGHPUT = "threads"
_WORKLOAD = "workload"
_WORKLOAD_GUARDS = ("workload_p95",)


def overlap(a: Row, b: Row, key: str) -> bool:
    """True when the run-to-run ranges of column ``key`` at a and b overlap."""
    return a.low(key) <= b.high(key) and b.low(key) <= a.high(key)


@dataclass(frozen=True)
class Change:
    """The change of a column's median from one queue count to the next."""

    low: int
    high: int
    column: Column
    relative: Optional[float]   # (median_high - median_low) / median_low; None if that is 0
    decisive: bool              # the two ranges do not overlap

    def describe(self, group: Group) -> str:
        change = _percent(self.relative)
        name = group.header(self.column, short=True)
        return f"{self.low} → {queues_text(self.high)}: {name} {change}"


def adjacent_changes(group: Group) -> List[Change]:
    """Every column's change between each pair of adjacent queue counts."""
    changes = []
    for before, after in zip(group.rows, group.rows[1:]):
        for column in group.columns:
            base = before.median(column.key)
            relative = (after.median(column.key) - base) / base if base else None
            changes.append(Change(before.queues, after.queues, column, relative,
                                  not overlap(before, after, column.key)))
    return changes


@dataclass
class Recommendation:
    """The recommended default of one group and why."""

    queues: Optional[int]
    rule: str
    reasons: List[str] = field(default_factory=list)
    candidates: List[int] = field(default_factory=list)
    dropped: Dict[int, str] = field(default_factory=dict)
    # Why there is nothing to choose between (one queue count measured);
    # "" otherwise.
    nothing_to_compare: str = ""

    def __str__(self) -> str:
        head = (f"Recommended default: {queues_text(self.queues)}." if self.queues is not None
                else f"No recommendation: {self.nothing_to_compare}" if self.nothing_to_compare
                else "No recommendation: no successful runs.")
        return "\n".join([head, f"Rule: {self.rule}."] + [f"- {reason}" for reason in self.reasons])


def _percent(relative: Optional[float]) -> str:
    return "n/a" if relative is None else f"{relative * 100:+.1f}%"


def queues_text(count: int) -> str:
    """"1 queue", "8 queues"."""
    return f"{count} queue" if count == 1 else f"{count} queues"


def _range(group: Group, row: Row, key: str) -> str:
    return format_range(next(c for c in group.columns if c.key == key), row)


def _latency_guard(group: Group, candidates: List[Row], key: str) -> Dict[int, str]:
    """The candidates whose ``key`` range lies entirely above the range of
    the candidate with the lowest median, each with the reason."""
    column = next(c for c in group.columns if c.key == key)
    lowest = min(candidates, key=lambda row: (row.median(key), row.queues))
    return {row.queues: (f"{group.header(column, short=True)} {_range(group, row, key)} lies "
                         f"above that of {queues_text(lowest.queues)}, "
                         f"{_range(group, lowest, key)}")
            for row in candidates if row.low(key) > lowest.high(key)}


def _workload_reason(group: Group, rows: List[Row], chosen: Row) -> str:
    """What the user's workload says (it informs; RULE decides)."""
    fastest = min(rows, key=lambda row: (row.median(_WORKLOAD), row.queues))
    near = [row.queues for row in rows if overlap(row, fastest, _WORKLOAD)]
    column = next(c for c in group.columns if c.key == _WORKLOAD)
    verdict = ("within run-to-run variation of it" if chosen.queues in near
               else "decisively slower for this workload: weigh it against the rule")
    return (f"your workload: fastest median round at {queues_text(fastest.queues)} "
            f"({format_value(column, fastest.median(_WORKLOAD))} ms, range "
            f"{_range(group, fastest, _WORKLOAD)}); within its variation: "
            f"{', '.join(str(q) for q in near)}; the chosen {chosen.queues} is {verdict}")


def is_workload_group(group: Group) -> bool:
    """Whether the group holds runs of the user's workload alone (its only
    columns are the workload's)."""
    return all(column.key != _THROUGHPUT for column in group.columns) and any(
        column.key == _WORKLOAD for column in group.columns)


def recommend(group: Group, failures: Optional[Mapping[int, int]] = None) -> Recommendation:
    """Applies RULE (see the module docstring) to a group's rows, or
    WORKLOAD_RULE to a group of the workload alone. ``failures`` maps a
    queue count to its number of failed runs. A group of one queue count
    gets no recommendation (``queues`` None, ``nothing_to_compare`` says
    why)."""
    alone = is_workload_group(group)
    rule = WORKLOAD_RULE if alone else RULE.format(threads=group.threads)
    rows = group.rows
    if len(rows) == 1 and not any(q != rows[0].queues for q in (failures or {})):
        only = queues_text(rows[0].queues)
        return Recommendation(None, rule, [
            f"only {only} measured: sweep two or more queue counts to compare (e.g. "
            f"queues=(1, 4, 16), or --queues 1,4,16)"],
            nothing_to_compare=f"only {only} measured, nothing to compare it with.")
    reasons: List[str] = []
    failed = {q: n for q, n in (failures or {}).items() if n}
    if failed:
        reasons.append("left out for failed runs: " + ", ".join(
            f"{queues_text(q)} ({n} failed)" for q, n in sorted(failed.items())))
        healthy = [row for row in rows if row.queues not in failed]
        if healthy:
            rows = healthy
        else:
            reasons.append("every queue count has a failed run; all are considered")
    if not rows:
        return Recommendation(None, rule, reasons)
    if len(rows) == 1:
        reasons.append("only one queue count is left to choose from")
        return Recommendation(rows[0].queues, rule, reasons, [rows[0].queues])
    if max(row.runs for row in rows) == 1:
        reasons.append("one run per queue count: run-to-run variation is unknown, so any "
                       "difference counts; repeat the sweep before relying on this")
    if alone:
        best = min(rows, key=lambda row: (row.median(_WORKLOAD), row.queues))
        candidates = [row for row in rows if overlap(row, best, _WORKLOAD)]
        column = next(c for c in group.columns if c.key == _WORKLOAD)
        reasons.append(
            f"fastest median workload round: {queues_text(best.queues)} "
            f"({format_value(column, best.median(_WORKLOAD))} ms, range "
            f"{_range(group, best, _WORKLOAD)}); within its variation: "
            + ", ".join(str(row.queues) for row in candidates))
        guards = _WORKLOAD_GUARDS
    else:
        best = max(rows, key=lambda row: (row.median(_THROUGHPUT), -row.queues))
        candidates = [row for row in rows if overlap(row, best, _THROUGHPUT)]
        reasons.append(
            f"best median {group.threads}-thread throughput: {queues_text(best.queues)} "
            f"({format_value(COLUMNS[1], best.median(_THROUGHPUT))} Mcommands/s, range "
            f"{_range(group, best, _THROUGHPUT)}); within its variation: "
            + ", ".join(str(row.queues) for row in candidates))
        guards = _LATENCY_GUARDS
    dropped = {key: _latency_guard(group, candidates, key) for key in guards}
    for key in guards:
        for queues, why in dropped[key].items():
            reasons.append(f"dropped {queues}: {why}")
    kept = [row for row in candidates if all(row.queues not in dropped[k] for k in dropped)]
    if not kept:
        kept = [row for row in candidates if row.queues not in dropped["idle_p95"]]
        dropped["loaded_p95"] = {}
        reasons.append("the idle and loaded guards together drop every candidate (a trade-off "
                       "between them); only the idle guard is applied")
    chosen = min(kept, key=lambda row: row.queues)
    reasons.append(f"chosen: {chosen.queues}, the fewest queues left "
                   f"({', '.join(str(row.queues) for row in kept)})")
    if not alone and any(column.key == _WORKLOAD for column in group.columns):
        reasons.append(_workload_reason(group, rows, chosen))
    merged: Dict[int, str] = {}
    for key in guards:
        for queues, why in dropped[key].items():
            merged.setdefault(queues, why)
    return Recommendation(chosen.queues, rule, reasons, [row.queues for row in candidates], merged)


def format_ranges(group: Group) -> str:
    """Per queue count, the number of runs and each column's min–max."""
    columns = group.columns
    header = ["Queues", "Runs"] + [group.header(column) for column in columns]
    rows = ([str(row.queues), str(row.runs)]
            + [_range(group, row, column.key) for column in columns] for row in group.rows)
    return markdown_table(header, rows)


def format_changes(group: Group) -> str:
    """The relative change of each median between adjacent queue counts as a
    table (``*`` marks a decisive change), then a plain statement of which
    changes are decisive and that the rest are within variation."""
    changes = adjacent_changes(group)
    if not changes:
        return "Only one queue count: nothing to compare."
    columns = group.columns
    header = ["Queues"] + [group.header(column, short=True) for column in columns]
    table_rows: List[List[str]] = []
    for index in range(0, len(changes), len(columns)):
        chunk = changes[index:index + len(columns)]
        table_rows.append([f"{chunk[0].low} → {chunk[0].high}"] + [
            _percent(c.relative) + (" *" if c.decisive else "") for c in chunk])
    decisive = [change.describe(group) for change in changes if change.decisive]
    text = [markdown_table(header, table_rows), ""]
    if decisive:
        text.append("Decisive (the run-to-run ranges do not overlap): " + "; ".join(decisive) + ".")
        text.append("Every other difference between adjacent counts is within run-to-run "
                    "variation (the ranges overlap).")
    else:
        text.append("Every difference between adjacent counts is within run-to-run variation "
                    "(the ranges overlap); none is decisive.")
    return "\n".join(text)


def format_group_analysis(group: Group, failures: Optional[Mapping[int, int]] = None) -> str:
    """Ranges, adjacent changes and the recommendation of a group, as text."""
    return "\n".join([
        "Run-to-run range (min–max over the runs of each queue count):", "",
        format_ranges(group), "",
        "Change of the median from one queue count to the next (* = decisive):", "",
        format_changes(group), "",
        str(recommend(group, failures)),
    ])
