"""Conformance: hrx.Graph, host callbacks and hrx.Completion, on every
available backend.

What is checked: dependencies decide the order (not recording order);
launches repeat and stay ordered with the stream's other work; host
callbacks run after their dependencies and before the nodes that depend on
them, on a host worker thread; a raising callback's exception comes back
from Completion.result() while later nodes still run; the guard refuses
hrx calls that wait inside a callback; Stream.wait_completion orders later
work; graphs and their buffers outlive every Python handle while launched;
device-only graphs are native graphs on the hip backend.
"""
from __future__ import annotations

import gc
import threading
import time

import pytest

import hrx

N = 4096


def read(stream, buf):
    return stream.read(buf).wait()


@pytest.fixture
def two_queues(device):
    """Two pool streams on different native queues."""
    if device.stream_queue_count < 2:
        pytest.skip("the live device's pool has one queue")
    s1 = device.stream()
    s2 = device.stream()    # round-robin: the next slot
    assert s1.queue_index != s2.queue_index
    yield s1, s2
    s1.close()
    s2.close()


class Gate:
    """A callback that blocks until opened, to observe pending states.

    While it blocks, the test must not free device or staging memory (drop
    a Buffer's last handle, read()): frees wait for all of the device's
    queued work, including the blocked callback. Creating a gate collects
    the garbage of earlier tests first: otherwise the garbage collector may
    run inside the callback itself (its first allocations) and free a
    buffer there, which would wait for the callback."""

    def __init__(self):
        gc.collect()
        self.entered = threading.Event()
        self.opened = threading.Event()
        self.thread = None

    def __call__(self):
        self.thread = threading.current_thread()
        self.entered.set()
        assert self.opened.wait(30), "gate never opened"

    def open_later(self, delay=0.05):
        timer = threading.Timer(delay, self.opened.set)
        timer.start()
        return timer


def test_dependencies_decide_the_order(device, stream):
    a, b = device.allocate(N), device.allocate(N)
    g = hrx.Graph(device)
    copy = g.copy(b, a)                 # recorded first ...
    fill = g.fill(a, 0x42)
    g.add_dependency(copy, fill)        # ... but runs after the fill
    assert (copy.index, fill.index, g.node_count) == (0, 1, 2)
    stream.fill(b, 0)
    assert g.launch(stream) is None     # device work only
    assert (read(stream, b) == 0x42).all()


def test_launches_repeat_in_stream_order(device, stream):
    a, b = device.allocate(N), device.allocate(N)
    g = hrx.Graph(device)
    g.copy(b, a, after=[g.fill(a, 7)])
    for i in range(30):
        stream.fill(b[0:1], i)          # before: overwritten by the graph
        g.launch(stream)
        stream.fill(a[0:1], i)          # after: sees the graph done
    out = read(stream, b)
    assert out[0] == 7 and (out == 7).all()
    assert read(stream, a)[0] == 29


def test_diamond_and_repeated_dependencies(device, stream):
    a, b, c = (device.allocate(N) for _ in range(3))
    g = hrx.Graph(device)
    root = g.fill(a, 3)
    left = g.copy(b[0:N // 2], a[0:N // 2], after=[root, root])
    right = g.copy(b[N // 2:], a[N // 2:], after=(root,))
    g.copy(c, b, after=[left, right])
    g.launch(stream)
    assert (read(stream, c) == 3).all()


def test_cycles_and_self_dependencies_are_refused(device):
    g = hrx.Graph(device)
    buf = device.allocate(16)
    first = g.fill(buf[0:8], 1)
    second = g.fill(buf[8:16], 2, after=[first])
    third = g.fill(buf[0:1], 3, after=[second])
    with pytest.raises(hrx.InvalidArgumentError, match="cycle"):
        g.add_dependency(first, third)
    with pytest.raises(hrx.InvalidArgumentError, match="itself"):
        g.add_dependency(second, second)
    g.add_dependency(third, first)      # already implied: accepted
    assert g.node_count == 3


def test_nodes_of_another_graph_are_refused(device):
    g, other = hrx.Graph(device), hrx.Graph(device)
    buf = device.allocate(16)
    foreign = other.fill(buf, 1)
    with pytest.raises(hrx.InvalidArgumentError, match="another graph"):
        g.fill(buf, 2, after=[foreign])
    with pytest.raises(hrx.InvalidArgumentError, match="another graph"):
        g.add_dependency(g.fill(buf, 2), foreign)
    assert g.node_count == 1


def test_foreign_device_buffers_are_refused(device, second_device):
    g = hrx.Graph(device)
    with pytest.raises(hrx.InvalidArgumentError, match="graph's device"):
        g.fill(second_device.allocate(16), 1)
    assert g.node_count == 0
    g.fill(device.allocate(16), 1)
    with pytest.raises(hrx.InvalidArgumentError, match="its device"):
        g.launch(second_device.stream())


def test_first_launch_seals_the_graph(device, stream):
    g = hrx.Graph(device)
    buf = device.allocate(16)
    node = g.fill(buf, 1)
    g.launch(stream)
    with pytest.raises(hrx.FailedPreconditionError, match="sealed"):
        g.fill(buf, 2)
    with pytest.raises(hrx.FailedPreconditionError, match="sealed"):
        g.add_dependency(g_node := node, g_node)
    assert g.node_count == 1


def test_device_only_graphs_are_native_on_hip(device, stream, backend):
    g = hrx.Graph(device)
    buf = device.allocate(N)
    g.fill(buf, 9)
    assert not g.native                 # known after the first launch
    g.launch(stream)
    assert g.native == (backend == "hip")
    with_callback = hrx.Graph(device)
    with_callback.callback(lambda: None, after=[with_callback.fill(buf, 1)])
    with_callback.launch(stream).result()
    assert not with_callback.native     # host callbacks: node by node


def test_callbacks_run_in_order_after_their_dependencies(device, two_queues):
    s1, s2 = two_queues
    a = device.allocate(N)
    s2.fill(a, 0)
    s2.synchronize()
    order = []
    gate = Gate()
    g = hrx.Graph(device)
    fill = g.fill(a, 5)
    first = g.callback(gate, after=[fill])
    second = g.callback(lambda: order.append("second"), after=[first])
    g.callback(lambda: order.append("third"), after=[second])
    g.fill(a[0:1], 6, after=[first])    # waits for the callback
    probe = device.allocate(N)
    completion = g.launch(s1)
    assert isinstance(completion, hrx.Completion)
    assert gate.entered.wait(30)
    # The callback started only after the fill it depends on finished, and
    # the fill that depends on it has not run yet. Snapshot with a device
    # copy on the other queue: nothing may be freed while the callback
    # blocks (frees wait for all the device's work, as cudaFree does).
    s2.copy(probe, a)
    s2.record_event().synchronize()
    assert not completion.done() and not completion.wait(0.01)
    gate.opened.set()
    assert completion.wait(30) and completion.done()
    completion.result()
    seen = read(s2, probe)
    assert (seen == 5).all()
    assert order == ["second", "third"]
    assert read(s2, a)[0] == 6
    assert gate.thread is not threading.main_thread()


def test_raising_callback_is_re_raised_by_result(device, stream):
    buf = device.allocate(N)
    ran = []

    class Boom(Exception):
        pass

    def first():
        raise Boom("first failure")

    def second():
        ran.append("second")
        raise ValueError("second failure")

    g = hrx.Graph(device)
    one = g.callback(first)
    two = g.callback(second, after=[one])
    g.fill(buf, 4, after=[two])         # later nodes still run
    for _ in range(3):
        completion = g.launch(stream)
        with pytest.raises(Boom, match="first failure") as info:
            completion.result()
        assert info.value.__traceback__ is not None
        with pytest.raises(Boom):       # every call re-raises
            completion.result(timeout=0)
        assert completion.done()
    assert ran == ["second"] * 3
    assert (read(stream, buf) == 4).all()


def test_calls_that_wait_are_refused_inside_a_callback(device, stream):
    buf = device.allocate(16)
    g = hrx.Graph(device)
    g.callback(stream.synchronize)
    with pytest.raises(hrx.FailedPreconditionError, match="host callback"):
        g.launch(stream).result()
    g2 = hrx.Graph(device)
    g2.callback(lambda: stream.fill(buf, 1))
    with pytest.raises(hrx.FailedPreconditionError, match="host callback"):
        g2.launch(stream).result()
    g3 = hrx.Graph(device)
    g3.callback(lambda: device.allocate(16))
    with pytest.raises(hrx.FailedPreconditionError, match="host callback"):
        g3.launch(stream).result()


def test_completion_timeouts(device, stream):
    gate = Gate()
    g = hrx.Graph(device)
    g.callback(gate)
    completion = g.launch(stream)
    t0 = time.monotonic()
    assert completion.wait(timeout=0.05) is False
    assert time.monotonic() - t0 >= 0.04
    with pytest.raises(TimeoutError):
        completion.result(timeout=0.01)
    gate.opened.set()
    assert completion.wait() is True
    assert completion.result() is None


def test_wait_completion_orders_later_work(device, two_queues):
    s1, s2 = two_queues
    a = device.allocate(N)
    gate = Gate()
    g = hrx.Graph(device)
    g.fill(a, 1, after=[g.callback(gate)])
    completion = g.launch(s1)
    s2.wait_completion(completion)
    timer = gate.open_later()
    # Submitted while the callback still blocks: waits for the completion,
    # so it lands after the graph's fill of the same bytes.
    s2.fill(a[0:N // 2], 2)
    assert completion.done()
    out = read(s2, a)
    assert (out[:N // 2] == 2).all() and (out[N // 2:] == 1).all()
    timer.join()
    s2.wait_completion(completion)      # already done: free
    s2.synchronize()


def test_events_recorded_after_wait_completion_include_it(device, two_queues):
    s1, s2 = two_queues
    gate = Gate()
    g = hrx.Graph(device)
    g.callback(gate)
    completion = g.launch(s1)
    s2.wait_completion(completion)
    timer = gate.open_later()
    event = s2.record_event()           # waits for the completion first
    assert completion.done()
    event.synchronize()
    timer.join()


def test_completion_of_another_device(device, second_device):
    gate = Gate()
    g = hrx.Graph(device)
    g.callback(gate)
    stream = device.stream()    # kept: closing it would wait for the gate
    completion = g.launch(stream)
    other = second_device.stream()
    buf = second_device.allocate(16)
    other.wait_completion(completion)   # host-side: any device may wait
    timer = gate.open_later()
    other.fill(buf, 3)
    assert completion.done()
    assert (read(other, buf) == 3).all()
    timer.join()


def test_graph_and_buffers_outlive_their_handles(device, stream):
    # Garbage of earlier tests (buffers in collectable cycles) must go now:
    # freed while the gate blocks the queue, it would wait for the gate.
    gc.collect()
    out = device.allocate(N)
    scratch = device.allocate(N)
    gate = Gate()
    g = hrx.Graph(device)
    fill = g.fill(scratch, 0x5A, after=[g.callback(gate)])
    g.copy(out, scratch, after=[fill])
    completion = g.launch(stream)
    del g, fill, scratch                # the launch keeps all of it
    gc.collect()
    gate.opened.set()
    completion.result()
    assert (read(stream, out) == 0x5A).all()


def test_graph_closed_while_launched(device, stream):
    out = device.allocate(N)
    gate = Gate()
    g = hrx.Graph(device)
    g.fill(out, 8, after=[g.callback(gate)])
    completion = g.launch(stream)
    g.close()
    assert g.closed
    with pytest.raises(hrx.FailedPreconditionError, match="closed"):
        g.launch(stream)
    gate.opened.set()
    completion.result()
    assert (read(stream, out) == 8).all()


def test_callable_is_released_with_the_graph(device, stream):
    released = threading.Event()

    class Callback:
        def __call__(self):
            pass

        def __del__(self):
            released.set()

    g = hrx.Graph(device)
    g.callback(Callback())
    g.launch(stream).result()
    assert not released.is_set()
    del g
    stream.synchronize()                # finished launches let go here
    gc.collect()
    assert released.wait(5)


def test_stream_closed_with_a_launch_in_flight(device):
    s = device.stream()
    out = device.allocate(16)
    gate = Gate()
    g = hrx.Graph(device)
    g.fill(out, 1, after=[g.callback(gate)])
    completion = g.launch(s)
    del g
    timer = gate.open_later()
    s.close()                           # waits for the callbacks
    assert completion.done()
    timer.join()


def test_concurrent_launches(device):
    """One graph launched from four threads on their own streams. It writes
    no memory: launches on different queues would race on it."""
    calls = []
    lock = threading.Lock()

    def count():
        with lock:
            calls.append(1)

    g = hrx.Graph(device)
    g.callback(count, after=[g.callback(count)])
    errors = []

    def launcher():
        try:
            s = device.stream()
            for _ in range(10):
                g.launch(s).result()
            s.close()
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=launcher) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(calls) == 80


def test_graph_properties(device):
    with hrx.Graph(device) as g:
        assert g.device == device
        assert g.node_count == 0 and not g.native and not g.closed
        node = g.fill(device.allocate(4), 1)
        assert repr(node) == "<hrx.GraphNode 0>"
    assert g.closed
    with pytest.raises(hrx.FailedPreconditionError):
        g.node_count
    with pytest.raises(TypeError):
        hrx.GraphNode()
    with pytest.raises(TypeError):
        hrx.Completion()


def test_interpreter_exits_with_callbacks_queued(fresh):
    """Exiting while launches with callbacks are queued neither hangs nor
    crashes: callbacks still queued at exit are skipped."""
    out = fresh("""
        import time
        d = hrx.Device.open(0, backend=backend)
        s = d.stream()
        g = hrx.Graph(d)
        g.callback(lambda: time.sleep(0.02))
        for _ in range(50):
            g.launch(s)
        print("launched")
    """, timeout=60)
    assert out.splitlines() == ["launched"]


def test_a_caught_callback_exception_does_not_keep_the_device_alive(fresh):
    """result() raises a copy chained to the kept exception, so catching it
    (its traceback then holds the caller's frame, which holds the
    Completion) forms no cycle through memory the collector cannot see: once
    everything is closed, the live device goes and the next open is fresh."""
    out = fresh("""
        import gc

        class Boom(Exception):
            pass

        def fail():
            raise Boom("callback failure")

        d = hrx.Device.open(0, backend=backend)
        s = d.stream()
        g = hrx.Graph(d)
        g.callback(fail)
        c = g.launch(s)
        try:
            c.result()
        except Boom as error:
            caught = error
        print(type(caught).__name__, type(caught.__cause__).__name__,
              caught.__traceback__ is not None)
        del c, g, caught
        s.close()
        d.close()
        gc.collect()
        print(hrx.Device.open(0, backend=backend).pool_info()["first_use"])
    """)
    assert out.split() == ["Boom", "Boom", "True", "False"]
