"""One benchmark run in the current process: one queue count, one result line."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from . import environment
from .config import BenchConfig, preset_name, resolve
from .drivers import run_driver
from .memory import MemoryProbe
from .provenance import hrx_version, source_commit, utc_timestamp
from .record import build_record
from .workload import DEFAULT_STREAMS, load_workload, run_workload

__all__ = ["run"]


def run(
    queues: int,
    samples: Optional[int] = None,
    *,
    backend: Optional[str] = None,
    device: int = 0,
    driver: str = "native",
    batching: bool = True,
    quick: bool = False,
    sizes: Optional[Mapping[str, Optional[int]]] = None,
    repeat: int = 1,
    config: Optional[BenchConfig] = None,
    workload: Optional[str] = None,
    workload_streams: int = DEFAULT_STREAMS,
) -> Dict[str, Any]:
    """Opens device ``device`` of ``backend`` (None: hrx's automatic choice),
    sets its pool to ``queues`` and its batching switch to ``batching``,
    runs ``driver`` and returns the result line (a dict; see
    record.build_record). The line records ``batching`` (None for the raw
    driver, which bypasses the stream layer).

    The sizes are ``config`` if given, else the reference protocol (or the
    quick preset) with ``sizes`` and ``samples`` applied. ``repeat`` is only
    recorded. The pool size can be set only before the device's first use, so
    nothing else in the process may hold that device while this runs; each
    call opens it afresh. For comparable numbers, run each queue count in a
    fresh process (``hrx.bench.sweep`` does).

    ``workload`` (``module:function`` or ``file.py:function``, see
    workload.py) adds the user's own rounds after the driver's cases, on
    ``workload_streams`` pool streams; it is loaded before the device is
    opened, so a bad name fails before any work."""
    import hrx

    if config is None:
        config = resolve(quick, dict(sizes or {}, samples=samples))
    function = load_workload(workload) if workload is not None else None
    timestamp = utc_timestamp()
    handle = hrx.Device.open(index=device, backend=backend, batching=bool(batching))
    handle.set_stream_queue_count(queues)
    info = dict(handle.info)
    probe = MemoryProbe(handle)
    result = run_driver(driver, handle, queues, config)
    workload_line = None
    if function is not None:
        workload_line = run_workload(workload, handle, streams=workload_streams,
                                     warmup=config.warmup, samples=config.samples,
                                     function=function)
    memory = probe.finish()
    connections = dict(handle.pool_stats()["connections"])
    del handle
    commit, dirty = source_commit()
    extra: Dict[str, Any] = {"git_dirty": dirty,
                             "batching": None if driver == "raw" else bool(batching)}
    if "queues_used" in result:
        extra["queues_used"] = int(result["queues_used"])
    if workload_line is not None:
        extra["workload"] = workload_line
    return build_record(
        result,
        repeat=repeat,
        target=str(info["target"]),
        backend=str(info["backend"]),
        hrx_version=hrx_version(),
        git_commit=commit,
        timestamp=timestamp,
        environment=environment.collect(info, config.bulk_bytes, connections=connections),
        memory=memory,
        preset=preset_name(config),
        extra=extra,
    )
