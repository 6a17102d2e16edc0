"""The first read of a device costs what the others cost: its staging
memory is allocated by the device's cleanup thread when the device's first
stream is created (csrc/core/staging.h, warm-up), not on the read's path,
and not at open (on a GPU that would create the runtime's context before
the pool is sized). On a GPU that
allocation (pinned host memory) costs milliseconds; on the host backend it
is cheap, so these tests check the mechanism through the testing build's
count of staging blocks allocated on the read path and by the warm-up
(tests/c/test_cleanup.c checks a read that comes before the warm-up
started, or while it runs).
bench/scripts/read_latency.py --first-read measures the first read."""
from __future__ import annotations

import textwrap

import pytest

from fresh_programs import open_refused


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
        time.sleep(0.1)
        assert counts()["warm_up"] == 0, ("warmed up at open", counts())
        s = dev.stream()
        warmed_up(1)
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
        # Each live device warms up once, with its first stream.
        again = hrx.Device.open(0, backend=backend)
        s = again.stream()
        warmed_up(2)
        again.stream().close()
        time.sleep(0.05)
        assert counts()["warm_up"] == 2, counts()
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


BACKLOG = textwrap.dedent("""
    import time
    allocations = hrx._hrx._testing_staging_allocations
    evictions = hrx._hrx._testing_staging_evictions
    dev = hrx.Device.open(0, backend=backend)
    s = dev.stream()
    deadline = time.monotonic() + 30      # the warm-up's block is cached
    while allocations()["warm_up"] < 1 and time.monotonic() < deadline:
        time.sleep(0.001)
    assert allocations()["warm_up"] == 1, allocations()
    buffers = [dev.allocate(1 << 20) for _ in range(8)]
    for i, b in enumerate(buffers):
        s.fill(b, i)
    def backlog():
        before = allocations()["reads"]
        reads = [s.read(b) for b in buffers]   # 8 blocks in use at once
        for i, r in enumerate(reads):
            assert (r.wait() == i).all()
            r.close()
        return allocations()["reads"] - before
    def evicted(least):
        deadline = time.monotonic() + 30
        while evictions()["cleanup"] < least and time.monotonic() < deadline:
            time.sleep(0.001)
        return evictions()
""")


def backlog_code(code: str) -> str:
    return BACKLOG + textwrap.dedent(code)


def test_a_backlog_of_reads_reuses_its_staging_round_after_round(fresh):
    """The cache (HRX_STAGING_CACHE_BYTES, default 1 GiB) keeps every block
    of a backlog, so its second round allocates nothing."""
    out = fresh(backlog_code("""
        assert backlog() == 8
        assert backlog() == 0
        assert evictions() == {"cleanup": 0, "inline": 0}, evictions()
        print("ok")
    """), env={"HRX_CHUNKING": "0"})
    assert out.strip() == "ok"


def test_staging_beyond_the_cache_is_freed_by_the_cleanup_thread(fresh):
    """With a cache of 2 MiB (which holds the warm-up's 64 KiB block), 7 of a
    backlog's 8 blocks of 1 MiB are evicted each round, freed by the device's cleanup thread, never on the path of
    the call that gave them back."""
    out = fresh(backlog_code("""
        assert backlog() == 8
        counts = evicted(7)
        assert counts == {"cleanup": 7, "inline": 0}, counts
        assert backlog() == 7
        counts = evicted(14)
        assert counts == {"cleanup": 14, "inline": 0}, counts
        print("ok")
    """), env={"HRX_CHUNKING": "0", "HRX_STAGING_CACHE_BYTES": str(2 << 20)})
    assert out.strip() == "ok"


def test_a_cache_of_zero_keeps_no_staging(fresh):
    out = fresh(backlog_code("""
        assert backlog() == 8
        assert evicted(8)["cleanup"] >= 8
        assert backlog() == 8
        counts = evicted(16)   # and the warm-up's block
        assert counts["cleanup"] >= 16 and counts["inline"] == 0, counts
        print("ok")
    """), env={"HRX_CHUNKING": "0", "HRX_STAGING_CACHE_BYTES": "0"})
    assert out.strip() == "ok"


@pytest.mark.parametrize("value,part", [
    ("-1", "HRX_STAGING_CACHE_BYTES must be an integer from 0 to 68719476736"),
    ("68719476737", "HRX_STAGING_CACHE_BYTES must be an integer from 0"),
    ("1G", "got '1G'"),
])
def test_malformed_staging_cache_is_refused(fresh, value, part):
    message = open_refused(fresh, {"HRX_STAGING_CACHE_BYTES": value})
    assert part in message, message
