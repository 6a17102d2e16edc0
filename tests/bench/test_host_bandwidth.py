"""The host-bandwidth script (bench/scripts/host_bandwidth.py) on the host
backend with tiny sizes: its provenance header, a table row per measured
row and size with its median and range, the rows it cannot run here named
with the reason, and one JSON line per measurement."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                      "bench", "scripts", "host_bandwidth.py")
SIZES = [65536, 262144]


def run_script(tmp_path, *extra):
    output = tmp_path / "bandwidth.jsonl"
    env = dict(os.environ, HRX_STAGED_COPY_MIN_BYTES="65536")
    env.pop("HRX_PYTHON_SITE_DIRS", None)  # this process's `import hrx` set it
    result = subprocess.run(
        [sys.executable, "-P", SCRIPT, "--backend", "host", "--sizes",
         ",".join(map(str, SIZES + [1 << 20])), "--max-bytes", "262144",
         "--repeat", "2", "--target-bytes", "262144", "--output", str(output),
         *extra],
        capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    records = [json.loads(line) for line in output.read_text().splitlines()]
    return result.stdout.splitlines(), records


HRX_PAGEABLE = ["hrx, pageable, upload", "hrx, pageable, read_into",
                "hrx, pageable, read().wait()"]


def test_the_host_bandwidth_script_reports_every_row(backend, tmp_path):
    if backend != "host":
        pytest.skip("the H200 stage host-bandwidth runs it on hip")
    lines, records = run_script(tmp_path, "--single-thread-copies",
                                "--cached-copies")
    assert lines[0].startswith("# host bandwidth: host:0 ")
    assert lines[1].startswith("# hrx built from ")
    command = next(line for line in lines if line.startswith("# command:"))
    # The settings it was given go in front of the command.
    assert " HRX_STAGED_COPY_MIN_BYTES=65536 " in command
    assert command.index("HRX_STAGED_COPY_MIN_BYTES") < command.index(
        "python3 -P bench/scripts/host_bandwidth.py --backend host")
    assert "HRX_PYTHON_SITE_DIRS" not in command
    # --max-bytes left 1 MiB out.
    assert "64 KiB, 256 KiB;" in next(l for l in lines if l.startswith("# sizes"))

    rows = [l for l in lines if re.match(r"\s*\d+ KiB\s+(up|down)\s", l)]
    measured = HRX_PAGEABLE + [n + suffix for n in HRX_PAGEABLE
                               for suffix in (", copy threads off",
                                              ", cached copies")]
    for size in ("64 KiB", "256 KiB"):
        for name in measured:
            match = [r for r in rows
                     if r.split(None, 2)[:2] == size.split()
                     and re.search(re.escape(name) + r"\s+[\d.]+\s+[\d.]+ - "
                                   r"+[\d.]+$", r)]
            assert len(match) == 1, (size, name, rows)
    import hrx
    pinned_rows = [f"hrx, {memory}, {op}"
                   for memory, method in (("pinned", "empty_pinned"),
                                          ("pin", "pin"))
                   if hasattr(hrx.Device, method)
                   for op in ("upload", "read_into")]
    assert len(rows) == 2 * (len(measured) + len(pinned_rows))
    skipped = [l for l in lines if l.startswith("# skipped ")]
    for peer in ("CuPy", "PyTorch"):
        assert any(l.startswith(f"# skipped {peer}, pageable") and
                   "needs a GPU of the hip backend" in l for l in skipped)
    # The pinned hrx rows run where Device.empty_pinned / Device.pin exist,
    # else they are skipped, saying why.
    for memory, method in (("pinned", "empty_pinned"), ("pin", "pin")):
        names = {f"hrx, {memory}, upload", f"hrx, {memory}, read_into"}
        if hasattr(hrx.Device, method):
            assert names <= {r["row"] for r in records}
        else:
            assert sum(f"no Device.{method}" in l for l in skipped) == 2

    # One JSON line per row, size and repeat.
    per_row = {}
    for record in records:
        assert set(record) >= {"row", "direction", "bytes", "iters", "repeat",
                               "seconds", "gb_per_s", "device", "git_commit"}
        assert record["gb_per_s"] > 0 and record["seconds"] > 0
        assert record["bytes"] * record["iters"] >= 262144
        per_row.setdefault((record["row"], record["bytes"]), []).append(
            record["repeat"])
    for name in measured:
        for size in SIZES:
            assert sorted(per_row[(name, size)]) == [0, 1], (name, size)


def test_json_lines_can_follow_the_table(backend, tmp_path):
    if backend != "host":
        pytest.skip("host only")
    env = dict(os.environ)
    env.pop("HRX_PYTHON_SITE_DIRS", None)
    result = subprocess.run(
        [sys.executable, "-P", SCRIPT, "--backend", "host", "--sizes",
         "65536", "--repeat", "1", "--target-bytes", "65536", "--output",
         "-"], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    records = [json.loads(l) for l in lines if l.startswith("{")]
    assert len(records) == len(HRX_PAGEABLE) + sum(
        hasattr(__import__("hrx").Device, m) * 2
        for m in ("empty_pinned", "pin"))
    # The lines come last, after the table and the skipped rows.
    first = next(i for i, l in enumerate(lines) if l.startswith("{"))
    assert all(l.startswith("{") for l in lines[first:])
    assert any(l.startswith("# skipped") for l in lines[:first])


def test_bad_sizes_are_refused(backend, tmp_path):
    if backend != "host":
        pytest.skip("host only")
    result = subprocess.run(
        [sys.executable, "-P", SCRIPT, "--backend", "host", "--sizes",
         "64k"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "--sizes takes byte counts separated by commas" in result.stderr
