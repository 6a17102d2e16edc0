"""Notebook use of the benchmark: Results renders as HTML, exports a
DataFrame and plots as a matplotlib figure; hrx.bench is an attribute of
hrx. The example notebook itself runs in test_example_notebook.py."""
from __future__ import annotations

import subprocess
import sys

import pytest
from conftest_bench import REFERENCE_FILE, child_env, summary_line

from hrx.bench.plot import PlotUnavailable
from hrx.bench.results import Results, load
from hrx.bench.table import format_table, format_value

pytestmark = pytest.mark.python_only


def _workload_lines():
    lines = []
    for queues, median_ms in ((1, 4.0), (2, 2.0), (4, 1.0)):
        for repeat in (1, 2):
            lines.append(summary_line(queues, repeat, workload={
                "name": "w:round", "streams": 16, "round_ns": [1],
                "round_median_ms": median_ms + repeat / 100, "round_p95_ms": median_ms * 2}))
    return lines


def test_plot_returns_a_figure_with_a_panel_per_column(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib

    backend = matplotlib.rcParams["backend"]
    figure = load(REFERENCE_FILE).plot()
    visible = [axis for axis in figure.axes if axis.get_visible()]
    assert len(visible) == 6
    assert visible[0].get_xlabel() == "queues in the pool"
    assert [int(t) for t in visible[1].get_xticks()] == [1, 2, 4, 8, 16]
    # The process's pyplot backend is left alone (notebooks keep theirs).
    assert matplotlib.rcParams["backend"] == backend
    out = tmp_path / "ref.png"
    load(REFERENCE_FILE).plot(out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_of_a_workload_group_has_its_two_columns():
    pytest.importorskip("matplotlib")
    figure = Results(_workload_lines()).plot()
    titles = [axis.get_title() for axis in figure.axes if axis.get_visible()]
    assert len(titles) == 8
    assert titles[-2].startswith("Workload round, ms (lower is better)")
    line = figure.axes[6].lines[0]
    assert list(line.get_ydata()) == pytest.approx([4.015, 2.015, 1.015])   # two runs' mean


def test_plot_selects_a_group_and_refuses_empty_results():
    pytest.importorskip("matplotlib")
    results = Results(_workload_lines() + [summary_line(1, target="other")])
    label = results.groups[1].label
    assert len([a for a in results.plot(group=label).axes if a.get_visible()]) == 6
    with pytest.raises(KeyError):
        results.plot(group="no such group")
    with pytest.raises(ValueError, match="no successful runs"):
        Results([]).plot()


def test_plot_without_matplotlib(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(PlotUnavailable, match="pip install 'hrx\\[plot\\]'"):
        load(REFERENCE_FILE).plot()


def test_html_shows_median_and_range_per_column():
    html = Results(_workload_lines())._repr_html_()
    assert html.count("<tr>") == 1 + 3      # header and three queue counts
    assert "Workload round, ms" in html
    # Each cell: the median of the runs, then their min-max range.
    for middle, low, high in (("4.015", "4.010", "4.020"), ("2.015", "2.010", "2.020"),
                              ("1.015", "1.010", "1.020")):
        assert f"{middle}<br><small>{low}–{high}</small>" in html
    assert "<b>Recommended default: 1 queue.</b>" in html
    assert "<pre>" not in html                # wraps: no preformatted long lines


def test_html_lists_failed_runs_with_the_childs_error():
    error = {"error": "the child exited with status 1", "queues": 2, "repeat": 1,
             "driver": "native", "returncode": 1, "timestamp": "2026-11-29T12:00:00Z",
             "stderr_tail": "Traceback ...\nhrx.InvalidArgumentError: unknown backend 'cuda'\n\n"}
    results = Results(_workload_lines() + [error])
    expected = ("the child exited with status 1: hrx.InvalidArgumentError: unknown backend "
                "'cuda'")
    assert expected in results.table()
    assert expected.replace("'", "&#x27;") in results._repr_html_()


def test_unknown_group_names_the_groups():
    results = Results(_workload_lines())
    label = results.groups[0].label
    with pytest.raises(KeyError, match="no group is labelled 'native'") as caught:
        results.recommend(group="native")
    assert label in str(caught.value)
    assert results.recommend(group=label).queues == 1


def test_to_dataframe_has_a_row_per_run():
    pytest.importorskip("pandas")
    frame = Results(_workload_lines() + [summary_line(8, target="other")]).to_dataframe()
    assert len(frame) == 7
    assert list(frame.columns[:6]) == ["group", "queues", "repeat", "driver", "backend", "target"]
    workload = frame[frame["queues"] <= 4].sort_values(["queues", "repeat"])
    assert list(workload["Workload round, ms"]) == [4.01, 4.02, 2.01, 2.02, 1.01, 1.02]
    assert frame["Bulk GB/s"].tolist() == [200.0] * 7


def _shown(group, medians_of):
    """{queues: [cell, ...]} with each column's decimals, as the table prints."""
    return {row.queues: [format_value(column, medians_of(row.queues, column))
                         for column in group.columns] for row in group.rows}


@pytest.mark.parametrize("runs", [2, 3, 4])
def test_the_table_the_dataframe_and_the_plot_show_the_same_medians(runs):
    """For an even run count as for an odd one, each table cell, the
    DataFrame's median and the plot's dot are the same number."""
    pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    spread = [1.264, 3.108, 2.0, 5.5]
    lines = [summary_line(queues, repeat, threads=spread[repeat - 1] * queues,
                          idle_p95_us=4.0 + repeat, bulk=190.0 + 3 * repeat)
             for queues in (1, 2) for repeat in range(1, runs + 1)]
    results = Results(lines)
    (group,) = results.groups
    table_rows = [row.strip("| ").split(" | ") for row in
                  format_table(group).splitlines()[2:]]
    table = {int(row[0]): row[1:] for row in table_rows}
    frame = results.to_dataframe().drop(columns=["group", "repeat", "driver", "backend",
                                                 "target"]).groupby("queues").median()
    figure = results.plot()
    dots = {column.key: dict(zip([row.queues for row in group.rows],
                                 axis.containers[0].lines[0].get_ydata()))
            for column, axis in zip(group.columns, figure.axes)}
    assert table == _shown(group, lambda q, c: frame.loc[q, group.header(c)])
    assert table == _shown(group, lambda q, c: dots[c.key][q])
    if runs == 2:    # the mean of the two runs, not the lower one
        assert table[1][1] == "2.186"


def test_to_dataframe_without_pandas_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pip install"):
        Results(_workload_lines()).to_dataframe()


def test_hrx_bench_is_an_attribute_of_hrx():
    done = subprocess.run([sys.executable, "-c", "import hrx; print(hrx.bench.sweep.__module__)"],
                          capture_output=True, text=True, env=child_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hrx.bench.sweep"
