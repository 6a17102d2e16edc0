"""Beyond round-robin: priority lanes, reserved queues, the
least-loaded policy, pool_stats() and the hardware connection budget.

Like the pool contract, every scenario runs in a fresh interpreter, on every
available backend. The hip-only checks (native priorities, the connection
budget applied before the CUDA context exists) skip without a GPU.
"""
import pytest

import hrx
from conftest import run_fresh


def test_priority_lanes_round_robin_per_lane(fresh, queue_count):
    # Each lane has its own count slots, its own cursor, its own queues.
    fresh(f"""
    n = {queue_count}
    d = hrx.Device.open(0, backend=backend)
    d.set_stream_queue_count(n)
    assert d.stream_queue_policy == "round_robin"
    lanes = {{}}
    for name, number in (("high", 1), ("normal", 0), ("low", -1)):
        by_name = [d.stream(priority=name) for _ in range(n + 1)]
        by_number = [d.stream(priority=number) for _ in range(n + 1)]
        both = by_name + by_number
        assert [s.queue_index for s in both] == [k % n for k in range(2 * n + 2)]
        assert {{s.priority for s in both}} == {{name}}
        assert not any(s.reserved for s in both)
        lanes[name] = both
    plain = d.stream()
    assert plain.priority == "normal" and plain.queue_index == (2 * n + 2) % n
    handles = {{name: {{s.native_handle for s in lanes[name]}}
               for name in lanes}}
    assert all(len(h) == n for h in handles.values())
    assert not handles["high"] & handles["normal"]
    assert not handles["normal"] & handles["low"]
    assert not handles["high"] & handles["low"]
    stats = d.pool_stats()
    assert stats["queue_count"] == n and stats["first_use"]
    order = [(q["priority"], q["slot"]) for q in stats["queues"]]
    assert order == [(p, k) for p in ("high", "normal", "low")
                     for k in range(n)], order
    assert d.pool_info()["queues_created"] == 3 * n
    native = {{q["priority"]: q["native_priority"] for q in stats["queues"]}}
    info = d.info
    if backend == "host":
        # Precedence ranks: engines serve a higher lane first.
        assert native["high"] < native["normal"] < native["low"], native
    else:
        # Runtime priorities: numerically lower is more urgent.
        assert native["high"] <= native["normal"] <= native["low"], native
    """)


def test_lanes_are_lazy(fresh):
    fresh("""
    d = hrx.Device.open(0, backend=backend)
    s = d.stream(priority="high")
    info = d.pool_info()
    assert info["queues_created"] == 1 and info["next_slot"] == 0, info
    assert [q["priority"] for q in d.pool_stats()["queues"]] == ["high"]
    """)


def test_bad_priority_and_reserve_leave_nothing_behind(fresh):
    fresh("""
    d = hrx.Device.open(0, backend=backend)
    def expect(exc, **kwargs):
        try:
            d.stream(**kwargs)
        except exc as e:
            return str(e)
        raise AssertionError(f"{exc.__name__} expected for {kwargs}")
    msg = expect(hrx.InvalidArgumentError, priority="urgent")
    assert '"high", "normal", "low"' in msg, msg
    msg = expect(ValueError, priority=2)
    assert "between -1 (low) and 1 (high)" in msg, msg
    expect(ValueError, priority=-2)
    expect(ValueError, priority=2**70)
    for bad in (True, 1.0, [1], b"high"):
        expect(TypeError, priority=bad)
    for bad in (1, None, "yes"):
        assert "reserve must be a bool" in expect(TypeError, reserve=bad)
    expect(TypeError, priority="high", reserve=1)
    stats = d.pool_stats()
    assert not stats["first_use"] and stats["queues"] == [], stats
    assert stats["reserved_refused"] == 0
    assert d.pool_info()["live_streams"] == 0
    # None means the default lane.
    assert d.stream(priority=None).priority == "normal"
    """)


def test_reserved_queue_is_shared_with_nobody(fresh, queue_count):
    fresh(f"""
    n = {queue_count}
    d = hrx.Device.open(0, backend=backend)
    d.set_stream_queue_count(n)
    r = d.stream(reserve=True)
    assert r.reserved and r.queue_index is None and r.priority == "normal"
    info = d.pool_info()
    # First use, but no slot and no cursor movement.
    assert info["first_use"] and info["queues_created"] == 0, info
    assert info["next_slot"] == 0 and info["live_streams"] == 1, info
    others = [d.stream(priority=p) for p in ("high", "normal", "low")
              for _ in range(2 * n)]
    assert r.native_handle not in {{s.native_handle for s in others}}
    assert [s.queue_index for s in others[2 * n:4 * n]] == \\
        [k % n for k in range(2 * n)]
    rh = d.stream(priority="high", reserve=True)
    assert rh.priority == "high" and rh.reserved
    assert rh.native_handle != r.native_handle
    stats = d.pool_stats()
    assert stats["reserved_live"] == 2 and stats["reserved_created"] == 2
    reserved = [q for q in stats["queues"] if q["reserved"]]
    assert [(q["priority"], q["slot"], q["streams"]) for q in reserved] == \\
        [("normal", None, 1), ("high", None, 1)], reserved
    try:
        d.set_stream_queue_policy("least_loaded")
    except hrx.BusyError:
        pass
    else:
        raise AssertionError("BusyError expected")
    # Work on a reserved stream is ordered and done like any other.
    a, b = d.allocate(4096), d.allocate(4096)
    r.upload(a, np.arange(4096, dtype=np.uint64).astype(np.uint8))
    r.copy(b, a)
    out = np.zeros(4096, np.uint8)
    r.read_blocking(b, out)
    assert (out == np.arange(4096, dtype=np.uint64).astype(np.uint8)).all()
    r.close()
    stats = d.pool_stats()
    assert stats["reserved_live"] == 1 and stats["reserved_created"] == 2
    d.synchronize()
    """)


def test_reserve_refused_by_runtime_leaves_nothing(backend):
    if backend != "host":
        pytest.skip("the refusal is provoked with HRX_HOST_MAX_QUEUES")
    run_fresh("""
    d = hrx.Device.open(0, backend=backend)
    d.set_stream_queue_count(2)
    s = d.stream()
    before = d.pool_stats()
    try:
        d.stream(reserve=True, priority="high")
    except hrx.ResourceExhaustedError as e:
        assert "cannot create a reserved high-priority queue" in str(e), e
        assert "HRX_HOST_MAX_QUEUES" in str(e), e
    else:
        raise AssertionError("ResourceExhaustedError expected")
    after = d.pool_stats()
    assert after["reserved_refused"] == 1 and after["reserved_live"] == 0
    assert after["queues"] == before["queues"], (before, after)
    assert d.pool_info()["live_streams"] == 1
    s.close()
    """, backend=backend, env={"HRX_HOST_MAX_QUEUES": "1"})


def test_reserve_limit_is_clean(fresh):
    fresh("""
    d = hrx.Device.open(0, backend=backend)
    held = [d.stream(reserve=True) for _ in range(hrx.MAX_RESERVED_QUEUES)]
    try:
        d.stream(reserve=True)
    except hrx.ResourceExhaustedError as e:
        assert f"{hrx.MAX_RESERVED_QUEUES} reserved queues are alive" in str(e)
    else:
        raise AssertionError("ResourceExhaustedError expected")
    stats = d.pool_stats()
    assert stats["reserved_live"] == hrx.MAX_RESERVED_QUEUES
    assert stats["reserved_refused"] == 1
    held.pop().close()
    held.append(d.stream(reserve=True))
    assert d.pool_stats()["reserved_created"] == hrx.MAX_RESERVED_QUEUES + 1
    """)


def test_policy_setting_rule(fresh):
    # Same rule as the count: bad value -> clear error, repeat OK, a
    # different value after first use -> BusyError (also once streams are
    # gone while the device lives).
    fresh("""
    d = hrx.Device.open(0, backend=backend)
    def expect(exc, value):
        try:
            d.set_stream_queue_policy(value)
        except exc as e:
            return str(e)
        raise AssertionError(f"{exc.__name__} expected for {value!r}")
    for phase in ("before", "after"):
        msg = expect(hrx.InvalidArgumentError, "fastest")
        assert '"round_robin" or "least_loaded"' in msg, msg
        expect(ValueError, "")
        for bad in (0, None, b"round_robin"):
            expect(TypeError, bad)
        if phase == "before":
            d.set_stream_queue_policy("least_loaded")
            d.set_stream_queue_policy("least_loaded")
            d.set_stream_queue_policy("round_robin")
            d.set_stream_queue_policy("least_loaded")
            d.stream().close()
    assert d.stream_queue_policy == "least_loaded"
    d.set_stream_queue_policy("least_loaded")
    msg = expect(hrx.BusyError, "round_robin")
    assert "cannot change to round_robin" in msg, msg
    assert d.clone().stream_queue_policy == "least_loaded"
    """)
    # The device going away resets the policy.
    fresh("""
    d = hrx.Device.open(0, backend=backend)
    d.set_stream_queue_policy("least_loaded")
    d.stream().close()
    d.close()
    assert hrx.Device.open(0, backend=backend).stream_queue_policy == \\
        "round_robin"
    """)


def test_least_loaded_avoids_the_busy_queue(fresh):
    fresh("""
    big = 64 << 20
    # Enough backlog that slot 0 is still busy when the next stream is made
    # (about 0.15 s on the host, 10 ms on an H200).
    copies = 24 if backend == "host" else 300
    def scenario(policy):
        d = hrx.Device.open(0, backend=backend)
        d.set_stream_queue_count(2)
        d.set_stream_queue_policy(policy)
        a, b = d.stream(), d.stream()
        src, dst = d.allocate(big), d.allocate(big)
        a.fill(src, 1)
        a.synchronize()
        for _ in range(copies):
            a.copy(dst, src)          # slot 0 busy; slot 1 idle
        busy = d.pool_stats()["queues"][0]["commands_in_flight"]
        c = d.stream()
        slot = c.queue_index
        d.synchronize()
        for s in (a, b, c):
            s.close()
        d.close()
        return slot, busy
    assert scenario("round_robin")[0] == 0
    slot, busy = scenario("least_loaded")
    assert busy > 0 and slot == 1, (slot, busy)
    """)


def test_pool_stats_count_at_publication(fresh):
    fresh("""
    d = hrx.Device.open(0, backend=backend)
    d.set_stream_queue_count(2)
    s, t = d.stream(), d.stream()
    fab = hrx.fabric.Queue(d)
    a, b = d.allocate(1 << 20), d.allocate(1 << 20)
    s.fill(a, 3)                       # 1 command, 1 MiB
    s.copy(b, a)                       # 1 command, 1 MiB
    s.upload(a[:256], bytes(256))      # 1 command, 256 B
    rb = s.read(a[:64])                # 1 command, 64 B
    t.wait_event(s.record_event())     # 1 command, 0 B (on t's queue)
    fab.copy(b, a)                     # outside the pool: not counted
    rb.wait()
    s.synchronize(); t.synchronize(); fab.synchronize()
    q0, q1 = d.pool_stats()["queues"]
    assert q0["commands_submitted"] == 4, q0
    assert q0["bytes_submitted"] == 2 * (1 << 20) + 256 + 64, q0
    assert q0["commands_in_flight"] == 0 and q0["bytes_in_flight"] == 0, q0
    assert q0["streams"] == 1 and q0["streams_assigned"] == 1, q0
    assert q1["commands_submitted"] == 1 and q1["bytes_submitted"] == 0, q1
    assert (q0["priority"], q0["slot"], q0["reserved"]) == ("normal", 0, False)
    # Failed commands are not published, so not counted.
    try:
        s.copy(a, a)
    except ValueError:
        pass
    assert d.pool_stats()["queues"][0]["commands_submitted"] == 4
    """)


def test_connection_budget_reported(fresh):
    fresh("""
    d = hrx.Device.open(0, backend=backend)
    budget = d.pool_stats()["connections"]
    assert budget["wanted"] == 8 * 3 + 4, budget
    d.set_stream_queue_count(16)
    budget = d.pool_stats()["connections"]
    assert budget["wanted"] == 16 * 3 + 4, budget
    report = {b["name"]: b for b in hrx.backends()}[backend]
    if backend == "host":
        # The host's connections are its engines.
        assert budget == {"variable": "HRX_HOST_ENGINES",
                          "value": d.info["engines"], "wanted": 52,
                          "source": "hrx"}, budget
        assert report["connections"] is None
    else:
        assert budget["variable"] in ("CUDA_DEVICE_MAX_CONNECTIONS",
                                      "GPU_MAX_HW_QUEUES"), budget
        assert report["connections"]["variable"] == budget["variable"]
    """)


def _nvidia() -> bool:
    return any(b["name"] == "hip" and b["available"] and
               b["platform"] == "nvidia" for b in hrx.backends())


@pytest.mark.skipif(not _nvidia(), reason="needs the hip backend on NVIDIA")
@pytest.mark.parametrize("user", [None, "8"])
def test_nvidia_budget_applied_before_the_context(user):
    # The CUDA context must not exist before the first queue; hrx asks for
    # the driver's maximum connections when it opens the device (right
    # before the runtime's first call, which starts the driver: a value set
    # after that has no effect), and a user's value is kept.
    env = {"HRX_CONNECTION_BUDGET_SET": ""}
    env["CUDA_DEVICE_MAX_CONNECTIONS"] = user or ""
    out = run_fresh("""
    import ctypes
    cuda = ctypes.CDLL("libcuda.so.1")
    def context_active():
        dev = ctypes.c_int()
        assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
        flags, active = ctypes.c_uint(), ctypes.c_int()
        assert cuda.cuDevicePrimaryCtxGetState(
            dev, ctypes.byref(flags), ctypes.byref(active)) == 0
        return bool(active.value)
    d = hrx.Device.open(0, backend="hip")   # the driver starts in here
    assert cuda.cuInit(0) == 0
    assert d.info["total_memory"] > 0
    d.set_stream_queue_count(16)
    assert not context_active(), "the context exists before the first queue"
    before = d.pool_stats()["connections"]
    s = d.stream(priority="high")
    assert context_active()
    after = d.pool_stats()["connections"]
    # os.environ is Python's copy from start-up; hrx sets the C environment.
    libc = ctypes.CDLL(None)
    libc.getenv.restype = ctypes.c_char_p
    variable = libc.getenv(b"CUDA_DEVICE_MAX_CONNECTIONS")
    print(before["source"], before["value"], after["source"], after["value"],
          variable.decode() if variable else "unset")
    """, backend="hip", env=env)
    before_source, before_value, source, value, variable = out.split()
    if user:
        assert (before_source, source, value, variable) == \
            ("user", "user", "8", "8"), out
    else:
        # Set when the device opens, before the runtime's first call.
        assert (before_source, before_value) == ("hrx", "32"), out
        assert (source, value, variable) == ("hrx", "32", "32"), out
