"""fork() while host callbacks run: the child never hangs before its first
line.

A host callback's thread (a host engine, the device's cleanup thread that
drops a callable, a GPU runtime's callback thread) is not a Python thread:
to run Python it needs a thread state. Made and deleted per callback, a
fork() that lands while another thread holds the interpreter's lock for
that leaves the child waiting for the lock for ever (in
PyOS_AfterFork_Child, before its first line). So such a thread keeps one
thread state for life (csrc/python/host_threads.h): made once, under a lock
that fork() takes first, and deleted later by a thread holding the GIL.

The scenario forks a few hundred times (and on, until both threads made
progress during the forks) while one thread launches graphs with Python
callbacks, another opens and closes a device with callbacks (new engine
threads, whose states come and go), in one process with a timeout; each
child exits at once, and one that has not within a few seconds is a hang.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(r"""
    import os, sys, threading, time
    import hrx

    backend, forks, churned = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    stop = threading.Event()
    ran = {"callbacks": 0, "devices": 0}

    def count():
        ran["callbacks"] += 1

    def callbacks():
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        g = hrx.Graph(dev)
        g.callback(count)
        while not stop.is_set():
            g.launch(s)
        s.synchronize()

    def churn():
        # Device 1: a live device of its own, opened and closed each time
        # (on the host backend, new engine threads). Device 0: another
        # handle of the live device the other thread keeps (one GPU).
        while not stop.is_set():
            dev = hrx.Device.open(churned, backend=backend)
            s = dev.stream()
            g = hrx.Graph(dev)
            g.callback(count)
            g.launch(s).wait()
            for obj in (g, s, dev):
                obj.close()
            ran["devices"] += 1

    threads = [threading.Thread(target=callbacks),
               threading.Thread(target=churn)]
    for t in threads:
        t.start()
    time.sleep(0.1)
    # At least `forks` forks, and on until both threads made progress
    # during them (a loaded machine may run callbacks slowly), within 120 s.
    start = dict(ran)
    def progressed():
        return (ran["callbacks"] - start["callbacks"] > 500 and
                ran["devices"] - start["devices"] > 10)
    hung = made = 0
    give_up = time.monotonic() + 120
    while made < forks or (not progressed() and time.monotonic() < give_up):
        made += 1
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        deadline = time.monotonic() + 5
        while True:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                hung += 1
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                break
            time.sleep(0.0005)
    stop.set()
    for t in threads:
        t.join()
    print("hung", hung, "of", made, flush=True)
    print("ran", ran["callbacks"] - start["callbacks"], "callbacks",
          ran["devices"] - start["devices"], "devices", flush=True)
""")


def run_forks(backend: str, churned: int) -> None:
    env = dict(os.environ)
    env.setdefault("HRX_HOST_DEVICE_COUNT", "2")
    result = subprocess.run(
        [sys.executable, "-c", CHILD, backend, "500", str(churned)],
        capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    # A thread that raised leaves its traceback here.
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    hung, ran = result.stdout.splitlines()[:2]
    _, count, _, made = hung.split()
    assert count == "0" and int(made) >= 500, result.stdout
    _, callbacks, _, devices, _ = ran.split()
    # Forks landed while callbacks ran and devices came and went.
    assert int(callbacks) > 500 and int(devices) > 10, ran


def test_fork_while_callbacks_run_never_hangs_the_child(backend):
    """One device: the second thread churns handles, streams and graphs of
    the device the first keeps (what a one-GPU machine has)."""
    run_forks(backend, 0)


def test_fork_while_devices_come_and_go_never_hangs_the_child(
        backend, second_device):
    """Two devices: the second thread opens and closes a live device of its
    own each time (on the host backend, engine threads come and go)."""
    run_forks(backend, 1)
