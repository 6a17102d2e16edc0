"""The same random programs under the same fault schedule, run once with
submission batching on and once with it off: the failures observed (which
call raised what) and every byte read must be identical, because a failed
command fails its stream the same way in both modes (hrx.h, "Failures").
One stream, so the fault wrapper numbers the native calls in the same
order in both runs."""
from __future__ import annotations

import json

import pytest

PROGRAM = """
import json, random
rng = random.Random(SEED)
dev = hrx.Device.open(0, backend=backend)
s = dev.stream()
bufs = [dev.allocate(256) for _ in range(4)]
while True:   # defined bytes first (the schedule may fail these too)
    try:
        for k, buf in enumerate(bufs):
            s.fill(buf, k)
        s.synchronize()
        break
    except hrx.Error:
        pass
log = []
def step(i, name, call):
    try:
        result = call()
    except hrx.Error as e:
        log.append([i, name, type(e).__name__, str(e)])
        return None
    log.append([i, name, "ok"])
    return result
for i in range(400):
    a, b = rng.sample(range(4), 2)
    op = rng.randrange(9)
    if op == 0:
        step(i, "copy", lambda: s.copy(bufs[a], bufs[b]))
    elif op == 1:
        step(i, "fill", lambda: s.fill(bufs[a], rng.randrange(256)))
    elif op == 2:
        data = bytes(rng.randrange(256) for _ in range(256))
        step(i, "upload", lambda: s.upload(bufs[a], data))
    elif op == 3:
        got = step(i, "read_blocking",
                   lambda: s.read_blocking(bufs[a], np.zeros(256, np.uint8)))
        if got is not None:
            log.append([i, "bytes", got.tolist()])
    elif op == 4:
        r = step(i, "read", lambda: s.read(bufs[a]))
        if r is not None:
            got = step(i, "wait", r.wait)
            if got is not None:
                log.append([i, "bytes", got.tolist()])
            r.close()
    elif op == 5:
        step(i, "synchronize", s.synchronize)
    elif op == 6:
        ev = step(i, "record_event", s.record_event)
        if ev is not None:
            step(i, "wait_event", lambda: s.wait_event(ev))
            ev.close()
    elif op == 7:
        step(i, "flush", s.flush)
    else:
        step(i, "device synchronize", dev.synchronize)
step(400, "synchronize", s.synchronize)
for k, buf in enumerate(bufs):
    got = step(401 + k, "final read",
               lambda: s.read_blocking(buf, np.zeros(256, np.uint8)))
    log.append([401 + k, "bytes", None if got is None else got.tolist()])
print(json.dumps(log))
"""

SCHEDULE = ("seed:{seed},copy:8%,fill:8%,upload:8%,download:5%,"
            "event_record:5%,wait_event:8%,synchronize:3%")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_batching_on_and_off_fail_alike(fresh, seed):
    runs = {}
    for batching in ("1", "0"):
        out = fresh(PROGRAM.replace("SEED", str(seed)),
                    env={"HRX_FAULTS": SCHEDULE.format(seed=seed),
                         "HRX_BATCHING": batching,
                         # Batches go out only at the program's own calls.
                         "HRX_BATCH_DELAY_US": "10000000"},
                    timeout=300)
        runs[batching] = json.loads(out)
    on, off = runs["1"], runs["0"]
    failures = [entry for entry in off if entry[2:3] == ["DeviceError"]]
    assert len(failures) >= 5, "the schedule injected too few faults"
    assert any("not run" in entry[3] for entry in failures), failures
    for a, b in zip(on, off):
        assert a == b, f"batching on: {a}\nbatching off: {b}"
    assert len(on) == len(off)
