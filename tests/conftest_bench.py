"""Shared helpers of the tests/bench/test_*.py files (imported, not a plugin):
hand-made result lines, an in-memory device for the Python driver, the
environment a child process needs to import this source tree, and the fake
interpreter that sweeps take to run fake children (fake_bench_child.py)."""
from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional

from fake_bench_child import fake_python
from hrx.bench.config import BenchConfig
from hrx.bench.provenance import package_root

DATA = Path(__file__).resolve().parent / "data"
REFERENCE_FILE = DATA / "gfx1151.jsonl"

REFERENCE_ROWS = [
    "| 1 | 0.593 | 0.586 | 204.3 | 3.69 | 21.87 | 6.55 |",
    "| 2 | 0.756 | 1.043 | 201.2 | 4.16 | 21.69 | 12.28 |",
    "| 4 | 1.017 | 1.646 | 194.3 | 3.72 | 22.01 | 22.23 |",
    "| 8 | 0.998 | 1.933 | 196.6 | 3.70 | 22.23 | 46.89 |",
    "| 16 | 1.007 | 1.972 | 196.1 | 573.75 | 21.86 | 79.37 |",
]
"""The five rows of the table in reference/queue-pool-measurements.md."""


_FAKE_DIRECTORY = tempfile.mkdtemp(prefix="hrx-fake-python-")
atexit.register(shutil.rmtree, _FAKE_DIRECTORY, ignore_errors=True)
FAKE_PYTHON = fake_python(Path(_FAKE_DIRECTORY))
"""``python=FAKE_PYTHON`` (``--python FAKE_PYTHON``): a sweep whose children
act as HRX_BENCH_FAKE says, without a device (see fake_bench_child.py)."""


def child_env(**extra: str) -> Dict[str, str]:
    """os.environ with this source tree first on PYTHONPATH, plus extra."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [package_root()] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.update(extra)
    return env


def checkout_head() -> Optional[str]:
    """The commit of the git checkout this test tree belongs to, or None
    (an unpacked sdist, a tree without git)."""
    root = Path(__file__).resolve().parent.parent
    top = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"],
                         capture_output=True, text=True, check=False)
    if top.returncode or Path(top.stdout.strip()).resolve() != root:
        return None
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=False)
    return head.stdout.strip() if head.returncode == 0 else None


def bench_command(*args: str) -> List[str]:
    return [sys.executable, "-m", "hrx.bench", *args]


def summary_line(queues: int, repeat: int = 1, *, threads: float = 1.0, one: float = 0.5,
                 bulk: float = 200.0, idle_p95_us: float = 4.0, loaded_p95_ms: float = 22.0,
                 create_ms: float = 10.0, target: str = "test", **extra: Any) -> Dict[str, Any]:
    """A reference-shaped line whose table columns are the given values
    (Mcommands/s, GB/s, µs, ms, ms)."""
    line: Dict[str, Any] = {
        "queues": queues, "repeat": repeat, "samples": 15, "warmup": 3, "streams": 16,
        "target": target,
        "small_commands_per_second": one * 1e6,
        "threaded_commands_per_second": threads * 1e6,
        "bulk_copy_gb_s": bulk,
        "idle_latency_p95_us": idle_p95_us,
        "loaded_latency_p95_us": loaded_p95_ms * 1e3,
        "stream_creation_ms": create_ms,
    }
    line.update(extra)
    return line


def driver_result(config: BenchConfig, queues: int = 4, driver: str = "native") -> Dict[str, Any]:
    """A bench_run-shaped dict with simple known durations: round r (0-based)
    of small takes (10 + r) ms, threaded (5 + r) ms, bulk (80 + r) ms; latency
    sample i takes (3000 + i) ns idle and (20e6 + i) ns loaded."""
    rounds, samples = config.samples, config.samples * config.lanes
    return {
        "driver": driver, "queues": queues, **config.as_dict(),
        "stream_creation_ns": 12_345_678,
        "small_round_ns": [(10 + r) * 1_000_000 for r in range(rounds)],
        "threaded_round_ns": [(5 + r) * 1_000_000 for r in range(rounds)],
        "bulk_round_ns": [(80 + r) * 1_000_000 for r in range(rounds)],
        "idle_sample_ns": [3000 + i for i in range(samples)],
        "loaded_sample_ns": [20_000_000 + i for i in range(samples)],
    }


class FakeView:
    def __init__(self, buffer: "FakeBuffer", start: int, stop: int) -> None:
        self.buffer, self.start, self.stop = buffer, start, stop

    def bytes(self) -> bytes:
        return bytes(self.buffer.data[self.start:self.stop])

    def write(self, data: bytes) -> None:
        assert len(data) == self.stop - self.start
        self.buffer.data[self.start:self.stop] = data


class FakeBuffer:
    def __init__(self, size: int) -> None:
        self.data = bytearray(size)

    def __getitem__(self, key: slice) -> FakeView:
        start, stop, _ = key.indices(len(self.data))
        return FakeView(self, start, stop)


class FakeStream:
    """Executes every command at once; ``corrupt`` breaks copies."""

    def __init__(self, device: "FakeDevice") -> None:
        self.device = device
        self.synchronized = 0

    def copy(self, dst: FakeView, src: FakeView) -> None:
        data = src.bytes()
        if self.device.corrupt:
            data = bytes([data[0] ^ 0xFF]) + data[1:]
        dst.write(data)
        self.device.copies += 1

    def fill(self, dst: FakeView, byte: int) -> None:
        dst.write(bytes([byte]) * (dst.stop - dst.start))

    def upload(self, dst: FakeView, data: bytes) -> None:
        dst.write(bytes(data))

    def read_blocking(self, view: FakeView, out: bytearray) -> None:
        out[:] = view.bytes()

    def synchronize(self) -> None:
        self.synchronized += 1


class FakeDevice:
    """The part of hrx.Device the Python driver uses, in host memory."""

    def __init__(self, corrupt: bool = False) -> None:
        self.corrupt = corrupt
        self.copies = 0
        self.streams: List[FakeStream] = []
        self.info = {"backend": "fake", "index": 0, "name": "fake", "target": "fake",
                     "runtime": None, "total_memory": 1 << 30}
        self.free_memory: Optional[int] = 1 << 29

    def stream(self) -> FakeStream:
        stream = FakeStream(self)
        self.streams.append(stream)
        return stream

    def allocate(self, size: int) -> FakeBuffer:
        return FakeBuffer(size)
