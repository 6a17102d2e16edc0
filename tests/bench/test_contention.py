"""The contention cases (csrc/bench/bench_contention.h, hrx/bench/contention.py,
contention_report.py) on the host backend: sane lines from every driver,
the schema, the tables, compare, plot and the latency targets."""
import copy
import json
import math

import pytest

import hrx
from hrx.bench import compare, contention, contention_report, runner
from hrx.bench.config import QUICK, BenchConfig
from hrx.bench.results import Results, load
from hrx.bench.schema import SchemaError, validate

SMALL = dict(small_copies=16, bulk_bytes=64 << 10, bulk_copies=2, loaded_copies=1, warmup=1,
             kernel_spin_ns=2000, kernel_launches=32, backlog_blocks=8, backlog_kernels=1,
             transfer_bytes=64 << 10, compute_samples=3, transfer_samples=2)


def _line(driver, queues=2, repeat=1):
    return runner.run(queues, 3, backend="host", driver=driver, sizes=SMALL, repeat=repeat)


@pytest.fixture(scope="module", params=["native", "raw", "python"])
def line(request):
    return _line(request.param)


def test_lines_are_sane(line):
    validate(line)
    for key in contention.SUMMARY_KEYS:
        assert math.isfinite(line[key]) and line[key] > 0, key
    assert 0 < line["kernels_at_once"] <= line["sizes"]["lanes"]
    for op in contention.OPS:
        count = SMALL["compute_samples" if op in contention.COMPUTE_OPS else "transfer_samples"]
        for kind in contention.KINDS:
            samples = line["raw"][contention.sample_key(op, kind)]
            assert len(samples) == count and all(value > 0 for value in samples)
    for key in contention.SIZE_KEYS:
        assert line["sizes"][key] == SMALL.get(key, getattr(QUICK, key))


def test_schema_round_trip_and_tampering(line):
    again = json.loads(json.dumps(line))
    validate(again)
    tampered = copy.deepcopy(line)
    tampered["compute_kernel_high_latency_p95_us"] *= 2
    with pytest.raises(SchemaError, match="compute_kernel_high_latency_p95_us"):
        validate(tampered)
    partial = copy.deepcopy(line)
    del partial["raw"]["transfer_read_reserved_sample_ns"]
    with pytest.raises(SchemaError, match="transfer_read_reserved_sample_ns is missing"):
        validate(partial)
    short = copy.deepcopy(line)
    short["raw"]["kernel_lanes_round_ns"].pop()
    with pytest.raises(SchemaError, match="kernel_lanes_round_ns has"):
        validate(short)


def test_older_lines_stay_valid_and_print_as_before():
    old = load("../bench/results/host-2core/sweep-quick.jsonl")
    for item in old.records:
        validate(item)
    assert "Kernel concurrency" not in old.table()
    assert not contention_report.has_contention(old.records)


@pytest.fixture(scope="module")
def sweep_lines():
    return [_line(driver, queues, repeat) for driver in ("native", "raw")
            for queues in (1, 2) for repeat in (1, 2)]


# The plot loads matplotlib, whose C++ modules can abort under the
# sanitizer run's preloaded runtime (Makefile, test-python-asan); the
# sanitized C paths of these lines run in test_lines_are_sane.
@pytest.mark.python_only
def test_table_compare_and_plot(sweep_lines, tmp_path):
    results = Results(sweep_lines)
    text = results.table()
    assert text.count("Kernel concurrency") == 2
    assert "Latency behind uploads: small upload" in text
    assert "Latency targets (host backend" in text
    group = results.groups[0]
    # Every contention column has its run-to-run range in the rows.
    for column in contention_report.COLUMNS:
        assert all(len(row.values[column.key]) == 2 for row in group.rows)
    ratios = compare.format_comparison(sweep_lines, "raw")
    assert "Contention cases" in ratios and "Kernels at once" in ratios
    pytest.importorskip("matplotlib")
    figure = results.plot(tmp_path / "plot.png")
    titles = [axis.get_title() for axis in figure.axes if axis.get_visible()]
    assert any("Kernels at once" in title for title in titles)
    assert any("transfer_read reserved_high, p95" in title for title in titles)


def _fake_runs(values):
    """Lines with only what the target report reads."""
    lines = []
    for kind, value in values.items():
        for op in contention.OPS:
            pass
    line = {"queues": 4}
    for op in contention.OPS:
        for kind in contention.KINDS:
            line[contention.latency_key(op, kind, "p95")] = values[kind]
    return [line]


def test_targets_are_one_table_and_decide():
    gpu, host = contention_report.targets_for("hip"), contention_report.targets_for("host")
    assert gpu is contention_report.TARGETS and host is contention_report.HOST_TARGETS
    ratio = contention_report.TARGETS[0]
    assert ratio.ratio == 0.05 and ratio.kinds == ("high", "reserved_high")
    bound = contention_report.TARGETS[1]
    assert bound.bound_us == 250.0 and bound.ops == contention.TRANSFER_OPS
    assert contention_report.HOST_TARGETS[0].ratio == 0.1
    runs = _fake_runs({"round_robin": 1000.0, "high": 40.0, "reserved": 900.0,
                       "reserved_high": 60.0})
    assert contention_report.target_met(ratio, "compute_kernel", "high", runs)[0]
    assert not contention_report.target_met(ratio, "compute_kernel", "reserved_high", runs)[0]
    assert contention_report.target_met(bound, "transfer_read", "high", runs)[0]
    slow = _fake_runs({"round_robin": 1000.0, "high": 300.0, "reserved": 1.0,
                       "reserved_high": 1.0})
    met, text = contention_report.target_met(bound, "transfer_upload", "high", slow)
    assert not met and text == "300.0 µs"


def test_target_report_names_misses(sweep_lines):
    lines = copy.deepcopy([item for item in sweep_lines if item["driver"] == "raw"])
    for item in lines:
        # Every probe meets its target (the measured lines may miss some on
        # a loaded machine), then one misses at 2 queues.
        for op in ("compute_kernel", "compute_copy", "transfer_read", "transfer_upload"):
            item[f"{op}_reserved_high_latency_p95_us"] = (
                item[f"{op}_round_robin_latency_p95_us"] / 100)
        if item["queues"] == 2:
            item["transfer_read_reserved_high_latency_p95_us"] = (
                item["transfer_read_round_robin_latency_p95_us"])
    text = contention_report.format_contention(Results(lines).groups[0])
    assert ("- 2 queues: missed: Reserved + high transfer_read (1.000 x round-robin); "
            "met: 3 of 4") in text
    assert "- 1 queue: all met" in text


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="backlog_blocks must be >= 1"):
        BenchConfig(backlog_blocks=0)
    with pytest.raises(TypeError, match="transfer_bytes must be an int"):
        BenchConfig(transfer_bytes=1.5)
    device = hrx.Device.open(backend="host")
    with pytest.raises(hrx.InvalidArgumentError, match="kernel_spin_ns"):
        hrx._hrx.bench_run(device, kernel_spin_ns=10**10)
    with pytest.raises(hrx.InvalidArgumentError, match="backlog_blocks"):
        hrx._hrx.bench_run(device, **{**QUICK.as_dict(), **SMALL, "samples": 1,
                                      "backlog_blocks": 2**30 + 1})
