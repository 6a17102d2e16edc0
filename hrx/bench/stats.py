"""Nearest-rank percentiles, the statistic of the reference protocol.

The p-th percentile of n values is ``sorted(values)[ceil(n * p / 100) - 1]``:
always one of the measured values, never an interpolation. For n = 15 the
median is the 8th value and p95 is the 15th (the maximum); for an even n the
nearest-rank median is the lower of the two middle values. That is the
statistic of one run's samples.

Across runs (the table's cells) the median is ``run_median``: the middle run
of an odd count, as the reference's table takes it from three runs, and the
mean of the two middle runs of an even count, so that two runs never show
only the lower one.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Iterable, TypeVar, Union

Number = Union[int, float]
T = TypeVar("T", int, float)

__all__ = ["percentile", "median", "p95", "rank", "run_median"]


def rank(n: int, p: Number) -> int:
    """The 0-based index that the nearest-rank p-th percentile takes among n
    sorted values. Exact (rational arithmetic), so p=95, n=20 gives index 18,
    not a float-rounded neighbour. Raises ValueError for n < 1 or p outside
    (0, 100]."""
    if n < 1:
        raise ValueError("a percentile needs at least one value")
    exact = Fraction(p) if not isinstance(p, float) else Fraction(repr(p))
    if not 0 < exact <= 100:
        raise ValueError(f"percentile must be in (0, 100], got {p!r}")
    position = n * exact / 100
    return -(-position.numerator // position.denominator) - 1


def percentile(values: Iterable[T], p: Number) -> T:
    """The nearest-rank p-th percentile of values (see the module docstring).
    The input is not modified. Raises ValueError when values is empty."""
    ordered = sorted(values)
    return ordered[rank(len(ordered), p)]


def median(values: Iterable[T]) -> T:
    """Nearest-rank median: percentile(values, 50)."""
    return percentile(values, 50)


def p95(values: Iterable[T]) -> T:
    """Nearest-rank 95th percentile: percentile(values, 95)."""
    return percentile(values, 95)


def run_median(values: Iterable[Number]) -> float:
    """The median over runs, as the table, the plot and pandas' ``median``
    give it: for an odd count the middle value (the nearest-rank median, a
    measured run), for an even count the mean of the two middle values.
    The input is not modified. Raises ValueError when values is empty."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("a median needs at least one value")
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2
