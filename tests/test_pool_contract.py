"""The stream queue pool contract (DESIGN.md, items 1-9), one test per rule.

The setting belongs to a process's live device, so every scenario runs in a
fresh interpreter, once per queue count (1, 2, 4, 8, 16) and per backend.
Each snippet asserts inside the child; the parent fails on a non-zero exit.
"""
import pytest

from conftest import run_fresh


def test_default_is_eight_and_belongs_to_the_live_device(fresh):
    # Item 1.
    fresh("""
    d = hrx.Device.open(0, backend=backend)
    assert d.stream_queue_count == hrx.DEFAULT_STREAM_QUEUE_COUNT == 8
    assert d.pool_info() == {"queue_count": 8, "queues_created": 0,
                             "next_slot": 0, "first_use": False,
                             "live_streams": 0, "fabric_queues": 0}
    """)


def test_handles_share_setting_queues_and_cursor(fresh, queue_count):
    # Item 2: clones, reopened handles and Stream.open() see one live device.
    fresh(f"""
    n = {queue_count}
    d = hrx.Device.open(0, backend=backend)
    d.set_stream_queue_count(n)
    clone = d.clone()
    reopened = hrx.Device.open(0, backend=backend)
    assert clone == d and reopened == d
    assert clone.stream_queue_count == reopened.stream_queue_count == n
    streams = [d.stream(), clone.stream(), reopened.stream(),
               hrx.Stream.open(0, backend=backend)]
    assert [s.queue_index for s in streams] == [k % n for k in range(4)]
    assert streams[3].device == d
    for handle in (d, clone, reopened, streams[3].device):
        info = handle.pool_info()
        assert info["queues_created"] == min(4, n), info
        assert info["next_slot"] == 4 % n, info
        assert info["live_streams"] == 4, info
    # A different value through any handle is refused after first use.
    for handle in (clone, reopened, streams[0].device):
        try:
            handle.set_stream_queue_count(n + 1)
        except hrx.BusyError:
            pass
        else:
            raise AssertionError("BusyError expected")
    """)


def test_count_validation_before_and_after_first_use(fresh, queue_count):
    # Item 3: 0 and > max are ValueError, also after first use; non-integers
    # and bool are TypeError; the current value is always accepted.
    fresh(f"""
    n = {queue_count}
    d = hrx.Device.open(0, backend=backend)
    def expect(exc, value):
        try:
            d.set_stream_queue_count(value)
        except exc as e:
            return str(e)
        raise AssertionError(f"{{exc.__name__}} expected for {{value!r}}")
    for phase in ("before", "after"):
        msg = expect(ValueError, 0)
        assert "between 1 and 64" in msg, msg
        assert isinstance(expect(hrx.InvalidArgumentError, -1), str)
        expect(ValueError, hrx.MAX_STREAM_QUEUE_COUNT + 1)
        expect(ValueError, 2**70)
        for bad in (True, False, 2.0, "4", None, [4]):
            expect(TypeError, bad)
        assert d.stream_queue_count == (8 if phase == "before" else n)
        if phase == "before":
            d.set_stream_queue_count(n)
            d.set_stream_queue_count(n)          # repeating is fine
            d.set_stream_queue_count(np.int64(n))  # any __index__ int
            s = d.stream()
    d.set_stream_queue_count(n)                  # current value, after use
    expect(hrx.BusyError, n % 16 + 1)
    assert d.stream_queue_count == n
    """)


def test_busy_persists_after_every_stream_is_dropped(fresh, queue_count):
    # Item 3: BusyError also once every stream is gone while the device lives.
    fresh(f"""
    n = {queue_count}
    d = hrx.Device.open(0, backend=backend)
    d.set_stream_queue_count(n)
    streams = [d.stream() for _ in range(3)]
    for s in streams:
        s.close()
    del streams
    assert d.pool_info()["live_streams"] == 0
    other = 2 if n != 2 else 4
    try:
        d.set_stream_queue_count(other)
    except hrx.BusyError as e:
        assert "already created" in str(e), str(e)
    else:
        raise AssertionError("BusyError expected")
    d.set_stream_queue_count(n)
    """)


def test_lazy_creation_one_stream_one_queue(fresh, queue_count):
    # Item 5: the k-th pool stream uses slot k mod n; queues appear on need.
    fresh(f"""
    n = {queue_count}
    d = hrx.Device.open(0, backend=backend)
    d.set_stream_queue_count(n)
    assert d.pool_info()["queues_created"] == 0
    streams = []
    for k in range(2 * n + 1):
        streams.append(d.stream())
        assert streams[-1].queue_index == k % n
        assert d.pool_info()["queues_created"] == min(k + 1, n)
    """)


def test_round_robin_and_queue_kept_for_life(fresh, queue_count):
    # Item 7: plain round-robin; dropping streams changes neither the cursor
    # nor any stream's queue.
    fresh(f"""
    n = {queue_count}
    d = hrx.Device.open(0, backend=backend)
    d.set_stream_queue_count(n)
    first = [d.stream() for _ in range(n)]
    handles = [s.native_handle for s in first]
    assert len(set(handles)) == n  # n distinct native queues
    first[0].close()               # dropping does not free or reuse a slot
    second = [d.stream() for _ in range(n)]
    assert [s.queue_index for s in second] == list(range(n))
    assert [s.native_handle for s in second] == handles
    for s in first[1:]:
        assert s.native_handle == handles[s.queue_index]
    """)


def test_fabric_queue_is_outside_the_pool(fresh, queue_count):
    # Item 8: no slot, no effect on the setting or first use, never handed
    # to pool streams.
    fresh(f"""
    n = {queue_count}
    d = hrx.Device.open(0, backend=backend)
    q = hrx.fabric.Queue(d)
    assert q.queue_index is None
    info = d.pool_info()
    assert info["fabric_queues"] == 1 and not info["first_use"], info
    assert info["queues_created"] == 0 and info["next_slot"] == 0, info
    d.set_stream_queue_count(n)     # still allowed: not first use
    streams = [d.stream() for _ in range(2 * n)]
    assert all(s.native_handle != q.native_handle for s in streams)
    buf = d.allocate(64)
    q.fill(buf, 9)
    q.synchronize()
    assert (q.read(buf).wait() == 9).all()
    q.close()
    assert d.pool_info()["fabric_queues"] == 0
    """)


def test_teardown_when_last_handle_goes_then_fresh_default(fresh,
                                                           queue_count):
    # Item 9 (and item 2's "while any object is alive").
    fresh(f"""
    n = {queue_count}
    d = hrx.Device.open(0, backend=backend)
    d.set_stream_queue_count(n)
    s = d.stream()
    buf = s.allocate(16)
    event = s.record_event()
    d.close(); s.close()
    # The buffer and the event still hold the live device.
    again = hrx.Device.open(0, backend=backend)
    assert again.stream_queue_count == n
    assert again.pool_info()["first_use"]
    again.close(); del again
    event.close()
    buf.close()
    fresh_device = hrx.Device.open(0, backend=backend)
    assert fresh_device.stream_queue_count == 8
    assert fresh_device.pool_info()["queues_created"] == 0
    fresh_device.set_stream_queue_count(n % 16 + 1)   # not busy: new device
    """)


def test_devices_have_separate_pools(fresh):
    # The setting is per live device: (backend, index) keys.
    fresh("""
    try:
        other = hrx.Device.open(1, backend=backend)
    except hrx.OutOfRangeError:
        sys.exit(0)
    d = hrx.Device.open(0, backend=backend)
    d.set_stream_queue_count(2)
    d.stream()
    assert other.stream_queue_count == 8
    other.set_stream_queue_count(4)
    assert other != d
    """)


@pytest.mark.parametrize("n", [1, 2, 4, 8, 16], ids=lambda n: f"q{n}")
def test_host_failed_queue_creation_is_not_first_use(n):
    # Item 4: a refused queue does not count as first use. The host backend's
    # capacity limit makes the runtime refuse; a fabric queue uses it up.
    run_fresh(f"""
    n = {n}
    d = hrx.Device.open(0, backend=backend)
    blocker = hrx.fabric.Queue(d)            # the only queue allowed
    try:
        d.stream()
    except hrx.ResourceExhaustedError as e:
        assert "HRX_HOST_MAX_QUEUES" in str(e), str(e)
    else:
        raise AssertionError("ResourceExhaustedError expected")
    info = d.pool_info()
    assert not info["first_use"] and info["queues_created"] == 0, info
    d.set_stream_queue_count(n)              # still allowed
    blocker.close()
    s = d.stream()
    assert s.queue_index == 0 and d.pool_info()["first_use"]
    """, backend="host", env={"HRX_HOST_MAX_QUEUES": "1"})


@pytest.mark.parametrize("n", [1, 2, 4, 8, 16], ids=lambda n: f"q{n}")
def test_host_capacity_refusal_keeps_cursor_and_retries_same_slot(n):
    # Item 6: the error carries the native message; the cursor does not
    # advance; nothing half-made stays; the next creation retries the slot.
    run_fresh(f"""
    n = {n}
    limit = max(1, n // 2)
    d = hrx.Device.open(0, backend=backend)
    d.set_stream_queue_count(n)
    blocker = hrx.fabric.Queue(d)
    streams = [d.stream() for _ in range(limit - 1)]
    if n == 1:
        streams = []
    before = d.pool_info()
    for attempt in range(2):
        if len(streams) >= n:
            break
        try:
            d.stream()
        except hrx.ResourceExhaustedError as e:
            assert "refused a native queue" in str(e), str(e)
            assert "slot %d" % len(streams) in str(e), str(e)
        else:
            raise AssertionError("refusal expected")
        assert d.pool_info() == before, (d.pool_info(), before)
    blocker.close()                           # capacity returns
    s = d.stream()
    assert s.queue_index == len(streams) % n
    assert d.pool_info()["queues_created"] == before["queues_created"] + 1
    """, backend="host", env={"HRX_HOST_MAX_QUEUES": str(max(1, n // 2))})
