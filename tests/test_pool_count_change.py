"""Changing the pool size of a live device: the BusyError names what keeps
the live device alive (device handles, streams, buffers, events, graphs,
kernels, pending reads), counted as they are closed and dropped, and says how
to let it go; once nothing holds it, the next open takes a new size."""


def test_busy_error_counts_what_holds_the_live_device(fresh):
    fresh("""
    import gc

    d = hrx.Device.open(0, backend=backend)
    d.set_stream_queue_count(2)

    def busy():
        try:
            d.set_stream_queue_count(3)
        except hrx.BusyError as error:
            return str(error)
        raise AssertionError("BusyError expected")

    s1, s2 = d.stream(), d.stream()
    b1, b2 = d.allocate(64), d.allocate(64)
    event = s1.record_event()
    graph = hrx.Graph(d)
    clone = hrx.Device.open(0, backend=backend)
    text = busy()
    assert "stream queue count is 2 and cannot change to 3" in text, text
    assert ("held by: 2 device handles, 2 streams, 2 buffers, 1 event, 1 graph. "
            in text), text
    for advice in ("close()", "del ", "gc.collect()", "open the device again"):
        assert advice in text, (advice, text)

    s1.close()
    clone.close()
    del b2, event, graph
    text = busy()
    assert "held by: 1 device handle, 1 stream, 1 buffer. " in text, text

    # A reference cycle keeps a buffer until the collector breaks it.
    class Holder:
        pass
    holder = Holder()
    holder.me, holder.buffer = holder, d.allocate(16)
    del holder
    assert "1 stream, 2 buffers. " in busy()
    gc.collect()
    assert "1 stream, 1 buffer. " in busy()

    s2.close()
    del b1
    assert "held by: 1 device handle. " in busy()
    d.close()
    again = hrx.Device.open(0, backend=backend)
    again.set_stream_queue_count(3)
    assert again.stream_queue_count == 3
    """)


def test_busy_error_counts_kernels_and_pending_reads(fresh):
    fresh("""
    d = hrx.Device.open(0, backend=backend)
    try:
        d.kernel_compiler()
    except hrx.UnavailableError:
        sys.exit(0)   # no kernel compiler here: nothing to count
    source = '#ifdef __cplusplus\\nextern "C"\\n#endif\\n__global__ void nop() {}\\n'
    kernel = d.compile(source, "nop")
    stream = d.stream()
    buffer = d.allocate(64)
    pending = stream.read(buffer)

    def busy():
        try:
            d.set_stream_queue_count(d.stream_queue_count % 16 + 1)
        except hrx.BusyError as error:
            return str(error)
        raise AssertionError("BusyError expected")

    text = busy()
    assert "1 kernel" in text and "1 pending read" in text, text
    del kernel
    pending.wait()
    pending.close()
    text = busy()
    assert "kernel" not in text.split("held by:")[1], text
    assert "pending read" not in text.split("held by:")[1], text
    """)


def test_policy_change_names_the_holders_too(fresh):
    fresh("""
    d = hrx.Device.open(0, backend=backend)
    stream = d.stream()
    other = "least_loaded" if d.stream_queue_policy == "round_robin" else "round_robin"
    try:
        d.set_stream_queue_policy(other)
    except hrx.BusyError as error:
        assert "held by: 1 device handle, 1 stream. " in str(error), str(error)
    else:
        raise AssertionError("BusyError expected")
    """)


def test_the_docstrings_say_what_close_and_with_do():
    """A handle's close() drops that handle only; `with stream:` closes the
    stream and makes no current stream (what a CuPy user might expect)."""
    import hrx

    close = hrx.Device.close.__doc__
    assert "Drop this handle only" in close and "keep working" in close
    assert "closes the stream when the block ends" in hrx.Stream.__doc__
    assert 'does not make it a "current stream"' in hrx.Stream.__doc__
    assert "names what still holds the live device" in hrx.Device.set_stream_queue_count.__doc__
