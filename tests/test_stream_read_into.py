"""Stream.read_into: an asynchronous read into memory the caller provides,
chunked and paced like any read; the bytes are in `out` once wait()
returned (it returns `out`) or done() returned True."""
from __future__ import annotations

import pytest

SMALL = {"HRX_CHUNK_BYTES": "65536", "HRX_CHUNK_WINDOW_BYTES": "131072"}


@pytest.mark.parametrize("env", [SMALL, {"HRX_CHUNKING": "0"}],
                         ids=["chunked", "unchunked"])
def test_read_into_gives_the_bytes_in_out(fresh, env):
    out = fresh("""
        import sys
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        rng = np.random.default_rng(3)
        for n in (1, 4096, 65536 * 3 + 17, 1 << 20):
            data = rng.integers(0, 256, n, dtype=np.uint8)
            a = dev.allocate(n)
            s.upload(a, data)
            dst = np.zeros(n, np.uint8)
            held = sys.getrefcount(dst)
            r = s.read_into(a, dst)
            assert sys.getrefcount(dst) > held   # out is held
            assert r.wait() is dst and (dst == data).all(), n
            del r
            assert sys.getrefcount(dst) == held  # and let go
            # done() alone: True means the bytes are there.
            dst2 = bytearray(n)
            with s.read_into(a, dst2) as r2:
                while not r2.done():
                    pass
                assert bytes(dst2) == data.tobytes(), n
        # Closed before its wait: out is let go, nothing else happens.
        b = dev.allocate(1 << 20)
        dst = np.zeros(1 << 20, np.uint8)
        held = sys.getrefcount(dst)
        s.read_into(b, dst).close()
        assert sys.getrefcount(dst) == held
        dev.synchronize()
        print("ok")
    """, env=env)
    assert out.strip() == "ok"


def test_read_into_a_failed_stream_raises_at_wait(fresh):
    out = fresh("""
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        a = dev.allocate(1 << 20)
        s.fill(a, 1)
        dst = np.zeros(1 << 20, np.uint8)
        try:
            s.read_into(a, dst).wait()
        except hrx.Error as e:
            print("raised", type(e).__name__)
        else:
            print("ok")
    """, env=dict(SMALL, HRX_FAULTS="fill:1"))
    assert out.strip() in ("raised DeviceError", "ok")
