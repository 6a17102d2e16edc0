"""Memory pressure around a run: host MemAvailable, device memory in use and
the process's peak resident set. Every probe returns None where the platform
cannot answer, never raises."""
from __future__ import annotations

import sys
from typing import Any, Dict, Optional

__all__ = ["host_mem_available_bytes", "host_mem_total_bytes", "peak_rss_bytes",
           "device_memory", "MemoryProbe"]


def _meminfo(field: str) -> Optional[int]:
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for row in handle:
                name, _, rest = row.partition(":")
                if name == field:
                    parts = rest.split()
                    scale = 1024 if len(parts) > 1 and parts[1].lower() == "kb" else 1
                    return int(parts[0]) * scale
    except (OSError, ValueError, IndexError):
        return None
    return None


def host_mem_available_bytes() -> Optional[int]:
    """MemAvailable of /proc/meminfo in bytes (Linux), else None."""
    return _meminfo("MemAvailable")


def host_mem_total_bytes() -> Optional[int]:
    """MemTotal of /proc/meminfo in bytes (Linux), else None."""
    return _meminfo("MemTotal")


def peak_rss_bytes() -> Optional[int]:
    """The peak resident set size of this process so far, in bytes."""
    try:
        import resource
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


def device_memory(device: Any) -> Dict[str, Optional[int]]:
    """{"total": bytes, "used": bytes} of an hrx device: total from
    ``device.info["total_memory"]``, used = total - ``device.free_memory``.
    A value the device cannot report is None."""
    total: Optional[int] = None
    free: Optional[int] = None
    try:
        total = int(device.info["total_memory"])
    except Exception:  # noqa: BLE001 - a probe must not fail the run
        total = None
    try:
        value = device.free_memory
        free = int(value() if callable(value) else value)
    except Exception:  # noqa: BLE001
        free = None
    used = total - free if total is not None and free is not None else None
    return {"total": total, "used": used}


class MemoryProbe:
    """Takes the "before" measurements on construction and builds the
    ``memory`` object of a result line on ``finish()``:
    peak_rss_bytes, host_mem_available_{before,after}_bytes,
    device_memory_used_{before,after}_bytes, device_memory_total_bytes."""

    def __init__(self, device: Any) -> None:
        self._device = device
        self._host_before = host_mem_available_bytes()
        self._device_before = device_memory(device)

    def finish(self) -> Dict[str, Optional[int]]:
        """Takes the "after" measurements; call it right after the timed work."""
        after = device_memory(self._device)
        return {
            "peak_rss_bytes": peak_rss_bytes(),
            "host_mem_total_bytes": host_mem_total_bytes(),
            "host_mem_available_before_bytes": self._host_before,
            "host_mem_available_after_bytes": host_mem_available_bytes(),
            "device_memory_total_bytes": after["total"] if after["total"] is not None
            else self._device_before["total"],
            "device_memory_used_before_bytes": self._device_before["used"],
            "device_memory_used_after_bytes": after["used"],
        }
