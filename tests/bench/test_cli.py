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
    # Hidden with its submodules too: an earlier test may have imported
    # some, which would otherwise still import.
    for name in [n for n in sys.modules
                 if n == "matplotlib" or n.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["plot", str(REFERENCE_FILE), "--out", str(tmp_path / "p.png")]) == 2
    assert "pip install 'hrx[plot]'" in capsys.readouterr().err


def test_the_help_lists_every_command_in_plain_text():
    parser = build_parser()
    text = parser.format_help()
    for command in parser.parse_args(["table", "x"]).commands:
        assert f"hrx-bench {command} " in text, command
    assert "``" not in text


def test_every_option_of_every_command_says_what_it_does():
    for name, command in build_parser().parse_args(["table", "x"]).commands.items():
        for action in command._actions:
            if action.option_strings and action.dest != "help":
                assert action.help, (name, action.option_strings)


def test_size_defaults_name_each_preset_where_they_differ():
    """--bulk-bytes differs between the presets the size rule picks from:
    its help gives both; --warmup is the same in both: one value."""
    from hrx.bench.config import DEFAULT, QUICK

    for name in ("run", "sweep"):
        command = build_parser().parse_args(["table", "x"]).commands[name]
        helps = {action.dest: action.help for action in command._actions}
        assert helps["bulk_bytes"] == (f"default {DEFAULT.bulk_bytes} on a GPU, "
                                       f"{QUICK.bulk_bytes} on the host backend "
                                       f"(--preset auto)")
        assert helps["warmup"] == f"default {DEFAULT.warmup}"


def test_run_takes_samples_as_an_option_too():
    args = build_parser().parse_args(["run", "2", "--samples", "3"])
    assert (args.queues, args.samples_option) == (2, 3)


def test_an_unknown_option_shows_its_commands_usage(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["run", "2", "--bogus", "1"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: hrx-bench run ")
    assert "hrx-bench run: error: unrecognized arguments: --bogus" in err


def test_run_refuses_two_different_sample_counts(capsys):
    assert main(["run", "2", "3", "--samples", "4"]) == 2
    assert "SAMPLES 3 and --samples 4 disagree" in capsys.readouterr().err


def _write(path, lines):
    import json
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path)


def test_a_table_without_successful_runs_exits_1(tmp_path, capsys):
    empty = _write(tmp_path / "empty.jsonl", [])
    assert main(["table", empty]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"hrx-bench table: no successful runs in {empty}\n")
    errors = _write(tmp_path / "errors.jsonl", [
        {"error": "the child exited with status 1", "queues": 1, "repeat": 1,
         "driver": "native", "returncode": 1, "timestamp": "2026-01-01T00:00:00Z"}])
    assert main(["table", errors]) == 1
    assert "the child exited with status 1" in capsys.readouterr().err


def test_compare_exits_1_when_nothing_pairs_and_2_for_an_unknown_baseline(tmp_path, capsys):
    from conftest_bench import summary_line
    path = _write(tmp_path / "r.jsonl", [summary_line(1, backend="host", driver="native")])
    assert main(["compare", path, "--baseline", "raw"]) == 1
    assert "No driver shares" in capsys.readouterr().err
    assert main(["compare", path, "--baseline", "batching-off"]) == 1
    assert "batching on and off" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["compare", path, "--baseline", "turbo"])
    assert exited.value.code == 2
    assert "invalid choice: 'turbo'" in capsys.readouterr().err


def test_plot_exits_1_without_successful_runs(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    empty = _write(tmp_path / "empty.jsonl", [])
    assert main(["plot", empty, "--out", str(tmp_path / "p.png")]) == 1
    assert "no successful runs" in capsys.readouterr().err
    assert not (tmp_path / "p.png").exists()


def test_an_output_file_names_the_command_that_writes_it_again(tmp_path, capsys, monkeypatch):
    from hrx.bench.report import recorded_command
    data = tmp_path / "data"
    data.mkdir()
    results = data / "ref.jsonl"
    results.write_bytes(REFERENCE_FILE.read_bytes())
    out = tmp_path / "ref-table.txt"
    assert main(["table", "--brief", str(results), "-o", str(out)]) == 0
    assert capsys.readouterr().out == ""
    text = out.read_text()
    assert text.startswith("# command (run in this file's directory): "
                           "hrx-bench table --brief data/ref.jsonl -o ref-table.txt\n\n## ")
    assert REFERENCE_ROWS[0] in text
    # The recorded command, run where the file is, writes the same bytes.
    monkeypatch.chdir(tmp_path)
    command = recorded_command(out)
    assert command[0] == "hrx-bench"
    out.unlink()
    assert main(command[1:]) == 0
    assert out.read_text() == text


def test_the_batching_comparison_speaks_of_batching_not_drivers(tmp_path, capsys):
    from conftest_bench import summary_line
    lines = [summary_line(1, r, backend="host", driver="native", batching=b)
             for r in (1, 2) for b in (True, False)]
    path = _write(tmp_path / "r.jsonl", lines)
    assert main(["compare", path, "--baseline", "batching-off"]) == 0
    out = capsys.readouterr().out
    assert "drivers" not in out
    assert "with batching on and with it off overlap" in out


def test_describe_verbose_lists_each_reason_on_a_line(capsys):
    from hrx.bench.cli import describe_lines
    from test_sweep import LONG_SELECTION
    lines = describe_lines({"backend": "host", "selection": LONG_SELECTION})
    assert lines[:3] == ["backend: host", "selection: automatic",
                         "  passed over hip: libamdhip64.so loaded, but hipGetDeviceCount "
                         "failed: hipErrorNoDevice"]
    assert len(lines) == 1 + 5 and lines[-1].startswith("  libcudart.so.12: ")
    assert main(["describe", "--backend", "host", "--verbose"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "backend: host" in out and "selection: backend argument" in out
