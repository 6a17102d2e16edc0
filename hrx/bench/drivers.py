"""The benchmark drivers, by name.

native  the timed loops in C through hrx's own streams (``hrx._hrx.bench_run``);
        it measures the runtime itself.
raw     the same loops in C straight on the backend's native queues, mapped as
        the pool would map them; the baseline for what the stream layer costs.
python  the same cases through the public Python API (python_driver.py).

``workload`` (WORKLOAD_ONLY) is no driver of the cases: a run under that name
runs none of them, only the user's workload (workload.py), and its line has
the shape of workload.py's "workload-only line". Lines and plans name it
where they name a driver, so the sweep, resume and the table treat it as one.
"""
from __future__ import annotations

from typing import Any, Dict, Literal

from .config import BenchConfig

__all__ = ["DRIVERS", "WORKLOAD_ONLY", "run_driver"]

DRIVERS = ("native", "raw", "python")

WORKLOAD_ONLY = "workload"
"""The driver name of a run of the user's workload alone (no built-in case)."""


def run_driver(name: str, device: Any, queues: int, config: BenchConfig) -> Dict[str, Any]:
    """Runs driver ``name`` on ``device`` (pool size already set to
    ``queues``) and returns its raw result dict (the shape of
    ``hrx._hrx.bench_run``). Raises ValueError for an unknown driver and
    RuntimeError when the result disagrees with what was asked."""
    if name in ("native", "raw"):
        from hrx import _hrx

        native: Literal["native", "raw"] = "native" if name == "native" else "raw"
        result = dict(_hrx.bench_run(device, driver=native, **config.as_dict()))
    elif name == "python":
        from .python_driver import run

        result = run(device, queues, config)
    else:
        raise ValueError(f"unknown driver {name!r}; choose one of {', '.join(DRIVERS)}")
    if int(result["queues"]) != int(queues):
        raise RuntimeError(f"driver {name} ran with {result['queues']} queues, asked for {queues}")
    if result.get("driver") != name:
        raise RuntimeError(f"driver {name} reported itself as {result.get('driver')!r}")
    return result
