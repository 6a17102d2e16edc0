"""Conformance: events and ordering between streams.

Correctness between streams requires events (DESIGN.md, "Streams, buffers,
events"): stream B's wait_event(ev) makes B's later work start after the
work stream A had published when ev was recorded. The chains below make A's
work long enough that a missing wait would let B read stale bytes; every
check is on bytes, never on durations.
"""
from __future__ import annotations

import numpy as np
import pytest

import hrx
import hrx.fabric

CHAIN_BYTES = 64 << 20
CHAIN_ROUNDS = 8


def read(stream, view) -> np.ndarray:
    return stream.read(view).wait()


def same_queue_stream(device, stream):
    """A new pool stream on the same native queue as `stream`."""
    extra = []
    for _ in range(hrx.MAX_STREAM_QUEUE_COUNT + 1):
        s = device.stream()
        if s.queue_index == stream.queue_index:
            for e in extra:
                e.close()
            return s
        extra.append(s)
    raise AssertionError("round-robin never came back to the slot")


def other_queue_stream(device, stream):
    """A new pool stream on a different native queue, or skip."""
    if device.stream_queue_count < 2:
        pytest.skip("the pool has one queue")
    s = device.stream()
    assert s.queue_index != stream.queue_index  # consecutive slots differ
    return s


class Chain:
    """A long chain of fills and copies on `producer`, ending with
    `final` == `value` everywhere. `final` is zeroed and synchronized first,
    so an early reader sees 0 or an intermediate value.

    Every buffer stays referenced until the test ends: on some backends
    freeing memory waits for all queued work of the device, which would
    order the streams by itself and hide a missing wait."""

    def __init__(self, producer, device, value_base: int = 0):
        self.scratch = device.allocate(CHAIN_BYTES)
        self.final = device.allocate(CHAIN_BYTES)
        producer.fill(self.final, 0)
        producer.synchronize()
        for r in range(CHAIN_ROUNDS):
            producer.fill(self.scratch, value_base + r + 1)
            producer.copy(self.final, self.scratch)
        self.value = value_base + CHAIN_ROUNDS


def check_wait_orders(producer, consumer, device):
    chain = Chain(producer, device)
    event = producer.record_event()
    out = device.allocate(CHAIN_BYTES)
    consumer.wait_event(event)
    consumer.copy(out, chain.final)
    got = read(consumer, out)
    assert np.all(got == chain.value), (
        f"consumer saw bytes {np.unique(got)[:8]} instead of {chain.value}")
    assert event.query() is True


# ------------------------------------------------------------------ events

def test_event_on_an_empty_stream_completes(device):
    device.synchronize()
    stream = device.stream()
    event = stream.record_event()
    event.synchronize()
    assert event.query() is True
    assert event.device == device
    assert not event.closed
    stream.close()


def test_event_of_a_fabric_queue_on_an_empty_queue(device):
    queue = hrx.fabric.Queue(device)
    event = queue.record_event()
    event.synchronize()
    assert event.query() is True
    queue.close()


def test_event_synchronize_makes_work_visible(device, stream):
    chain = Chain(stream, device)
    event = stream.record_event()
    event.synchronize()
    assert event.query() is True
    reader = device.stream()
    assert np.all(read(reader, chain.final) == chain.value)
    reader.close()


def test_event_query_is_a_bool_and_eventually_true(device, stream):
    chain = Chain(stream, device)
    event = stream.record_event()
    assert event.query() in (True, False)
    stream.synchronize()                     # covers the event's snapshot
    assert event.query() is True
    assert np.all(read(stream, chain.final) == chain.value)


def test_many_events_on_one_stream(device, stream):
    buf = device.allocate(1 << 16)
    events = []
    for i in range(50):
        stream.fill(buf, i)
        events.append(stream.record_event())
    events[-1].synchronize()
    assert all(e.query() is True for e in events)
    for e in events[::7]:
        e.synchronize()                       # completed ones return at once
    assert np.all(read(stream, buf) == 49)


def test_event_survives_its_stream(device):
    producer = device.stream()
    consumer = device.stream()
    chain = Chain(producer, device)
    event = producer.record_event()
    producer.close()
    out = device.allocate(CHAIN_BYTES)
    consumer.wait_event(event)
    consumer.copy(out, chain.final)
    assert np.all(read(consumer, out) == chain.value)
    consumer.close()


def test_wait_on_own_event(device, stream):
    chain = Chain(stream, device)
    event = stream.record_event()
    stream.wait_event(event)                  # must not deadlock
    out = device.allocate(CHAIN_BYTES)
    stream.copy(out, chain.final)
    assert np.all(read(stream, out) == chain.value)


# ------------------------------------------------- ordering between streams

def test_wait_event_orders_streams_on_different_queues(device):
    producer = device.stream()
    consumer = other_queue_stream(device, producer)
    check_wait_orders(producer, consumer, device)
    producer.close()
    consumer.close()


def test_wait_event_orders_streams_sharing_a_queue(device):
    producer = device.stream()
    consumer = same_queue_stream(device, producer)
    assert consumer.queue_index == producer.queue_index
    check_wait_orders(producer, consumer, device)
    producer.close()
    consumer.close()


def test_wait_event_orders_pool_stream_and_fabric_queue(device):
    pool = device.stream()
    queue = hrx.fabric.Queue(device)
    check_wait_orders(pool, queue, device)
    check_wait_orders(queue, pool, device)
    queue.close()
    pool.close()


def test_wait_event_between_two_fabric_queues(device):
    a, b = hrx.fabric.Queue(device), hrx.fabric.Queue(device)
    check_wait_orders(a, b, device)
    a.close()
    b.close()


def test_wait_on_two_producers(device):
    p1 = device.stream()
    p2 = other_queue_stream(device, p1)
    consumer = hrx.fabric.Queue(device)
    c1 = Chain(p1, device)
    c2 = Chain(p2, device, value_base=100)
    e1, e2 = p1.record_event(), p2.record_event()
    out = device.allocate(2 * CHAIN_BYTES)
    consumer.wait_event(e1)
    consumer.wait_event(e2)
    consumer.copy(out[:CHAIN_BYTES], c1.final)
    consumer.copy(out[CHAIN_BYTES:], c2.final)
    got = read(consumer, out)
    assert np.all(got[:CHAIN_BYTES] == c1.value)
    assert np.all(got[CHAIN_BYTES:] == c2.value)
    for s in (p1, p2, consumer):
        s.close()


def test_write_after_read_hazard_needs_and_honours_an_event(device):
    """B reads A's buffer only after an event; A overwrites it only after
    B's event: both directions hold."""
    a = device.stream()
    b = other_queue_stream(device, a)
    shared = device.allocate(CHAIN_BYTES)
    copy = device.allocate(CHAIN_BYTES)
    a.fill(shared, 1)
    b.wait_event(a.record_event())
    for _ in range(CHAIN_ROUNDS):
        b.copy(copy, shared)                  # B reads `shared` ...
    a.wait_event(b.record_event())
    a.fill(shared, 2)                          # ... before A overwrites it
    assert np.all(read(b, copy) == 1)
    assert np.all(read(a, shared) == 2)
    a.close()
    b.close()


RELAY = """
n = {n}
dev = hrx.Device.open(0, backend=backend)
dev.set_stream_queue_count(n)
streams = [dev.stream() for _ in range(2 * n + 1)] + [hrx.fabric.Queue(dev)]
assert {{s.queue_index for s in streams[:-1]}} == set(range(n))
size = 8 << 20
bufs = [dev.allocate(size) for _ in streams]
for b in bufs:
    streams[0].fill(b, 0)
dev.synchronize()
data = np.random.default_rng(n).integers(0, 256, size, dtype=np.uint8)
streams[0].upload(bufs[0], data)
for r in range(4):
    streams[0].copy(bufs[1], bufs[0])
    streams[0].copy(bufs[0], bufs[1])
event = streams[0].record_event()
for i in range(1, len(streams)):
    s = streams[i]
    s.wait_event(event)
    s.copy(bufs[i], bufs[i - 1])
    event = s.record_event()
got = streams[-1].read(bufs[-1]).wait()
print("ok" if np.array_equal(got, data) else
      "mismatch at %d" % int(np.flatnonzero(got != data)[0]))
"""


def test_wait_event_relay_across_the_pool(fresh, queue_count):
    """A relay through every queue of a pool of `queue_count` queues (some
    shared by two streams) and a fabric queue, each hop ordered only by the
    previous hop's event."""
    assert fresh(RELAY.format(n=queue_count)).strip() == "ok"


# ------------------------------------------------------------ foreign events

def test_event_of_another_device_is_accepted(device, stream, second_device):
    """A stream, a fabric queue and the other device's stream wait for an
    event of the other device of the same backend (the ordering itself:
    test_multi_device.py)."""
    foreign_stream = second_device.stream()
    foreign = second_device.allocate(64)
    foreign_stream.fill(foreign, 0x66)
    foreign_event = foreign_stream.record_event()
    buf = device.allocate(64)
    stream.wait_event(foreign_event)
    stream.fill(buf, 0x77)
    stream.synchronize()
    assert foreign_event.query()
    assert np.all(read(stream, buf) == 0x77)
    foreign_stream.wait_event(stream.record_event())
    queue = hrx.fabric.Queue(device)
    queue.wait_event(foreign_event)
    queue.synchronize()
    queue.close()
    foreign_stream.synchronize()
    foreign_stream.close()


def test_wait_event_rejects_non_events(stream):
    for bad in (None, 1, stream, object()):
        with pytest.raises(TypeError):
            stream.wait_event(bad)
