"""The contention cases' keys and summary (csrc/bench/bench_contention.h).

A driver result that ran them has, besides the reference cases' arrays:

``kernel_one_lane_round_ns`` / ``kernel_lanes_round_ns``
    ``samples`` rounds of the concurrency case: ``kernel_launches`` 1-block
    spin kernels (``kernel_spin_ns`` per block) on one small lane, and the
    same launches round-robin over every small lane, each round up to the
    synchronize of the lanes it used.
``<op>_<kind>_sample_ns``
    for op in OPS and kind in KINDS: the timed operation (submit + wait)
    on that probe stream with the backlog queued on every bulk lane;
    ``compute_samples`` entries for the compute ops, ``transfer_samples``
    for the transfer ops.

The summary (``summarize``) adds, per op and kind, the nearest-rank median
and p95 in µs (``<op>_<kind>_latency_median_us`` / ``_p95_us``), and:

``kernel_duration_us``
    the median one-lane round / kernel_launches: one kernel's duration as
    one stream runs them back to back (the kernel's own time plus the gap
    between kernels), measured in the same run;
``kernel_launches_per_second``
    kernel_launches / the median all-lanes round;
``kernels_at_once``
    kernel_launches_per_second x kernel_duration_us, i.e. the median
    one-lane round / the median all-lanes round: how many of the kernels
    ran at once on average, 1.0 when the lanes gave nothing.

Lines without these keys (older lines, the reference file) are complete.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Tuple

from .stats import median, p95

__all__ = ["KINDS", "OPS", "COMPUTE_OPS", "TRANSFER_OPS", "SIZE_KEYS", "KERNEL_RAW_KEYS",
           "SAMPLE_RAW_KEYS", "RAW_KEYS", "CONCURRENCY_KEYS", "SUMMARY_KEYS", "sample_key",
           "latency_key", "has_contention", "expected_lengths", "summarize"]

KINDS = ("round_robin", "high", "reserved", "reserved_high")
"""The probe streams: a round-robin pool stream (a small lane), a
high-priority stream, a reserved stream, a reserved high-priority stream."""

COMPUTE_OPS = ("compute_kernel", "compute_copy")
"""Behind the compute backlog: a 1-block kernel, a small_bytes device copy."""

TRANSFER_OPS = ("transfer_read", "transfer_upload")
"""Behind the read backlog a small_bytes read; behind the upload backlog a
small_bytes upload."""

OPS = COMPUTE_OPS + TRANSFER_OPS

SIZE_KEYS = ("kernel_spin_ns", "kernel_launches", "backlog_blocks", "backlog_kernels",
             "transfer_bytes", "transfer_copies", "compute_samples", "transfer_samples")
"""The contention cases' sizes (config.py), recorded in a line's sizes."""

KERNEL_RAW_KEYS = ("kernel_one_lane_round_ns", "kernel_lanes_round_ns")


def sample_key(op: str, kind: str) -> str:
    """The raw array of op on kind: "<op>_<kind>_sample_ns"."""
    return f"{op}_{kind}_sample_ns"


def latency_key(op: str, kind: str, stat: str) -> str:
    """The summary key: "<op>_<kind>_latency_<stat>_us" (stat median or p95)."""
    return f"{op}_{kind}_latency_{stat}_us"


SAMPLE_RAW_KEYS = tuple(sample_key(op, kind) for op in OPS for kind in KINDS)
RAW_KEYS = KERNEL_RAW_KEYS + SAMPLE_RAW_KEYS
CONCURRENCY_KEYS = ("kernel_duration_us", "kernel_launches_per_second", "kernels_at_once")
SUMMARY_KEYS = CONCURRENCY_KEYS + tuple(
    latency_key(op, kind, stat) for op in OPS for kind in KINDS for stat in ("median", "p95"))


def has_contention(result: Mapping[str, Any]) -> bool:
    """True when ``result`` (a driver result or a line's raw) has any
    contention array; then it must have all of them."""
    return any(key in result for key in RAW_KEYS)


def expected_lengths(result: Mapping[str, Any]) -> Dict[str, int]:
    """Each contention array's length as the sizes imply. KeyError naming
    the size when the result lacks it."""
    lengths = {key: int(result["samples"]) for key in KERNEL_RAW_KEYS}
    for op in OPS:
        count = int(result["compute_samples" if op in COMPUTE_OPS else "transfer_samples"])
        lengths.update({sample_key(op, kind): count for kind in KINDS})
    return lengths


def summarize(result: Mapping[str, Any]) -> Dict[str, float]:
    """The contention summary (SUMMARY_KEYS) of a result that ran the cases;
    {} for one that did not. Raises ValueError when an array is missing or
    its length does not match the sizes."""
    if not has_contention(result):
        return {}
    try:
        lengths = expected_lengths(result)
    except KeyError as error:
        raise ValueError(f"contention arrays without the size {error.args[0]!r}") from None
    for key, expected in lengths.items():
        if key not in result:
            raise ValueError(f"{key} is missing (the other contention arrays are present)")
        if len(result[key]) != expected:
            raise ValueError(f"{key} has {len(result[key])} entries, expected {expected}")
    launches = int(result["kernel_launches"])
    one_lane = median(result["kernel_one_lane_round_ns"])
    lanes = median(result["kernel_lanes_round_ns"])
    summary: Dict[str, float] = {
        "kernel_duration_us": one_lane / launches / 1e3,
        "kernel_launches_per_second": launches * 1e9 / lanes,
        "kernels_at_once": one_lane / lanes,
    }
    for op in OPS:
        for kind in KINDS:
            samples = result[sample_key(op, kind)]
            summary[latency_key(op, kind, "median")] = median(samples) / 1e3
            summary[latency_key(op, kind, "p95")] = p95(samples) / 1e3
    return summary


def present_size_keys(result: Mapping[str, Any]) -> Tuple[str, ...]:
    """The SIZE_KEYS that ``result`` has."""
    return tuple(key for key in SIZE_KEYS if key in result)
