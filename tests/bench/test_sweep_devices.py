"""The sweep over several devices (host backend, HRX_HOST_DEVICE_COUNT=2):
``--device all`` sweeps each device in turn, ``--concurrent-devices`` runs
each step on every device at once; every line names its device, and the
table and the recommendation keep devices apart."""
import json
import subprocess

import pytest
from conftest_bench import bench_command, child_env

from hrx.bench import sweep
from hrx.bench.schema import schema_errors
from hrx.bench.sweep import SweepError

pytestmark = pytest.mark.python_only

TINY = ["--queues", "1", "--repeats", "1", "--samples", "2", "--backend", "host",
        "--small-copies", "2", "--bulk-bytes", "4K", "--bulk-copies", "1",
        "--loaded-copies", "1", "--warmup", "1"]
TINY_SIZES = {"small_copies": 2, "bulk_bytes": 4096, "bulk_copies": 1, "loaded_copies": 1,
              "warmup": 1}


def _sweep_cli(path, *extra):
    done = subprocess.run(bench_command("sweep", *TINY, "--device", "all", *extra,
                                        "-o", str(path)),
                          env=child_env(HRX_HOST_DEVICE_COUNT="2"), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(text) for text in path.read_text().splitlines() if text.strip()]
    for line in lines:
        assert schema_errors(line) == [], schema_errors(line)
    return done, lines


def test_device_all_sweeps_each_device_in_turn(tmp_path):
    done, lines = _sweep_cli(tmp_path / "r.jsonl")
    assert [line["device"] for line in lines] == [0, 1]
    assert [line["environment"]["device_index"] for line in lines] == [0, 1]
    assert all("concurrent_devices" not in line for line in lines)
    assert "Devices: 0, 1; one after another, each swept in full" in done.stderr
    assert "Runs: 2," in done.stderr
    assert "host-" in done.stdout and ", device 0" in done.stdout
    assert ", device 1" in done.stdout


def test_concurrent_devices_run_each_step_on_every_device_at_once(tmp_path):
    done, lines = _sweep_cli(tmp_path / "r.jsonl", "--concurrent-devices")
    assert sorted(line["device"] for line in lines) == [0, 1]
    assert all(line["concurrent_devices"] == 2 for line in lines)
    assert "each step on all of them at once" in done.stderr
    assert "device 0 (2 devices at once)" in done.stdout
    assert "device 1 (2 devices at once)" in done.stdout


def test_table_and_recommendation_keep_devices_apart(tmp_path, monkeypatch):
    monkeypatch.setenv("HRX_HOST_DEVICE_COUNT", "2")
    path = tmp_path / "r.jsonl"
    results = sweep([1, 2], repeats=1, samples=2, backend="host", device="all",
                    sizes=TINY_SIZES, output=str(path), progress=False)
    groups = results.groups
    assert sorted(group.key.device for group in groups) == [0, 1]
    for group in groups:
        assert {line["device"] for line in group.lines} == {group.key.device}
        assert [row.queues for row in group.rows] == [1, 2]
        assert results.recommend(group.label).queues in (1, 2)
    # Resume matches the device: nothing runs again.
    before = path.read_bytes()
    sweep([1, 2], repeats=1, samples=2, backend="host", device="all", sizes=TINY_SIZES,
          output=str(path), resume=True, progress=False)
    assert path.read_bytes() == before


def test_device_arguments_are_checked_before_any_run(tmp_path):
    with pytest.raises(SweepError, match="concurrent_devices=True needs device='all'"):
        sweep([1], repeats=1, samples=2, backend="host", device=0, concurrent_devices=True,
              output=str(tmp_path / "a.jsonl"), progress=False)
    with pytest.raises(SweepError, match="index >= 0 or 'all'"):
        sweep([1], repeats=1, samples=2, backend="host", device="every",
              output=str(tmp_path / "b.jsonl"), progress=False)
    assert not (tmp_path / "a.jsonl").exists() and not (tmp_path / "b.jsonl").exists()
    done = subprocess.run(bench_command("sweep", *TINY, "--device", "-1"), env=child_env(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "a device index is >= 0" in done.stderr
