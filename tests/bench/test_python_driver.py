"""The Python driver on an in-memory device: the protocol's shape, the
output check, and errors from its threads. The in-memory device runs no
kernels, so the contention cases are left out here
(tests/bench/test_contention.py runs them on the host backend)."""
import pytest
from conftest_bench import FakeDevice

from hrx.bench.config import BenchConfig
from hrx.bench.python_driver import OutputMismatch, run
from hrx.bench.record import RAW_KEYS, summarize

TINY = BenchConfig(lanes=4, retained_streams=3, small_bytes=128, small_copies=5,
                   bulk_bytes=1024, bulk_copies=2, loaded_copies=2, warmup=2, samples=3)
NATIVE_KEYS = {"driver", "queues", "queues_used", *TINY.as_dict(), "stream_creation_ns",
               *RAW_KEYS}


def test_returns_the_shape_of_bench_run():
    result = run(FakeDevice(), 2, TINY, contention=False)
    assert set(result) == NATIVE_KEYS
    assert result["driver"] == "python" and result["queues"] == 2
    for key in ("small_round_ns", "threaded_round_ns", "bulk_round_ns"):
        assert len(result[key]) == TINY.samples
    for key in ("idle_sample_ns", "loaded_sample_ns"):
        assert len(result[key]) == TINY.samples * TINY.lanes
    assert all(isinstance(v, int) and v >= 0 for key in RAW_KEYS for v in result[key])
    summarize(result)


def test_streams_and_copies_follow_the_protocol():
    device = FakeDevice()
    run(device, 4, TINY, contention=False)
    assert len(device.streams) == TINY.retained_streams + 2 * TINY.lanes
    rounds, lanes = TINY.warmup + TINY.samples, TINY.lanes
    expected = rounds * (
        lanes * TINY.small_copies                      # small
        + lanes * TINY.small_copies                    # threaded
        + lanes * TINY.bulk_copies                     # bulk
        + lanes                                        # idle
        + lanes * (lanes * TINY.loaded_copies + 1))    # loaded: backlog + probe per position
    assert device.copies == expected
    assert all(stream.synchronized == 0 for stream in device.streams[:TINY.retained_streams])


def test_wrong_output_fails_the_run():
    with pytest.raises(OutputMismatch, match="destination byte 0"):
        run(FakeDevice(corrupt=True), 1, TINY, contention=False)


def test_error_in_a_worker_thread_fails_the_run(monkeypatch):
    device = FakeDevice()
    calls = {"n": 0}
    original = type(device.stream()).copy

    def failing(self, dst, src):
        calls["n"] += 1
        if calls["n"] > TINY.lanes * TINY.small_copies * (TINY.warmup + TINY.samples) + 3:
            raise RuntimeError("queue broke")
        original(self, dst, src)

    monkeypatch.setattr(type(device.stream()), "copy", failing)
    with pytest.raises(RuntimeError, match="queue broke"):
        run(device, 1, TINY, contention=False)
