"""The first read of a device costs what the others cost: its staging
memory is allocated by the device's cleanup thread when the device opens
(csrc/core/staging.h, warm-up), not on the read's path. On a GPU that
allocation (pinned host memory) costs milliseconds; on the host backend it
is cheap, so these tests check the mechanism through the testing build's
count of staging blocks allocated on the read path and by the warm-up
(tests/c/test_cleanup.c checks a read that comes before the warm-up
started, or while it runs).
bench/scripts/read_latency.py --first-read measures the first read."""
from __future__ import annotations


def test_the_first_reads_take_the_warmed_up_staging(fresh):
    out = fresh("""
        import time
        counts = hrx._hrx._testing_staging_allocations
        def warmed_up(n):
            # The warm-up runs on the device's cleanup thread; a read that
            # came before that thread started it would allocate instead.
            deadline = time.monotonic() + 30
            while counts()["warm_up"] < n and time.monotonic() < deadline:
                time.sleep(0.001)
            assert counts()["warm_up"] == n, counts()
        dev = hrx.Device.open(0, backend=backend)
        warmed_up(1)
        s = dev.stream()
        small, mid = dev.allocate(64), dev.allocate(64 << 10)
        s.fill(small, 5); s.fill(mid, 6)
        out = np.zeros(64, np.uint8)
        assert (s.read_blocking(small, out) == 5).all()
        assert counts() == {"reads": 0, "warm_up": 1}, counts()
        # Any read up to 64 KiB takes the warmed-up block when its own size
        # has none; one after the other, they reuse it.
        assert (s.read(mid).wait() == 6).all()
        assert (s.read(small[:16]).wait() == 5).all()
        assert counts() == {"reads": 0, "warm_up": 1}, counts()
        # Two reads in flight at once: the second needs a block of its own.
        first, second = s.read(small), s.read(small)
        assert (first.wait() == 5).all() and (second.wait() == 5).all()
        assert counts() == {"reads": 1, "warm_up": 1}, counts()
        # A larger read allocates its own size.
        big = dev.allocate(1 << 20)
        s.fill(big, 7)
        assert (s.read(big).wait() == 7).all()
        assert counts() == {"reads": 2, "warm_up": 1}, counts()
        for obj in (small, mid, big, s, dev):
            obj.close()
        # Each live device warms up once, when it opens.
        again = hrx.Device.open(0, backend=backend)
        warmed_up(2)
        s = again.stream()
        b = again.allocate(64)
        s.fill(b, 8)
        assert (s.read(b).wait() == 8).all()
        assert counts() == {"reads": 2, "warm_up": 2}, counts()
        for obj in (b, s, again):
            obj.close()
        print("ok")
    """)
    assert out.strip() == "ok"


def test_fault_injection_leaves_the_warm_up_out(fresh):
    """Under $HRX_FAULTS every native call is numbered in order; a warm-up
    at a time of its own would shift that schedule, so the testing build
    leaves it out there: the first read allocates, as the fault tests
    expect."""
    out = fresh("""
        counts = hrx._hrx._testing_staging_allocations
        dev = hrx.Device.open(0, backend=backend)
        s = dev.stream()
        b = dev.allocate(64)
        s.fill(b, 1)
        assert (s.read(b).wait() == 1).all()
        assert counts() == {"reads": 1, "warm_up": 0}, counts()
        print("ok")
    """, env={"HRX_FAULTS": "none"})
    assert out.strip() == "ok"
