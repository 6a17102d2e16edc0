"""Each table column against queue count, as one figure.

One panel per column (2x3; 2x4 with a workload's two columns), log2 x axis,
one line per (file, group): the median per queue count with the run-to-run
min–max as error bars. matplotlib is optional (``pip install
'hrx[plot]'``); it is imported only here. Figures are built with
``matplotlib.figure.Figure`` (no pyplot), so neither a display nor the
process's pyplot backend is touched: a notebook shows the returned figure,
``plot_groups`` writes it as a PNG.
"""
from __future__ import annotations

import os
from typing import Any, Dict, List, Sequence, Tuple

from .contention_report import COLUMNS as CONTENTION_COLUMNS, has_contention
from .table import Group

PLOTTED_CONTENTION = tuple(
    column for column in CONTENTION_COLUMNS
    if not column.key.endswith(("_high", "_reserved")) or column.key.endswith("reserved_high"))
"""The contention panels: concurrency, then per operation the round-robin
and the reserved high-priority probe's p95 (µs)."""

__all__ = ["PlotUnavailable", "figure", "plot_groups", "plot_files"]

_UNITS: Dict[str, str] = {"one_thread": "Mcommands/s", "threads": "Mcommands/s", "bulk": "GB/s",
                          "idle_p95": "µs", "loaded_p95": "ms", "create": "ms",
                          "workload": "ms", "workload_p95": "ms",
                          "kernels_at_once": "kernels", "kernel_rate": "k launches/s"}


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def _figure_class() -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise PlotUnavailable(
            "plotting needs matplotlib: pip install 'hrx[plot]' (or pip install matplotlib)"
        ) from None
    return Figure


def figure(series: Sequence[Tuple[str, Group]]) -> Any:
    """A matplotlib Figure of the labelled groups, one panel per column of
    the first group (every group's columns when they agree)."""
    Figure = _figure_class()
    columns = series[0][1].columns if series else ()
    if any(group.columns != columns for _, group in series):
        columns = min((group.columns for _, group in series), key=len)
    if series and all(has_contention(group.lines) for _, group in series):
        columns = tuple(columns) + PLOTTED_CONTENTION
    nrows = 2 if len(columns) <= 8 else -(-len(columns) // 4)
    ncols = -(-len(columns) // nrows)
    drawn = Figure(figsize=(5 * ncols, 4.25 * nrows), layout="constrained")
    axes = drawn.subplots(nrows, ncols, squeeze=False)
    counts = sorted({row.queues for _, group in series for row in group.rows})
    spread = 0.06
    for column, axis in zip(columns, axes.flat):
        for number, (label, group) in enumerate(series):
            rows = group.rows
            shift = 2 ** ((number - (len(series) - 1) / 2) * spread)
            x = [row.queues * shift for row in rows]
            y = [row.median(column.key) for row in rows]
            below = [row.median(column.key) - row.low(column.key) for row in rows]
            above = [row.high(column.key) - row.median(column.key) for row in rows]
            axis.errorbar(x, y, yerr=[below, above], marker="o", capsize=4, linewidth=1.8,
                          label=label)
        title = series[0][1].header(column) if series else column.header
        if column in CONTENTION_COLUMNS and column not in CONTENTION_COLUMNS[:2]:
            title = f"{column.short}, p95"
        better = "higher is better" if column.higher_is_better else "lower is better"
        axis.set_title(f"{title} ({better})", fontsize=11)
        axis.set_xscale("log", base=2)
        if counts:
            axis.set_xticks(counts)
            axis.set_xticklabels([str(count) for count in counts])
            axis.minorticks_off()
        axis.set_xlabel("queues in the pool")
        axis.set_ylabel(_UNITS.get(column.key, "µs"))
        axis.grid(True, which="major", alpha=0.35)
        medians = [row.median(column.key) for _, group in series for row in group.rows]
        lows = [row.low(column.key) for _, group in series for row in group.rows]
        highs = [row.high(column.key) for _, group in series for row in group.rows]
        if min(lows, default=0) > 0 and max(medians, default=0) > 20 * min(medians):
            axis.set_yscale("log")
        elif highs and max(highs) > 0:
            axis.set_ylim(0, max(highs) * 1.1)
    for axis in list(axes.flat)[len(columns):]:
        axis.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if handles:
        try:
            drawn.legend(handles, labels, loc="outside lower center",
                         ncol=min(len(labels), 3), fontsize=10)
        except ValueError:
            drawn.legend(handles, labels, loc="lower center", ncol=min(len(labels), 3),
                         fontsize=10)
    drawn.suptitle("hrx queue-pool benchmark: median of runs, bars = run-to-run min–max",
                   fontsize=13)
    return drawn


def plot_groups(series: Sequence[Tuple[str, Group]], out: str) -> None:
    """Draws the labelled groups into ``out`` (a PNG path)."""
    figure(series).savefig(out, dpi=110)


def plot_files(paths: Sequence[str], out: str) -> None:
    """Plots every group of every file; labels are the group's label, plus
    the file name when several files are drawn."""
    from .results import load

    series: List[Tuple[str, Group]] = []
    for path in paths:
        for group in load(path).groups:
            label = group.label if len(paths) == 1 else f"{group.label} — {os.path.basename(path)}"
            series.append((label, group))
    if not series:
        raise ValueError("no successful runs to plot")
    plot_groups(series, out)
