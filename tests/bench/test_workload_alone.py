"""Your workload alone (hrx.bench.sweep_workload, ``--only-workload``): the
line, the table and the recommendation, the sweep's plan with fake children,
how a notebook's function reaches the children (or is refused), the CLI, and
one small real sweep on the host backend."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest_bench import FAKE_PYTHON, bench_command, child_env

from hrx.bench import Results, run, sweep, sweep_workload
from hrx.bench.analysis import WORKLOAD_RULE, recommend
from hrx.bench.config import QUICK
from hrx.bench.schema import is_workload_only, schema_errors
from hrx.bench.sweep import Step, child_command, plan
from hrx.bench.table import WORKLOAD_COLUMNS, group_lines
from hrx.bench.workload import (WorkloadError, build_workload_record, importable_spec,
                                summarize_workload)

ROOT = Path(__file__).resolve().parent.parent.parent
COPY = f"{ROOT}/bench/examples/copy_workload.py:round"


def _line(queues, repeat, rounds_ms, *, name="mine:round"):
    rounds = [int(ms * 1e6) for ms in rounds_ms]
    return build_workload_record(
        summarize_workload(name, 4, rounds), queues=queues, repeat=repeat, warmup=1,
        batching=True, target="test", backend="host", hrx_version=None, git_commit=None,
        git_dirty=None, timestamp="2026-01-01T00:00:00Z",
        environment={"device_name": None, "backend": "host", "target": "test",
                     "runtime": None, "driver_version": None, "cpu_model": None,
                     "logical_cpus": 1, "ram_bytes": None, "os": None, "kernel": None,
                     "c_compiler": {"command": None, "version": None},
                     "python_version": "3", "host_memcpy_gb_s": 1.0},
        memory={key: None for key in (
            "peak_rss_bytes", "host_mem_available_before_bytes",
            "host_mem_available_after_bytes", "device_memory_total_bytes",
            "device_memory_used_before_bytes", "device_memory_used_after_bytes")})


# ------------------------------------------------------- line, table, rule

def test_a_workload_only_line_is_valid_and_checked():
    line = _line(4, 1, [2.0, 3.0, 4.0])
    assert is_workload_only(line) and schema_errors(line) == []
    assert line["driver"] == "workload" and line["samples"] == 3
    broken = dict(line, samples=5)
    assert any("samples is 5 but sizes.samples is 3" in e for e in schema_errors(broken))
    broken = dict(line, workload=dict(line["workload"], round_p95_ms=99.0))
    assert any("workload.round_p95_ms" in e for e in schema_errors(broken))
    assert schema_errors({k: v for k, v in line.items() if k != "workload"})


def test_the_table_has_the_workload_columns_only_and_the_rule_picks_the_fewest():
    # 1 queue is decisively slower; 4 and 16 overlap: the fewest of them wins.
    lines = [_line(q, r, [ms + 0.1 * r] * 3)
             for q, ms in ((1, 10.0), (4, 5.0), (16, 4.9)) for r in (1, 2, 3)]
    results = Results(lines)
    [group] = results.groups
    assert group.columns == WORKLOAD_COLUMNS
    assert "workload alone mine:round, 4 streams" in group.label
    text = results.table()
    assert "Workload round, ms" in text and "Mcommands/s" not in text
    assert "| 1 | 10.200 |" in text
    advice = results.recommend()
    assert advice.queues == 4 and advice.rule == WORKLOAD_RULE
    assert advice.candidates == [4, 16]
    assert "fastest median workload round: 16 queues" in advice.reasons[0]
    assert "Recommended default: 4 queues." in text


def test_the_p95_guard_drops_a_count_whose_tail_jumps():
    fast_tail = [5.0] * 14 + [5.2]
    slow_tail = [5.0] * 14 + [50.0]
    lines = ([_line(4, r, slow_tail) for r in (1, 2, 3)]
             + [_line(8, r, fast_tail) for r in (1, 2, 3)])
    advice = recommend(group_lines(lines)[0])
    assert advice.queues == 8 and 4 in advice.dropped
    assert "Workload p95" in advice.dropped[4]


def test_one_queue_count_has_nothing_to_recommend():
    lines = [_line(4, r, [5.0, 6.0]) for r in (1, 2, 3)]
    advice = Results(lines).recommend()
    assert advice.queues is None
    assert str(advice).startswith("No recommendation: only 4 queues measured, nothing to "
                                  "compare it with.")
    assert "Recommended default" not in Results(lines).table()


# ------------------------------------------------------------- the sweep

def test_plan_and_child_command_of_the_workload_alone():
    steps = plan([1, 4], 2, ["workload"])
    assert [(s.queues, s.repeat) for s in steps] == [(1, 1), (4, 1), (4, 2), (1, 2)]
    command = child_command(Step(4, 1, "workload"), QUICK, backend="host", device=0,
                            python="py", workload="m:f", workload_streams=2)
    text = " ".join(command)
    assert "--only-workload" in text and "--driver" not in text
    assert "--bulk-bytes" not in text and f"--warmup {QUICK.warmup}" in text
    with pytest.raises(ValueError, match="unknown driver"):
        plan([1], 1, ["native", "workload"])


def test_sweep_workload_with_fake_children(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "w.jsonl"
    results = sweep_workload("bench/examples/copy_workload.py:round", (1, 4, 16), repeats=3,
                             samples=4, warmup=1, streams=2, output=str(out), progress=False,
                             python=FAKE_PYTHON)
    assert not results.errors, results.errors
    got = [(line["queues"], line["repeat"]) for line in results.records]
    assert got == [(1, 1), (4, 1), (16, 1), (16, 2), (4, 2), (1, 2), (4, 3), (1, 3), (16, 3)]
    assert all(is_workload_only(line) and line["workload"]["streams"] == 2
               and line["warmup"] == 1 and line["samples"] == 4 for line in results.records)
    assert results.recommend().queues == 4           # the fake is fastest from 4 on
    assert len(out.read_text().splitlines()) == 9
    resumed = sweep_workload("bench/examples/copy_workload.py:round", (1, 4, 16), repeats=3,
                             samples=4, warmup=1, streams=2, output=str(out), resume=True,
                             progress=False, python=FAKE_PYTHON)
    assert len(resumed.records) == 9 and len(out.read_text().splitlines()) == 9


def test_the_header_names_the_rounds_not_the_case_sizes(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    sweep_workload(COPY, (1,), repeats=1, samples=2, warmup=1,
                   output=str(tmp_path / "h.jsonl"), python=FAKE_PYTHON)
    err = capsys.readouterr().err
    assert f"Rounds: {COPY} alone, 1 warm-up + 2 timed per run" in err
    assert "Sizes:" not in err


def test_a_failed_workload_run_is_an_error_line(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("HRX_BENCH_FAKE", "ok,4/1=crash")
    results = sweep_workload(COPY, (1, 4), repeats=1, samples=2, output=str(tmp_path / "e.jsonl"),
                             progress=False, python=FAKE_PYTHON)
    [error] = results.errors
    assert error["driver"] == "workload" and error["workload"] == COPY
    assert schema_errors(error) == []
    assert results.failures(results.groups[0]) == {4: 1}


def test_sweep_refuses_a_driver_with_only_workload_and_only_workload_without_one(tmp_path):
    out = tmp_path / "never.jsonl"
    with pytest.raises(ValueError, match="leave driver out"):
        sweep([1], 1, workload=COPY, only_workload=True, driver="raw", output=str(out),
              progress=False, python=FAKE_PYTHON)
    with pytest.raises(WorkloadError, match="pass workload="):
        sweep([1], 1, only_workload=True, output=str(out), progress=False, python=FAKE_PYTHON)
    assert not out.exists()


# ---------------------------------------------- a notebook's function

def test_a_module_function_is_named_for_the_children(tmp_path, monkeypatch):
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "rounds.py").write_text("def my_round(device, streams):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from mypkg.rounds import my_round

    assert importable_spec(my_round) == ("mypkg.rounds:my_round", str(tmp_path))
    assert importable_spec("a.py:f") == ("a.py:f", None)


def test_a_lambda_a_nested_and_a_main_function_are_refused_with_the_way_out(tmp_path):
    def nested(device, streams):
        pass

    main = {"__name__": "__main__"}
    exec("def notebook_round(device, streams):\n    pass\n", main)
    cases = [(lambda device, streams: None, "lambda or defined inside another function"),
             (nested, "lambda or defined inside another function"),
             (main["notebook_round"], "defined in this notebook or script")]
    for function, why in cases:
        with pytest.raises(WorkloadError) as caught:
            sweep_workload(function, (1, 2), output=str(tmp_path / "x.jsonl"), progress=False,
                           python=FAKE_PYTHON)
        message = str(caught.value)
        assert why in message and "fresh Python process" in message
        assert "%%writefile my_workload.py" in message
    with pytest.raises(WorkloadError, match="not int"):
        importable_spec(42)
    assert not (tmp_path / "x.jsonl").exists()


def test_a_function_written_to_a_module_runs_in_the_children(tmp_path, monkeypatch):
    """The notebook's way: %%writefile a module, import the function, pass
    it; each child imports it from the module's directory, which need not
    be the working directory."""
    (tmp_path / "my_workload.py").write_text(textwrap.dedent("""
        def my_round(device, streams):
            if not streams.state:
                streams.state["buffers"] = [device.allocate(256) for _ in streams]
            for stream, buffer in zip(streams, streams.state["buffers"]):
                stream.fill(buffer, 7)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(ROOT)
    from my_workload import my_round

    results = sweep_workload(my_round, (1, 2), repeats=1, samples=2, warmup=1, streams=2,
                             backend="host", output=str(tmp_path / "r.jsonl"), progress=False)
    assert not results.errors, results.errors[0]["stderr_tail"]
    assert [line["queues"] for line in results.records] == [1, 2]
    assert all(line["workload"]["name"] == "my_workload:my_round" and schema_errors(line) == []
               and "small_commands_per_second" not in line for line in results.records)


# ---------------------------------------------------------------- CLI

def test_cli_run_only_workload_prints_a_workload_only_line():
    done = subprocess.run(
        [sys.executable, "-P", "-m", "hrx.bench", "run", "2", "3", "--backend", "host",
         "--warmup", "1", "--workload", "bench/examples/copy_workload.py:round",
         "--workload-streams", "2", "--only-workload"],
        capture_output=True, text=True, env=child_env(), timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout)
    assert is_workload_only(line) and schema_errors(line) == []
    assert line["queues"] == 2 and len(line["workload"]["round_ns"]) == 3


@pytest.mark.parametrize("arguments, message", [
    (["run", "1", "--only-workload"], "give it with --workload SPEC"),
    (["run", "1", "--only-workload", "--workload", "x.py:f", "--driver", "raw"],
     "leave --driver out"),
    (["sweep", "--only-workload", "--workload", COPY, "--driver", "raw"], "leave --driver out"),
    (["sweep", "--only-workload"], "pass workload="),
])
def test_cli_refuses_only_workload_without_a_workload_or_with_a_driver(tmp_path, arguments,
                                                                       message):
    extra = ["--output", str(tmp_path / "x.jsonl"), "--python", FAKE_PYTHON] \
        if arguments[0] == "sweep" else []
    done = subprocess.run(bench_command(*arguments, *extra), capture_output=True, text=True,
                          env=child_env(), timeout=120, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr


def test_cli_sweep_only_workload_prints_the_table(tmp_path):
    out = tmp_path / "w.jsonl"
    done = subprocess.run(
        bench_command("sweep", "--queues", "1,4", "--repeats", "1", "--samples", "2",
                      "--workload", COPY, "--only-workload", "--no-progress",
                      "--output", str(out), "--python", FAKE_PYTHON),
        capture_output=True, text=True, env=child_env(), timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Workload round, ms" in done.stdout and "Mcommands/s" not in done.stdout
    assert all(is_workload_only(json.loads(text)) for text in out.read_text().splitlines())


def test_run_in_process_takes_the_workload_alone():
    calls = []
    line = run(1, 2, backend="host", driver="workload", sizes={"warmup": 1},
               workload=lambda device, streams: calls.append(len(streams)),
               workload_streams=3)
    assert calls == [3, 3, 3] and is_workload_only(line) and schema_errors(line) == []
    with pytest.raises(WorkloadError, match="pass workload="):
        run(1, 2, backend="host", driver="workload")


# pandas and matplotlib do not load under the sanitized build's preload:
# this test runs in the ordinary suite only.
@pytest.mark.python_only
def test_html_dataframe_and_plot_of_the_workload_alone():
    lines = [_line(q, r, [ms + 0.1 * r] * 3) for q, ms in ((1, 10.0), (4, 5.0)) for r in (1, 2)]
    results = Results(lines)
    html = results._repr_html_()
    assert "Workload round, ms" in html and "Recommended default: 4 queues." in html
    pandas = pytest.importorskip("pandas")
    frame = results.to_dataframe()
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame.columns[-2:]) == ["Workload round, ms", "Workload p95, ms"]
    pytest.importorskip("matplotlib")
    figure = results.plot()
    assert len([axis for axis in figure.axes if axis.has_data()]) == 2
