"""hrx-bench compare: ratios of a driver's medians to a baseline's."""
import pytest

from hrx.bench.cli import main
from hrx.bench.compare import compare_groups, format_comparison

pytestmark = pytest.mark.python_only


def line(driver, queues, one_thread, idle_p95, *, sizes=None):
    return {"target": "t", "backend": "host", "driver": driver,
            "sizes": sizes or {"preset": "default"}, "queues": queues,
            "streams": 16, "small_commands_per_second": one_thread * 1e6,
            "threaded_commands_per_second": 2e6, "bulk_copy_gb_s": 10.0,
            "idle_latency_p95_us": idle_p95, "loaded_latency_p95_us": 1000.0,
            "stream_creation_ms": 1.0}


def test_ratios_use_medians_and_mark_overlap():
    lines = [line("raw", 1, v, 10.0) for v in (1.0, 2.0, 3.0)]
    # native: median 3.0 (ranges 2.5-3.5 overlap raw's 1-3); idle 5 vs 10.
    lines += [line("native", 1, v, 5.0) for v in (2.5, 3.0, 3.5)]
    text = format_comparison(lines, "raw")
    row = next(r for r in text.splitlines() if r.startswith("| 1 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "1.50 ~"     # 3.0 / 2.0, ranges overlap
    assert cells[4] == "0.50"       # idle p95 5 / 10, ranges apart
    assert "native ÷ raw" in text


def test_only_same_target_backend_and_sizes_pair_up():
    lines = [line("raw", 1, 1.0, 1.0), line("native", 1, 1.0, 1.0,
                                             sizes={"preset": "quick"})]
    assert compare_groups(lines, "raw") == []
    assert "No driver shares" in format_comparison(lines, "raw")


def test_cli_compare(tmp_path, capsys):
    import json
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in
                            [line("raw", 2, 1.0, 4.0),
                             line("python", 2, 0.5, 4.0)]))
    assert main(["compare", str(path)]) == 0
    out = capsys.readouterr().out
    assert "python ÷ raw" in out and "| 2 | 0.50" in out


def test_before_after_script_pairs_two_files_by_group_and_marks_overlap(tmp_path):
    """bench/scripts/before_after.py: one build's runs against another's,
    paired by group (a line without a device pairs with device 0), with
    the same ratio cells as compare."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent.parent
    before, after = tmp_path / "before.jsonl", tmp_path / "after.jsonl"
    before.write_text("".join(json.dumps(line("native", 8, v, 10.0)) + "\n"
                              for v in (1.0, 2.0, 3.0)))
    after.write_text("".join(json.dumps({**line("native", 8, v, 20.0), "device": 0}) + "\n"
                             for v in (2.5, 3.0, 3.5)))
    done = subprocess.run([sys.executable, str(root / "bench/scripts/before_after.py"),
                           str(before), str(after)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
                          timeout=60)
    assert done.returncode == 0, done.stderr
    rows = {cells[1]: cells for cells in
            ([c.strip() for c in r.strip("|").split("|")]
             for r in done.stdout.splitlines() if r.startswith("| 8 |"))}
    assert rows["One host thread"][2:] == ["2.000 (1.000–3.000)", "3.000 (2.500–3.500)",
                                           "1.50 ~"]
    assert rows["Idle p95"][4] == "2.00"          # 20 against 10, ranges apart
