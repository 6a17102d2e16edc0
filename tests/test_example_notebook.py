"""examples/queue_counts.ipynb, executed headless with a real Jupyter
kernel (nbclient + ipykernel), with small parameters; its outputs are
checked cell by cell."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.python_only

NOTEBOOK = Path(__file__).resolve().parent.parent / "examples" / "queue_counts.ipynb"
TINY = {"small_copies": 2, "bulk_bytes": 4096, "bulk_copies": 1, "loaded_copies": 1,
        "warmup": 1}


REPEATS = 3
"""As the notebook's own default: the reference's three runs per pool size."""

AGREEMENT = r"""
import json
from hrx.bench.table import format_value
_group = results.groups[0]
_text = results.table(analysis=False).split("\n\n")[1]   # the heading, then the table
_table = {row.strip("| ").split(" | ")[0]: row.strip("| ").split(" | ")[1:]
          for row in _text.splitlines()[2:]}
_frame = {str(q): [format_value(c, medians.loc[q, _group.header(c)]) for c in _group.columns]
          for q in medians.index}
_plot = {}
for _column, _axis in zip(_group.columns, results.plot().axes):
    _dots = _axis.containers[0].lines[0].get_ydata()
    for _row, _y in zip(_group.rows, _dots):
        _plot.setdefault(str(_row.queues), []).append(format_value(_column, _y))
print(json.dumps({"table": _table, "frame": _frame, "plot": _plot}))
"""
"""Appended by the test: each table cell, the DataFrame's median and the
plot's dot, formatted as the table formats them."""


def _text(cell, output_type=None, name=None) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if output_type and output["output_type"] != output_type:
            continue
        if name and output.get("name") != name:
            continue
        if output["output_type"] == "stream":
            parts.append(output["text"])
        elif "data" in output:
            parts.append(output["data"].get("text/plain", ""))
    return "".join(parts)


def _data(cell, mime: str) -> str:
    found = [output["data"][mime] for output in cell.get("outputs", [])
             if mime in output.get("data", {})]
    assert found, f"no {mime} output in cell:\n{cell.source}\n{cell.get('outputs')}"
    return found[0]


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    # Imported here, not at collection: the sanitizer stage collects this
    # file without running it. pip install '.[test]' installs all three.
    import ipykernel  # noqa: F401 - the kernel nbclient starts
    import nbclient
    import nbformat

    work = tmp_path_factory.mktemp("notebook")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    parameters = [cell for cell in notebook.cells if "parameters" in cell.metadata.get("tags", [])]
    assert len(parameters) == 1, "the notebook has one cell tagged 'parameters'"
    parameters[0].source += (
        f"\n# test values\nQUEUES = [1, 2]\nREPEATS = {REPEATS}\nSAMPLES = 2\nPRESET = 'quick'\n"
        f"SIZES = {TINY!r}\nWORKLOAD_FILE = {str(work / 'workload.py')!r}\n")
    notebook.cells.append(nbformat.v4.new_code_cell(AGREEMENT, metadata={"tags": ["test"]}))
    client = nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(work)}})
    client.execute()
    return notebook, work


def _cell(notebook, fragment: str):
    matches = [cell for cell in notebook.cells
               if cell.cell_type == "code" and fragment in cell.source
               and "test" not in cell.metadata.get("tags", [])]
    assert len(matches) == 1, fragment
    return matches[0]


def test_the_sweep_cell_names_the_device_and_shows_the_table(executed):
    notebook, work = executed
    cell = _cell(notebook, "results = hrx.bench.sweep(")
    stderr = _text(cell, "stream", "stderr")
    assert "Device: " in stderr and "Backend chosen by: " in stderr and "Runtime: " in stderr
    html = _data(cell, "text/html")
    assert html.count("<tr>") == 1 + 2          # the header and queue counts 1 and 2
    assert "<pre>" not in html and "Recommended default" in html
    written = list(work.glob("queue-counts-*.jsonl"))
    written = [path for path in written
               if "workload" not in path.name and "alone" not in path.name]
    assert len(written) == 1
    assert len(written[0].read_text().splitlines()) == 2 * REPEATS


def test_the_recommendation_dataframe_and_plot_cells(executed):
    notebook, _ = executed
    advice = _text(_cell(notebook, "advice = results.recommend()"), "stream", "stdout")
    assert "Recommended default: " in advice and "recommended pool size: " in advice
    frame = _data(_cell(notebook, "frame = results.to_dataframe()"), "text/html")
    assert "queues" in frame and "Bulk GB/s" in frame
    png = _data(_cell(notebook, "results.plot()"), "image/png")
    assert len(png) > 1000          # base64 of a real figure, shown inline


def test_a_notebook_workload_runs_in_process_and_the_sweep_explains_the_file_path(executed):
    notebook, work = executed
    ran = _text(_cell(notebook, "line = hrx.bench.run("), "stream", "stdout")
    assert ran.startswith("__main__:copy_round on 2 queues: median round ")
    refused = _text(_cell(notebook, "hrx.bench.sweep(QUEUES, 1, workload=copy_round)"),
                    "stream", "stdout")
    assert "fresh Python process" in refused
    assert "%%writefile" in refused
    table = _text(_cell(notebook, "with_workload = hrx.bench.sweep("), "stream", "stdout")
    assert "Workload round, ms" in table
    lines = [json.loads(text) for text in
             next(work.glob("queue-counts-*-workload.jsonl")).read_text().splitlines()]
    assert [line["workload"]["name"] for line in lines] == [f"{work / 'workload.py'}:copy_round"] * 2 * REPEATS


def test_the_workload_alone_sweep_cell(executed):
    notebook, work = executed
    cell = _cell(notebook, "alone = hrx.bench.sweep_workload(")
    html = _data(cell, "text/html")
    assert html.count("<tr>") == 1 + 2 and "Workload round, ms" in html
    assert "Mcommands/s" not in html and "Recommended default" in html
    lines = [json.loads(text) for text in
             next(work.glob("queue-counts-*-alone.jsonl")).read_text().splitlines()]
    assert [line["driver"] for line in lines] == ["workload"] * 2 * REPEATS
    assert {line["workload"]["name"] for line in lines} == {"workload:copy_round"}
    assert all("small_commands_per_second" not in line for line in lines)


def test_the_pool_size_change_cells(executed):
    notebook, _ = executed
    refused = _text(_cell(notebook, "buffers = [device.allocate(1 << 10)"), "stream", "stdout")
    assert "held by: 1 device handle, 1 stream, 2 buffers. " in refused
    assert "gc.collect()" in refused
    changed = _text(_cell(notebook, "device.set_stream_queue_count(4)"), "stream", "stdout")
    assert changed == "pool size now: 4\n"


def test_the_table_the_dataframe_and_the_plot_agree(executed):
    """What the notebook shows as the table, its DataFrame's medians and its
    plot's dots are the same numbers, cell for cell."""
    notebook, _ = executed
    shown = json.loads(_text(notebook.cells[-1], "stream", "stdout"))
    assert set(shown["table"]) == {"1", "2"}
    assert shown["frame"] == shown["table"]
    assert shown["plot"] == shown["table"]
    html = _data(_cell(notebook, "results = hrx.bench.sweep("), "text/html")
    medians = re.findall(r"<td style='text-align:right'>([^<]*)<br>", html)
    assert medians == [cell for queues in ("1", "2") for cell in shown["table"][queues]]
    frame = _data(_cell(notebook, "frame = results.to_dataframe()"), "text/html")
    assert "repeat" not in frame


def test_no_cell_raised(executed):
    notebook, _ = executed
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            assert output["output_type"] != "error", (cell.source, output)
