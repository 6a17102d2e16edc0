"""Real runs on the host backend, each in a fresh process, validated against
the schema (the lines a sweep would record)."""
import json
import os
import subprocess

import pytest
from conftest_bench import bench_command, checkout_head, child_env

import hrx
from hrx.bench.config import QUICK
from hrx.bench.provenance import source_commit
from hrx.bench.record import REFERENCE_KEYS
from hrx.bench.schema import validate

TINY = ["--small-copies", "16", "--bulk-bytes", "64K", "--bulk-copies", "2",
        "--loaded-copies", "1", "--warmup", "1"]


def _run(queues, *extra):
    done = subprocess.run(
        bench_command("run", str(queues), "3", "--backend", "host", "--quick", *TINY, *extra),
        env=child_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    texts = done.stdout.splitlines()
    assert len(texts) == 1, done.stdout
    return json.loads(texts[0])


@pytest.fixture(scope="module", params=[1, 2, 4, 8, 16], ids=lambda q: f"queues{q}")
def run_line(request):
    return request.param, _run(request.param, "--repeat", "2")


def test_run_line_is_valid(run_line):
    queues, line = run_line
    validate(line)
    assert set(REFERENCE_KEYS) <= set(line)
    assert (line["queues"], line["repeat"], line["samples"], line["streams"]) == (queues, 2, 3, 16)
    assert (line["backend"], line["driver"]) == ("host", "native")
    assert line["target"].startswith("host-")
    assert line["queues_used"] == queues
    assert line["sizes"]["bulk_bytes"] == 65536 and line["sizes"]["small_copies"] == 16
    assert line["sizes"]["lanes"] == 16 and line["sizes"]["retained_streams"] == 16


def test_the_size_rule_gives_the_host_backend_the_quick_sizes():
    done = subprocess.run(bench_command("run", "2", "2", "--backend", "host", "--small-copies",
                                        "16", "--warmup", "1"),
                          env=child_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout)
    validate(line)
    assert line["size_rule"] == "auto"
    expected = dict(QUICK.as_dict(), small_copies=16, warmup=1, samples=2, preset="custom")
    assert line["sizes"] == expected
    assert line["hrx_version"] == hrx.__version__
    assert line["git_commit"] == source_commit()[0]
    head = checkout_head()
    if head and not os.environ.get("HRX_EXPECT_SANITIZED"):
        # Built from this checkout (`make test` installs it): the commit is known.
        assert line["git_commit"] == head



def test_run_line_records_environment_and_memory(run_line):
    _, line = run_line
    environment, memory = line["environment"], line["memory"]
    assert environment["host_memcpy_gb_s"] > 0
    assert environment["host_memcpy_bulk_gb_s"] > 0
    assert environment["logical_cpus"] >= 1 and environment["python_version"]
    assert environment["host_memcpy_block_bytes"] == 65536
    assert memory["peak_rss_bytes"] > 0
    assert memory["device_memory_total_bytes"] > 0


@pytest.mark.parametrize("driver", ["raw", "python"])
def test_other_drivers(driver):
    line = _run(4, "--driver", driver)
    validate(line)
    assert line["driver"] == driver and line["queues"] == 4


def test_bad_queue_count_fails_with_a_message():
    done = subprocess.run(bench_command("run", "100000", "3", "--backend", "host", "--quick",
                                        *TINY),
                          env=child_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stdout == ""
    assert "Error" in done.stderr


def test_run_line_has_the_loaded_probes(run_line):
    # The native driver times the probe on a high-priority, a
    # reserved and a reserved high-priority stream too.
    queues, line = run_line
    for probe in ("high", "reserved", "reserved_high"):
        assert len(line["raw"][f"loaded_{probe}_sample_ns"]) == 3 * 16
        assert line[f"loaded_{probe}_latency_p95_us"] > 0
        assert (line[f"loaded_{probe}_latency_median_us"]
                <= line[f"loaded_{probe}_latency_p95_us"])
    # The host backend's connections are its engines.
    assert line["environment"]["connections"] == {
        "variable": "HRX_HOST_ENGINES", "value": len(os.sched_getaffinity(0)),
        "wanted": queues * 3 + 4, "source": "hrx"}


def test_raw_driver_has_no_probes():
    line = _run(2, "--driver", "raw")
    assert not any(key.startswith("loaded_high") for key in line)
    assert "loaded_high_sample_ns" not in line["raw"]
