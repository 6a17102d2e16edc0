"""One benchmark run as one JSON result line.

``summarize`` turns the raw durations of a driver (``hrx._hrx.bench_run`` or
the Python driver) into the per-process summary of the reference protocol,
with the key names and units of reference/gfx1151.jsonl. ``build_record``
adds provenance (backend, driver, versions, commit, time), the sizes, the
environment, the memory measurements and the raw arrays, so that a line can
be re-analysed later without rerunning anything.
"""
from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional, Tuple

from . import contention
from .stats import median, p95

__all__ = [
    "REFERENCE_KEYS", "RAW_KEYS", "PROBES", "PROBE_RAW_KEYS", "PROBE_SUMMARY_KEYS", "summarize", "build_record", "dumps_line",
    "commands_per_second", "copy_gb_s", "reference_subset",
]

REFERENCE_KEYS = (
    "bulk_batch_median_ms", "bulk_batch_p95_ms", "bulk_copy_gb_s",
    "idle_latency_median_us", "idle_latency_p95_us",
    "loaded_latency_median_us", "loaded_latency_p95_us",
    "queues", "repeat", "samples",
    "small_batch_median_ms", "small_batch_p95_ms", "small_commands_per_second",
    "stream_creation_ms", "streams", "target",
    "threaded_batch_median_ms", "threaded_batch_p95_ms",
    "threaded_commands_per_second", "warmup",
)
"""Every key of a reference line; an hrx line has all of them, same units."""

RAW_KEYS = ("small_round_ns", "threaded_round_ns", "bulk_round_ns",
            "idle_sample_ns", "loaded_sample_ns")
"""The per-round (``samples`` entries) and per-sample (``samples * lanes``
entries) duration arrays of a driver result, in nanoseconds."""

PROBES = ("high", "reserved", "reserved_high")
"""The loaded-latency probe variants of the native driver (csrc/bench/bench.h):
the timed copy on a high-priority stream, on a reserved stream, on a
reserved high-priority stream, while the bulk lanes keep the round-robin
normal lane."""

PROBE_RAW_KEYS = tuple(f"loaded_{probe}_sample_ns" for probe in PROBES)
"""Optional raw arrays (``samples * lanes`` entries each), present only where
the probes ran; lines without them (older lines, other drivers) are still
complete."""

PROBE_SUMMARY_KEYS = tuple(f"loaded_{probe}_latency_{stat}_us"
                           for probe in PROBES for stat in ("median", "p95"))
"""Optional summary keys, one median/p95 pair per probe that ran."""

_SIZE_KEYS = ("lanes", "retained_streams", "small_bytes", "small_copies",
              "bulk_bytes", "bulk_copies", "loaded_copies", "warmup", "samples")


def commands_per_second(commands: int, round_ns: float) -> float:
    """Completed commands per second for ``commands`` per round lasting
    round_ns nanoseconds."""
    return commands * 1e9 / round_ns


def copy_gb_s(copies: int, copy_bytes: int, round_ns: float) -> float:
    """Copy bandwidth in GB/s (1e9 bytes/s), counting each byte once read and
    once written: 2 * copies * copy_bytes / seconds / 1e9."""
    return 2 * copies * copy_bytes / round_ns


def _present_probes(result: Mapping[str, Any]) -> Tuple[str, ...]:
    return tuple(probe for probe in PROBES if f"loaded_{probe}_sample_ns" in result)


def _check_lengths(result: Mapping[str, Any]) -> None:
    samples, lanes = int(result["samples"]), int(result["lanes"])
    probe_keys = tuple(f"loaded_{probe}_sample_ns" for probe in _present_probes(result))
    for key in RAW_KEYS + probe_keys:
        expected = samples if key.endswith("round_ns") else samples * lanes
        if len(result[key]) != expected:
            raise ValueError(f"{key} has {len(result[key])} entries, expected {expected}")


def summarize(result: Mapping[str, Any]) -> Dict[str, Any]:
    """The reference summary of one driver result (every REFERENCE_KEYS entry
    except ``repeat`` and ``target``, which the caller knows).

    Batch times are the nearest-rank median and p95 of the rounds, in ms;
    rates use the median round: commands/s = lanes * small_copies / median,
    GB/s = 2 * lanes * bulk_copies * bulk_bytes / median / 1e9; latencies are
    the median and p95 over every (round, stream position) sample, in µs.
    Where the result has loaded-probe arrays, the summary has
    ``loaded_<probe>_latency_median_us`` / ``_p95_us`` for each, computed the
    same way as the loaded latency; where it has the contention arrays, the
    contention summary (contention.summarize).
    Raises ValueError when an array's length does not match the sizes."""
    _check_lengths(result)
    lanes = int(result["lanes"])
    small = lanes * int(result["small_copies"])
    bulk = lanes * int(result["bulk_copies"])
    small_med = median(result["small_round_ns"])
    threaded_med = median(result["threaded_round_ns"])
    bulk_med = median(result["bulk_round_ns"])
    summary = {
        "bulk_batch_median_ms": bulk_med / 1e6,
        "bulk_batch_p95_ms": p95(result["bulk_round_ns"]) / 1e6,
        "bulk_copy_gb_s": copy_gb_s(bulk, int(result["bulk_bytes"]), bulk_med),
        "idle_latency_median_us": median(result["idle_sample_ns"]) / 1e3,
        "idle_latency_p95_us": p95(result["idle_sample_ns"]) / 1e3,
        "loaded_latency_median_us": median(result["loaded_sample_ns"]) / 1e3,
        "loaded_latency_p95_us": p95(result["loaded_sample_ns"]) / 1e3,
        "queues": int(result["queues"]),
        "samples": int(result["samples"]),
        "small_batch_median_ms": small_med / 1e6,
        "small_batch_p95_ms": p95(result["small_round_ns"]) / 1e6,
        "small_commands_per_second": commands_per_second(small, small_med),
        "stream_creation_ms": int(result["stream_creation_ns"]) / 1e6,
        "streams": lanes,
        "threaded_batch_median_ms": threaded_med / 1e6,
        "threaded_batch_p95_ms": p95(result["threaded_round_ns"]) / 1e6,
        "threaded_commands_per_second": commands_per_second(small, threaded_med),
        "warmup": int(result["warmup"]),
    }
    for probe in _present_probes(result):
        samples = result[f"loaded_{probe}_sample_ns"]
        summary[f"loaded_{probe}_latency_median_us"] = median(samples) / 1e3
        summary[f"loaded_{probe}_latency_p95_us"] = p95(samples) / 1e3
    summary.update(contention.summarize(result))
    return summary


def _raw(result: Mapping[str, Any]) -> Dict[str, Any]:
    raw: Dict[str, Any] = {"unit": "ns", "stream_creation_ns": int(result["stream_creation_ns"])}
    for key in RAW_KEYS + PROBE_RAW_KEYS + contention.RAW_KEYS:
        if key in RAW_KEYS or key in result:
            raw[key] = [int(value) for value in result[key]]
    return raw


def build_record(
    result: Mapping[str, Any],
    *,
    repeat: int,
    target: str,
    backend: str,
    hrx_version: Optional[str],
    git_commit: Optional[str],
    timestamp: str,
    environment: Mapping[str, Any],
    memory: Mapping[str, Any],
    preset: str = "custom",
    extra: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """The full result line of one run: the summary (REFERENCE_KEYS, then
    the PROBE_SUMMARY_KEYS of the probes that ran, then the contention
    summary where the cases ran), then
    backend, driver, hrx_version, git_commit, timestamp (ISO 8601 UTC),
    ``sizes`` (the config as run, plus ``preset``), ``environment``,
    ``memory`` and ``raw`` (every duration array in ns). ``extra`` keys are
    added last (e.g. ``queues_used``) and may not replace the others."""
    summary: Dict[str, Any] = summarize(result)
    summary["repeat"] = int(repeat)
    summary["target"] = target
    line = {key: summary[key] for key in REFERENCE_KEYS}
    line.update({key: summary[key] for key in PROBE_SUMMARY_KEYS if key in summary})
    line.update({key: summary[key] for key in contention.SUMMARY_KEYS if key in summary})
    line.update({
        "backend": backend,
        "driver": str(result["driver"]),
        "hrx_version": hrx_version,
        "git_commit": git_commit,
        "timestamp": timestamp,
        "sizes": dict({key: int(result[key]) for key in _SIZE_KEYS},
                      **{key: int(result[key]) for key in contention.SIZE_KEYS if key in result},
                      preset=preset),
        "environment": dict(environment),
        "memory": dict(memory),
        "raw": _raw(result),
    })
    for key, value in (extra or {}).items():
        if key in line:
            raise ValueError(f"extra key {key!r} would replace a result key")
        line[key] = value
    return line


def dumps_line(line: Mapping[str, Any]) -> str:
    """One line of JSON (no newline inside, none at the end); NaN and
    infinities are refused because JSON has no spelling for them."""
    return json.dumps(line, ensure_ascii=False, allow_nan=False, separators=(", ", ": "))


def reference_subset(line: Mapping[str, Any]) -> Dict[str, Any]:
    """Only the REFERENCE_KEYS of a line, as in reference/gfx1151.jsonl."""
    return {key: line[key] for key in REFERENCE_KEYS}
