"""Timed rounds as the protocol measures them, for any Python workload: the
python driver's cases (python_driver.py) and the peer libraries beside it
(bench/scripts/python_threads.py) time their rounds with these, so their
numbers mean the same thing.

``timed_rounds``   one thread: each round's duration, warm-up rounds dropped.
``barrier_rounds`` one thread per worker, released together by a barrier at
                   each round; a round lasts from the earliest start to the
                   latest end (the slowest thread).
"""
from __future__ import annotations

import contextlib
import threading
import time
from typing import Callable, ContextManager, List, Optional

__all__ = ["timed_rounds", "barrier_rounds"]

_now = time.perf_counter_ns


def timed_rounds(body: Callable[[], int], warmup: int, samples: int) -> List[int]:
    """Runs ``body`` warmup + samples times (it returns its own duration in
    ns) and returns the last ``samples`` durations."""
    durations = [body() for _ in range(warmup + samples)]
    return durations[warmup:]


def barrier_rounds(workers: int, body: Callable[[int], None], warmup: int,
                   samples: int, *,
                   context: Optional[Callable[[int], ContextManager]] = None,
                   name: str = "hrx-bench") -> List[int]:
    """Runs warmup + samples rounds on ``workers`` threads: in each, every
    thread waits at a barrier, then calls ``body(index)`` (its share of the
    round, including whatever wait ends it). ``context(index)``, if given,
    is entered by each thread around all its rounds (e.g. a library's
    current-stream context). Returns the measured rounds' durations in ns,
    each from the earliest start to the latest end. The first exception of
    any thread breaks the barrier for the others and is raised here once
    every thread has ended."""
    rounds = warmup + samples
    starts = [[0] * workers for _ in range(rounds)]
    ends = [[0] * workers for _ in range(rounds)]
    barrier = threading.Barrier(workers)
    failures: List[BaseException] = []
    enter = context or (lambda index: contextlib.nullcontext())

    def worker(index: int) -> None:
        try:
            with enter(index):
                for round_index in range(rounds):
                    barrier.wait()
                    starts[round_index][index] = _now()
                    body(index)
                    ends[round_index][index] = _now()
        except threading.BrokenBarrierError:
            return  # another thread failed; its error is the one raised
        except BaseException as error:  # noqa: BLE001 - re-raised below
            failures.append(error)
            barrier.abort()

    threads = [threading.Thread(target=worker, args=(index,), name=f"{name}-{index}",
                                daemon=True) for index in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    durations = [max(ends[r]) - min(starts[r]) for r in range(rounds)]
    return durations[warmup:]
