"""Load: 64 threads submit mixed commands over many streams (two of their
own, shared ones, fabric queues) of one live device, at every queue count,
with submission batching on and off, each in a fresh process
(tests/load_worker.py); every byte read is compared
with the threads' models and a watchdog turns a deadlock into a failure with
every thread's stack.

CI size: HRX_LOAD_COMMANDS (default 300) commands per thread. The full
size is HRX_LOAD_COMMANDS=10000 (640,000 commands per queue
count); HRX_LOAD_TIMEOUT (default 600) bounds each process. On the H200:

    HRX_BACKEND=hip HRX_TEST_BACKENDS=hip HRX_LOAD_COMMANDS=10000 \\
        python -m pytest -q -p no:cacheprovider tests/test_load.py
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import QUEUE_COUNTS
from figures import figures

THREADS = 64
COMMANDS = int(os.environ.get("HRX_LOAD_COMMANDS", "300"))
TIMEOUT = float(os.environ.get("HRX_LOAD_TIMEOUT", "600"))
WORKER = pathlib.Path(__file__).with_name("load_worker.py")
FIGURES = figures(f"load ({THREADS} threads x {COMMANDS} commands)")


def run_worker(backend: str, queues: int, *extra: str, batching: str = "on"):
    done = subprocess.run(
        [sys.executable, str(WORKER), "--queues", str(queues), "--threads",
         str(THREADS), "--commands", str(COMMANDS), "--backend", backend,
         "--timeout", str(TIMEOUT), "--batching", batching, *extra],
        capture_output=True, text=True, timeout=TIMEOUT + 60)
    lines = done.stdout.strip().splitlines()
    result = json.loads(lines[-1]) if lines else None
    return done, result


@pytest.mark.parametrize("batching", ["on", "off"], ids=lambda b: f"batching-{b}")
@pytest.mark.parametrize("queues", QUEUE_COUNTS, ids=lambda n: f"q{n}")
def test_load_every_byte_correct(backend, queues, batching):
    done, result = run_worker(backend, queues, batching=batching)
    assert "Timeout (" not in done.stderr, (
        f"watchdog: no progress within {TIMEOUT} s (deadlock?)\n"
        f"{done.stderr[-6000:]}")
    assert result is not None, done.stderr[-4000:]
    assert result["errors"] == [], result
    assert result["mismatches"] == 0, result["first_mismatches"]
    assert done.returncode == 0, done.stderr[-4000:]
    assert result["commands"] >= THREADS * COMMANDS
    assert result["queues_created"] == queues
    assert result["batching"] is (batching == "on")
    assert result["streams"] > 2 * THREADS
    FIGURES["processes"] += 1
    FIGURES[f"processes with batching {batching}"] += 1
    FIGURES["commands"] += result["commands"]
    FIGURES["bytes verified"] += result["bytes_verified"]
    FIGURES["seconds"] = round(FIGURES["seconds"] + result["seconds"], 2)


def test_load_detects_a_wrong_byte(backend):
    """The comparison is live: one wrong byte in a model is reported."""
    done, result = run_worker(backend, 2, "--corrupt-model")
    assert done.returncode == 1 and result["mismatches"] >= 1, done.stderr
    assert "thread 0" in result["first_mismatches"][0]


def test_load_watchdog_ends_a_stuck_process(backend):
    """The deadlock bound exists: a process that outlives --timeout is
    ended by the watchdog with every thread's stack."""
    done = subprocess.run(
        [sys.executable, str(WORKER), "--queues", "1", "--threads", "4",
         "--commands", "100000000", "--backend", backend, "--timeout", "1"],
        capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "Timeout (" in done.stderr and "load-0" not in done.stdout
    assert "Thread 0x" in done.stderr or "Current thread" in done.stderr
