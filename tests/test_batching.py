"""Submission batching: the switch, the bounded delay, and that every
observation point sees batched work. Conformance tests, on every backend.

The rest of the suite runs with whatever the environment says (batching on
by default); ``make test`` runs it a second time with HRX_BATCHING=0, so the
whole contract is checked both ways.
"""
from __future__ import annotations


import numpy as np
import pytest

import hrx

KIB = 1024


def _host_burst(stream, buf, count=64):
    """Many small fills in a row: the thread is never quiet, so all but the
    first are batched."""
    for i in range(count):
        stream.fill(buf[(i % 16) * 64:(i % 16) * 64 + 64], i & 0xFF)


def _read(stream, buf):
    out = np.zeros(buf.nbytes, dtype=np.uint8)
    stream.read_blocking(buf, out)
    return out


# ---------------------------------------------------------------- switch


def test_batching_switch_is_a_setting_of_the_live_device(fresh):
    out = fresh("""
        d = hrx.Device.open(backend=backend)
        print(d.batching)
        other = hrx.Device.open(backend=backend, batching=False)
        print(d.batching, other.batching)
        d.set_batching(True)
        print(other.batching)
        third = hrx.Device.open(backend=backend)   # None leaves it as is
        print(third.batching)
    """, env={"HRX_BATCHING": "1"})
    assert out.split() == ["True", "False", "False", "True", "True"]


@pytest.mark.parametrize("off", ["0", "00"])
def test_environment_turns_batching_off_for_new_devices(fresh, off):
    out = fresh("""
        d = hrx.Device.open(backend=backend)
        print(d.batching)
        d.set_batching(True)
        print(d.batching)
    """, env={"HRX_BATCHING": off})
    assert out.split() == ["False", "True"]


@pytest.mark.parametrize("value", ["1", "01", ""])
def test_one_or_empty_leaves_batching_on(fresh, value):
    out = fresh("print(hrx.Device.open(backend=backend).batching)",
                env={"HRX_BATCHING": value})
    assert out.split() == ["True"]


@pytest.mark.parametrize("name, value", [
    ("HRX_BATCHING", "2"), ("HRX_BATCHING", "off"), ("HRX_BATCHING", " 0"),
    ("HRX_BATCH_DELAY_US", "0"), ("HRX_BATCH_MAX_COMMANDS", "1"),
    ("HRX_BATCH_MAX_COPY_BYTES", "64k"), ("HRX_BATCH_HOLD_US", "-1"),
    ("HRX_BATCH_HOLD_US", "10000001")])
def test_a_malformed_variable_is_refused_naming_it(fresh, name, value):
    out = fresh("""
        try:
            hrx.Device.open(backend=backend)
        except hrx.InvalidArgumentError as error:
            print(error)
    """, env={name: value})
    assert out.startswith(f"{name} must be an integer from "), out
    assert f"got '{value}'" in out


@pytest.mark.parametrize("bad", [1, 0, "on", None, 1.0])
def test_set_batching_takes_only_a_bool(device, bad):
    with pytest.raises(TypeError, match="batching must be True or False"):
        device.set_batching(bad)


@pytest.mark.parametrize("bad", [1, "off", 0.0])
def test_open_batching_takes_a_bool_or_none(backend, bad):
    with pytest.raises(TypeError, match="batching must be True or False"):
        hrx.Device.open(backend=backend, batching=bad)


def test_closed_device_batching_raises(backend):
    d = hrx.Device.open(backend=backend)
    d.close()
    with pytest.raises(hrx.FailedPreconditionError):
        d.set_batching(False)
    with pytest.raises(hrx.FailedPreconditionError):
        d.batching


def test_info_says_how_batches_are_published(device):
    text = device.info["batch_publication"]
    assert text
    if device.info["backend"] == "host":
        assert text == "one ring slot per batch"


# ------------------------------------------------------- bounded delay


@pytest.mark.parametrize("batching", [True, False])
def test_lone_batched_command_goes_out_without_synchronize(fresh, batching):
    """Nothing on the batching stream publishes it: another stream, which
    shares nothing with it, polls the bytes (the flusher must publish them;
    the 20 us delay plus scheduling on a loaded machine, so up to 5 s)."""
    out = fresh(f"""
        import time
        d = hrx.Device.open(backend=backend, batching={batching})
        d.set_stream_queue_count(2)
        writer, reader = d.stream(), d.stream()
        buf = d.allocate(4096)
        writer.fill(buf, 0)
        writer.synchronize()
        ok = 0
        for attempt in range(5):
            time.sleep(0.005)                  # quiet: the next fill goes out
            writer.fill(buf[:64], attempt + 1)  # at once (idle queue)...
            writer.fill(buf[64:128], attempt + 1)  # ...this one is batched
            out = np.zeros(128, dtype=np.uint8)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                reader.read_blocking(buf[:128], out)
                if (out == attempt + 1).all():
                    ok += 1
                    break
                time.sleep(0.001)
        print(ok)
    """)
    assert out.split() == ["5"]


# --------------------------------------------------- observation points


def test_synchronize_sees_batched_work(stream, device):
    buf = device.allocate(16 * 64)
    _host_burst(stream, buf)
    stream.synchronize()
    other = device.stream()
    got = _read(other, buf).reshape(16, 64)
    for lane in range(16):
        assert (got[lane] == (48 + lane) & 0xFF).all()


def test_record_event_covers_batched_work_for_another_stream(device):
    writer, reader = device.stream(), device.stream()
    src = device.allocate(16 * 64)
    dst = device.allocate(16 * 64)
    _host_burst(writer, src)
    event = writer.record_event()
    reader.wait_event(event)
    reader.copy(dst, src)
    got = _read(reader, dst).reshape(16, 64)
    assert all((got[lane] == (48 + lane) & 0xFF).all() for lane in range(16))


def test_event_synchronize_covers_batched_work(device):
    writer, reader = device.stream(), device.stream()
    buf = device.allocate(16 * 64)
    _host_burst(writer, buf)
    writer.record_event().synchronize()
    got = _read(reader, buf).reshape(16, 64)
    assert (got[15] == 63).all()


def test_read_on_the_same_stream_sees_batched_work(stream, device):
    buf = device.allocate(16 * 64)
    _host_burst(stream, buf)
    got = stream.read(buf).wait().reshape(16, 64)
    assert (got[0] == 48).all()


def test_device_synchronize_publishes_every_stream(device):
    streams = [device.stream() for _ in range(4)]
    buf = device.allocate(4 * 1024)
    for k in range(200):
        s = streams[k % 4]
        s.fill(buf[(k % 4) * 1024:(k % 4 + 1) * 1024], k & 0xFF)
    device.synchronize()
    got = _read(device.stream(), buf).reshape(4, 1024)
    for lane in range(4):
        assert (got[lane] == (196 + lane) & 0xFF).all()


def test_stream_release_publishes_its_batch(device):
    buf = device.allocate(16 * 64)
    s = device.stream()
    _host_burst(s, buf)
    s.close()
    device.synchronize()
    got = _read(device.stream(), buf).reshape(16, 64)
    assert (got[15] == 63).all()


def test_dropping_a_source_buffer_publishes_work_that_reads_it(device):
    s = device.stream()
    dst = device.allocate(64 * KIB)
    src = device.allocate(64 * KIB)
    s.fill(src, 0x3C)
    for _ in range(8):
        s.copy(dst, src)      # batched; names src's memory
    del src                   # must not free it under the pending copies
    s.synchronize()
    assert (_read(s, dst) == 0x3C).all()


# ------------------------------------------------------------ ordering


def test_batched_and_native_commands_keep_stream_order(stream, device):
    """Small fills and copies (batched), an upload and a large copy (native,
    which publish the batch first) on one stream, each depending on the one
    before."""
    big = 1 << 20
    a = device.allocate(big)
    b = device.allocate(big)
    stream.fill(a, 1)
    stream.fill(a[:4096], 2)              # small: batched
    stream.copy(b[:4096], a[:4096])       # depends on the fill before it
    stream.upload(a[4096:8192], np.full(4096, 3, dtype=np.uint8))
    stream.copy(b[4096:8192], a[4096:8192])
    stream.copy(b[8192:], a[8192:])       # large: the runtime's own copy
    stream.fill(b[big - 16:], 4)          # small again, after the large one
    got = _read(stream, b)
    assert (got[:4096] == 2).all()
    assert (got[4096:8192] == 3).all()
    assert (got[8192:big - 16] == 1).all()
    assert (got[big - 16:] == 4).all()


def test_read_after_write_chains_inside_one_batch(stream, device):
    """Each copy reads what the previous one wrote: in-order execution
    inside a batch."""
    buf = device.allocate(33 * 256)
    stream.fill(buf[:256], 9)
    for k in range(32):
        stream.copy(buf[(k + 1) * 256:(k + 2) * 256], buf[k * 256:(k + 1) * 256])
    assert (_read(stream, buf) == 9).all()


def test_overlapping_unaligned_writes_land_in_order(stream, device):
    buf = device.allocate(4096)
    stream.fill(buf, 0)
    for k in range(100):
        stream.fill(buf[k:k + 1000], k + 1)
    got = _read(stream, buf)
    expected = np.zeros(4096, dtype=np.uint8)
    for k in range(100):
        expected[k:k + 1000] = k + 1
    assert np.array_equal(got, expected)


def test_many_streams_round_robin_like_the_benchmark(device):
    """The benchmark's pattern: one thread round-robins over 16 streams,
    each copying the same source to its own destination again and again."""
    lanes = []
    for lane in range(16):
        s = device.stream()
        src = device.allocate(4096)
        dst = device.allocate(4096)
        s.upload(src, np.full(4096, lane + 1, dtype=np.uint8))
        lanes.append((s, src, dst))
    for _ in range(200):
        for s, src, dst in lanes:
            s.copy(dst, src)
    for s, _, _ in lanes:
        s.synchronize()
    for lane, (s, _, dst) in enumerate(lanes):
        assert (_read(s, dst) == lane + 1).all()


def test_switching_off_mid_stream_keeps_order(stream, device):
    buf = device.allocate(64)
    stream.fill(buf, 1)
    stream.fill(buf, 2)               # batched
    device.set_batching(False)
    stream.fill(buf, 3)               # native, after the batch
    assert (_read(stream, buf) == 3).all()
    device.set_batching(True)
    stream.fill(buf, 4)
    assert (_read(stream, buf) == 4).all()


def test_threads_sharing_streams_and_queues(device):
    """16 threads, 2 per stream, 8 streams on the pool: every byte right."""
    import threading
    streams = [device.stream() for _ in range(8)]
    bufs = [device.allocate(16 * 256) for _ in range(16)]
    errors = []

    def work(index):
        try:
            s = streams[index // 2]
            for k in range(300):
                s.fill(bufs[index][(k % 16) * 256:(k % 16 + 1) * 256], (index + k) & 0xFF)
        except BaseException as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for s in streams:
        s.synchronize()
    reader = device.stream()
    for index in range(16):
        got = _read(reader, bufs[index]).reshape(16, 256)
        for lane in range(16):
            last = max(k for k in range(300) if k % 16 == lane)
            assert (got[lane] == (index + last) & 0xFF).all()


# ------------------------------------------------------------- failures


def test_a_failure_inside_a_batch_names_the_command(fresh):
    """The 3rd native copy call fails (fault injection): the copies were all
    accepted into a batch, so the next synchronize reports the failure,
    naming which command of the stream it was and how many were not run;
    the stream then works."""
    out = fresh("""
        dev = hrx.Device.open(0, backend=backend, batching=True)
        s = dev.stream()
        src, dst = dev.allocate(96), dev.allocate(96)
        s.fill(src, 0xAB)
        s.fill(dst, 0)
        s.synchronize()
        s.fill(src[:1], 0xAB)       # goes out at once (the thread observed)
        for i in range(6):          # batched: no error here
            s.copy(dst[i * 16:(i + 1) * 16], src[i * 16:(i + 1) * 16])
        try:
            s.synchronize()
            print("no error")
        except hrx.DeviceError as error:
            print("error:", error)
        s.synchronize()             # reported once
        s.fill(dst[:16], 7)         # the stream is usable
        got = s.read(dst).wait().reshape(6, 16)
        print(int(got[0][0]), [int(row[0]) for row in got[1:]])
    """, env={"HRX_FAULTS": "copy:3"})
    lines = out.strip().splitlines()
    assert lines[0].startswith("error:"), out
    # Commands 1-3 were the fills; the copies are 4-9, the 3rd copy call is
    # command 6 (the batch goes to the backend as one call per command
    # where the fault wrapper counts copies).
    assert "command 6 of this stream" in lines[0], out
    assert "copy of 16 bytes" in lines[0], out
    # The rest of the failed batch was not run (it could have read what
    # the failed copy should have written); the stream works again.
    assert "3 later commands of this stream were not run" in lines[0], out
    assert "the stream is usable again" in lines[0], out
    assert lines[1] == "7 [171, 0, 0, 0, 0]", out
