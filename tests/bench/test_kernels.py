"""The benchmark's kernels (csrc/bench/bench_kernels.h,
hrx/bench/kernel_launches.py): the built-ins exist for every kernel
language, run and do what they say (tiny writes every block's word; spin
takes at least its time), and the C driver (native and raw) and the Python
driver launch and time them, checking their output; the launch-rate script
(bench/scripts/kernel_launch_rate.py) reports every row on host, the step
workload's among them, and fails loudly when a row fails its check.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import hrx
import hrx._hrx
from hrx.bench import kernel_launches


def test_the_built_ins_exist_for_every_language():
    for language in ("c", "cuda", "hip"):
        source = hrx._hrx.bench_kernel_source(language)
        assert "hrx_bench_tiny" in source and "hrx_bench_spin" in source
        if language != "c":
            assert source.count('extern "C"') == 2
    assert hrx._hrx.bench_kernel_source("fortran") is None
    assert "%globaltimer" in hrx._hrx.bench_kernel_source("cuda")
    assert "wall_clock64" in hrx._hrx.bench_kernel_source("hip")


def test_tiny_writes_every_block(device, stream):
    k = kernel_launches.builtin_kernel(device, "tiny")
    out = device.allocate(4 * 100)
    stream.fill(out, 0)
    stream.launch(k, 100, 32, (out,))
    assert set(stream.read(out).wait().view(np.uint32)) == {1}


def test_spin_takes_at_least_its_time(device, stream):
    k = kernel_launches.builtin_kernel(device, "spin")
    out = device.allocate(4)
    stream.fill(out, 0)
    stream.synchronize()
    ns = 30_000_000
    start = time.perf_counter_ns()
    stream.launch(k, 1, 1, (np.uint64(ns), out))
    stream.synchronize()
    assert time.perf_counter_ns() - start >= ns
    assert stream.read(out).wait().view(np.uint32)[0] == 1


@pytest.mark.parametrize("driver", ["native", "raw"])
def test_the_c_driver_times_launches(device, driver):
    r = hrx._hrx.bench_launch(device, driver=driver, launches=200, warmup=10,
                              threads=2, grid=4, block=8)
    assert (r["driver"], r["kernel"], r["threads"], r["launches"]) == (
        driver, "tiny", 2, 400)
    assert len(r["thread_ns"]) == 2
    assert 0 < max(r["thread_ns"]) <= r["elapsed_ns"]


def test_the_c_driver_spins_on_a_lane(device):
    ns = 5_000_000
    r = hrx._hrx.bench_launch(device, kernel="spin", spin_ns=ns, launches=2,
                              warmup=0, priority="high")
    assert r["spin_ns"] == ns and r["elapsed_ns"] >= 2 * ns


def test_the_python_driver_times_launches(device):
    r = kernel_launches.launch_rate(device, launches=100, warmup=5,
                                    threads=3, grid=2)
    assert (r["driver"], r["threads"], r["launches"]) == ("python", 3, 300)
    assert 0 < max(r["thread_ns"]) <= r["elapsed_ns"]
    # Each thread's calls end before its synchronize does.
    assert all(0 < c <= t for c, t in zip(r["call_ns"], r["thread_ns"]))
    with pytest.raises(ValueError, match="unknown benchmark kernel"):
        kernel_launches.builtin_kernel(device, "huge")


SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                      "bench", "scripts", "kernel_launch_rate.py")


def test_the_launch_rate_script_reports_every_row(backend, tmp_path):
    if backend != "host":
        pytest.skip("the H200 stage kernel-launch-rate runs it on hip")
    output = tmp_path / "rate.json"
    env = dict(os.environ, HRX_HOST_RING_CAPACITY="64")
    env.pop("HRX_PYTHON_SITE_DIRS", None)  # this process's `import hrx` set it
    result = subprocess.run(
        [sys.executable, "-P", SCRIPT, "--backend", "host", "--launches",
         "300", "--warmup", "10", "--repeat", "2", "--queues", "2",
         "--steps", "30", "--step-warmup", "3", "--latency-launches", "40",
         "--output", str(output)],
        capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    command = next(line for line in lines if line.startswith("# command:"))
    # The runtime's settings go in front of the command that reproduces it.
    assert " HRX_HOST_RING_CAPACITY=64 " in command
    assert command.index("HRX_HOST_RING_CAPACITY=64") < command.index(
        "python3 -P bench/scripts/kernel_launch_rate.py --backend host")
    assert command.endswith("--output " + str(output))
    # Only the settings it was given, not what `import hrx` sets.
    assert "HRX_PYTHON_SITE_DIRS" not in command
    doc = json.loads(output.read_text())
    measured = ["hrx python, 1 thread", "hrx python, 16 threads",
                "hrx C, 1 thread", "hrx C, 16 threads",
                "hrx C raw, 1 thread", "hrx python, batching off, 1 thread",
                "hrx C, batching off, 16 threads", "step, hrx Stream.launch",
                "isolated, hrx python", "isolated, hrx python, batching off",
                "isolated, hrx C"]
    assert sorted(doc["medians"]) == sorted(measured)
    assert sorted(doc["step_medians"]) == ["step, hrx Stream.launch"]
    assert sorted(doc["skipped"]) == sorted([
        "CuPy RawKernel, 1 thread", "PyTorch add_, 1 thread",
        "c-runtime, 1 thread", "c-runtime, 16 threads",
        "c-function, 16 threads", "step, CuPy eager",
        "step, CuPy graph replay", "isolated, c-runtime"])
    assert all("host" in reason for reason in doc["skipped"].values())
    assert doc["failed"] == {}
    assert doc["step_shape"] == {"n": 4096, "m": 64, "reps": 5,
                                 "launches_per_step": 21}
    # Every row ran its launches (the step row its steps) in every repeat,
    # on every thread.
    assert len(doc["repeats"]) == 2 * len(measured)
    for record in doc["repeats"]:
        if record["row"].startswith("step, "):
            assert (record["steps"], record["launches"]) == (30, 30 * 21)
            assert 0.0 <= record["share_batched"] <= 1.0, record
            assert record["launches_per_batch"] >= 0.0, record
            assert record["steps_per_s"] * 21 == pytest.approx(
                record["launches_per_s"])
        elif record["row"].startswith("isolated, "):
            assert record["launches"] == 40, record
        else:
            assert record["launches"] == 300 * record["threads"]
        # The Python rows say what a launch call cost their threads.
        python_row = record["row"].startswith("hrx python")
        assert ("call_us" in record) == python_row, record
        if python_row:
            assert record["call_us"] > 0
        assert record["launches_per_s"] > 0
    for row in measured:
        assert any(line.startswith(row) and "skipped" not in line
                   for line in lines), row
    for row in doc["skipped"]:
        assert any(line.startswith(row) and "skipped" in line
                   for line in lines), row
    assert any(line.startswith("  hrx python 1 thread / hrx C raw, 1 thread")
               for line in lines)


def test_the_launch_rate_script_fails_loudly_when_a_step_check_fails(
        backend, tmp_path):
    """A step version that computes the wrong thing gives no number: its
    row is FAILED with the reason, in the table and the JSON, the other
    rows still run, and the script exits with status 1."""
    if backend != "host":
        pytest.skip("runs the script on host")
    output = tmp_path / "rate.json"
    wrong = ("import runpy, sys\n"
             "from hrx.bench import launch_step\n"
             "def wrong(*args, **kwargs):\n"
             "    raise launch_step.CheckFailed('h[3] is 7.0, expected 2.0')\n"
             "launch_step.hrx_step_rate = wrong\n"
             f"sys.argv = [{SCRIPT!r}] + sys.argv[1:]\n"
             f"runpy.run_path({SCRIPT!r}, run_name='__main__')\n")
    env = dict(os.environ)
    env.pop("HRX_PYTHON_SITE_DIRS", None)
    result = subprocess.run(
        [sys.executable, "-P", "-c", wrong, "--backend", "host",
         "--launches", "50", "--warmup", "2", "--repeat", "2", "--queues",
         "2", "--output", str(output)],
        capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 1, result.stderr[-3000:]
    doc = json.loads(output.read_text())
    assert doc["failed"] == {"step, hrx Stream.launch":
                             "h[3] is 7.0, expected 2.0"}
    assert "step, hrx Stream.launch" not in doc["medians"]
    assert "hrx python, 1 thread" in doc["medians"]
    assert any(line.startswith("step, hrx Stream.launch") and
               "FAILED" in line and "h[3] is 7.0" in line
               for line in result.stdout.splitlines())


CALL_COST = os.path.join(os.path.dirname(SCRIPT), "launch_call_cost.py")


def test_the_call_cost_script_compares_builds(backend):
    if backend != "host":
        pytest.skip("the host record is the one this script makes")
    here = os.environ.get("PYTHONPATH", "").split(os.pathsep)[0]
    result = subprocess.run(
        [sys.executable, "-P", CALL_COST, "--backend", "host", "--repeat",
         "2", "--launches", "2000", "--build", f"a={here}", "--build",
         f"b={here}"],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line.split() for line in result.stdout.splitlines()
            if line.startswith(("a ", "b "))]
    assert [row[0] for row in rows] == ["a", "b"]
    assert float(rows[0][1]) > 0 and rows[0][3] == "1.00"
    bad = subprocess.run([sys.executable, "-P", CALL_COST, "--build",
                          "nameless"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "LABEL=PATH" in bad.stderr


def test_the_launch_rate_script_runs_only_the_rows_asked_for(backend,
                                                            tmp_path):
    if backend != "host":
        pytest.skip("the H200 stage launch-delays runs it on hip")
    output = tmp_path / "rows.json"
    env = dict(os.environ)
    env.pop("HRX_PYTHON_SITE_DIRS", None)
    result = subprocess.run(
        [sys.executable, "-P", SCRIPT, "--backend", "host", "--launches",
         "200", "--warmup", "10", "--repeat", "1", "--steps", "20",
         "--step-warmup", "2", "--row", "hrx python, 1 thread", "--row",
         "step, hrx", "--output", str(output)],
        capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    doc = json.loads(output.read_text())
    assert sorted(doc["medians"]) == ["hrx python, 1 thread",
                                      "step, hrx Stream.launch"]
    assert doc["skipped"] == {} and doc["failed"] == {}
    assert "isolated row" not in result.stdout
    bad = subprocess.run(
        [sys.executable, "-P", SCRIPT, "--backend", "host", "--row", "none"],
        capture_output=True, text=True, timeout=60, env=env)
    assert bad.returncode != 0 and "matches no row" in bad.stderr
