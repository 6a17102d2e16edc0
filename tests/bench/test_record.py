"""Result lines: the reference's formulas and units, the full record, and
the schema."""
import copy
import json

import pytest
from conftest_bench import REFERENCE_FILE, driver_result

from hrx.bench.config import QUICK, BenchConfig
from hrx.bench.record import (
    REFERENCE_KEYS,
    build_record,
    commands_per_second,
    copy_gb_s,
    dumps_line,
    summarize,
)
from hrx.bench.schema import (
    ERROR_SCHEMA,
    RESULT_SCHEMA,
    SchemaError,
    schema_errors,
    validate,
)

pytestmark = pytest.mark.python_only

REFERENCE = [json.loads(text) for text in REFERENCE_FILE.read_text().splitlines()]


@pytest.mark.parametrize("line", REFERENCE, ids=lambda line: f"q{line['queues']}r{line['repeat']}")
def test_rates_follow_from_the_reference_batch_medians(line):
    lanes, small_copies, bulk_copies, bulk_bytes = 16, 1024, 16, 32 * 2 ** 20
    small = commands_per_second(lanes * small_copies, line["small_batch_median_ms"] * 1e6)
    threaded = commands_per_second(lanes * small_copies, line["threaded_batch_median_ms"] * 1e6)
    bulk = copy_gb_s(lanes * bulk_copies, bulk_bytes, line["bulk_batch_median_ms"] * 1e6)
    assert small == pytest.approx(line["small_commands_per_second"], rel=1e-12)
    assert threaded == pytest.approx(line["threaded_commands_per_second"], rel=1e-12)
    assert bulk == pytest.approx(line["bulk_copy_gb_s"], rel=1e-12)


def test_summary_by_hand():
    config = BenchConfig(samples=15)
    summary = summarize(driver_result(config))
    # rounds of 10..24 ms: median = 8th = 17 ms, p95 = 15th = 24 ms
    assert summary["small_batch_median_ms"] == 17.0
    assert summary["small_batch_p95_ms"] == 24.0
    assert summary["small_commands_per_second"] == pytest.approx(16 * 1024 / 0.017)
    assert summary["threaded_batch_median_ms"] == 12.0
    assert summary["threaded_commands_per_second"] == pytest.approx(16 * 1024 / 0.012)
    assert summary["bulk_batch_median_ms"] == 87.0
    assert summary["bulk_copy_gb_s"] == pytest.approx(2 * 16 * 16 * 2 ** 25 / 0.087 / 1e9)
    # 240 latency samples 3000..3239 ns: median = 120th, p95 = 228th
    assert summary["idle_latency_median_us"] == pytest.approx(3.119)
    assert summary["idle_latency_p95_us"] == pytest.approx(3.227)
    assert summary["loaded_latency_p95_us"] == pytest.approx(20000.227)
    assert summary["stream_creation_ms"] == pytest.approx(12.345678)
    assert (summary["streams"], summary["samples"], summary["warmup"]) == (16, 15, 3)


def test_summary_rejects_arrays_of_the_wrong_length():
    result = driver_result(BenchConfig(samples=4))
    result["idle_sample_ns"] = result["idle_sample_ns"][:-1]
    with pytest.raises(ValueError, match="idle_sample_ns"):
        summarize(result)


def _record(config=QUICK, **kw):
    environment = {"device_name": "d", "backend": "host", "target": "host-x86_64",
                   "runtime": "r", "driver_version": None, "cpu_model": "cpu", "logical_cpus": 2,
                   "ram_bytes": 1 << 30, "os": "Linux", "kernel": "6", "python_version": "3.11",
                   "c_compiler": {"command": "gcc", "version": "gcc 12"},
                   "host_memcpy_gb_s": 20.0}
    memory = {"peak_rss_bytes": 1, "host_mem_available_before_bytes": 2,
              "host_mem_available_after_bytes": 3, "device_memory_total_bytes": 4,
              "device_memory_used_before_bytes": 1, "device_memory_used_after_bytes": 1}
    args = dict(repeat=2, target="host-x86_64", backend="host", hrx_version="0.1.0",
                git_commit="0" * 40, timestamp="2026-11-29T12:00:00Z", environment=environment,
                memory=memory, preset="quick")
    args.update(kw)
    return build_record(driver_result(config), **args)


def test_record_has_every_reference_key_and_provenance():
    line = json.loads(dumps_line(_record()))
    assert set(REFERENCE_KEYS) <= set(line)
    assert list(line)[:len(REFERENCE_KEYS)] == list(REFERENCE_KEYS)
    assert (line["repeat"], line["streams"]) == (2, QUICK.lanes)
    assert line["target"] == "host-x86_64"
    assert line["sizes"] == dict(QUICK.as_dict(), preset="quick")
    assert line["raw"]["unit"] == "ns"
    assert len(line["raw"]["small_round_ns"]) == QUICK.samples
    assert len(line["raw"]["loaded_sample_ns"]) == QUICK.samples * QUICK.lanes
    assert "\n" not in dumps_line(line)


@pytest.mark.parametrize("use_jsonschema", [True, False], ids=["jsonschema", "builtin"])
def test_schema_accepts_a_record(use_jsonschema):
    if use_jsonschema:
        pytest.importorskip("jsonschema")
    validate(json.loads(dumps_line(_record())), use_jsonschema=use_jsonschema)


@pytest.mark.parametrize("use_jsonschema", [True, False], ids=["jsonschema", "builtin"])
@pytest.mark.parametrize("breakage, fragment", [
    (lambda line: line.pop("bulk_copy_gb_s"), "bulk_copy_gb_s"),
    (lambda line: line.update(queues=0), "queues"),
    (lambda line: line.update(driver="turbo"), "driver"),
    (lambda line: line.update(timestamp="yesterday"), "timestamp"),
    (lambda line: line.update(git_commit="abc"), "git_commit"),
    (lambda line: line["environment"].pop("host_memcpy_gb_s"), "host_memcpy_gb_s"),
    (lambda line: line["environment"].update(host_memcpy_bulk_gb_s=0), "host_memcpy_bulk_gb_s"),
    (lambda line: line["memory"].update(peak_rss_bytes="big"), "peak_rss_bytes"),
    (lambda line: line["raw"]["bulk_round_ns"].append(-1), "bulk_round_ns"),
])
def test_schema_rejects_broken_records(use_jsonschema, breakage, fragment):
    if use_jsonschema:
        pytest.importorskip("jsonschema")
    line = copy.deepcopy(_record())
    breakage(line)
    errors = schema_errors(line, use_jsonschema=use_jsonschema)
    assert errors and any(fragment in error for error in errors), errors


def test_summary_must_match_the_raw_samples():
    line = _record()
    line["small_commands_per_second"] *= 1.01
    with pytest.raises(SchemaError, match="small_commands_per_second"):
        validate(line)
    line = _record()
    line["raw"]["idle_sample_ns"] = line["raw"]["idle_sample_ns"][:5]
    with pytest.raises(SchemaError, match="idle_sample_ns"):
        validate(line)


def test_error_lines_have_their_own_schema():
    error = {"error": "timed out after 5 s", "queues": 4, "repeat": 1, "driver": "native",
             "returncode": -9, "stderr_tail": "", "timestamp": "2026-11-29T12:00:00Z"}
    validate(error)
    assert schema_errors(dict(error, returncode="x"), use_jsonschema=False)


@pytest.mark.parametrize("schema, line", [(RESULT_SCHEMA, None), (ERROR_SCHEMA, "error")],
                         ids=["result", "error"])
def test_every_required_key_is_checked(schema, line):
    """Each required key, removed from a valid line, makes the line invalid
    with a message naming it; the provenance keys are among them."""
    valid = (dict(ERROR_LINE) if line == "error" else json.loads(dumps_line(_record())))
    assert not schema_errors(valid, use_jsonschema=False)
    for key in schema["required"]:
        if key == "error":
            continue    # the key that makes a line an error line
        broken = copy.deepcopy(valid)
        del broken[key]
        errors = schema_errors(broken, use_jsonschema=False)
        assert any(key in error for error in errors), (key, errors)
    if line is None:
        assert {"hrx_version", "git_commit", "sizes", "timestamp"} <= set(schema["required"])
    else:
        assert {"error", "queues", "repeat", "driver"} <= set(schema["required"])


ERROR_LINE = {"error": "timed out after 5 s", "queues": 4, "repeat": 1, "driver": "native",
              "returncode": -9, "stderr_tail": "", "timestamp": "2026-11-29T12:00:00Z"}


@pytest.mark.parametrize("use_jsonschema", [True, False], ids=["jsonschema", "builtin"])
def test_size_rule_and_committed_in(use_jsonschema):
    if use_jsonschema:
        pytest.importorskip("jsonschema")
    line = json.loads(dumps_line(_record(extra={"size_rule": "auto"})))
    assert not schema_errors(line, use_jsonschema=use_jsonschema)
    assert schema_errors(dict(line, size_rule="tiny"), use_jsonschema=use_jsonschema)
    marked = dict(line, git_commit=None, committed_in="a" * 40)
    assert not schema_errors(marked, use_jsonschema=use_jsonschema)
    assert schema_errors(dict(marked, committed_in="HEAD"), use_jsonschema=use_jsonschema)


def test_reference_lines_are_not_full_records():
    assert any("backend" in e for e in schema_errors(REFERENCE[0], use_jsonschema=False))


def _with_probes(config):
    result = driver_result(config)
    samples = config.samples * config.lanes
    for offset, probe in enumerate(("high", "reserved", "reserved_high")):
        result[f"loaded_{probe}_sample_ns"] = [1000 * (offset + 1) + i
                                               for i in range(samples)]
    return result


def _line(result):
    return build_record(result, repeat=1, target="host-x86_64", backend="host",
                        hrx_version="0", git_commit=None,
                        timestamp="2026-11-29T00:00:00Z",
                        environment=_ENVIRONMENT, memory=_MEMORY)


_ENVIRONMENT = {"device_name": "d", "backend": "host", "target": "host-x86_64",
                "runtime": "r", "driver_version": None, "cpu_model": None,
                "logical_cpus": 2, "ram_bytes": None, "os": None, "kernel": None,
                "c_compiler": {"command": None, "version": None},
                "python_version": "3", "host_memcpy_gb_s": 1.0,
                "connections": {"variable": "CUDA_DEVICE_MAX_CONNECTIONS",
                                "value": 32, "wanted": 28, "source": "hrx"}}
_MEMORY = {key: None for key in (
    "peak_rss_bytes", "host_mem_available_before_bytes", "host_mem_available_after_bytes",
    "device_memory_total_bytes", "device_memory_used_before_bytes",
    "device_memory_used_after_bytes")}


def test_probe_keys_are_summarized_validated_and_optional():
    config = BenchConfig(samples=15)
    line = _line(_with_probes(config))
    # 240 samples k*1000 + i: p95 = 228th = k*1000 + 227 ns.
    assert line["loaded_high_latency_p95_us"] == pytest.approx(1.227)
    assert line["loaded_reserved_latency_p95_us"] == pytest.approx(2.227)
    assert line["loaded_reserved_high_latency_median_us"] == pytest.approx(3.119)
    validate(line, use_jsonschema=False)
    validate(line)
    # A line without probes (older lines, the raw and python drivers).
    plain = _line(driver_result(config))
    assert not any(key.startswith("loaded_high") for key in plain)
    validate(plain)
    # A summary that disagrees with its samples, or has no samples, is caught.
    broken = copy.deepcopy(line)
    broken["loaded_reserved_latency_p95_us"] += 1
    assert any("loaded_reserved_latency_p95_us" in e for e in schema_errors(broken))
    orphan = copy.deepcopy(plain)
    orphan["loaded_high_latency_p95_us"] = 1.0
    assert any("raw has no samples" in e for e in schema_errors(orphan))
    missing = copy.deepcopy(line)
    del missing["loaded_high_latency_p95_us"]
    assert any("missing key 'loaded_high_latency_p95_us'" in e
               for e in schema_errors(missing))
    short = _with_probes(config)
    short["loaded_reserved_sample_ns"].pop()
    with pytest.raises(ValueError, match="loaded_reserved_sample_ns"):
        summarize(short)


def test_probe_table_only_for_lines_with_probes():
    from hrx.bench.results import Results
    config = BenchConfig(samples=15)
    with_probes = [dict(_line(_with_probes(config)), queues=q) for q in (2, 4)]
    text = Results(with_probes).table(analysis=False)
    assert "Reserved + high, p95 µs" in text
    # round-robin p95 20000.227 us; reserved + high 3.227 us
    assert "| 2 | 20000.2 | 1.2 | 2.2 | 3.2 | 0.000 |" in text, text
    old = [dict(_line(driver_result(config)), queues=q) for q in (2, 4)]
    assert "Reserved + high" not in Results(old).table(analysis=False)
    # Old and new lines of one group still aggregate in the main table.
    mixed = Results([old[0], with_probes[1]]).table(analysis=False)
    assert "| 4 |" in mixed and "| 2 |" in mixed


def test_bulk_memcpy_baseline_copies_the_bulk_cases_data(monkeypatch):
    """host_memcpy_bulk_gb_s copies lanes distinct blocks, copies times each
    per burst, and divides the bytes moved (read and written) by the median
    burst's time."""
    from hrx.bench import environment as env
    copied = []
    real_copyto = env.np.copyto

    def counting_copyto(target, source):
        copied.append((id(target), target.nbytes))
        real_copyto(target, source)
    clock = iter(range(0, 10 ** 9, 1000))
    monkeypatch.setattr(env.np, "copyto", counting_copyto)
    monkeypatch.setattr(env.time, "perf_counter_ns", lambda: next(clock))
    gb_s = env.host_memcpy_bulk_gb_s(4096, lanes=3, copies=5, reps=2)
    assert len(copied) == 3 + 3 * 5 * 2          # the first touch, then two bursts
    assert {nbytes for _, nbytes in copied} == {4096}
    assert len({target for target, _ in copied}) == 3
    assert gb_s == 2 * 4096 * 3 * 5 / 1000       # each burst: 1000 ns on the fake clock

