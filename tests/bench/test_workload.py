"""User workloads in the benchmark (hrx/bench/workload.py): the contract,
its errors, the result line, the table, and the sweep with real children on
the host backend (tiny sizes: about a second per child)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest_bench import bench_command, child_env

import hrx
from hrx.bench import run, sweep
from hrx.bench.results import Results
from hrx.bench.schema import schema_errors
from hrx.bench.table import WORKLOAD_COLUMNS, format_table, group_lines
from hrx.bench.workload import WorkloadError, load_workload, run_workload

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLES = ROOT / "bench" / "examples"
TINY = {"small_copies": 2, "bulk_bytes": 4096, "bulk_copies": 1, "loaded_copies": 1,
        "warmup": 1}


def write(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


COUNTING = """
    calls = []

    def round(device, streams):
        calls.append((device.info["backend"], [s.queue_index for s in streams]))
        for s in streams:
            s.fill(s.allocate(64), len(calls) & 0xFF)
"""


# --------------------------------------------------------------- the contract

def test_file_spec_is_called_once_per_round_with_device_and_streams(tmp_path):
    path = write(tmp_path, "counting.py", COUNTING)
    function = load_workload(f"{path}:round")
    device = hrx.Device.open(0, backend="host")
    result = run_workload(f"{path}:round", device, streams=3, warmup=2, samples=4,
                          function=function)
    calls = function.__globals__["calls"]
    assert len(calls) == 6
    assert all(backend == "host" and len(queues) == 3 for backend, queues in calls)
    assert result["name"] == f"{path}:round" and result["streams"] == 3
    assert len(result["round_ns"]) == 4 and min(result["round_ns"]) > 0
    assert result["round_median_ms"] == sorted(result["round_ns"])[1] / 1e6
    assert result["round_p95_ms"] == max(result["round_ns"]) / 1e6


def test_module_spec_imports_from_the_working_directory(tmp_path, monkeypatch):
    write(tmp_path, "my_workload_module.py", COUNTING)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert callable(load_workload("my_workload_module:round"))


def test_a_round_lasts_until_every_stream_is_synchronized(tmp_path):
    """Work queued by the workload is inside the timed round: a round of
    large fills takes longer than a round of nothing."""
    write(tmp_path, "big.py", """
        def round(device, streams):
            buf = streams.state.setdefault("buf", device.allocate(32 << 20))
            for _ in range(8):
                streams[0].fill(buf, 1)
        def nothing(device, streams):
            pass
    """)
    device = hrx.Device.open(0, backend="host")
    busy = run_workload(f"{tmp_path}/big.py:round", device, streams=1, warmup=1, samples=3)
    idle = run_workload(f"{tmp_path}/big.py:nothing", device, streams=1, warmup=1, samples=3)
    assert busy["round_median_ms"] > 5 * idle["round_median_ms"]


@pytest.mark.parametrize("spec, message", [
    ("no_colon", "must be 'module:function'"),
    (":round", "must be 'module:function'"),
    ("module:", "must be 'module:function'"),
    ("module:not-an-identifier", "must be 'module:function'"),
    ("hrx_no_such_module_xyz:round", "cannot import workload module"),
    ("/no/such/file.py:round", "does not exist"),
    ("hrx.bench.config:NO_SUCH_NAME", "has no attribute 'NO_SUCH_NAME'"),
    ("hrx.bench.config:SIZE_FIELDS", "is a tuple, not a function"),
])
def test_bad_specs_are_clear_errors(spec, message):
    with pytest.raises(WorkloadError, match=message):
        load_workload(spec)
    assert issubclass(WorkloadError, ValueError)


def test_a_file_that_fails_to_import_is_a_workload_error(tmp_path):
    path = write(tmp_path, "broken.py", "raise RuntimeError('boom at import')\n")
    with pytest.raises(WorkloadError, match="boom at import"):
        load_workload(f"{path}:round")


def test_non_string_spec_and_bad_stream_count():
    with pytest.raises(WorkloadError):
        load_workload(42)
    device = hrx.Device.open(0, backend="host")
    for bad in (0, True, 2.0):
        with pytest.raises(ValueError, match="streams"):
            run_workload("x:y", device, streams=bad, function=lambda d, s: None)


def test_exceptions_inside_the_workload_propagate(tmp_path):
    path = write(tmp_path, "fails.py", """
        def round(device, streams):
            raise KeyError("inside the workload")
    """)
    device = hrx.Device.open(0, backend="host")
    with pytest.raises(KeyError, match="inside the workload"):
        run_workload(f"{path}:round", device, streams=1, warmup=0, samples=1)


# ----------------------------------------------------- result line and table

def test_run_records_a_schema_valid_workload_line(tmp_path):
    spec = f"{EXAMPLES}/copy_workload.py:round"
    line = run(2, 3, backend="host", quick=True, sizes=TINY, workload=spec,
               workload_streams=4)
    assert schema_errors(line) == []
    assert line["workload"]["name"] == spec and line["workload"]["streams"] == 4
    assert len(line["workload"]["round_ns"]) == 3
    broken = json.loads(json.dumps(line))
    broken["workload"]["round_median_ms"] *= 2
    assert any("workload.round_median_ms" in e for e in schema_errors(broken))
    broken["workload"]["round_ns"] = [1]
    assert any("workload.round_ns has 1 entries" in e for e in schema_errors(broken))


def test_table_adds_workload_columns_and_separates_workloads(tmp_path):
    base = run(1, 3, backend="host", quick=True, sizes=TINY)
    first = run(1, 3, backend="host", quick=True, sizes=TINY,
                workload=f"{EXAMPLES}/copy_workload.py:round", workload_streams=2)
    second = dict(first, workload=dict(first["workload"], name="other:round"))
    groups = group_lines([base, first, second])
    assert len(groups) == 3
    assert [g.columns[-2:] == WORKLOAD_COLUMNS for g in groups] == [False, True, True]
    table = format_table(groups[1])
    assert "Workload round, ms" in table and "Workload p95, ms" in table
    assert f"{first['workload']['round_median_ms']:.3f}" in table
    assert "+ workload other:round, 2 streams" in groups[2].label
    pair = run(2, 3, backend="host", quick=True, sizes=TINY,
               workload=f"{EXAMPLES}/copy_workload.py:round", workload_streams=2)
    results = Results([base, first, pair])
    assert "Workload round, ms" in results._repr_html_()
    text = results.table()
    assert "your workload: fastest median round at " in text
    assert "| Workload round |" in text   # the changes table has its column


def test_compare_pairs_drivers_of_the_same_workload_only():
    from hrx.bench.compare import format_comparison

    spec = f"{EXAMPLES}/copy_workload.py:round"
    native = run(1, 3, backend="host", quick=True, sizes=TINY, workload=spec, workload_streams=2)
    raw = run(1, 3, backend="host", quick=True, sizes=TINY, driver="raw", workload=spec,
              workload_streams=2)
    plain_raw = run(1, 3, backend="host", quick=True, sizes=TINY, driver="raw")
    text = format_comparison([native, raw, plain_raw], "raw")
    # One pair (the main comparison and its contention cases); the plain raw
    # line, without the workload, pairs with nothing.
    assert text.count("## ") == 1 and text.count("÷ raw") == 2
    assert "Workload round (lower is better)" in text
    assert "No driver shares" in format_comparison([native, plain_raw], "raw")


# ------------------------------------------------------------------ the sweep

def test_sweep_runs_the_workload_in_every_child(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "w.jsonl"
    results = sweep([1, 2], repeats=1, samples=2, quick=True, sizes=TINY, backend="host",
                    output=str(out), progress=False,
                    workload="bench/examples/copy_workload.py:round", workload_streams=3)
    assert not results.errors, results.errors
    assert [(r["queues"], r["workload"]["streams"]) for r in results.records] == [(1, 3), (2, 3)]
    assert all(r["workload"]["name"] == "bench/examples/copy_workload.py:round"
               for r in results.records)
    assert "Workload round, ms" in results.table()


def test_sweep_checks_the_spec_before_starting(tmp_path):
    out = tmp_path / "never.jsonl"
    with pytest.raises(WorkloadError, match="no attribute 'missing'"):
        sweep([1], repeats=1, quick=True, backend="host", output=str(out), progress=False,
              workload=f"{EXAMPLES}/copy_workload.py:missing")
    with pytest.raises(ValueError, match="workload_streams"):
        sweep([1], repeats=1, quick=True, backend="host", output=str(out), progress=False,
              workload=f"{EXAMPLES}/copy_workload.py:round", workload_streams=0)
    assert not out.exists()


def test_an_exception_in_the_workload_is_an_error_line(tmp_path):
    """Importable in the parent, failing in the child's rounds: the sweep
    records an error line naming the workload and carrying the traceback,
    and the failed count is left out of that group's recommendation."""
    path = write(tmp_path, "raises.py", """
        import hrx
        def round(device, streams):
            if device.stream_queue_count == 2:
                raise RuntimeError("the user's kernel failed")
            streams[0].fill(streams[0].allocate(16), 1)
    """)
    results = sweep([1, 2], repeats=1, samples=2, quick=True, sizes=TINY, backend="host",
                    output=str(tmp_path / "e.jsonl"), progress=False,
                    workload=f"{path}:round", workload_streams=1)
    [error] = results.errors
    assert error["queues"] == 2 and error["workload"] == f"{path}:round"
    assert "the user's kernel failed" in error["stderr_tail"]
    assert schema_errors(error) == []
    group = results.groups[0]
    assert results.failures(group) == {2: 1}


def test_cli_reports_a_bad_spec_with_status_2(tmp_path):
    for command in (["sweep", "--queues", "1", "--repeats", "1", "--no-progress",
                     "--output", str(tmp_path / "x.jsonl")], ["run", "1"]):
        done = subprocess.run(bench_command(*command, "--backend", "host", "--quick",
                                            "--workload", "hrx_no_such_module_xyz:round"),
                              cwd=tmp_path,
                              capture_output=True, text=True, env=child_env(), timeout=120)
        assert done.returncode == 2, done.stderr
        assert "cannot import workload module 'hrx_no_such_module_xyz'" in done.stderr
        assert "Traceback" not in done.stderr


def test_cli_run_with_the_example_kernel_workload(tmp_path):
    """The shipped example runs on the host backend (its 'copies' mode)."""
    done = subprocess.run(
        [sys.executable, "-P", "-m", "hrx.bench", "run", "1", "2", "--backend", "host", "--quick", "--small-copies", "2",
                      "--bulk-bytes", "4096", "--bulk-copies", "1", "--warmup", "1",
                      "--workload", "bench/examples/kernel_workload.py:round",
                      "--workload-streams", "2"],
        capture_output=True, text=True, env=child_env(), timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout)
    assert line["workload"]["streams"] == 2 and schema_errors(line) == []


def test_example_workload_refuses_an_impossible_mode(monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("kernel_workload_t",
                                                  EXAMPLES / "kernel_workload.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    device = hrx.Device.open(0, backend="host")
    monkeypatch.setenv("HRX_EXAMPLE_KERNEL", "nvrtc")
    with pytest.raises(ValueError, match="NVIDIA"):
        module.choose_mode(device)
    monkeypatch.setenv("HRX_EXAMPLE_KERNEL", "fortran")
    with pytest.raises(ValueError, match="choose one of torch, nvrtc, copies"):
        module.choose_mode(device)
    monkeypatch.delenv("HRX_EXAMPLE_KERNEL")
    assert module.choose_mode(device) == "copies"
    assert os.path.basename(module.__file__) == "kernel_workload.py"


def test_streams_state_lives_for_one_run_only(tmp_path):
    write(tmp_path, "stateful.py", """
        seen = []
        def round(device, streams):
            seen.append(dict(streams.state))
            streams.state["rounds"] = streams.state.get("rounds", 0) + 1
    """)
    function = load_workload(f"{tmp_path}/stateful.py:round")
    device = hrx.Device.open(0, backend="host")
    for _ in range(2):
        run_workload("stateful", device, streams=1, warmup=1, samples=2, function=function)
    seen = function.__globals__["seen"]
    assert [s.get("rounds", 0) for s in seen] == [0, 1, 2, 0, 1, 2]


def test_run_takes_a_function_of_this_process():
    calls = []

    def my_round(device, streams):
        calls.append(len(streams))
        if not streams.state:
            streams.state["buffers"] = [device.allocate(4096) for _ in streams]
        for stream, buffer in zip(streams, streams.state["buffers"]):
            stream.fill(buffer, 3)

    line = run(1, 3, backend="host", quick=True, sizes=TINY, workload=my_round,
               workload_streams=2)
    assert schema_errors(line) == []
    assert line["workload"]["name"] == (
        f"{__name__}:test_run_takes_a_function_of_this_process.<locals>.my_round")
    assert calls == [2] * (TINY["warmup"] + 3)
    with pytest.raises(WorkloadError, match="not int"):
        run(1, 3, backend="host", quick=True, sizes=TINY, workload=42)


def test_sweep_refuses_a_function_and_a_main_spec_with_the_way_out(tmp_path, monkeypatch):
    out = tmp_path / "never.jsonl"
    with pytest.raises(WorkloadError, match="fresh Python process.*file.py|%%writefile"):
        sweep([1], repeats=1, quick=True, backend="host", output=str(out), progress=False,
              workload=lambda device, streams: None)
    main = sys.modules["__main__"]
    monkeypatch.setattr(main, "notebook_round", lambda device, streams: None, raising=False)
    with pytest.raises(WorkloadError, match="defined in __main__.*fresh Python process"):
        sweep([1], repeats=1, quick=True, backend="host", output=str(out), progress=False,
              workload="__main__:notebook_round")
    assert not out.exists()
