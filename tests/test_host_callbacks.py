"""What a graph host callback may do, and what happens to releases made on
its thread: waits and reads are refused (the queue running the callback
waits for it, so they could never finish), and releases, including those
of a garbage collection that runs inside the callback, are deferred to
another thread instead of waiting for the callback's own queue. A graph
whose callback refers to the graph is collected, so its live device goes
(pool contract rule 9). Each scenario runs in a fresh interpreter with a
timeout: a hang fails the test instead of stalling the suite."""
from __future__ import annotations


def test_waiting_calls_in_a_callback_are_refused(fresh):
    """Waits are refused in a callback on every backend; queries that ask
    the runtime are refused on hip only, where the CUDA and HIP runtimes
    forbid runtime calls inside host functions."""
    out = fresh("""
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream(); b = dev.allocate(64); s.fill(b, 7); s.synchronize()
        pending = s.read(b)
        ev = s.record_event()
        t0 = s.record_event(timing=True); t1 = s.record_event(timing=True)
        refused = []
        def cb():
            calls = {
                "read": lambda: s.read(b),
                "read_blocking": lambda: s.read_blocking(
                    b, np.zeros(64, np.uint8)),
                "Readback.wait": pending.wait,
                "synchronize": s.synchronize,
                "Event.synchronize": ev.synchronize,
                "Device.synchronize": dev.synchronize,
                "fill": lambda: s.fill(b, 1),
                "allocate": lambda: dev.allocate(8),
            }
            for name, call in calls.items():
                try:
                    call()
                except hrx.FailedPreconditionError as e:
                    assert "host callback" in str(e), str(e)
                    refused.append(name)
            # Answered by the core alone: allowed on every backend.
            h = hrx.Graph(dev); h.fill(b, 3); h.close()
            # Answered by the runtime: allowed where host functions may call
            # it (host); the CUDA and HIP runtimes forbid that (hip).
            queries = {
                "Event.query": ev.query,
                "Readback.done": pending.done,
                "free_memory": lambda: dev.free_memory,
                "pool_stats": dev.pool_stats,
                "Stream.query": s.query,
                "Event.elapsed_time": lambda: t0.elapsed_time(t1),
            }
            for name, call in queries.items():
                try:
                    answers[name] = call()
                except hrx.FailedPreconditionError as e:
                    assert "host callback" in str(e), str(e)
                    assert "forbids runtime calls inside host functions" in \
                        str(e), str(e)
                    refused_queries.append(name)
        answers = {}
        refused_queries = []
        g = hrx.Graph(dev); g.callback(cb)
        c = g.launch(s)
        assert c.wait(timeout=20), "the callback's queue hung"
        c.result()
        assert len(refused) == 8, refused
        if backend == "hip":
            assert refused_queries == ["Event.query", "Readback.done",
                                       "free_memory", "pool_stats",
                                       "Stream.query",
                                       "Event.elapsed_time"], \
                refused_queries
        else:
            assert refused_queries == [], refused_queries
            assert answers["Event.query"] and answers["Readback.done"]
            assert answers["free_memory"] > 0
            assert answers["pool_stats"]["queue_count"] >= 1
            assert answers["Event.elapsed_time"] >= 0
        # Outside the callback the same queries answer on every backend.
        assert ev.query() and pending.done() and dev.free_memory > 0
        assert (pending.wait() == 7).all()
        for obj in (pending, ev, t0, t1, g, s, b, dev):
            obj.close()
        print("ok")
    """, timeout=60)
    assert out.strip() == "ok"


def test_a_collection_inside_a_callback_defers_the_releases(fresh):
    """A Buffer (and a Stream and a Readback) in a reference cycle, freed by
    gc.collect() inside a callback: the callback returns, the queue goes
    on, and the memory is freed later on the device's cleanup thread."""
    out = fresh("""
        import gc
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        def live():
            return hrx._hrx._testing_live_native_objects()["allocations"]
        class Holder:
            pass
        def make_cycle():
            h = Holder(); h.self = h
            h.buf = dev.allocate(1 << 20)
            h.stream = dev.stream()
            h.stream.fill(h.buf, 3)
            h.read = h.stream.read(h.buf)
        gc.disable()
        make_cycle()
        assert live() == 1
        def cb():
            gc.collect()
        g = hrx.Graph(dev); g.callback(cb)
        c = g.launch(s)
        assert c.wait(timeout=20), "the callback's queue hung"
        c.result()
        # The device's cleanup thread frees it; Device.synchronize waits
        # for the releases deferred so far.
        dev.synchronize()
        assert live() == 0, live()
        for obj in (g, s, dev):
            obj.close()
        print("ok")
    """, env={"HRX_FAULTS": "none"}, timeout=60)
    assert out.strip() == "ok"


def test_a_graph_whose_callback_refers_to_it_is_collected(fresh):
    out = fresh("""
        import gc
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        def build():                     # closures: real reference cycles
            g = hrx.Graph(dev)
            g.callback(lambda: g)            # graph -> callback -> graph
            h = hrx.Graph(dev)
            node = h.callback(lambda: node)  # -> callback -> node -> graph
            g.launch(s).wait(); h.launch(s).wait()
        build()
        s.close()
        # The stream's release (which waits for its launches) is handed to
        # the cleanup thread, and so is the launches' hold on the graphs
        # with it: Device.synchronize waits for the releases made so far,
        # so the collection below sees graphs that only the cycles hold.
        dev.synchronize()
        dev.close()
        gc.collect()
        again = hrx.Device.open(0, backend=backend)
        again.set_stream_queue_count(3)  # a fresh live device: not busy
        print("ok")
    """, timeout=60)
    assert out.strip() == "ok"


def test_a_callback_exception_that_refers_to_its_completion_is_collected(
        fresh):
    """The exception a callback raised, and the callables of the launched
    graph, are kept by the launch's C completion; when they refer back to
    the hrx.Completion (through the exception's arguments, the callable's
    closure, or the frames of a result() that re-raised it), the cycle goes
    through the C completion, which the collector must see into: then it
    is collected, and with it the live device (a fresh open is not busy)."""
    out = fresh("""
        import gc, threading
        box = {}
        launched = threading.Event()
        def launch_and_drop(how):
            dev = hrx.Device.open(0, backend=backend)
            s = dev.stream()
            mine = []
            def through_args():          # no cycle through the callable
                launched.wait()
                raise ValueError("callback failed", box.pop("c"))
            def through_closure():
                launched.wait()
                raise ValueError("callback failed", mine)
            g = hrx.Graph(dev)
            g.callback(through_args if how == "args" else through_closure)
            launched.clear()
            c = g.launch(s)
            box["c"] = c
            mine.append(c)
            launched.set()
            if how == "result":
                try:
                    c.result()
                except ValueError as e:
                    caught = e                   # its frames hold `c`
            else:
                c.wait()
            if how == "args":
                mine.clear()
                assert not box           # the callback took it
            box.clear()
            for obj in (g, s, dev):
                obj.close()
        for how in ("args", "closure", "result"):
            launch_and_drop(how)
            gc.collect()
            again = hrx.Device.open(0, backend=backend)
            assert not again.pool_info()["first_use"], how
            again.set_stream_queue_count(3)      # a fresh live device
            again.close()
        print("ok")
    """, timeout=60)
    assert out.strip() == "ok"
