"""Facts of the host backend only (csrc/drivers/host/): its environment
variables, its queue limit and bounded rings, its device info. Everything
that needs a particular environment runs in a fresh process."""
from __future__ import annotations

import json

import pytest

import hrx


@pytest.fixture
def backend() -> str:
    """This module is about the host backend: every fixture built on
    `backend` (device, stream, fresh, ...) uses it."""
    return "host"


def test_host_is_always_available():
    host = next(r for r in hrx.backends() if r["name"] == "host")
    assert host["available"] is True and host["reason"] == ""


def test_host_device_info(device):
    info = device.info
    assert info["backend"] == "host"
    assert info["index"] == 0
    assert info["target"].startswith("host-")
    assert len(info["target"]) > len("host-")
    assert "host" in info["name"]
    assert info["runtime"]
    assert info["total_memory"] > 0
    assert isinstance(device.free_memory, int) and device.free_memory > 0
    assert "host" in repr(device)


def test_host_device_info_without_limits(fresh):
    out = fresh("""
        import json
        print(json.dumps(hrx.Device.open(0, backend=backend).info))
    """, env={"HRX_HOST_MAX_QUEUES": ""})
    info = json.loads(out)
    assert info["max_native_queues"] == 0


def test_host_device_count_from_environment(fresh):
    out = fresh("""
        d = hrx.Device.open(2, backend=backend)
        print(d.info["index"])
        try:
            hrx.Device.open(3, backend=backend)
        except hrx.OutOfRangeError as e:
            print("OutOfRangeError", e)
    """, env={"HRX_HOST_DEVICE_COUNT": "3"})
    lines = out.splitlines()
    assert lines[0] == "2"
    assert lines[1].startswith("OutOfRangeError") and "3 devices" in lines[1]


MAX_QUEUES = """
import json
dev = hrx.Device.open(0, backend=backend)
report = {"max_native_queues": dev.info["max_native_queues"]}
streams = [dev.stream(), dev.stream()]       # two pool queues: the limit
for label, make in [("pool stream", dev.stream),
                    ("fabric queue", lambda: hrx.fabric.Queue(dev))]:
    try:
        make()
        report[label] = None
    except hrx.Error as e:
        report[label] = [type(e).__name__, str(e)]
# The streams that exist still work.
buf = dev.allocate(64)
streams[1].fill(buf, 5)
report["data"] = streams[1].read(buf).wait().tolist()
print(json.dumps(report))
"""


def test_host_max_queues_refuses_more_native_queues(fresh):
    out = fresh(MAX_QUEUES, env={"HRX_HOST_MAX_QUEUES": "2"})
    report = json.loads(out)
    assert report["max_native_queues"] == 2
    for label in ("pool stream", "fabric queue"):
        name, message = report[label]
        assert name == "ResourceExhaustedError", (label, message)
        assert "HRX_HOST_MAX_QUEUES" in message
        assert "limit of 2" in message
    assert report["data"] == [5] * 64
    assert issubclass(hrx.ResourceExhaustedError, RuntimeError)


def test_host_max_queues_counts_live_fabric_queues(fresh):
    """A closed fabric queue gives its native queue back."""
    out = fresh("""
        dev = hrx.Device.open(0, backend=backend)
        first = hrx.fabric.Queue(dev)
        try:
            hrx.fabric.Queue(dev)
            print("second accepted")
        except hrx.ResourceExhaustedError:
            print("second refused")
        first.close()
        again = hrx.fabric.Queue(dev)
        buf = dev.allocate(8)
        again.fill(buf, 3)
        print(again.read(buf).wait().tolist())
    """, env={"HRX_HOST_MAX_QUEUES": "1"})
    assert out.splitlines() == ["second refused", str([3] * 8)]


def test_host_max_queues_with_a_pool_that_fits(fresh):
    out = fresh("""
        dev = hrx.Device.open(0, backend=backend)
        dev.set_stream_queue_count(2)
        streams = [dev.stream() for _ in range(10)]
        bufs = [dev.allocate(4096) for _ in streams]
        for i, (s, b) in enumerate(zip(streams, bufs)):
            s.fill(b, i)
        ok = all(np.all(s.read(b).wait() == i)
                 for i, (s, b) in enumerate(zip(streams, bufs)))
        print(ok, dev.pool_info()["queues_created"])
    """, env={"HRX_HOST_MAX_QUEUES": "2"})
    assert out.split() == ["True", "2"]


# Threads in the snippets below report progress with tick(); the main thread
# gives up once no thread has made progress for STALL seconds (a deadlock
# guard, never an assertion on speed: a healthy run never stalls that long).
THREADS_PRELUDE = """
import os, threading, time
STALL = 3.0
progress = [0]

def tick():
    progress[0] += 1

def run_threads(worker, n):
    errors = []
    def run(t):
        try:
            worker(t)
        except BaseException as e:
            errors.append(repr(e))
    threads = [threading.Thread(target=run, args=(t,), daemon=True)
               for t in range(n)]
    for th in threads:
        th.start()
    seen, since = -1, time.monotonic()
    while any(th.is_alive() for th in threads):
        if progress[0] != seen:
            seen, since = progress[0], time.monotonic()
        elif time.monotonic() - since > STALL:
            print("stuck: producers wait forever")
            sys.stdout.flush()
            os._exit(0)
        time.sleep(0.01)
    return errors
"""

SHARED_QUEUE_PRODUCERS = THREADS_PRELUDE + """
dev = hrx.Device.open(0, backend=backend)
dev.set_stream_queue_count(1)
n_threads, rounds, chunk = 3, 300, 256
streams = [dev.stream() for _ in range(n_threads)]   # one native queue
outs = [dev.allocate(rounds * chunk) for _ in range(n_threads)]
scratch = [dev.allocate(chunk) for _ in range(n_threads)]
barrier = threading.Barrier(n_threads)

def worker(t):
    barrier.wait()
    for r in range(rounds):
        streams[t].fill(scratch[t], (r + t) % 256)
        streams[t].copy(outs[t].slice(r * chunk, chunk), scratch[t])
        tick()

errors = run_threads(worker, n_threads)
dev.synchronize()
for t in range(n_threads):
    got = streams[t].read(outs[t]).wait().reshape(rounds, chunk)
    want = ((np.arange(rounds) + t) % 256).astype(np.uint8)[:, None]
    if not np.array_equal(got, np.broadcast_to(want, got.shape)):
        errors.append("commands of stream %d were dropped" % t)
print("ok" if not errors else errors)
"""

SMALL_RINGS = THREADS_PRELUDE + """
dev = hrx.Device.open(0, backend=backend)
dev.set_stream_queue_count(2)
n_threads, rounds, size = 4, 400, 4096
events, lock = {}, threading.Lock()
barrier = threading.Barrier(n_threads)
mismatches = []

def worker(t):
    s = hrx.fabric.Queue(dev) if t == 0 else dev.stream()
    bufs = [dev.allocate(size) for _ in range(2)]
    model = [np.zeros(size, np.uint8) for _ in range(2)]
    for b in bufs:
        s.fill(b, 0)
    rng = np.random.default_rng(t)
    pending = []
    barrier.wait()
    for r in range(rounds):
        i = r % 2
        op = rng.integers(5)
        if op == 0:
            v = int(rng.integers(256))
            s.fill(bufs[i], v)
            model[i][:] = v
        elif op == 1:
            data = rng.integers(0, 256, size, dtype=np.uint8)
            s.upload(bufs[i], data)
            model[i][:] = data
        elif op == 2:
            s.copy(bufs[i], bufs[1 - i])
            model[i][:] = model[1 - i]
        elif op == 3:
            pending.append((s.read(bufs[i]), model[i].copy()))
        else:
            # Waits on other threads' published work: more commands in the
            # tiny rings, and cross-queue waits while producers block.
            with lock:
                events[t] = s.record_event()
                others = [e for k, e in events.items() if k != t]
            for e in others:
                s.wait_event(e)
        tick()
    for rb, expected in pending:
        if not np.array_equal(rb.wait(), expected):
            mismatches.append(t)
    for b, expected in zip(bufs, model):
        if not np.array_equal(s.read(b).wait(), expected):
            mismatches.append(t)
    s.synchronize()

errors = run_threads(worker, n_threads) + mismatches
dev.synchronize()
print("ok" if not errors else errors)
"""

# Regression: hrx_host_queue_submit once kept the ticket it read before
# waiting for space, so two producers on one queue could take the same ring
# slot (a dropped command) or wait forever on a stale ticket (fixed in
# 76408fd, "re-read the tail after waiting for ring space").


def test_host_shared_queue_producers_never_drop_commands(fresh):
    """Three streams on one native queue, one thread each, rings of 2: every
    command of every producer runs, in each producer's order."""
    out = fresh(SHARED_QUEUE_PRODUCERS, env={"HRX_HOST_RING_CAPACITY": "2"})
    assert out.strip() == "ok"


def test_host_ring_capacity_two_completes_every_command(fresh):
    """Rings of 2 commands, four threads on pool streams and a fabric queue,
    with events between them: producers wait for space and never drop; every
    byte ends up right. Spin 0 makes every idle worker park, exercising the
    wake-ups."""
    out = fresh(SMALL_RINGS, env={"HRX_HOST_RING_CAPACITY": "2",
                                  "HRX_HOST_ENGINE_SPIN_US": "0"})
    assert out.strip() == "ok"


def test_host_ring_capacity_two_single_producer_per_queue(fresh):
    """One producer per native queue: a full ring of 2 only makes it wait;
    every command runs, in order, also with workers that never spin."""
    out = fresh(THREADS_PRELUDE + """
        dev = hrx.Device.open(0, backend=backend)
        dev.set_stream_queue_count(2)
        streams = [dev.stream(), dev.stream(), hrx.fabric.Queue(dev)]
        chunk, rounds = 512, 300
        scratch = [dev.allocate(chunk) for _ in streams]
        outs = [dev.allocate(chunk * rounds) for _ in streams]

        def worker(t):
            s = streams[t]
            for i in range(rounds):
                s.fill(scratch[t], (i + t) % 256)
                s.copy(outs[t].slice(i * chunk, chunk), scratch[t])
                if i % 50 == 0:
                    s.wait_event(streams[(t + 1) % 3].record_event())
                tick()

        errors = run_threads(worker, len(streams))
        for t, s in enumerate(streams):
            want = np.repeat((np.arange(rounds) + t) % 256, chunk)
            if not np.array_equal(s.read(outs[t]).wait(),
                                  want.astype(np.uint8)):
                errors.append(t)
        print("ok" if not errors else errors)
    """.replace("\n        ", "\n"), env={"HRX_HOST_RING_CAPACITY": "2",
                                        "HRX_HOST_ENGINE_SPIN_US": "0"})
    assert out.strip() == "ok"


# ------------------------------------------------------------------ engines

def test_host_engines_default_to_the_usable_cpus(fresh):
    out = fresh("""
        import json
        d = hrx.Device.open(0, backend=backend)
        print(json.dumps([d.info, d.pool_stats()["connections"],
                          len(os.sched_getaffinity(0))]))
    """, env={"HRX_HOST_ENGINES": ""})
    info, budget, cpus = json.loads(out)
    assert info["engines"] == cpus
    assert f"{cpus} engine" in info["runtime"]
    assert budget["variable"] == "HRX_HOST_ENGINES"
    assert budget["value"] == cpus and budget["source"] == "hrx"


def test_host_engines_from_environment(fresh):
    out = fresh("""
        import json
        d = hrx.Device.open(0, backend=backend)
        print(json.dumps([d.info["engines"], d.pool_stats()["connections"]]))
    """, env={"HRX_HOST_ENGINES": "3"})
    engines, budget = json.loads(out)
    assert engines == 3
    assert budget["value"] == 3 and budget["source"] == "user"


@pytest.mark.parametrize("name, value, message", [
    ("HRX_HOST_ENGINES", "0",
     "HRX_HOST_ENGINES must be an integer from 1 to 1024, got '0'"),
    ("HRX_HOST_ENGINES", "many", "got 'many'"),
    ("HRX_HOST_ENGINE_SPIN_US", "2000000",
     "HRX_HOST_ENGINE_SPIN_US must be an integer from 0 to 1000000"),
    ("HRX_HOST_RING_CAPACITY", "1", "HRX_HOST_RING_CAPACITY must be"),
    ("HRX_HOST_MAX_QUEUES", "-2", "HRX_HOST_MAX_QUEUES must be"),
    ("HRX_HOST_SPIN_US", "50",
     "HRX_HOST_SPIN_US is no longer read by the host backend; use "
     "HRX_HOST_ENGINE_SPIN_US"),
])
def test_host_variables_are_refused_with_their_name(fresh, name, value,
                                                    message):
    out = fresh("""
        try:
            hrx.Device.open(0, backend=backend)
            print("opened")
        except ValueError as e:
            print(type(e).__name__, e)
    """, env={name: value})
    assert out.startswith("InvalidArgumentError "), out
    assert message in out, out


def test_host_device_count_is_refused_with_its_name(fresh):
    out = fresh("""
        host = {b["name"]: b for b in hrx.backends()}["host"]
        print(host["available"], host["reason"])
    """, env={"HRX_HOST_DEVICE_COUNT": "lots"})
    assert out.strip() == ("False HRX_HOST_DEVICE_COUNT must be an integer "
                           "from 1 to 64, got 'lots'")


def test_host_callback_waiting_on_another_queue_does_not_stall(fresh):
    """With one engine, a graph callback polls an event that only another
    queue's callback completes: its engine is handed to another thread
    while it blocks, so the device does not deadlock."""
    out = fresh("""
        import time
        d = hrx.Device.open(0, backend=backend)
        d.set_stream_queue_count(2)
        s1, s2 = d.stream(), d.stream()
        assert s1.queue_index != s2.queue_index
        shared = {}
        def poll():
            deadline = time.monotonic() + 20
            while "event" not in shared or not shared["event"].query():
                if time.monotonic() > deadline:
                    shared["stalled"] = True
                    return
                time.sleep(0.001)
        waiting = hrx.Graph(d)
        waiting.callback(poll)
        releasing = hrx.Graph(d)
        releasing.callback(lambda: shared.setdefault("released", True))
        first = waiting.launch(s1)
        second = releasing.launch(s2)
        shared["event"] = s2.record_event()
        assert first.wait(60) and second.wait(60)
        print(shared.get("released"), shared.get("stalled", False))
    """, env={"HRX_HOST_ENGINES": "1"})
    assert out.split() == ["True", "False"]
