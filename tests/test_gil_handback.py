"""A call that needs no wait keeps the GIL; one that waits gets it back as
soon as its wait is over, not a switch interval later.

A thread that gives the GIL away must take it back from whichever thread
has it, and a thread that keeps running Python lets it go only when
CPython forces a switch, after the switch interval (set to 2 s here, so
that a call that is not handed the GIL back after its wait takes seconds
instead of microseconds):
- every call that needs no wait (synchronize of an idle stream,
  record_event, query, reads that are done) keeps the GIL
  (csrc/python/submit.h), which the testing build's count of GIL releases
  shows;
- beside a thread that keeps the GIL between hrx calls (polling query()
  or submitting, never waiting), a call that waits (synchronize of a
  backlog) is handed the GIL at that thread's next call (wait.h).
A regression test with a generous bound on the median call, not a
measurement: bench/scripts/call_latency_tail.py measures the tail.
"""
from __future__ import annotations

import json
import os

import pytest

from conftest import run_fresh

BOUND_S = 0.5

PRELUDE = """
    import json, sys, threading, time
    dev = hrx.Device.open(0, backend=backend, batching=BATCHING)
    dev.set_stream_queue_count(3)
    other, idle, mine = dev.stream(), dev.stream(), dev.stream()
    small, buf = dev.allocate(4096), dev.allocate(4096)
    big = [dev.allocate(16 << 20) for _ in range(2)]
    for b in (small, buf, big[0], big[1]):
        idle.fill(b, 1)
    idle.synchronize()
    idle.read(buf).wait()                     # staging, events: warm
    stop = threading.Event()

    def timed(calls):
        # The median of 5 calls: without the rule every call takes the
        # switch interval; with it, a hand-over the scheduler delays (a
        # loaded machine) costs one call, which the benchmark's tail shows.
        took = {}
        for name, call in calls.items():
            times = []
            for _ in range(5):
                t0 = time.monotonic()
                call()
                times.append(time.monotonic() - t0)
            took[name] = sorted(times)[2]
        return took

    def beside(loop, calls):
        ran = [0]
        go = threading.Event()
        def run():
            go.wait()
            while not stop.is_set():
                loop()
                ran[0] += 1
        thread = threading.Thread(target=run)
        thread.start()
        # Set while the thread waits for `go`, not for the GIL: it then
        # waits for the GIL that long too, and never forces a switch on
        # this thread (which no hand-over could undo).
        sys.setswitchinterval(2.0)
        go.set()                              # it runs at this thread's waits
        took = timed(calls)
        stop.set()
        thread.join()
        sys.setswitchinterval(0.005)
        stop.clear()
        assert ran[0] > 0, "the other thread never ran"
        return took
"""


def _run(backend: str, batching: str, body: str) -> dict:
    code = (PRELUDE + body).replace("BATCHING", str(batching == "on"))
    out = run_fresh(code, backend=backend, timeout=300)
    return json.loads(out.strip().splitlines()[-1])


def _assert_quick(took: dict) -> None:
    slow = {name: f"{s:.3f} s" for name, s in took.items() if s >= BOUND_S}
    assert not slow, f"calls waited for the GIL: {slow}"


@pytest.mark.parametrize("batching", ["on", "off"])
def test_calls_that_need_no_wait_keep_the_gil(backend, batching):
    """The testing build counts every call that released the GIL, with the
    core's reason: calls on an idle stream and on finished work never do;
    a synchronize that has to wait does (so the count is live). A short
    release is often not even noticed (the releasing thread takes the GIL
    back before another wakes), so the count, not a clock, is checked."""
    took = _run(backend, batching, """
    counts = hrx._hrx._testing_submissions_released_gil
    done = idle.read(buf)
    done.wait()
    ev = idle.record_event()
    ev.synchronize()
    before = counts()
    for _ in range(20):
        idle.synchronize()
        idle.record_event()
        idle.query()
        idle.record_event().synchronize()
        done.wait()
        ev.synchronize()
        other.fill(small, 3)                  # submissions: no wait either
        other.flush()
    quiet = {f"{k}: {r}": n - before.get((k, r), 0)
             for (k, r), n in counts().items() if n != before.get((k, r), 0)}
    for _ in range(8):
        mine.copy(big[1], big[0])
    mine.synchronize()                        # it has to wait
    after = counts()
    waited = sum(n for (k, r), n in after.items() if k == "synchronize") - \
        sum(n for (k, r), n in before.items() if k == "synchronize")
    print(json.dumps({"quiet": quiet, "waited": waited}))
    """)
    assert took["quiet"] == {}, took["quiet"]
    assert took["waited"] == 1, took


# A timing regression test: under the sanitizer run's instrumented build the
# threads' schedule differs enough that a hand-over is sometimes missed by
# the time the waiter asks for the GIL, and the call then waits the 2 s
# switch interval; the ordinary build runs it (make test, the H200's
# conformance stage), and call_latency_tail.py measures the tail.
@pytest.mark.skipif(bool(os.environ.get("HRX_EXPECT_SANITIZED")),
                    reason="timing-dependent; run by the unsanitized build")
@pytest.mark.parametrize("poller", ["query", "fill"])
@pytest.mark.parametrize("batching", ["on", "off"])
def test_a_wait_gets_the_gil_back_from_a_thread_that_keeps_it(
        backend, batching, poller):
    _assert_quick(_run(backend, batching, """
    loops = {"query": other.query, "fill": lambda: other.fill(small, 2)}
    def backlog_sync():
        # About 30 ms of copies, waited for with the GIL released.
        for _ in range(8):
            mine.copy(big[1], big[0])
        mine.synchronize()
    took = beside(loops[POLLER], {
        "synchronize (after a wait)": backlog_sync,
        "read_blocking (after a wait)": lambda: (
            mine.copy(big[1], big[0]),
            mine.read_blocking(buf, np.zeros(4096, np.uint8))),
    })
    print(json.dumps(took))
    """.replace("POLLER", repr(poller))))
