"""Stream.query, Event.query, timing events and the errors a user coming
from CuPy, PyTorch or NumPy meets first; the CUDA protocols' absence where
they do not apply. Conformance: every available backend."""
from __future__ import annotations

import threading

import numpy as np

import pytest

import hrx


def test_stream_query_before_and_after_work(device, stream):
    assert stream.query()  # nothing accepted yet
    buffer = device.allocate(256 << 20)
    for value in range(1, 9):
        stream.fill(buffer, value)
    event = stream.record_event()
    busy_stream, busy_event = stream.query(), event.query()
    stream.synchronize()
    assert stream.query() and event.query()
    # Eight 256 MiB fills outlast the two queries on any device here.
    assert not busy_stream and not busy_event


def test_stream_query_counts_commands_waiting_in_a_batch(fresh):
    """A command held back for a batch is work the stream accepted; the
    deadline thread is told to wait long here, so it stays pending."""
    out = fresh("""
        d = hrx.Device.open(0, backend=backend)
        s = d.stream()
        b = d.allocate(4096)
        s.fill(b[0:64], 1)        # an idle, quiet stream: published alone
        s.fill(b[64:128], 2)      # the same thread keeps going: batched
        print(s.query())
        s.synchronize()
        print(s.query())
    """, env={"HRX_BATCHING": "1", "HRX_BATCH_DELAY_US": "10000000"})
    assert out.split() == ["False", "True"]


def test_timing_events_measure_milliseconds(device, stream):
    buffer = device.allocate(64 << 20)
    start = stream.record_event(timing=True)
    for value in range(4):
        stream.fill(buffer, value)
    end = stream.record_event(timing=True)
    end.synchronize()
    assert start.timing and end.timing
    ms = start.elapsed_time(end)
    assert isinstance(ms, float)
    assert 0.0 < ms < 60_000.0
    assert end.elapsed_time(start) == pytest.approx(-ms, abs=1e-3)


def test_timing_errors(device, stream):
    start = stream.record_event(timing=True)
    plain = stream.record_event()
    assert not plain.timing
    stream.synchronize()
    with pytest.raises(hrx.InvalidArgumentError, match="without timing"):
        start.elapsed_time(plain)
    with pytest.raises(TypeError, match="hrx.Event"):
        start.elapsed_time(3)
    with pytest.raises(TypeError, match="True or False"):
        stream.record_event(timing=1)
    with pytest.raises(TypeError, match="timing"):
        stream.record_event(True)
    with pytest.raises(TypeError, match="timing"):
        stream.record_event(clock=True)


def test_elapsed_time_refuses_work_not_done(device, stream):
    # The stream is held behind a graph callback until `gate` is set, so the
    # end event is not complete, however fast the device.
    gate = threading.Event()
    graph = hrx.Graph(device)
    graph.callback(lambda: gate.wait(30))
    launch = graph.launch(stream)
    buffer = device.allocate(1 << 20)
    start = stream.record_event(timing=True)
    stream.fill(buffer, 1)
    end = stream.record_event(timing=True)
    try:
        assert not end.query()
        with pytest.raises(hrx.FailedPreconditionError, match="not complete"):
            start.elapsed_time(end)
    finally:
        gate.set()
    assert launch.wait(30)
    stream.synchronize()
    assert start.elapsed_time(end) > 0


def test_elapsed_time_across_devices_is_refused(device, second_device):
    a = device.stream().record_event(timing=True)
    b = second_device.stream().record_event(timing=True)
    with pytest.raises(hrx.InvalidArgumentError, match="one device"):
        a.elapsed_time(b)


def test_types_say_how_to_get_an_instance():
    with pytest.raises(TypeError, match=r"device\.stream\(\)"):
        hrx.Stream()
    with pytest.raises(TypeError, match=r"device\.allocate\(nbytes\)"):
        hrx.Buffer()
    with pytest.raises(TypeError, match="cannot"):
        hrx.Event()


def test_numpy_asarray_of_a_buffer_points_to_read(device):
    buffer = device.allocate(16)
    with pytest.raises(TypeError, match=r"stream\.read"):
        np.asarray(buffer)
    with pytest.raises(TypeError, match=r"stream\.read"):
        np.array(buffer)


def test_cuda_protocols_only_on_nvidia(device, stream):
    buffer = device.allocate(16)
    if device.info["platform"] == "nvidia":
        kind, handle = stream.__cuda_stream__()
        assert (kind, handle) == (0, stream.native_handle)
        cai = buffer.__cuda_array_interface__
        assert cai["version"] == 3 and cai["shape"] == (16,)
        assert cai["typestr"] == "|u1" and cai["strides"] is None
        assert cai["stream"] == 1
        typed = buffer.view("float32", (2, 2)).__cuda_array_interface__
        assert typed["typestr"] == "<f4" and typed["shape"] == (2, 2)
        assert typed["data"] == cai["data"] and typed["strides"] is None
        return
    assert not hasattr(stream, "__cuda_stream__")
    assert not hasattr(buffer, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="NVIDIA"):
        stream.__cuda_stream__()
    with pytest.raises(AttributeError, match="__dlpack__"):
        buffer.__cuda_array_interface__
