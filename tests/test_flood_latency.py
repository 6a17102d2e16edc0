"""A call on a stream that another thread floods waits at most about one
command, never for the flood.

One thread keeps a stream's host queue full (fill, fill, a 32 MiB copy, in
a loop); another calls record_event, read (not waited), fill and flush on
the same stream every 2 ms. Each of those may have to wait for a slot in
the full ring, or for the flooding thread's publication that waits for one:
waiting producers are served in turn (host_queue.h), so a call waits for a
few commands to run, never for half the ring to drain (512 commands at the
ring capacity used here). The copies are large enough to be batched
(HRX_BATCH_MAX_COPY_BYTES), so that with batching on every publication of
the flooding thread is a batch that the observation points must wait for.

The wait is counted in commands the queue completed while the call was
made (the pool's counters), not in seconds: on a loaded machine a copy
takes many times longer and a fair wait of a few commands can last most of
a second, while an unfair one is hundreds of commands however fast the
machine. Each batching setting runs in a fresh process with a timeout.
This is a regression test, not a measurement:
bench/scripts/call_latency_tail.py measures the tail.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

RING_CAPACITY = 1024
# A drain of half the ring is the stall; a fair wait is a few commands (a
# few dozen were seen with the CPU oversubscribed three times over).
BOUND_COMMANDS = RING_CAPACITY // 8

CHILD = textwrap.dedent("""
    import json, os, sys, threading, time
    import hrx

    batching = sys.argv[1] == "on"
    size = 32 << 20
    dev = hrx.Device.open(0, backend="host", batching=batching)
    s = dev.stream()
    a, b = dev.allocate(size), dev.allocate(size)
    small = dev.allocate(4096)
    for buf in (a, b, small):
        s.fill(buf, 1)
    s.synchronize()  # pages touched: the copies run at memcpy speed
    stop = False
    def flood():
        while not stop:
            s.fill(small[:64], 1); s.fill(small[:64], 2); s.copy(b, a)
    threading.Thread(target=flood, daemon=True).start()
    time.sleep(0.2)  # the ring fills
    kept = []  # a dropped Readback would wait for its read
    calls = {
        "record_event": s.record_event,
        "read": lambda: kept.append(s.read(small[64:128])),
        "fill": lambda: s.fill(small[128:], 3),
        "flush": s.flush,
    }
    def completed():
        # Commands the pool's queues have run so far.
        return sum(q["commands_submitted"] - q["commands_in_flight"]
                   for q in dev.pool_stats()["queues"])
    worst = {}
    for name, call in calls.items():
        waits = []
        end = time.monotonic() + 0.6
        while time.monotonic() < end:
            before = completed()
            t0 = time.perf_counter()
            call()
            seconds = time.perf_counter() - t0
            waits.append((completed() - before, seconds))
            time.sleep(0.002)
        commands, seconds = max(waits)
        worst[name] = [commands, seconds, len(waits)]
    print(json.dumps(worst), flush=True)
    os._exit(0)  # leave the backlog: draining it proves nothing here
""")


@pytest.mark.parametrize("batching", ["on", "off"])
def test_calls_beside_a_flooding_thread_wait_their_turn(batching):
    env = dict(os.environ, HRX_BATCH_MAX_COPY_BYTES=str(64 << 20),
               HRX_HOST_RING_CAPACITY=str(RING_CAPACITY))
    result = subprocess.run([sys.executable, "-c", CHILD, batching],
                            capture_output=True, text=True, timeout=60,
                            env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    worst = json.loads(result.stdout)
    slow = {name: f"waited for {commands} commands ({seconds:.3f} s), the "
                  f"worst of {count} calls"
            for name, (commands, seconds, count) in worst.items()
            if commands > BOUND_COMMANDS}
    assert not slow, f"calls beside a flooding thread stalled: {slow}"
