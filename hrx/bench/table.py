"""The results table: per queue count, the median of the per-process
summaries.

Each column is the median (stats.run_median) over the runs of that queue
count of one per-run value; for the p95 columns that value is the run's own
p95, so they are medians of per-run p95s, never pooled percentiles. With
three runs (any odd count) the median is the middle run; with an even count
it is the mean of the two middle runs. Lines are grouped by (target, backend,
driver, sizes, workload) so that a file mixing machines, drivers, presets or
workloads never averages across them; error lines are counted, never aggregated.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from .drivers import WORKLOAD_ONLY
from .schema import is_error_line, is_workload_only
from .stats import run_median

__all__ = ["Column", "COLUMNS", "WORKLOAD_COLUMNS", "columns_of", "PROBE_COLUMNS", "has_probes",
           "format_probe_table", "GroupKey", "Row", "Group", "group_lines", "aggregate",
           "format_value", "format_range", "format_table", "markdown_table", "table"]


@dataclass(frozen=True)
class Column:
    """One table column: how to read it from a result line and print it."""

    key: str
    header: str          # may name {threads} and {streams}
    short: str           # for the analysis tables
    decimals: int
    higher_is_better: bool
    value: Callable[[Mapping[str, Any]], float]


COLUMNS: Tuple[Column, ...] = (
    Column("one_thread", "One host thread, Mcommands/s", "One host thread", 3, True,
           lambda line: line["small_commands_per_second"] / 1e6),
    Column("threads", "{threads} host threads, Mcommands/s", "{threads} host threads", 3, True,
           lambda line: line["threaded_commands_per_second"] / 1e6),
    Column("bulk", "Bulk GB/s", "Bulk", 1, True, lambda line: line["bulk_copy_gb_s"]),
    Column("idle_p95", "Idle p95, µs", "Idle p95", 2, False,
           lambda line: line["idle_latency_p95_us"]),
    Column("loaded_p95", "Loaded p95, ms", "Loaded p95", 2, False,
           lambda line: line["loaded_latency_p95_us"] / 1e3),
    Column("create", "Create {streams} streams, ms", "Create streams", 2, False,
           lambda line: line["stream_creation_ms"]),
)
"""The table of DESIGN.md, in order; units: Mcommands/s, GB/s, µs, ms, ms, ms."""

WORKLOAD_COLUMNS: Tuple[Column, ...] = (
    Column("workload", "Workload round, ms", "Workload round", 3, False,
           lambda line: line["workload"]["round_median_ms"]),
    Column("workload_p95", "Workload p95, ms", "Workload p95", 3, False,
           lambda line: line["workload"]["round_p95_ms"]),
)
"""Added after COLUMNS for runs with a user workload (``--workload``): the
median and p95 of its timed rounds, in ms (lower is better)."""


def columns_of(lines: Iterable[Mapping[str, Any]]) -> Tuple[Column, ...]:
    """COLUMNS, plus WORKLOAD_COLUMNS when every line ran a workload;
    WORKLOAD_COLUMNS alone when every line ran the workload alone
    (``--only-workload``)."""
    items = list(lines)
    if items and all(is_workload_only(line) for line in items):
        return WORKLOAD_COLUMNS
    if items and all(isinstance(line.get("workload"), dict) for line in items):
        return COLUMNS + WORKLOAD_COLUMNS
    return COLUMNS


PROBE_COLUMNS: Tuple[Column, ...] = (
    Column("probe_round_robin", "Round-robin stream", "Round-robin", 1, False,
           lambda line: line["loaded_latency_p95_us"]),
    Column("probe_high", "High priority", "High", 1, False,
           lambda line: line["loaded_high_latency_p95_us"]),
    Column("probe_reserved", "Reserved", "Reserved", 1, False,
           lambda line: line["loaded_reserved_latency_p95_us"]),
    Column("probe_reserved_high", "Reserved + high", "Reserved + high", 1, False,
           lambda line: line["loaded_reserved_high_latency_p95_us"]),
)
"""The loaded-latency probe table: the p95 of the 4 KiB probe, in
µs, on a round-robin pool stream (the table's Loaded p95) and on each probe
variant; only for lines that have every probe key."""


def has_probes(line: Mapping[str, Any]) -> bool:
    """True when the line has every loaded-probe summary key."""
    return all(key in line for key in (
        "loaded_high_latency_p95_us", "loaded_reserved_latency_p95_us",
        "loaded_reserved_high_latency_p95_us"))


def format_probe_table(group: "Group") -> Optional[str]:
    """The group's loaded-probe table as Markdown (medians over runs of the
    per-run p95, µs, with the reserved + high / round-robin ratio and the
    bulk GB/s), or None when no line of the group has the probe keys."""
    lines = [line for line in group.lines if has_probes(line)]
    if not lines:
        return None
    by_queues: Dict[int, List[Mapping[str, Any]]] = {}
    for line in lines:
        by_queues.setdefault(int(line["queues"]), []).append(line)
    bulk = next(column for column in COLUMNS if column.key == "bulk")
    header = (["Queues"] + [f"{column.header}, p95 µs" for column in PROBE_COLUMNS]
              + ["Reserved + high / round-robin", bulk.header])
    rows = []
    for queues, runs in sorted(by_queues.items()):
        values = {column.key: run_median([float(column.value(line)) for line in runs])
                  for column in PROBE_COLUMNS}
        base = values["probe_round_robin"]
        ratio = values["probe_reserved_high"] / base if base > 0 else float("nan")
        rows.append([str(queues)] + [format_value(column, values[column.key])
                                     for column in PROBE_COLUMNS]
                    + [f"{ratio:.3f}",
                       format_value(bulk, run_median([float(bulk.value(line)) for line in runs]))])
    return ("Loaded latency of a 4 KiB probe behind the bulk backlog, by the probe's "
            "stream:\n\n" + markdown_table(header, rows))


def _bytes(size: Any) -> str:
    if not isinstance(size, int):
        return str(size)
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


@dataclass(frozen=True, order=True)
class GroupKey:
    """What must be equal for runs to be aggregated together. Lines from
    reference/gfx1151.jsonl have no backend, driver or sizes (None)."""

    target: str
    backend: Optional[str]
    driver: Optional[str]
    sizes: Optional[Tuple[Tuple[str, Any], ...]]
    workload: str = ""   # "name, N streams" of a user workload; "" for none
    # Submission batching; None where it does not apply (raw driver, lines
    # recorded before it existed).
    batching: Optional[bool] = None
    # The device a sweep ran the line on (None: lines without one), and how
    # many devices ran at once (None: alone). Runs of different devices are
    # never aggregated together.
    device: Optional[int] = None
    concurrent_devices: Optional[int] = None

    @staticmethod
    def of(line: Mapping[str, Any]) -> "GroupKey":
        sizes = line.get("sizes")
        frozen = tuple(sorted(sizes.items())) if isinstance(sizes, dict) else None
        workload = line.get("workload")
        name = (f"{workload.get('name')}, {workload.get('streams')} streams"
                if isinstance(workload, dict) else "")
        batching = line.get("batching")
        device = line.get("device")
        together = line.get("concurrent_devices")
        return GroupKey(str(line.get("target")), line.get("backend"), line.get("driver"), frozen,
                        name, None if batching is None else bool(batching),
                        device if isinstance(device, int) else None,
                        together if isinstance(together, int) else None)

    @property
    def label(self) -> str:
        """"target / backend / driver", "batching on/off" where it applies,
        plus the preset unless it is the default."""
        alone = self.driver == WORKLOAD_ONLY
        parts = [self.target] + [part for part in (self.backend, self.driver)
                                 if part and part != WORKLOAD_ONLY]
        text = " / ".join(parts)
        if self.device is not None:
            text += f", device {self.device}"
            if self.concurrent_devices:
                text += f" ({self.concurrent_devices} devices at once)"
        if self.batching is not None:
            text += ", batching " + ("on" if self.batching else "off")
        sizes = dict(self.sizes or ())
        preset = sizes.get("preset")
        if preset == "custom":
            text += (f" (custom sizes: small {sizes.get('small_copies')}"
                     f"x{_bytes(sizes.get('small_bytes'))}, bulk {sizes.get('bulk_copies')}"
                     f"x{_bytes(sizes.get('bulk_bytes'))}, {sizes.get('samples')} samples)")
        elif preset and preset != "default":
            text += f" ({preset} sizes)"
        if self.workload:
            text += (": workload alone " if alone else " + workload ") + self.workload
        return text


@dataclass
class Row:
    """One queue count: every run's value per column, with median and range."""

    queues: int
    values: Dict[str, List[float]]

    @property
    def runs(self) -> int:
        return len(next(iter(self.values.values())))

    def median(self, key: str) -> float:
        """The median over runs (stats.run_median)."""
        return run_median(self.values[key])

    def low(self, key: str) -> float:
        return min(self.values[key])

    def high(self, key: str) -> float:
        return max(self.values[key])


@dataclass
class Group:
    """The successful runs of one GroupKey, aggregated per queue count."""

    key: GroupKey
    lines: List[Dict[str, Any]]
    rows: List[Row] = field(default_factory=list)

    @property
    def label(self) -> str:
        return self.key.label

    @property
    def columns(self) -> Tuple[Column, ...]:
        """The columns of this group's table (columns_of its lines)."""
        return columns_of(self.lines)

    @property
    def threads(self) -> str:
        """Host threads of the concurrent case (the lines' ``streams``)."""
        return _common(line["streams"] for line in self.lines)

    @property
    def streams(self) -> str:
        """Streams whose creation is timed: sizes.retained_streams, or
        ``streams`` for lines that do not record sizes."""
        return _common(line.get("sizes", {}).get("retained_streams", line["streams"])
                       for line in self.lines)

    def header(self, column: Column, short: bool = False) -> str:
        template = column.short if short else column.header
        return template.format(threads=self.threads, streams=self.streams)


def _common(values: Iterable[Any]) -> str:
    distinct = sorted(set(values))
    return str(distinct[0]) if len(distinct) == 1 else "/".join(str(v) for v in distinct)


def aggregate(lines: Sequence[Mapping[str, Any]]) -> List[Row]:
    """Rows in ascending queue count, one per count present in ``lines``
    (successful result lines of one group)."""
    by_queues: Dict[int, List[Mapping[str, Any]]] = {}
    for line in lines:
        by_queues.setdefault(int(line["queues"]), []).append(line)
    columns = columns_of(lines) + _contention_columns(lines)
    return [Row(queues, {column.key: [float(column.value(line)) for line in runs]
                         for column in columns})
            for queues, runs in sorted(by_queues.items())]


def _contention_columns(lines: Sequence[Mapping[str, Any]]) -> Tuple[Column, ...]:
    """The contention columns (contention_report.py) when every line has
    them: the rows carry their values (ranges, compare, plot), the main
    table does not print them."""
    from .contention_report import COLUMNS as CONTENTION, has_contention

    return CONTENTION if has_contention(lines) else ()


def group_lines(lines: Iterable[Mapping[str, Any]]) -> List[Group]:
    """The successful result lines grouped by GroupKey (error lines are
    skipped), in order of first appearance, each aggregated."""
    groups: Dict[GroupKey, Group] = {}
    for line in lines:
        if is_error_line(line) or "queues" not in line:
            continue
        key = GroupKey.of(line)
        groups.setdefault(key, Group(key, [])).lines.append(dict(line))
    for group in groups.values():
        group.rows = aggregate(group.lines)
    return list(groups.values())


def format_value(column: Column, value: float) -> str:
    """A value with the column's decimals, as the reference table prints it."""
    return f"{value:.{column.decimals}f}"


def format_range(column: Column, row: Row) -> str:
    """The column's run-to-run range at the row's queue count: "min–max"."""
    return (f"{format_value(column, row.low(column.key))}–"
            f"{format_value(column, row.high(column.key))}")


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table with right-aligned columns."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def format_table(group: Group) -> str:
    """The group's table as Markdown: a header, an alignment row, then one
    row per queue count, e.g. ``| 1 | 0.593 | 0.586 | 204.3 | 3.69 | 21.87 | 6.55 |``."""
    columns = group.columns
    header = ["Queues"] + [group.header(column) for column in columns]
    rows = ([str(row.queues)] + [format_value(column, row.median(column.key)) for column in columns]
            for row in group.rows)
    return markdown_table(header, rows)


Source = Union[str, "os.PathLike[str]", Iterable[Any], Any]


def table(source: Source, *, analysis: bool = True) -> str:
    """The report for ``source``: a results file path, a list of paths, a list
    of line dicts, or a Results. Per group: the table and, unless
    ``analysis`` is False, the run-to-run ranges, the adjacent differences
    and the recommended default; then the failed runs and unreadable lines."""
    from .results import as_results

    return as_results(source).table(analysis=analysis)
