"""Pieces of the programs that transfer tests run in fresh interpreters
(conftest.run_fresh), shared so that each is written once.

Each piece is indented like the test files' triple-quoted snippets (eight
spaces), which run_fresh dedents together with them.
"""
from __future__ import annotations

import textwrap

# live(): the native objects the testing build counts, of the kinds a
# transfer makes; NOTHING: what is left once everything is closed.
LIVE_OBJECTS = textwrap.indent("""
def live():
    c = hrx._hrx._testing_live_native_objects()
    return {k: c[k] for k in ("queues", "events", "allocations",
                              "host_allocations", "devices")}
NOTHING = dict(queues=0, events=0, allocations=0, host_allocations=0,
               devices=0)
""", " " * 8)

# message(call): the "Type: text" of the hrx.DeviceError that call() raises;
# fails the program when it raises none.
DEVICE_ERROR_MESSAGE = textwrap.indent("""
def message(call):
    try:
        call()
    except hrx.DeviceError as e:
        return type(e).__name__ + ": " + str(e)
    raise AssertionError("did not fail")
""", " " * 8)


def failing_read(length: int, read: str,
                 out: str = "np.zeros(n, np.uint8)") -> str:
    """A program that reads `length` bytes of 4s with `read` (an expression
    of `s`, the device buffer `a` and the zeroed host array `out`, made by
    the expression `out` of `dev` and `n`) while HRX_FAULTS fails the
    fourth download call: the failure is raised by the read's wait, or by
    the call where the call itself published that chunk, as an unpaced
    read's would; nothing writes `out` after the raise; the stream is not
    failed, and nothing is left once all is closed. Prints "ok"."""
    return LIVE_OBJECTS + DEVICE_ERROR_MESSAGE + f"""
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        n = {length}
        a = dev.allocate(n)
        s.upload(a, np.full(n, 4, np.uint8))
        out = {out}
        out[:] = 0
        try:
            r = {read}
        except hrx.DeviceError as e:   # published by the call itself
            m = type(e).__name__ + ": " + str(e)
        else:
            m = message(r.wait)
            r.close()
        assert "injected fault: download call #4" in m, m
        landed = out.copy()
        assert set(np.unique(out)) <= {{0, 4}}
        assert (s.read(a).wait() == 4).all()   # the stream did not fail
        dev.synchronize()
        assert (out == landed).all()           # nothing landed after it
        del out
        for obj in (s, a, dev):
            obj.close()
        assert live() == NOTHING, live()
        print("ok")
"""


def open_refused(fresh, env: dict) -> str:
    """The text of the hrx.InvalidArgumentError that Device.open raises in
    a fresh interpreter with `env` (a malformed variable); fails the test
    when the device opens."""
    out = fresh("""
        try:
            hrx.Device.open(0, backend=backend)
        except hrx.InvalidArgumentError as e:
            print("refused:", str(e))
        else:
            print("opened")
    """, env=env)
    assert out.startswith("refused: "), out
    return out[len("refused: "):].strip()
