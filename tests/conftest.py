"""Shared fixtures.

Conformance tests are written once and run on every backend that is
available here: ``host`` always, ``hip`` where a GPU is present. Set
``HRX_TEST_BACKENDS=hip`` (comma-separated) to choose explicitly, e.g. on the
GPU machine.

The pool setting belongs to a process's live device, so contract tests run
their scenario in a fresh interpreter (``run_fresh``).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

import pytest

# Two host devices, so foreign-device checks have a second device. Must be
# set before the host backend first reports its device count.
os.environ.setdefault("HRX_HOST_DEVICE_COUNT", "2")

# Kernels compiled by the tests go to a disk cache of this session (child
# processes too), not the user's: each is compiled once per session.
_KERNEL_CACHE = tempfile.mkdtemp(prefix="hrx-test-kernels-")
os.environ["HRX_KERNEL_CACHE_DIR"] = _KERNEL_CACHE

import hrx  # noqa: E402
import hrx._hrx  # noqa: E402

if not hasattr(hrx._hrx, "_testing_live_native_objects"):
    pytest.exit(f"{hrx._hrx.__file__} is not the testing build of the "
                "extension: the tests need its fault injection and hooks. "
                "`make test` builds it into build/testing (make "
                "testing-build) and puts it first on PYTHONPATH.", returncode=4)

QUEUE_COUNTS = (1, 2, 4, 8, 16)


def available_backends() -> list[str]:
    chosen = os.environ.get("HRX_TEST_BACKENDS")
    if chosen:
        return [name.strip() for name in chosen.split(",") if name.strip()]
    return [b["name"] for b in hrx.backends() if b["available"]]


BACKENDS = available_backends()


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture
def device(backend):
    dev = hrx.Device.open(0, backend=backend)
    yield dev
    dev.synchronize()
    dev.close()


@pytest.fixture
def host():
    """Device 0 of the host backend, whichever backends the run tests: for
    what only the host backend does (its compiler, its kernel dialects,
    host-resident DLPack)."""
    dev = hrx.Device.open(0, backend="host")
    yield dev
    dev.synchronize()
    dev.close()


@pytest.fixture
def stream(device):
    s = device.stream()
    yield s
    s.close()


@pytest.fixture
def second_device(backend):
    """A different live device of the same backend, or skip."""
    try:
        dev = hrx.Device.open(1, backend=backend)
    except hrx.OutOfRangeError:
        pytest.skip(f"backend {backend} has only one device")
    yield dev
    dev.close()


def run_fresh(code: str, *, backend: str, env: dict | None = None,
              timeout: float = 120) -> str:
    """Runs `code` in a fresh interpreter with `hrx`, `backend` and `np`
    bound, and returns its stdout. A failing snippet fails the test with its
    stderr."""
    prelude = ("import hrx, numpy as np, sys, os\n"
               f"backend = {backend!r}\n")
    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env.setdefault("HRX_HOST_DEVICE_COUNT", "2")
    result = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True, text=True, timeout=timeout, env=full_env)
    if result.returncode != 0:
        pytest.fail(f"fresh process failed ({result.returncode}):\n"
                    f"{result.stderr[-4000:]}")
    return result.stdout


@pytest.fixture
def fresh(backend):
    def runner(code: str, **kwargs) -> str:
        return run_fresh(code, backend=backend, **kwargs)
    return runner


@pytest.fixture(scope="module")
def nvidia_hip_device():
    """Device 0 of the hip backend on an NVIDIA GPU, for the tests of CUDA
    libraries beside hrx; skips the module's tests elsewhere. Ask for it
    after the library's own check (request.getfixturevalue)."""
    if not any(b["name"] == "hip" and b["available"] for b in hrx.backends()):
        pytest.skip("no hip device")
    device = hrx.Device.open(0, backend="hip")
    if device.info["platform"] != "nvidia":
        pytest.skip("interop with CUDA libraries is checked on NVIDIA")
    return device


@pytest.fixture(params=QUEUE_COUNTS, ids=lambda n: f"q{n}")
def queue_count(request) -> int:
    return request.param


def pytest_terminal_summary(terminalreporter):
    """Prints the figures reliability tests collected (tests/figures.py)."""
    from figures import report
    lines = report()
    if lines:
        terminalreporter.section("reliability figures")
        for line in lines:
            terminalreporter.write_line(line)


def pytest_unconfigure(config):
    shutil.rmtree(_KERNEL_CACHE, ignore_errors=True)
