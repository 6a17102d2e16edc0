"""Conformance: kernel launches gathered into batches (docs/batching.md,
"Kernel launches"; docs/kernels.md).

Launches that come while their stream has work queued join the stream's
pending batch, like small copies, and a batch of them is one call of the
driver's launch_batch (hip: a native graph launch); HRX_BATCH_LAUNCHES=0
or batching off gives one native call per launch. Every rule of a launch
holds either way: order with copies, fills and events, argument values
taken at the call, kernels and buffers released right after the call, a
refused launch inside a batch named with what did not run. The Makefile
runs this file again with HRX_BATCHING=0.
"""
from __future__ import annotations

import gc
import json
import os

import numpy as np
import pytest

import hrx
import hrx.fabric
from kernel_sources import compile_kernel

# A first launch that keeps the queue busy for a while, so that the launches
# after it find work queued and are gathered.
BUSY_SPINS = 2_000_000


def _pythonpath() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    return os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), here)
                           if p)


def busy(device, stream, spins=BUSY_SPINS):
    """Queues a slow kernel on `stream`; returns the buffer it writes."""
    out = device.allocate(4)
    stream.launch(compile_kernel(device, "slow_write"), 1, 1,
                  (out, np.uint32(7), np.uint64(spins)))
    return out


COUNT_CALLS = """
from kernel_sources import compile_kernel
dev = hrx.Device.open(0, backend=backend)
slow, add = compile_kernel(dev, "slow_write"), compile_kernel(dev, "add_one")
s = dev.stream()
flag, b = dev.allocate(4), dev.allocate(64)
s.fill(b, 0)
s.synchronize()
def calls():
    return hrx._hrx._testing_live_native_objects()["native_commands"]
def gathered():
    queues = dev.pool_stats()["queues"]
    return (sum(q["batches_published"] for q in queues),
            sum(q["commands_batched"] for q in queues))
before, runs_before = calls(), gathered()
s.launch(slow, 1, 1, (flag, np.uint32(1), np.uint64(2_000_000)))
for _ in range(100):
    s.launch(add, 1, 64, (b, 64))
s.synchronize()
assert set(s.read(b).wait()) == {100}
runs, batched = (a - b for a, b in zip(gathered(), runs_before))
print(calls() - before, runs, batched, dev.info["launch_publication"])
"""


@pytest.mark.parametrize("setting", ["default", "HRX_BATCH_LAUNCHES=0",
                                     "HRX_BATCHING=0"])
def test_launches_behind_queued_work_go_out_in_batches(fresh, setting):
    """101 launches: gathered, they take two driver calls (the first launch
    alone, on the idle stream, then one batch, published by the
    synchronize: the batch delay is long, so that the flusher does not
    publish it earlier, however slowly the launches come); with launch
    batching or all batching off, one call each (counted by the fault
    wrapper, which injects nothing here). pool_stats counts the gathered
    run and its launches, and nothing gathered with batching off."""
    env = {"HRX_FAULTS": "none", "HRX_BATCH_DELAY_US": "10000000",
           "PYTHONPATH": _pythonpath()}
    if setting != "default":
        name, value = setting.split("=")
        env[name] = value
    if os.environ.get("HRX_BATCHING") == "0" and setting == "default":
        env["HRX_BATCHING"] = "1"   # this case is about batching on
    calls, runs, batched, description = fresh(COUNT_CALLS,
                                              env=env).split(" ", 3)
    if setting == "default":
        assert int(calls) == 2, (calls, description)
        assert (int(runs), int(batched)) == (1, 100), (runs, batched)
        assert description.startswith("gathered"), description
    else:
        assert int(calls) == 101, (calls, description)
        assert (int(runs), int(batched)) == (0, 0), (runs, batched)
        if setting == "HRX_BATCH_LAUNCHES=0":
            assert "HRX_BATCH_LAUNCHES=0" in description, description


def test_a_malformed_launch_setting_is_refused_at_open(fresh):
    out = fresh("""
        try:
            hrx.Device.open(0, backend=backend)
        except hrx.InvalidArgumentError as e:
            assert "HRX_BATCH_LAUNCHES" in str(e), str(e)
            print("refused")
    """, env={"HRX_BATCH_LAUNCHES": "2"})
    assert out.strip() == "refused"


def test_argument_values_are_taken_at_the_call(device, stream):
    """Gathered launches keep their own copies of the arguments: each of
    these writes the value it was given, not the last one."""
    k = compile_kernel(device, "slow_write")
    outs = device.allocate(4 * 64)
    busy(device, stream)
    value = np.zeros(1, np.uint32)
    for i in range(64):
        value[0] = i * 3
        stream.launch(k, 1, 1, (outs[4 * i:4 * i + 4], value[0], np.uint64(1)))
    got = stream.read(outs).wait().view(np.uint32)
    assert (got == np.arange(64, dtype=np.uint32) * 3).all(), got


def test_order_with_copies_fills_and_events(device, stream):
    """Launches, fills and copies gathered together run in their order, and
    an event recorded after them orders another stream's work."""
    add = compile_kernel(device, "add_one")
    a, b = device.allocate(64), device.allocate(64)
    busy(device, stream)
    stream.fill(a, 10)
    for _ in range(5):
        stream.launch(add, 1, 64, (a, 64))       # a = 15
    stream.copy(b, a)                            # b = 15
    stream.launch(add, 1, 64, (b, 64))           # b = 16
    stream.fill(a[:32], 1)
    stream.launch(add, 1, 64, (a, 64))           # a = 2 | 16
    done = stream.record_event()
    other = device.stream()
    other.wait_event(done)
    other.launch(add, 1, 64, (b, 64))            # b = 17
    assert set(other.read(b).wait()) == {17}
    got = stream.read(a).wait()
    assert set(got[:32]) == {2} and set(got[32:]) == {16}, got


def test_a_kernel_and_buffers_released_right_after_gathered_launches(
        device, stream):
    k = compile_kernel(device, "slow_write")
    keep = device.allocate(4 * 8)
    busy(device, stream)
    for i in range(8):
        out = device.allocate(4)
        stream.launch(k, 1, 1, (out, np.uint32(i + 1), np.uint64(1000)))
        stream.copy(keep[4 * i:4 * i + 4], out)
        del out
    k.close()
    del k
    gc.collect()
    got = stream.read(keep).wait().view(np.uint32)
    assert (got == np.arange(1, 9, dtype=np.uint32)).all(), got


def test_launches_keep_their_lane_and_reserved_queue(device):
    add = compile_kernel(device, "add_one")
    for s in (hrx.fabric.Queue(device), device.stream(priority="high"),
              device.stream(priority="low"), device.stream(reserve=True)):
        b = device.allocate(64)
        s.fill(b, 0)
        busy(device, s)
        for _ in range(40):
            s.launch(add, 1, 64, (b, 64))
        assert set(s.read(b).wait()) == {40}
        s.close()


def test_a_refused_launch_inside_a_batch_is_named(fresh):
    """The fault wrapper refuses the fourth launch, which waits in a batch
    behind a busy queue: the stream's next observation names that launch
    and what did not run, the launches before it ran, and the stream works
    again afterwards, as with batching off (test_kernel_launch.py)."""
    out = fresh("""
        from kernel_sources import compile_kernel
        dev = hrx.Device.open(0, backend=backend)
        slow, add = (compile_kernel(dev, "slow_write"),
                     compile_kernel(dev, "add_one"))
        s = dev.stream()
        flag, b = dev.allocate(4), dev.allocate(64)
        s.fill(b, 0)
        s.launch(slow, 1, 1, (flag, np.uint32(1), np.uint64(2_000_000)))
        for _ in range(6):
            s.launch(add, 1, 64, (b, 64))    # launch calls #2 .. #7
        s.fill(b[:8], 9)
        try:
            s.synchronize()
        except hrx.DeviceError as e:
            message = str(e)
        else:
            raise AssertionError("the refused launch was not reported")
        assert "(kernel launch) failed" in message, message
        assert "injected fault: launch call #4" in message, message
        assert "4 later commands of this stream were not run" in message, (
            message)
        assert set(s.read(b).wait()) == {2}, "launches #2 and #3 ran"
        s.launch(add, 1, 64, (b, 64))
        assert set(s.read(b).wait()) == {3}
        print("ok")
    """, env={"HRX_FAULTS": "launch:4", "HRX_BATCHING": "1",
              "PYTHONPATH": _pythonpath()})
    assert out.strip() == "ok"


def test_the_device_says_how_launches_are_published(device):
    text = device.info["launch_publication"]
    assert text, "launch_publication is empty"
    if device.batching and os.environ.get("HRX_BATCH_LAUNCHES") != "0":
        expected = ("gathered" if device.info["platform"] != "amd"
                    else "one native launch each")
        assert text.startswith(expected), text


def test_bad_launches_are_refused_before_anything_is_queued(device, stream):
    add = compile_kernel(device, "add_one")
    b = device.allocate(64)
    stream.fill(b, 0)
    busy(device, stream)
    for _ in range(3):
        stream.launch(add, 1, 64, (b, 64))
    with pytest.raises(hrx.InvalidArgumentError):
        stream.launch(add, 0, 64, (b, 64))
    if add.attributes["param_count"] is not None:
        with pytest.raises(hrx.InvalidArgumentError):
            stream.launch(add, 1, 64, (b,))
    stream.launch(add, 1, 64, (b, 64))
    assert set(stream.read(b).wait()) == {4}


def test_a_full_batch_is_published_without_the_gil(fresh):
    """Launching keeps the GIL (the call does not wait), except to publish
    a batch the launch filled: one release per full batch, none per launch.
    The batch delay is long, so that only full batches and the final read
    publish (the flusher would otherwise publish batches before they fill,
    depending on how fast the launches come)."""
    out = fresh("""
        import json
        from kernel_sources import compile_kernel
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        add = compile_kernel(dev, "add_one")
        b = dev.allocate(64)
        s.fill(b, 0)
        s.synchronize()

        def releases():
            return {reason: n for (kind, reason), n in
                    hrx._hrx._testing_submissions_released_gil().items()
                    if kind == "kernel_launch"}

        before = releases()
        launches = 1000
        for _ in range(launches):
            s.launch(add, 1, 64, (b, 64))
        assert set(s.read(b).wait()) == {launches % 256}
        after = releases()
        print(json.dumps({k: after.get(k, 0) - before.get(k, 0)
                          for k in after},
                         sort_keys=True))
        print(dev.batching and "gathered" in dev.info["launch_publication"])
    """, env={"HRX_BATCH_DELAY_US": "10000000",
              "PYTHONPATH": _pythonpath()})
    counts_line, gathered = out.strip().splitlines()[-2:]
    released = json.loads(counts_line)
    full = released.pop("full batch", 0)
    if gathered == "True":
        # The first launch goes out alone (the thread had just waited); the
        # others fill batches of HRX_BATCH_MAX_COMMANDS.
        assert full == (1000 - 1) // 160, (full, released)
    else:
        assert full == 0, released
    # Other releases: only one-time preparation (a graph per batch size on a
    # GPU), never one per launch.
    assert sum(released.values()) <= 10, released
