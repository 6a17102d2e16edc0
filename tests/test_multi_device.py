"""Several devices of one backend: each has its own pool, setting and
queues; objects of one device are refused on another, except for the two
ways work of several devices meets: Stream.copy_peer (a copy between
buffers of two devices, direct, peer or staged) and Stream.wait_event with
an event of another device. Runs with the host backend's several devices
(HRX_HOST_DEVICE_COUNT) and, where two GPUs exist, on hip; a backend with
one device skips with the reason."""
from __future__ import annotations

import textwrap

import pytest

import hrx
from conftest import run_fresh


def _joined(*parts: str) -> str:
    """Snippets of different indentation as one program."""
    return "".join(textwrap.dedent(part) for part in parts)


def _need_devices(backend: str, count: int) -> None:
    dev = hrx.Device.open(0, backend=backend)
    have = dev.info["device_count"]
    dev.close()
    if have < count:
        pytest.skip(f"backend {backend} has {have} device(s); this test needs {count}")


OPEN_TWO = """
    d0 = hrx.Device.open(0, backend=backend)
    d1 = hrx.Device.open(1, backend=backend)
"""


@pytest.fixture
def two(backend):
    """Runs a snippet in a fresh process with d0 and d1 open (three host
    devices), or skips where the backend has one device."""
    _need_devices(backend, 2)

    def runner(code: str, **kwargs) -> str:
        env = dict(kwargs.pop("env", {}) or {})
        env.setdefault("HRX_HOST_DEVICE_COUNT", "3")
        return run_fresh(_joined(OPEN_TWO, code), backend=backend, env=env, **kwargs)
    return runner


def test_pool_sizes_and_first_use_are_per_device(two):
    out = two("""
        d0.set_stream_queue_count(2)
        d1.set_stream_queue_count(5)
        s0 = [d0.stream() for _ in range(3)]
        assert [s.queue_index for s in s0] == [0, 1, 0]
        assert d0.pool_info()["first_use"] and not d1.pool_info()["first_use"]
        try:
            d0.set_stream_queue_count(3)
        except hrx.BusyError:
            pass
        else:
            raise AssertionError("device 0 resized after its first use")
        d1.set_stream_queue_count(4)      # device 1 is still before first use
        s1 = [d1.stream() for _ in range(5)]
        assert [s.queue_index for s in s1] == [0, 1, 2, 3, 0]
        assert d0.stream_queue_count == 2 and d1.stream_queue_count == 4
        assert d0.pool_info()["queues_created"] == 2
        assert d1.pool_info()["queues_created"] == 4
        print("ok")
    """)
    assert out.strip() == "ok"


def test_streams_and_queues_belong_to_their_device(two):
    out = two("""
        d1.set_stream_queue_count(3)
        s0, s1 = d0.stream(), d1.stream()
        assert s0.device.info["index"] == 0 and s1.device.info["index"] == 1
        assert s0.native_handle != s1.native_handle
        opened = hrx.Stream.open(1, backend=backend)
        assert opened.device.info["index"] == 1
        assert opened.device.stream_queue_count == 3   # device 1's setting
        assert opened.queue_index == 1                 # device 1's cursor
        assert hrx.Stream.open(0, backend=backend).queue_index == 1
        b1 = d1.allocate(64)
        opened.fill(b1, 9); opened.synchronize()
        assert (s1.read_blocking(b1, np.zeros(64, np.uint8)) == 9).all()
        print(d0.info["device_count"], sorted(d0.info["peer"]),
              sorted(d1.info["peer"]))
    """)
    assert out.split() == ["3", "[1,", "2]", "[0,", "2]"]


def test_objects_of_another_device_are_refused_with_what_is_allowed(two):
    out = two("""
        s0, s1 = d0.stream(), d1.stream()
        a0, b1 = d0.allocate(64), d1.allocate(64)
        g1 = hrx.Graph(d1); g1.fill(b1, 1)
        t0 = s0.record_event(timing=True); t1 = s1.record_event(timing=True)
        checks = [
            (lambda: s0.copy(b1, a0), "copy_peer"),
            (lambda: s0.fill(b1, 1), "own device"),
            (lambda: s0.read_blocking(b1, np.zeros(64, np.uint8)),
             "own device"),
            (lambda: g1.launch(s0), "device"),
            (lambda: t1.elapsed_time(t0), "one device"),
        ]
        for call, allowed in checks:
            try:
                call()
            except hrx.InvalidArgumentError as e:
                text = str(e)
                assert f"{backend}:1" in text and f"{backend}:0" in text, text
                assert allowed in text, text
            else:
                raise AssertionError("accepted an object of another device")
        s0.synchronize(); s1.synchronize()
        print("ok")
    """)
    assert out.strip() == "ok"


COPY_BOTH_WAYS = """
    d0 = hrx.Device.open(0, backend=backend)
    d1 = hrx.Device.open(1, backend=backend)
    s0, s1 = d0.stream(), d1.stream()
    a0, b1 = d0.allocate(4096), d1.allocate(4096)
    data = np.arange(4096, dtype=np.uint32).astype(np.uint8)
    s0.upload(a0, data); s1.fill(b1, 0); s0.synchronize(); s1.synchronize()
    s0.copy_peer(b1, a0)                       # to device 1, on device 0
    s0.synchronize()
    assert (s1.read_blocking(b1, np.zeros(4096, np.uint8)) == data).all()
    s0.fill(a0, 0); s1.fill(b1[100:300], 0xAB); s0.synchronize()
    s1.synchronize()
    s0.copy_peer(a0[1000:1200], b1[100:300])   # from device 1, offsets
    s1.copy_peer(b1[0:64], a0[2000:2064])      # on device 1, from device 0
    s0.synchronize(); s1.synchronize()
    got0 = s0.read_blocking(a0, np.zeros(4096, np.uint8))
    assert (got0[1000:1200] == 0xAB).all()
    assert (got0[:1000] == 0).all() and (got0[1200:] == 0).all()
    got1 = s1.read_blocking(b1, np.zeros(4096, np.uint8))
    assert (got1[0:64] == 0).all() and (got1[100:300] == 0xAB).all()
    assert (got1[300:] == data[300:]).all()
    s0.copy_peer(a0[0:8], a0[8:16])            # one device: an ordinary copy
    s0.synchronize()
    print(d0.info["peer"][1], d1.info["peer"][0])
"""


def test_copy_between_devices_both_ways_with_offsets(two):
    out = two(COPY_BOTH_WAYS)
    assert out.split()[0] == out.split()[1]
    assert out.split()[0] in ("direct", "peer", "staged")


def test_copy_between_host_devices_staged(backend):
    if backend != "host":
        pytest.skip("HRX_HOST_PEER_ACCESS is the host backend's")
    out = run_fresh(COPY_BOTH_WAYS, backend=backend,
                    env={"HRX_HOST_PEER_ACCESS": "0"})
    assert out.split() == ["staged", "staged"]
    out = run_fresh(COPY_BOTH_WAYS, backend=backend)
    assert out.split() == ["direct", "direct"]


GATED_PRODUCER = """
    import threading
    gate = threading.Event()
    d0 = hrx.Device.open(0, backend=backend)
    d1 = hrx.Device.open(1, backend=backend)
    d0.set_stream_queue_count(4)
    producer, gatekeeper = d0.stream(), d0.stream()
    assert producer.queue_index != gatekeeper.queue_index
    consumer = d1.stream()
    a0, b1 = d0.allocate(256), d1.allocate(256)
    producer.fill(a0, 1); consumer.fill(b1, 2)
    producer.synchronize(); consumer.synchronize()
    g = hrx.Graph(d0); g.callback(lambda: gate.wait(60))
    launch = g.launch(gatekeeper)
    producer.wait_event(gatekeeper.record_event())   # held shut by the gate
    producer.fill(a0, 7)
"""


def test_a_stream_waits_for_an_event_of_another_device(two):
    """The producer on device 0 is held by a gated callback; the consumer on
    device 1 waits for its event, so the consumer's copy of the producer's
    buffer cannot run before the gate opens, and then sees its fill."""
    out = two(_joined(GATED_PRODUCER, """
        consumer.wait_event(producer.record_event())
        consumer.copy_peer(b1, a0)
        done = consumer.record_event()
        assert not done.query(), "the consumer did not wait for device 0"
        gate.set()
        assert launch.wait(60)
        consumer.synchronize()
        got = consumer.read_blocking(b1, np.zeros(256, np.uint8))
        assert (got == 7).all(), got[:8]
        print("ok")
    """))
    assert out.strip() == "ok"


def test_a_copy_between_devices_keeps_the_other_buffer_alive(backend):
    """The other device's buffer is dropped while the copy waits behind the
    gate: its memory stays allocated until the copy is done (the fault
    wrapper counts live allocations), then goes once the stream's next call
    gave the copy back: on the other device's cleanup thread, which that
    device's synchronize waits for."""
    _need_devices(backend, 2)
    out = run_fresh(_joined(GATED_PRODUCER, """
        allocations = lambda: hrx._hrx._testing_live_native_objects()["allocations"]
        producer.copy_peer(b1, a0)
        before = allocations()
        b1.close()
        assert allocations() == before, "freed while the copy waits"
        gate.set()
        assert launch.wait(60)
        producer.synchronize()
        producer.fill(a0, 0); producer.synchronize()
        d1.synchronize()
        assert allocations() == before - 1, (allocations(), before)
        print("ok")
    """), backend=backend, env={"HRX_FAULTS": "none"})
    assert out.strip() == "ok"


def test_a_failed_copy_between_devices_fails_its_stream(two):
    out = two("""
        s0 = d0.stream()
        a0, b1 = d0.allocate(64), d1.allocate(64)
        s0.fill(a0, 3)
        s0.copy_peer(b1, a0)          # refused by the device: not raised here
        s0.fill(a0, 4)                # not run: the stream has failed
        try:
            s0.synchronize()
        except hrx.DeviceError as e:
            text = str(e)
            assert "copy between devices of 64 bytes" in text, text
            assert "injected fault: peer_copy call #1" in text, text
            assert "1 later command of this stream was not run" in text, text
        else:
            raise AssertionError("the failed copy was not raised")
        s0.copy_peer(b1, a0); s0.synchronize()   # usable again
        got = d1.stream().read_blocking(b1, np.zeros(64, np.uint8))
        assert (got == 3).all(), got[:4]
        print("ok")
    """, env={"HRX_FAULTS": "peer_copy:1"})
    assert out.strip() == "ok"

