"""Notebook use of the benchmark: Results renders as HTML and plots as a
matplotlib figure; the example notebook-script runs a small sweep."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest_bench import REFERENCE_FILE, child_env, summary_line

from hrx.bench.plot import PlotUnavailable
from hrx.bench.results import Results, load

ROOT = Path(__file__).resolve().parent.parent


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
    assert list(line.get_ydata()) == [4.01, 2.01, 1.01]


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
    assert "Workload round, ms" in html and "4.010" in html
    assert "Recommended default" in html


def test_example_notebook_script_runs_a_small_sweep(tmp_path):
    out = tmp_path / "nb.jsonl"
    env = child_env(HRX_BACKEND="host", HRX_EXAMPLE_QUEUES="1,2", HRX_EXAMPLE_REPEATS="1",
                    HRX_EXAMPLE_SAMPLES="2", HRX_EXAMPLE_TINY="1", HRX_EXAMPLE_OUT=str(out),
                    HRX_EXAMPLE_WORKLOAD=str(ROOT / "bench/examples/copy_workload.py:round"))
    done = subprocess.run([sys.executable, "-P", str(ROOT / "bench/examples/quick_sweep.py")],
                          capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Recommended default" in done.stdout
    assert "Workload round, ms" in done.stdout
    assert len(load(out).records) == 2
    try:
        import matplotlib  # noqa: F401
        assert os.path.getsize(out.with_suffix(".png")) > 0
    except ImportError:
        assert "pip install" in done.stdout
