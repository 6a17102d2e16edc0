"""The hrx-bench command line: table, plot and option parsing."""
import argparse
import subprocess
import sys

import pytest
from conftest_bench import REFERENCE_FILE, REFERENCE_ROWS, bench_command, child_env

from hrx.bench.cli import build_parser, main, parse_size

pytestmark = pytest.mark.python_only


@pytest.mark.parametrize("text, value", [("4096", 4096), ("4K", 4096), ("4KiB", 4096),
                                         ("32M", 32 << 20), ("32MiB", 32 << 20), ("1G", 1 << 30)])
def test_parse_size(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["", "0", "-1", "4X", "1.5M"])
def test_parse_size_rejects(text):
    with pytest.raises(argparse.ArgumentTypeError):
        parse_size(text)


def test_run_options():
    args = build_parser().parse_args(["run", "8", "5", "--driver", "python", "--quick",
                                      "--bulk-bytes", "2M", "--repeat", "3", "--backend", "host"])
    assert (args.queues, args.samples, args.driver, args.repeat) == (8, 5, "python", 3)
    assert args.quick and args.bulk_bytes == 2 << 20 and args.backend == "host"


def test_sweep_options():
    args = build_parser().parse_args(["sweep", "--queues", "1,4", "--driver", "native,python",
                                      "--timeout", "30", "--resume", "-o", "x.jsonl"])
    assert args.queues == [1, 4] and args.driver == ["native", "python"]
    assert args.timeout == 30 and args.resume and args.output == "x.jsonl"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["sweep", "--driver", "turbo"])


def test_table_command(capsys):
    assert main(["table", str(REFERENCE_FILE)]) == 0
    out = capsys.readouterr().out
    for row in REFERENCE_ROWS:
        assert row in out
    assert "Recommended default: 8 queues." in out


def test_table_command_brief_and_missing_file(capsys, tmp_path):
    assert main(["table", "--brief", str(REFERENCE_FILE)]) == 0
    assert "Recommended" not in capsys.readouterr().out
    assert main(["table", str(tmp_path / "missing.jsonl")]) == 2


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "plot.png"
    done = subprocess.run(bench_command("plot", str(REFERENCE_FILE), str(REFERENCE_FILE),
                                        "--out", str(out)),
                          env=child_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_says_how_to_get_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["plot", str(REFERENCE_FILE), "--out", str(tmp_path / "p.png")]) == 2
    assert "pip install 'hrx[plot]'" in capsys.readouterr().err
