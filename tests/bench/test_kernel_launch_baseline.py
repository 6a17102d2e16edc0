"""The plain C launch-rate program (bench/baselines/kernel_launch.c), as far
as a machine without a GPU can check it: bench/scripts/
kernel_launch_baseline.sh builds it without a warning, it parses its
arguments (a bad one is exit status 2 before anything opens a device, a
good one gets past the parser; on a GPU machine each driver runs 16
threads and checks every launch), and, where a CUDA toolkit's headers are
installed, the driver API prototypes its c-function driver calls match
cudaTypedefs.h's.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "bench" / "baselines" / "kernel_launch.c"
SCRIPT = ROOT / "bench" / "scripts" / "kernel_launch_baseline.sh"
CUDA_INCLUDE = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The script run in a copy of what it builds from, so that it builds
    afresh (into build/bench there) and its compiler output is seen."""
    if shutil.which("gcc") is None:
        pytest.skip("the script builds with gcc, which is not installed")
    tree = tmp_path_factory.mktemp("tree")
    for part in ("csrc", "hrx/include", "bench/baselines", "bench/scripts"):
        shutil.copytree(ROOT / part, tree / part)
    done = subprocess.run(["bash", str(tree / SCRIPT.relative_to(ROOT)),
                           "--no-such-option"],
                          capture_output=True, text=True, timeout=300)
    binary = tree / "build" / "bench" / "kernel_launch"
    assert binary.exists(), done.stderr[-3000:]
    return binary, done


def run(binary, *args):
    return subprocess.run([str(binary), *args], capture_output=True,
                          text=True, timeout=120)


def test_the_script_builds_it_without_a_warning(built):
    _, done = built
    assert "warning:" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 2
    assert "usage:" in done.stderr
    assert "c-runtime|c-function|c-backend" in done.stderr


@pytest.mark.parametrize("args", [
    ["--driver", "c-kernel"], ["--threads", "0"], ["--threads", "1025"],
    ["--launches", "0"], ["--threads"], ["16"],
])
def test_bad_arguments_are_refused_before_any_device(built, args):
    done = run(built[0], *args)
    assert done.returncode == 2, done.stderr
    assert "open the hip device" not in done.stderr


@pytest.mark.parametrize("driver", ["c-runtime", "c-function", "c-backend"])
def test_every_driver_gets_past_the_parser(built, driver):
    """Here without a GPU: the device does not open (status 1). With one:
    the JSON line of 16 threads, or, for c-function on AMD, status 3 and
    why."""
    done = run(built[0], "--threads", "16", "--launches", "20", "--driver",
               driver)
    if done.returncode == 0:
        record = json.loads(done.stdout.splitlines()[-1])
        assert (record["driver"], record["threads"], record["launches"]) == (
            driver, 16, 20)
    elif done.returncode == 3:
        assert driver == "c-function" and "driver API" in done.stderr
    else:
        assert done.returncode == 1, done.stderr
        assert "open the hip device" in done.stderr


def test_a_later_option_wins(built):
    done = run(built[0], "--driver", "c-kernel", "--driver", "c-runtime",
               "--threads", "0", "--threads", "2")
    assert done.returncode != 2, done.stderr


def test_the_driver_api_prototypes_match_the_cuda_headers():
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    if not (CUDA_INCLUDE / "cudaTypedefs.h").exists():
        pytest.skip(f"no CUDA toolkit headers in {CUDA_INCLUDE} (CUDA_HOME)")
    done = subprocess.run(
        ["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE",
         "-fsyntax-only", "-DKERNEL_LAUNCH_CHECK_CUDA", "-isystem",
         str(CUDA_INCLUDE), f"-I{ROOT / 'csrc' / 'include'}",
         f"-I{ROOT / 'csrc'}", f"-I{ROOT / 'hrx' / 'include'}",
         str(PROGRAM)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]


def test_sync_each_gets_past_the_parser(built):
    """--sync-each (every launch followed by its stream's synchronize) is
    an option of its own, taking no value: here the device does not open
    (status 1); with a GPU the JSON line says sync_each."""
    done = run(built[0], "--sync-each", "--launches", "20")
    if done.returncode == 0:
        record = json.loads(done.stdout.splitlines()[-1])
        assert record["sync_each"] is True and record["launches"] == 20
    else:
        assert done.returncode == 1, done.stderr
        assert "usage:" not in done.stderr
