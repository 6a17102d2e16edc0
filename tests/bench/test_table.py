"""The table: the reference's rows from its raw data, grouping, errors."""
import subprocess

import pytest

from conftest_bench import (
    REFERENCE_FILE,
    REFERENCE_ROWS,
    bench_command,
    child_env,
    summary_line,
)

from hrx.bench import Results, load, table
from hrx.bench.table import format_table, group_lines

pytestmark = pytest.mark.python_only

HEADER = ("| Queues | One host thread, Mcommands/s | 16 host threads, Mcommands/s | Bulk GB/s "
          "| Idle p95, µs | Loaded p95, ms | Create 16 streams, ms |")


def _table_rows(text):
    return [line for line in text.splitlines() if line.startswith("| ") and line[2].isdigit()]


def test_reference_file_gives_reference_table_exactly():
    groups = load(REFERENCE_FILE).groups
    assert len(groups) == 1
    text = format_table(groups[0])
    lines = text.splitlines()
    assert lines[0] == HEADER
    assert lines[1] == "|---:|---:|---:|---:|---:|---:|---:|"
    assert lines[2:] == REFERENCE_ROWS


def test_reference_table_through_every_entry_point():
    expected = "\n".join([HEADER, "|---:|---:|---:|---:|---:|---:|---:|"] + REFERENCE_ROWS)
    assert expected in table(REFERENCE_FILE, analysis=False)
    assert expected in table(str(REFERENCE_FILE))
    assert expected in load(REFERENCE_FILE).table()
    done = subprocess.run(bench_command("table", str(REFERENCE_FILE)), capture_output=True,
                          text=True, env=child_env(), check=True)
    assert expected in done.stdout


def test_median_of_per_run_values_per_column():
    lines = [summary_line(4, 1, threads=1.0, idle_p95_us=9.0),
             summary_line(4, 2, threads=3.0, idle_p95_us=1.0),
             summary_line(4, 3, threads=2.0, idle_p95_us=5.0)]
    (row,) = group_lines(lines)[0].rows
    assert row.median("threads") == 2.0     # middle value of 1, 2, 3
    assert row.median("idle_p95") == 5.0    # median of the per-run p95s, not pooled
    assert (row.low("threads"), row.high("threads")) == (1.0, 3.0)


def test_an_even_run_count_takes_the_mean_of_the_two_middle_runs():
    lines = [summary_line(2, r, threads=t) for r, t in enumerate([4.0, 1.0, 3.0, 2.0], 1)]
    (row,) = group_lines(lines)[0].rows
    assert row.median("threads") == 2.5
    two = group_lines([summary_line(2, 1, threads=1.264), summary_line(2, 2, threads=3.108)])
    (row,) = two[0].rows
    assert row.median("threads") == (1.264 + 3.108) / 2   # never the lower run alone
    assert "| 2 | 0.500 | 2.186 |" in format_table(two[0])


def test_groups_by_target_backend_driver_and_sizes():
    lines = [summary_line(1, target="a", backend="host", driver="native"),
             summary_line(1, target="a", backend="host", driver="python"),
             summary_line(1, target="b", backend="hip", driver="native"),
             summary_line(2, target="a", backend="host", driver="native")]
    groups = group_lines(lines)
    assert [g.label for g in groups] == ["a / host / native", "a / host / python",
                                         "b / hip / native"]
    assert [row.queues for row in groups[0].rows] == [1, 2]


def test_error_lines_are_counted_not_aggregated():
    lines = [summary_line(1), summary_line(2),
             {"error": "the child exited with status 3", "queues": 4, "repeat": 1,
              "driver": "native", "returncode": 3, "stderr_tail": "boom",
              "timestamp": "2026-01-01T00:00:00Z"}]
    results = Results(lines)
    assert len(results.errors) == 1 and len(results.records) == 2
    assert [row.queues for row in results.groups[0].rows] == [1, 2]
    text = results.table()
    assert "Failed runs: 1 (not aggregated)" in text
    assert "queues 4 repeat 1 driver native: the child exited with status 3" in text
    assert "| 4 |" not in text


def test_unreadable_lines_are_reported(tmp_path):
    path = tmp_path / "r.jsonl"
    good = REFERENCE_FILE.read_text().splitlines()
    path.write_text("\n".join(good) + '\n{"queues": 1, "torn\n[1, 2]\n')
    results = load(path)
    assert len(results.records) == 15
    assert len(results.unreadable) == 2
    assert _table_rows(results.table(analysis=False)) == REFERENCE_ROWS
    assert "Unreadable lines: 2" in results.table()


def test_headers_follow_lanes_and_retained_streams():
    lines = [summary_line(1, streams=8, sizes={"retained_streams": 4, "preset": "custom"})]
    text = format_table(group_lines(lines)[0])
    assert "8 host threads, Mcommands/s" in text
    assert "Create 4 streams, ms" in text
