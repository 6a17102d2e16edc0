"""One load process: THREADS Python threads each submit COMMANDS mixed
commands over many streams of one live device with QUEUES pool queues, and
check every byte they read against a per-thread NumPy model.

Each thread owns a slice of one shared allocation and a buffer of its own
(threads never touch each other's bytes), two pool streams of its own, and
also uses one of a few streams shared by several threads and, for some
threads, a fabric queue. Whenever a thread moves to another stream it
records an event on the stream it leaves and the new stream waits on it, so
the thread's commands form one chain and its bytes have one correct value.
Commands: fill, upload, copy (within its own bytes, across its two areas),
read (waited at once or several commands later), read_blocking, record_event
+ wait_event, stream synchronize, event synchronize. At the end the device
and every queue are synchronized and each thread's bytes compared again.

Prints one JSON line: commands, bytes_verified, mismatches, seconds, ...
A watchdog (faulthandler's, a C thread that needs no GIL) prints
"Timeout" and every thread's stack and exits if the run exceeds --timeout
seconds: a deadlock shows as a failure with stacks, never as a hang.

    python tests/load_worker.py --queues 4 --threads 64 --commands 10000
"""
from __future__ import annotations

import argparse
import faulthandler
import json
import sys
import threading
import time

import numpy as np

import hrx
import hrx.fabric

SLICE = 4096          # bytes per thread in the shared allocation
OWN = 16384           # bytes of each thread's own buffer
SHARED_STREAMS = 8    # streams used by several threads each


class Worker:
    def __init__(self, index, device, shared_buffer, streams, seed, commands):
        self.index = index
        self.rng = np.random.default_rng(seed * 1000 + index)
        self.commands_target = commands
        self.shared = shared_buffer[index * SLICE:(index + 1) * SLICE]
        self.own = device.allocate(OWN)
        self.areas = [(self.shared, np.zeros(SLICE, np.uint8)),
                      (self.own, np.zeros(OWN, np.uint8))]
        self.streams = streams
        self.current = 0
        self.commands = 0
        self.bytes_verified = 0
        self.mismatches = []
        self.pending = []          # (Readback, expected)
        self.error = None

    # ------------------------------------------------------------ helpers

    def stream(self):
        """The stream for the next command: sometimes another one, ordered
        after everything this thread did on the one it leaves."""
        if self.rng.random() < 0.15:
            nxt = int(self.rng.integers(len(self.streams)))
            if nxt != self.current:
                event = self.streams[self.current].record_event()
                self.streams[nxt].wait_event(event)
                self.commands += 2
                if self.rng.random() < 0.05:
                    event.synchronize()
                event.close()
                self.current = nxt
        return self.streams[self.current]

    def range(self, size):
        length = int(self.rng.integers(1, min(size, 2048) + 1))
        lo = int(self.rng.integers(0, size - length + 1))
        return lo, lo + length

    def compare(self, got, expected, what):
        self.bytes_verified += expected.size
        if not np.array_equal(np.asarray(got), expected):
            bad = np.flatnonzero(np.asarray(got) != expected)
            self.mismatches.append(
                f"thread {self.index} {what}: {bad.size} bytes differ, first "
                f"at {bad[0]}")

    def drain(self, keep=0):
        while len(self.pending) > keep:
            readback, expected = self.pending.pop(0)
            self.compare(readback.wait(), expected, "read")
            readback.close()

    # ------------------------------------------------------------ commands

    def step(self):
        op = self.rng.random()
        view, model = self.areas[int(self.rng.integers(2))]
        lo, hi = self.range(model.size)
        s = self.stream()
        if op < 0.25:
            value = int(self.rng.integers(256))
            s.fill(view[lo:hi], value)
            model[lo:hi] = value
        elif op < 0.45:
            data = self.rng.integers(0, 256, hi - lo, dtype=np.uint8)
            s.upload(view[lo:hi], data)
            model[lo:hi] = data
        elif op < 0.65:
            # Across the thread's two areas: no overlap possible.
            other_view, other_model = (self.areas[1] if view is self.shared
                                       else self.areas[0])
            length = min(hi - lo, other_model.size)
            d_lo = int(self.rng.integers(0, other_model.size - length + 1))
            s.copy(other_view[d_lo:d_lo + length], view[lo:lo + length])
            other_model[d_lo:d_lo + length] = model[lo:lo + length]
        elif op < 0.8:
            self.pending.append((s.read(view[lo:hi]), model[lo:hi].copy()))
            self.drain(keep=int(self.rng.integers(0, 4)))
        elif op < 0.97:
            out = np.empty(hi - lo, np.uint8)
            s.read_blocking(view[lo:hi], out)
            self.compare(out, model[lo:hi], "read_blocking")
        else:
            s.synchronize()
        self.commands += 1

    def run(self):
        try:
            while self.commands < self.commands_target:
                self.step()
            self.drain()
        except BaseException as error:  # noqa: BLE001 - reported in JSON
            self.error = f"thread {self.index}: {type(error).__name__}: {error}"

    def final_check(self, stream):
        for view, model in self.areas:
            self.compare(stream.read(view).wait(), model, "final")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queues", type=int, required=True)
    parser.add_argument("--threads", type=int, default=64)
    parser.add_argument("--commands", type=int, default=10000,
                        help="commands per thread")
    parser.add_argument("--backend", default=None)
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--batching", choices=("on", "off"), default="on",
                        help="the device's submission batching switch")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--corrupt-model", action="store_true",
                        help="self-check: thread 0's model is wrong by one "
                             "byte, so the run must report a mismatch")
    args = parser.parse_args(argv)

    faulthandler.dump_traceback_later(args.timeout, exit=True)
    start = time.monotonic()
    device = hrx.Device.open(0, backend=args.backend,
                             batching=args.batching == "on")
    device.set_stream_queue_count(args.queues)
    shared_streams = [device.stream() for _ in range(SHARED_STREAMS)]
    fabric = [hrx.fabric.Queue(device) for _ in range(2)]
    shared_buffer = device.allocate(args.threads * SLICE)
    setup = device.stream()
    setup.fill(shared_buffer, 0)
    workers = []
    for t in range(args.threads):
        own = [device.stream(), device.stream(),
               shared_streams[t % SHARED_STREAMS]]
        if t % 4 == 0:
            own.append(fabric[t // 4 % 2])
        worker = Worker(t, device, shared_buffer, own, args.seed,
                        args.commands)
        setup.fill(worker.own, 0)
        workers.append(worker)
    setup.synchronize()
    if args.corrupt_model:
        workers[0].areas[1][1][7] ^= 0x40
    streams_used = len({id(s) for w in workers for s in w.streams})
    threads = [threading.Thread(target=w.run, name=f"load-{w.index}")
               for w in workers]
    submit_start = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    submit_seconds = time.monotonic() - submit_start
    device.synchronize()
    for queue in fabric:
        queue.synchronize()
    for worker in workers:
        worker.final_check(setup)
    faulthandler.cancel_dump_traceback_later()
    result = {
        "backend": device.info["backend"],
        "queues": args.queues,
        "batching": device.batching,
        "threads": args.threads,
        "streams": streams_used,
        "queues_created": device.pool_info()["queues_created"],
        "commands": sum(w.commands for w in workers),
        "bytes_verified": sum(w.bytes_verified for w in workers),
        "mismatches": sum(len(w.mismatches) for w in workers),
        "first_mismatches": [m for w in workers for m in w.mismatches][:5],
        "errors": [w.error for w in workers if w.error][:5],
        "submit_seconds": round(submit_seconds, 3),
        "seconds": round(time.monotonic() - start, 3),
    }
    print(json.dumps(result))
    return 0 if not result["mismatches"] and not result["errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
