"""Results: the lines of one or more results files, with the table, the
analysis and the recommendation, for scripts and notebooks."""
from __future__ import annotations

import html
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from .contention_report import format_contention
from .analysis import Recommendation, format_group_analysis, recommend
from .lines import Unreadable, read_lines
from .schema import is_error_line
from .table import Group, format_probe_table, format_table, format_value, group_lines

__all__ = ["Results", "load", "as_results", "failure_reason"]


def failure_reason(line: Mapping[str, Any]) -> str:
    """An error line's ``error`` and the failed child's own last error line
    (the last non-empty line of its stderr), e.g. "the child exited with
    status 1: hrx.InvalidArgumentError: unknown backend 'cuda'; ..."."""
    error = str(line.get("error", ""))
    rows = [row.strip() for row in str(line.get("stderr_tail") or "").splitlines()
            if row.strip()]
    if rows and rows[-1] not in error:
        return f"{error}: {rows[-1]}"
    return error

PathLike = Union[str, "os.PathLike[str]"]


class Results:
    """Result and error lines (dicts, in file order).

    ``lines`` holds every line; ``records`` the successful runs, ``errors``
    the failed ones; ``groups`` aggregates the records per (target, backend,
    driver, sizes, workload). ``table()`` is the text report, ``recommend()``
    the recommended default, ``plot()`` a matplotlib figure, and notebooks
    render the object as HTML tables."""

    def __init__(self, lines: Iterable[Mapping[str, Any]], *, sources: Sequence[str] = (),
                 unreadable: Sequence[Unreadable] = ()) -> None:
        self.lines: List[Dict[str, Any]] = [dict(line) for line in lines]
        self.sources = list(sources)
        self.unreadable = list(unreadable)

    @property
    def records(self) -> List[Dict[str, Any]]:
        return [line for line in self.lines if not is_error_line(line)]

    @property
    def errors(self) -> List[Dict[str, Any]]:
        return [line for line in self.lines if is_error_line(line)]

    @property
    def groups(self) -> List[Group]:
        return group_lines(self.lines)

    def __len__(self) -> int:
        return len(self.lines)

    def __repr__(self) -> str:
        return (f"Results({len(self.records)} runs, {len(self.errors)} errors, "
                f"{len(self.groups)} group(s))")

    def _group(self, group: Optional[str]) -> Group:
        groups = self.groups
        if group is None:
            if len(groups) != 1:
                labels = ", ".join(repr(g.label) for g in groups) or "none"
                raise ValueError(f"{len(groups)} groups ({labels}); pass group=<label>")
            return groups[0]
        for candidate in groups:
            if candidate.label == group:
                return candidate
        labels = "; ".join(repr(g.label) for g in groups) or "none (no successful runs)"
        raise KeyError(f"no group is labelled {group!r}; the groups are: {labels} "
                       f"(Results.groups[i].label)")

    def failures(self, group: Group) -> Dict[int, int]:
        """Failed runs per queue count that may belong to ``group``: error
        lines of its driver, workload, device and concurrency (and backend,
        where both name one)."""
        counts: Dict[int, int] = {}
        workload = (group.lines[0].get("workload") or {}).get("name") if group.lines else None
        for line in self.errors:
            if line.get("driver") != group.key.driver or line.get("workload") != workload:
                continue
            if line.get("backend") and group.key.backend and line["backend"] != group.key.backend:
                continue
            if (line.get("device"), line.get("concurrent_devices")) != (
                    group.key.device, group.key.concurrent_devices):
                continue
            counts[int(line["queues"])] = counts.get(int(line["queues"]), 0) + 1
        return counts

    def recommend(self, group: Optional[str] = None) -> Recommendation:
        """The recommended default for the only group, or the one whose label
        is ``group`` (see analysis.RULE); counts with failed runs are left out."""
        chosen = self._group(group)
        return recommend(chosen, self.failures(chosen))

    def _problems(self) -> List[str]:
        text: List[str] = []
        if self.errors:
            text.append(f"Failed runs: {len(self.errors)} (not aggregated)")
            for line in self.errors:
                text.append(f"- queues {line.get('queues')} repeat {line.get('repeat')} driver "
                            f"{line.get('driver')}: {failure_reason(line)}")
        if self.unreadable:
            text.append(f"Unreadable lines: {len(self.unreadable)}")
            text += [f"- {item.path}:{item.number}: {item.reason}" for item in self.unreadable]
        return text

    def table(self, analysis: bool = True) -> str:
        """The text report: per group a heading, the table and (with
        ``analysis``) ranges, adjacent changes and the recommendation; then
        failed runs and unreadable lines."""
        parts: List[str] = []
        for group in self.groups:
            counts = sorted({row.runs for row in group.rows})
            runs = "/".join(str(count) for count in counts)
            total = len(group.lines)
            parts.append(f"## {group.label}: {total} run{'' if total == 1 else 's'}, "
                         f"{runs} per queue count\n")
            parts.append(format_table(group))
            probes = format_probe_table(group)
            if probes:
                parts.append("\n" + probes)
            contended = format_contention(group)
            if contended:
                parts.append("\n" + contended)
            if analysis:
                parts.append("\n" + format_group_analysis(group, self.failures(group)))
            parts.append("")
        if not self.groups:
            parts.append("No successful runs.")
        problems = self._problems()
        if problems:
            parts.append("\n".join(problems))
        return "\n".join(parts).rstrip() + "\n"

    def to_dataframe(self) -> Any:
        """A pandas DataFrame with one row per successful run: ``group`` (its
        label), ``queues``, ``repeat``, ``driver``, ``backend``, ``target``,
        then every table column in the table's units (headers as in the
        table, e.g. "Bulk GB/s"). The table's cells are the medians of these
        columns per group and queue count: ``df.drop(columns=["repeat",
        "driver", "backend", "target"]).groupby(["group", "queues"]).median()``
        (pandas' median, like the table's, is the mean of the two middle
        runs of an even count). Needs pandas (``pip install
        'hrx[notebook]'``): ImportError saying so otherwise."""
        try:
            import pandas
        except ImportError:
            raise ImportError("Results.to_dataframe needs pandas: pip install pandas "
                              "(or pip install 'hrx[notebook]')") from None
        rows: List[Dict[str, Any]] = []
        for group in self.groups:
            for line in group.lines:
                row: Dict[str, Any] = {
                    "group": group.label, "queues": int(line["queues"]),
                    "repeat": line.get("repeat"), "driver": line.get("driver"),
                    "backend": line.get("backend"), "target": line.get("target")}
                for column in group.columns:
                    row[group.header(column)] = float(column.value(line))
                rows.append(row)
        return pandas.DataFrame(rows)

    def _repr_html_(self) -> str:
        out: List[str] = []
        for group in self.groups:
            out.append(f"<h4>{html.escape(group.label)}</h4>")
            columns = group.columns
            head = "".join(f"<th>{html.escape(h)}</th>" for h in
                           ["Queues"] + [group.header(column) for column in columns])
            body = []
            for row in group.rows:
                cells = [str(row.queues)] + [
                    f"{format_value(c, row.median(c.key))}<br><small>"
                    f"{format_value(c, row.low(c.key))}–{format_value(c, row.high(c.key))}</small>"
                    for c in columns]
                body.append("<tr>" + "".join(f"<td style='text-align:right'>{cell}</td>"
                                             for cell in cells) + "</tr>")
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")
            out.append("<p><small>median of runs; below: run-to-run min–max</small></p>")
            out.append(_advice_html(recommend(group, self.failures(group))))
        problems = self._problems()
        if problems:
            items = "".join(f"<li>{html.escape(text.lstrip('- '))}</li>" for text in problems[1:])
            out.append(f"<p>{html.escape(problems[0])}</p><ul>{items}</ul>")
        return "".join(out) or "<p>No results.</p>"

    def plot(self, out: Optional[PathLike] = None, *, group: Optional[str] = None) -> Any:
        """A matplotlib Figure of every group (or only the one labelled
        ``group``): each column against queue count, median with the
        run-to-run range. Notebooks display the returned figure; ``out``
        also writes it as a PNG. Needs matplotlib (``pip install
        'hrx[plot]'``): else plot.PlotUnavailable. ValueError when there is
        no successful run."""
        from .plot import figure

        groups = [self._group(group)] if group is not None else self.groups
        if not groups:
            raise ValueError("no successful runs to plot")
        drawn = figure([(g.label, g) for g in groups])
        if out is not None:
            drawn.savefig(os.fspath(out), dpi=110)
        return drawn


def _advice_html(advice: Recommendation) -> str:
    """The recommendation as wrapping HTML: the verdict in bold, the rule and
    each reason as list items (no preformatted long lines)."""
    text = str(advice).splitlines()
    items = "".join(f"<li>{html.escape(row[2:] if row.startswith('- ') else row)}</li>"
                    for row in text[1:])
    return f"<p><b>{html.escape(text[0])}</b></p><ul>{items}</ul>"


def load(*paths: PathLike) -> Results:
    """Results of one or more JSON-lines files (reference lines included)."""
    lines, unreadable = read_lines(paths)
    return Results(lines, sources=[os.fspath(p) for p in paths], unreadable=unreadable)


def as_results(source: Any) -> Results:
    """A Results from a Results, a path, a list of paths or a list of dicts."""
    if isinstance(source, Results):
        return source
    if isinstance(source, (str, os.PathLike)):
        return load(source)
    items = list(source)
    if all(isinstance(item, Mapping) for item in items):
        return Results(items)
    return load(*items)
