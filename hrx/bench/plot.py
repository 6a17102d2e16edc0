"""Each table column against queue count, as one PNG.

2x3 panels (one per column), log2 x axis, one line per (file, group):
the median per queue count with the run-to-run min–max as error bars.
matplotlib is optional (``pip install 'hrx[plot]'``); it is imported only
here, with the Agg backend, so no display is needed.
"""
from __future__ import annotations

import os
from typing import Any, List, Sequence, Tuple

from .results import load
from .table import COLUMNS, Group

__all__ = ["PlotUnavailable", "plot_groups", "plot_files"]

_UNITS = ("Mcommands/s", "Mcommands/s", "GB/s", "µs", "ms", "ms")


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise PlotUnavailable(
            "plotting needs matplotlib: pip install 'hrx[plot]' (or pip install matplotlib)"
        ) from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as pyplot

    return pyplot


def plot_groups(series: Sequence[Tuple[str, Group]], out: str) -> None:
    """Draws the labelled groups into ``out`` (a PNG path)."""
    pyplot = _pyplot()
    figure, axes = pyplot.subplots(2, 3, figsize=(15, 8.5), constrained_layout=True)
    counts = sorted({row.queues for _, group in series for row in group.rows})
    spread = 0.06
    for index, (column, axis) in enumerate(zip(COLUMNS, axes.flat)):
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
        better = "higher is better" if column.higher_is_better else "lower is better"
        axis.set_title(f"{title} ({better})", fontsize=11)
        axis.set_xscale("log", base=2)
        if counts:
            axis.set_xticks(counts)
            axis.set_xticklabels([str(count) for count in counts])
            axis.minorticks_off()
        axis.set_xlabel("queues in the pool")
        axis.set_ylabel(_UNITS[index])
        axis.grid(True, which="major", alpha=0.35)
        medians = [row.median(column.key) for _, group in series for row in group.rows]
        lows = [row.low(column.key) for _, group in series for row in group.rows]
        highs = [row.high(column.key) for _, group in series for row in group.rows]
        if min(lows, default=0) > 0 and max(medians, default=0) > 20 * min(medians):
            axis.set_yscale("log")
        elif highs and max(highs) > 0:
            axis.set_ylim(0, max(highs) * 1.1)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if handles:
        try:
            figure.legend(handles, labels, loc="outside lower center",
                          ncol=min(len(labels), 3), fontsize=10)
        except ValueError:
            figure.legend(handles, labels, loc="lower center", ncol=min(len(labels), 3),
                          fontsize=10)
    figure.suptitle("hrx queue-pool benchmark: median of runs, bars = run-to-run min–max",
                    fontsize=13)
    figure.savefig(out, dpi=110)
    pyplot.close(figure)


def plot_files(paths: Sequence[str], out: str) -> None:
    """Plots every group of every file; labels are the group's label, plus
    the file name when several files are drawn."""
    series: List[Tuple[str, Group]] = []
    for path in paths:
        for group in load(path).groups:
            label = group.label if len(paths) == 1 else f"{group.label} — {os.path.basename(path)}"
            series.append((label, group))
    if not series:
        raise ValueError("no successful runs to plot")
    plot_groups(series, out)
