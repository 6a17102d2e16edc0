"""One benchmark run in the current process: one queue count, one result line."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from . import environment
from .config import BenchConfig, check_size_rule, preset_name, resolve_rule
from .drivers import run_driver
from .memory import MemoryProbe
from .provenance import hrx_version, source_commit, utc_timestamp
from .record import build_record
from .drivers import WORKLOAD_ONLY
from .workload import (DEFAULT_STREAMS, WorkloadError, build_workload_record, resolve_workload,
                       run_workload)

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
    workload: Any = None,
    preset: str = "auto",
    workload_streams: int = DEFAULT_STREAMS,
) -> Dict[str, Any]:
    """Opens device ``device`` of ``backend`` (None: hrx's automatic choice),
    sets its pool to ``queues`` and its batching switch to ``batching``,
    runs ``driver`` and returns the result line (a dict; see
    record.build_record). The line records ``batching`` (None for the raw
    driver, which bypasses the stream layer).

    The sizes are ``config`` if given, else the preset that ``preset`` gives
    the opened device (config.py: "auto" is the size rule, quick sizes on the
    host backend and the reference protocol on a GPU; "reference"; "quick";
    ``quick=True`` means "quick") with ``sizes`` and ``samples`` applied. The
    line records ``preset`` as ``size_rule``. ``repeat`` is only
    recorded. The pool size can be set only before the device's first use, so
    nothing else in the process may hold that device while this runs; each
    call opens it afresh. For comparable numbers, run each queue count in a
    fresh process (``hrx.bench.sweep`` does).

    ``workload`` (``module:function``, ``file.py:function``, or a function
    of this process such as one defined in a notebook; see workload.py) adds
    the user's own rounds after the driver's cases, on ``workload_streams``
    pool streams; it is loaded before the device is opened, so a bad name
    fails before any work.

    ``driver="workload"`` (drivers.WORKLOAD_ONLY) runs the workload alone,
    none of the driver's cases: ``config.warmup`` + ``config.samples``
    rounds, and the line is a workload-only line (workload.py); it needs
    ``workload``."""
    import hrx

    if driver == WORKLOAD_ONLY and workload is None:
        raise WorkloadError("driver 'workload' runs your workload alone: pass workload=... "
                            "(module:function, file.py:function or a function)")

    rule = check_size_rule(preset, quick)
    overrides = dict(sizes or {}, samples=samples)
    if workload is not None:
        workload, function = resolve_workload(workload)
    else:
        function = None
    timestamp = utc_timestamp()
    handle = hrx.Device.open(index=device, backend=backend, batching=bool(batching))
    handle.set_stream_queue_count(queues)
    info = dict(handle.info)
    if config is None:
        config = resolve_rule(rule, str(info["backend"]), overrides)
    probe = MemoryProbe(handle)
    if driver == WORKLOAD_ONLY:
        return _workload_only(handle, info, probe, config, queues=queues, repeat=repeat,
                              batching=bool(batching), timestamp=timestamp, name=workload,
                              function=function, streams=workload_streams)
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
    extra: Dict[str, Any] = {"git_dirty": dirty, "size_rule": rule,
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
        environment=environment.collect(info, config.bulk_bytes, bulk_lanes=config.lanes,
                                        bulk_copies=config.bulk_copies,
                                        connections=connections),
        memory=memory,
        preset=preset_name(config),
        extra=extra,
    )


def _workload_only(handle: Any, info: Mapping[str, Any], probe: MemoryProbe,
                   config: BenchConfig, *, queues: int, repeat: int, batching: bool,
                   timestamp: str, name: str, function: Any, streams: int) -> Dict[str, Any]:
    """The workload-only line: the user's rounds on an opened device whose
    pool is ``queues``."""
    rounds = run_workload(name, handle, streams=streams, warmup=config.warmup,
                          samples=config.samples, function=function)
    memory = probe.finish()
    connections = dict(handle.pool_stats()["connections"])
    commit, dirty = source_commit()
    return build_workload_record(
        rounds, queues=queues, repeat=repeat, warmup=config.warmup, batching=batching,
        target=str(info["target"]), backend=str(info["backend"]),
        hrx_version=hrx_version(), git_commit=commit, git_dirty=dirty, timestamp=timestamp,
        environment=environment.collect(info, config.bulk_bytes, connections=connections),
        memory=memory)
