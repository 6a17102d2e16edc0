"""The chunking calibration script (bench/scripts/h200_chunking.py) on the
host backend with its quick sizes: chosen settings at chosen queue counts,
a table row and a JSON line per setting, each setting's bandwidth taken
against the first one's at the same direction and queue count, and bad
settings refused with what is allowed."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                      "bench", "scripts", "h200_chunking.py")


def run(*args, timeout=300):
    env = dict(os.environ)
    env.pop("HRX_PYTHON_SITE_DIRS", None)  # this process's `import hrx` set it
    # The script sets the chunk variables per setting: a run's own must not
    # leak into `default`.
    env["HRX_CHUNK_BYTES"] = "65536"
    return subprocess.run([sys.executable, "-P", SCRIPT, *args],
                          capture_output=True, text=True, timeout=timeout,
                          env=env)


def test_settings_at_each_queue_count(backend, tmp_path):
    if backend != "host":
        pytest.skip("the H200 stage chunking runs it on hip")
    jsonl = tmp_path / "chunking.jsonl"
    result = run("--backend", "host", "--quick", "--samples", "3",
                 "--directions", "d2h,h2d", "--settings", "off,default,0.25x2",
                 "--queues", "1,2", "--jsonl", str(jsonl))
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0] == ("# python3 -P bench/scripts/h200_chunking.py --backend "
                        "host --quick --samples 3 --directions d2h,h2d "
                        "--settings off,default,0.25x2 --queues 1,2 --jsonl "
                        + str(jsonl))
    rows = [line.split() for line in lines
            if line.startswith(("d2h ", "h2d "))]
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
        (d, q, chunk, window) for d in ("d2h", "h2d") for q in ("1", "2")
        for chunk, window in (("off", "-"), ("default", "default"),
                              ("0.25", "2"))]
    records = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert records == [json.loads(line) for line in lines
                       if line.startswith("{")]
    assert len(records) == len(rows)
    for record in records:
        assert record["samples"] == 3 and len(record["raw"]["probe_us"]) == 3
        assert record["probe_p95_us"] >= record["probe_median_us"] > 0
        assert record["backlog_gbps"] > 0
    for first in records[::3]:
        assert not first["chunking"] and first["bandwidth_ratio"] == 1.0
    assert [r["queues"] for r in records] == [1, 1, 1, 2, 2, 2] * 2
    assert [r["chunk_bytes"] for r in records[:3]] == [None, "default",
                                                       1 << 18]


@pytest.mark.parametrize("args,part", [
    (["--settings", "4y2"], "a setting is off, default or "
                            "CHUNK_MIBxWINDOW_CHUNKS (e.g. 4x1), got '4y2'"),
    (["--queues", "one"], "--queues takes counts separated by commas"),
    (["--directions", "up"], "--directions takes d2h and h2d"),
])
def test_bad_arguments_are_refused(backend, args, part):
    if backend != "host":
        pytest.skip("host only")
    result = run("--backend", "host", "--quick", *args, timeout=60)
    assert result.returncode == 2
    assert part in result.stderr, result.stderr
