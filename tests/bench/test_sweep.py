"""The sweep: run orders, whole-line appends, failures, timeouts,
interruption and resume, with fake children (fake_bench_child.py)."""
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest_bench import FAKE_PYTHON, bench_command, child_env
from fake_bench_child import mode_for

from hrx.bench import sweep
from dataclasses import replace

from hrx.bench.config import DEFAULT, QUICK, automatic_preset, check_size_rule, resolve_rule
from hrx.bench.lines import append_line, read_lines
from hrx.bench.schema import schema_errors
from hrx.bench.sweep import (REFERENCE_ORDERS, Step, SweepError, child_command, header_lines,
                             orders, plan, selection_summary)

pytestmark = pytest.mark.python_only

TINY = {"small_copies": 2, "bulk_bytes": 4096, "bulk_copies": 1, "loaded_copies": 1,
        "warmup": 1}


def _file_lines(path):
    data = path.read_bytes()
    assert data.endswith(b"\n"), "the file ends inside a line"
    return [json.loads(text) for text in data.decode().splitlines() if text.strip()]


def test_reference_orders():
    assert orders([1, 2, 4, 8, 16]) == ((1, 2, 4, 8, 16), (16, 8, 4, 2, 1), (4, 1, 16, 2, 8))
    assert orders([16, 4, 1, 8, 2, 4]) == REFERENCE_ORDERS


@pytest.mark.parametrize("queues, third", [
    ([1, 2, 3], (2, 1, 3)),
    ([1, 2, 4, 8], (4, 1, 8, 2)),
    ([1, 2, 4, 8, 16, 32], (8, 1, 32, 2, 16, 4)),
    ([1, 3, 5, 7, 9], (5, 1, 9, 3, 7)),
])
def test_other_lists_ascending_descending_middle_out(queues, third):
    ascending = tuple(sorted(queues))
    assert orders(queues) == (ascending, ascending[::-1], third)


def test_plan_cycles_orders_and_runs_every_driver():
    steps = plan([1, 2, 4, 8, 16], 4, ["native", "python"])
    assert len(steps) == 4 * 5 * 2
    by_repeat = {r: [s.queues for s in steps if s.repeat == r and s.driver == "native"]
                 for r in range(1, 5)}
    assert by_repeat == {1: [1, 2, 4, 8, 16], 2: [16, 8, 4, 2, 1], 3: [4, 1, 16, 2, 8],
                         4: [1, 2, 4, 8, 16]}
    assert steps[0] == Step(1, 1, "native") and steps[1] == Step(1, 1, "python")
    with pytest.raises(ValueError):
        plan([1], 1, ["turbo"])


def test_child_command_spells_out_every_size():
    command = child_command(Step(4, 2, "raw"), QUICK, backend="host", device=1, python="py")
    assert command[:7] == ["py", "-P", "-m", "hrx.bench", "run", "4",
                           str(QUICK.samples)]
    text = " ".join(command)
    for flag in ("--repeat 2", "--driver raw", "--device 1", "--backend host",
                 f"--bulk-bytes {QUICK.bulk_bytes}", f"--small-copies {QUICK.small_copies}",
                 "--lanes 16", "--retained-streams 16", "--warmup 3",
                 f"--loaded-copies {QUICK.loaded_copies}"):
        assert flag in text


def test_children_import_the_parents_hrx_from_a_source_checkout(tmp_path):
    # A directory holding an `hrx` package without the extension (a source
    # checkout) must not shadow the hrx the sweep runs with.
    import subprocess
    import sys

    from hrx.bench.sweep import _child_env

    fake = tmp_path / "hrx"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('source tree hrx')")
    (fake / "bench").mkdir()
    command = child_command(Step(1, 1, "native"), QUICK, backend="host", device=0,
                            python=sys.executable)
    probe = command[:2] + ["-c", "import hrx._hrx; print('ok')"]
    result = subprocess.run(probe, cwd=tmp_path, env=_child_env(),
                            capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "ok", result.stderr


def test_fake_mode_spec():
    spec = "ok,4=crash,2/3=hang"
    assert mode_for(spec, 1, 1) == "ok"
    assert mode_for(spec, 4, 2) == "crash"
    assert mode_for(spec, 2, 3) == "hang"
    assert mode_for(spec, 2, 1) == "ok"
    assert mode_for("4=crash,4/1=sigint", 4, 1) == "sigint"
    with pytest.raises(ValueError):
        mode_for("explode", 1, 1)


def test_append_repairs_an_unterminated_last_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes(b'{"queues": 1, "tor')
    append_line(path, {"a": 1})
    lines, unreadable = read_lines([path])
    assert lines == [{"a": 1}] and len(unreadable) == 1


def _append_many(path, worker):
    for index in range(40):
        append_line(path, {"worker": worker, "index": index, "pad": "x" * 20000})


def test_concurrent_appends_never_interleave(tmp_path):
    path = tmp_path / "r.jsonl"
    context = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
    workers = [context.Process(target=_append_many, args=(str(path), w)) for w in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    lines = _file_lines(path)
    assert len(lines) == 160
    assert sorted((line["worker"], line["index"]) for line in lines) == \
        [(w, i) for w in range(4) for i in range(40)]


def test_failures_are_recorded_and_the_sweep_goes_on(tmp_path, monkeypatch):
    monkeypatch.setenv("HRX_BENCH_FAKE", "ok,2=crash,4/1=hang,8/1=garbage,1/2=sigint")
    path = tmp_path / "r.jsonl"
    results = sweep([1, 2, 4, 8], repeats=2, samples=3, quick=True, sizes=TINY,
                    output=str(path), timeout=4, progress=False, python=FAKE_PYTHON)
    lines = _file_lines(path)
    assert len(lines) == 8
    errors = {(line["queues"], line["repeat"]): line for line in lines if "error" in line}
    assert set(errors) == {(2, 1), (2, 2), (4, 1), (8, 1), (1, 2)}
    assert errors[(2, 1)]["returncode"] == 3
    assert "crashing on purpose" in errors[(2, 1)]["stderr_tail"]
    assert errors[(4, 1)]["error"] == "timed out after 4 s"
    assert errors[(8, 1)]["error"].startswith("the child's last line is not JSON")
    assert errors[(1, 2)]["returncode"] == -signal.SIGINT
    assert errors[(1, 2)]["error"] == f"the child killed by signal {int(signal.SIGINT)}"
    for line in lines:
        assert schema_errors(line) == []
    ok = [(line["queues"], line["repeat"]) for line in lines if "error" not in line]
    assert ok == [(1, 1), (8, 2), (4, 2)]
    assert len(results.errors) == 5 and len(results.records) == 3
    assert "Failed runs: 5" in results.table()


def test_resume_skips_successful_runs_only(tmp_path, monkeypatch):
    path = tmp_path / "r.jsonl"
    monkeypatch.setenv("HRX_BENCH_FAKE", "ok,2/1=crash")
    sweep([1, 2], repeats=2, samples=3, quick=True, sizes=TINY, output=str(path), progress=False, python=FAKE_PYTHON)
    assert len(_file_lines(path)) == 4
    monkeypatch.setenv("HRX_BENCH_FAKE", "ok")
    results = sweep([1, 2], repeats=2, samples=3, quick=True, sizes=TINY, output=str(path),
                    resume=True, progress=False, python=FAKE_PYTHON)
    lines = _file_lines(path)
    assert len(lines) == 5
    assert (lines[-1]["queues"], lines[-1]["repeat"], "error" in lines[-1]) == (2, 1, False)
    assert sorted((line["queues"], line["repeat"]) for line in results.records) == \
        [(1, 1), (1, 2), (2, 1), (2, 2)]
    before = path.read_bytes()
    sweep([1, 2], repeats=2, samples=3, quick=True, sizes=TINY, output=str(path), resume=True,
          progress=False, python=FAKE_PYTHON)
    assert path.read_bytes() == before


@pytest.mark.skipif(sys.platform == "win32", reason="process groups and SIGINT")
def test_ctrl_c_leaves_whole_lines_and_resume_finishes(tmp_path):
    path = tmp_path / "r.jsonl"
    args = ["sweep", "--queues", "1,2,4", "--repeats", "2", "--samples", "3", "--quick",
            "--small-copies", "2", "--bulk-bytes", "4096", "--output", str(path),
            "--python", FAKE_PYTHON]
    env = child_env(HRX_BENCH_FAKE="slow", HRX_BENCH_FAKE_SLEEP="0.6")
    process = subprocess.Popen(bench_command(*args), env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= 2:
            break
        time.sleep(0.05)
    time.sleep(0.3)
    os.killpg(process.pid, signal.SIGINT)          # Ctrl-C: the sweep and its child
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert "rerun with --resume" in stderr
    partial = _file_lines(path)
    assert 2 <= len(partial) < 6
    assert all("error" not in line and schema_errors(line) == [] for line in partial)

    done = subprocess.run(bench_command(*args, "--resume", "--no-progress"), env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = _file_lines(path)
    assert len(lines) == 6
    assert sorted((line["queues"], line["repeat"]) for line in lines) == \
        [(q, r) for q in (1, 2, 4) for r in (1, 2)]
    assert "| 4 |" in done.stdout and "Recommended default" in done.stdout


def test_cli_sweep_reports_progress_and_fails_on_errors(tmp_path):
    path = tmp_path / "r.jsonl"
    done = subprocess.run(
        bench_command("sweep", "--queues", "1,2", "--repeats", "1", "--samples", "3", "--quick",
                      "--small-copies", "2", "--output", str(path), "--python", FAKE_PYTHON),
        env=child_env(HRX_BENCH_FAKE="ok,2=crash"), capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "[1/2] repeat 1/1  queues  1  native  ok" in done.stderr
    assert "[2/2] repeat 1/1  queues  2  native  FAILED" in done.stderr
    assert "ETA" in done.stderr
    assert "Failed runs: 1" in done.stdout


def test_a_call_returns_only_its_own_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("HRX_BENCH_FAKE", "ok")
    path = tmp_path / "r.jsonl"
    first = sweep([1, 2], repeats=1, samples=3, quick=True, sizes=TINY, output=str(path),
                  progress=False, python=FAKE_PYTHON)
    second = sweep([1, 2], repeats=1, samples=3, quick=True, sizes=TINY, output=str(path),
                   append=True, progress=False, python=FAKE_PYTHON)
    assert len(first.records) == 2 and len(second.records) == 2
    assert "1 per queue count" in second.table()
    assert len(_file_lines(path)) == 4


def test_an_output_that_holds_lines_needs_resume_or_append(tmp_path, monkeypatch):
    monkeypatch.setenv("HRX_BENCH_FAKE", "ok")
    path = tmp_path / "r.jsonl"
    sweep([1], repeats=1, samples=3, quick=True, sizes=TINY, output=str(path), progress=False, python=FAKE_PYTHON)
    before = path.read_bytes()
    with pytest.raises(SweepError, match="already holds the lines of an earlier sweep; "
                                         "pass resume=True .*, append=True ") as caught:
        sweep([1], repeats=1, samples=3, quick=True, sizes=TINY, output=str(path),
              progress=False, python=FAKE_PYTHON)
    assert "--" not in str(caught.value)          # Python words only
    assert path.read_bytes() == before
    done = subprocess.run(bench_command("sweep", "--queues", "1", "--repeats", "1", "--quick",
                                        "--python", FAKE_PYTHON, "-o", str(path)),
                          env=child_env(HRX_BENCH_FAKE="ok"), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert "pass --resume to finish that sweep, --append to add" in done.stderr
    assert "=True" not in done.stderr             # command-line words only
    assert path.read_bytes() == before
    path.write_text("")      # an empty file is not an earlier sweep
    sweep([1], repeats=1, samples=3, quick=True, sizes=TINY, output=str(path), progress=False, python=FAKE_PYTHON)
    assert len(_file_lines(path)) == 1


def test_resume_needs_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HRX_BENCH_FAKE", "ok")
    with pytest.raises(SweepError, match=r"resume=True needs the results file .*\(output=\.\.\.\)$"):
        sweep([1], repeats=1, resume=True, progress=False, python=FAKE_PYTHON)
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(SweepError, match="does not exist"):
        sweep([1], repeats=1, output=str(missing), resume=True, progress=False, python=FAKE_PYTHON)
    assert not missing.exists()
    done = subprocess.run(bench_command("sweep", "--resume", "--no-progress"), env=child_env(),
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == ("hrx-bench sweep: --resume needs the results file of the sweep to "
                           "continue (--output FILE)\n")
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_backend_fails_before_any_child(tmp_path):
    path = tmp_path / "r.jsonl"
    done = subprocess.run(bench_command("sweep", "--backend", "cuda", "-o", str(path)),
                          env=child_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "cannot open device 0 of backend 'cuda'" in done.stderr
    assert "unknown backend 'cuda'; expected one of: hip, host" in done.stderr
    # The child's message, without the child's own command name.
    assert done.stderr.count("hrx-bench") == 1, done.stderr
    assert done.stderr.startswith("hrx-bench sweep: cannot open device 0 of backend 'cuda': ")
    assert not path.exists()


def test_a_missing_interpreter_fails_before_any_child(tmp_path):
    path = tmp_path / "r.jsonl"
    missing = str(tmp_path / "no-python")
    done = subprocess.run(bench_command("sweep", "--python", missing, "-o", str(path)),
                          env=child_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert f"cannot start the children's Python interpreter {missing!r}: " \
           "No such file or directory" in done.stderr
    assert not path.exists()


def test_children_run_under_the_given_interpreter(tmp_path):
    """--python reaches every child: the fake interpreter's device and lines."""
    path = tmp_path / "r.jsonl"
    done = subprocess.run(bench_command("sweep", "--queues", "1,2", "--repeats", "1",
                                        "--python", FAKE_PYTHON, "-o", str(path)),
                          env=child_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("Device: fake device")
    assert [(line["backend"], line["queues"]) for line in _file_lines(path)] == \
        [("fake", 1), ("fake", 2)]


def test_the_first_lines_name_the_device_and_the_sizes(tmp_path):
    path = tmp_path / "r.jsonl"
    done = subprocess.run(bench_command("sweep", "--queues", "1", "--repeats", "1", "--samples",
                                        "2", "--backend", "host", "--small-copies", "2",
                                        "--bulk-bytes", "4K", "--bulk-copies", "1",
                                        "--loaded-copies", "1", "--warmup", "1", "-o", str(path)),
                          env=child_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    first = done.stderr.splitlines()[:5]
    assert first[0].startswith("Device: host CPU") and "backend host" in first[0]
    assert first[1].startswith("Runtime: hrx host backend")
    assert first[2] == "Backend chosen by: backend argument"
    assert first[3].startswith("Sizes: custom, per lane and round 2 x 4 KiB small and "
                               "1 x 4 KiB bulk copies")
    assert first[3].endswith("the size rule for the host backend (a CPU device; the "
                             "reference preset gives the reference sizes)")
    assert first[4] == f"Runs: 1, each in a fresh process, one after another; results: {path}"
    (line,) = _file_lines(path)
    assert (line["size_rule"], line["sizes"]["preset"]) == ("auto", "custom")


def test_a_failed_childs_own_error_is_in_the_summary(tmp_path):
    env = child_env(HRX_BENCH_FAKE="ok,2=crash")
    done = subprocess.run(bench_command("sweep", "--queues", "1,2", "--repeats", "1", "--quick",
                                        "-o", str(tmp_path / "r.jsonl"),
                                        "--python", FAKE_PYTHON),
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    reason = ("the child exited with status 3: fake child: crashing on purpose "
              "(queues=2, repeat=1)")
    assert f"- queues 2 repeat 1 driver native: {reason}" in done.stdout
    assert f"    {reason}" in done.stderr      # under the progress line


def test_children_get_the_size_choice():
    command = child_command(Step(4, 2, "native"), QUICK, backend=None, device=0, python="py",
                            preset="reference")
    assert command[command.index("--preset") + 1] == "reference"
    assert "--backend" not in command


def test_the_size_rule():
    assert (automatic_preset("host"), automatic_preset("hip")) == ("quick", "default")
    assert resolve_rule("auto", "host") == QUICK
    assert resolve_rule("auto", "hip") == DEFAULT
    assert resolve_rule("reference", "host") == DEFAULT
    assert resolve_rule("quick", "hip", {"samples": 4}) == replace(QUICK, samples=4)
    assert check_size_rule("auto", quick=True) == "quick"
    with pytest.raises(ValueError, match="contradicts"):
        check_size_rule("reference", quick=True)
    with pytest.raises(ValueError, match="auto, reference, quick"):
        check_size_rule("tiny")


LONG_SELECTION = (
    "automatic; passed over hip: libamdhip64.so loaded, but hipGetDeviceCount failed: "
    "hipErrorNoDevice; libcudart.so loaded, but cudaGetDeviceCount failed: "
    "cudaErrorInsufficientDriver (CUDA driver version is insufficient for CUDA runtime "
    "version); also tried: libamdhip64.so.6: cannot open shared object file: No such file or "
    "directory; libcudart.so.12: cannot open shared object file: No such file or directory")


@pytest.mark.parametrize("selection, shown", [
    (LONG_SELECTION, "automatic; passed over hip (why: hrx-bench describe --verbose)"),
    ("automatic", "automatic"),
    ("backend argument", "backend argument"),
    ("HRX_BACKEND", "HRX_BACKEND"),
])
def test_the_backend_line_is_one_short_line_with_the_details_on_request(selection, shown):
    """A machine without a GPU passes over hip for a long list of failed
    library loads: the sweep's header says so in one line and names the
    command that lists the reasons."""
    info = {"name": "host CPU", "backend": "host", "index": 0, "target": "host-x86_64",
            "runtime": "hrx host backend", "selection": selection}
    lines = header_lines(info, resolve_rule("quick", "host", {}), "quick", 1, "r.jsonl")
    assert lines[2] == f"Backend chosen by: {shown}"
    assert selection_summary(selection) == shown
