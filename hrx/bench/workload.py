"""User workloads in the benchmark: ``hrx-bench run|sweep --workload SPEC``.

The contract
------------
SPEC is ``module:function`` (an importable module, e.g.
``mypkg.bench:matmul``; the working directory is searched after hrx) or
``path/to/file.py:function`` (relative to the working directory, which the
sweep's children share). The function is called as::

    function(device, streams) -> None

with the run's ``hrx.Device`` (its pool size already set to the run's queue
count) and a list of ``streams`` pool streams (default 16, the lanes of the
protocol; ``--workload-streams N``), created once for the run and assigned
round-robin like any pool streams (``stream.queue_index`` tells which
queue). Each call issues **one
round** of the user's work on those streams (hrx copies/fills, or kernels of
another library launched on ``stream.native_handle``, e.g. through
``torch.cuda.ExternalStream``) and returns without waiting for it.

``streams`` is a list (``WorkloadStreams``) whose attribute ``state`` is a
dict that lives for the run and is dropped after it: keep the run's buffers
and other set-up there, created on the first call (``if not
streams.state: ...``), so nothing keeps the device alive after the run.

Timing: a round lasts from the call until every one of the streams has been
synchronized afterwards (``Stream.synchronize`` waits for the whole native
queue, so foreign work launched on it is included). The workload runs
``warmup`` untimed and ``samples`` timed rounds (the protocol's 3 and 15),
after the driver's five cases, in the same fresh process. State that should
not be timed (buffers, compiled kernels) is created on the first call and
kept in ``streams.state``: the warm-up rounds absorb it.

Result: the line gains ``workload``: ``{"name", "streams", "round_ns"
(samples entries), "round_median_ms", "round_p95_ms"}``; the table gains the
columns "Workload round, ms" and "Workload p95, ms", and runs of different
workloads are never aggregated together.

In this process, ``hrx.bench.run(q, workload=function)`` also takes the
function itself (e.g. one defined in a notebook); its lines record
``module:qualified name``. A sweep runs every queue count in a fresh
process, which can import only what a SPEC names: it refuses a function
object and a function of ``__main__`` (a notebook's or script's own) with a
WorkloadError that says to put the function in a file and pass
``file.py:function``.

Your workload alone
-------------------
``hrx-bench run|sweep --workload SPEC --only-workload`` and
``hrx.bench.sweep_workload(function_or_spec, ...)`` run the workload
without the driver's cases (driver name ``workload``): a child only opens
the device, sets the pool size and times ``warmup`` + ``samples`` rounds, so
a run lasts about as long as the rounds themselves. The sweep keeps its
fresh processes, orders, repeats, ranges and recommendation. Its line (the
"workload-only line", schema.WORKLOAD_RESULT_SCHEMA) holds ``queues``,
``repeat``, ``driver`` ("workload"), ``batching``, ``samples``, ``warmup``,
``streams``, ``target``, ``backend``, the provenance keys, ``sizes``
(``warmup`` and ``samples``), ``environment`` (its memcpy probe of one
block only, not of the bulk case's copies), ``memory`` and ``workload`` as
above. Its table has the two workload columns only, and the recommendation
applies RULE with the median round in place of the throughput and the
round p95 as the only guard (analysis.WORKLOAD_RULE).

Errors: a SPEC without ``:``, a module that cannot be imported, a missing or
non-callable function are ``WorkloadError`` (a ValueError) raised before any
work is done (the sweep checks it in the parent before starting children).
An exception raised inside the function fails that run: the child exits
with status 1 and the sweep records an error line carrying the traceback.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from .drivers import WORKLOAD_ONLY
from .stats import median, p95

__all__ = ["WorkloadError", "WorkloadStreams", "DEFAULT_STREAMS", "load_workload",
           "resolve_workload", "check_importable", "importable_spec", "callable_name",
           "run_workload",
           "build_workload_record", "summarize_workload"]

DEFAULT_STREAMS = 16
"""Streams handed to a workload unless ``streams`` says otherwise."""


class WorkloadError(ValueError):
    """The workload SPEC does not name a callable."""


class WorkloadStreams(list):
    """The streams handed to a workload; ``state`` is the run's scratch
    dict (empty on the first call)."""

    def __init__(self, streams: Any) -> None:
        super().__init__(streams)
        self.state: Dict[str, Any] = {}


def _split(spec: str) -> tuple[str, str]:
    if not isinstance(spec, str):
        raise WorkloadError(f"a workload is 'module:function' or 'file.py:function', "
                            f"not {type(spec).__name__}")
    target, sep, name = spec.rpartition(":")
    if not sep or not target or not name.isidentifier():
        raise WorkloadError(f"workload {spec!r} must be 'module:function' or "
                            f"'path/to/file.py:function'")
    return target, name


def _is_file(target: str) -> bool:
    return target.endswith(".py") or os.sep in target or "/" in target


def _import_file(path: str) -> Any:
    if not os.path.isfile(path):
        raise WorkloadError(f"workload file {path!r} does not exist")
    module_name = "_hrx_workload_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise WorkloadError(f"workload file {path!r} is not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[module_name]
        raise WorkloadError(f"importing workload file {path!r} failed: "
                            f"{type(error).__name__}: {error}") from error
    return module


def load_workload(spec: str) -> Callable[[Any, List[Any]], Any]:
    """The function SPEC names. Raises WorkloadError when it cannot be
    imported, is missing or is not callable."""
    target, name = _split(spec)
    if _is_file(target):
        module = _import_file(target)
    else:
        if os.getcwd() not in sys.path:
            sys.path.append(os.getcwd())   # after everything else: never shadows hrx
        try:
            module = importlib.import_module(target)
        except Exception as error:
            raise WorkloadError(f"cannot import workload module {target!r}: "
                                f"{type(error).__name__}: {error}") from error
    function = getattr(module, name, None)
    if function is None:
        raise WorkloadError(f"workload module {target!r} has no attribute {name!r}")
    if not callable(function):
        raise WorkloadError(f"workload {spec!r} is a {type(function).__name__}, "
                            f"not a function")
    return function


def check_importable(workload: Any) -> Callable[[Any, List[Any]], Any]:
    """The function a sweep's children will import: ``workload`` must be a
    SPEC whose function a fresh process can import, or a function that
    importable_spec names. Raises WorkloadError for a function of
    ``__main__``, a lambda or nested function, and as load_workload."""
    advice = ("a sweep runs each queue count in a fresh Python process, which cannot "
              "import a function defined in this notebook or script; write it to a file "
              "(e.g. with %%writefile my_workload.py) and pass "
              "workload='my_workload.py:function_name', or use hrx.bench.run(queues, "
              "workload=function) to time it in this process")
    if not isinstance(workload, str):
        workload = importable_spec(workload)[0]
    function = load_workload(workload)
    if _split(workload)[0] == "__main__" or getattr(function, "__module__", None) == "__main__":
        raise WorkloadError(f"workload {workload!r} is defined in __main__: {advice}")
    return function


def importable_spec(workload: Any) -> Tuple[str, Optional[str]]:
    """(SPEC, directory) for a workload that fresh processes must import:
    a SPEC string is returned as it is (directory None: the working
    directory, which children share); a function is named
    ``module:function`` when its module is a file that a fresh process can
    import (directory: the one to put on the child's path). Raises
    WorkloadError for a lambda, a nested function, a function of
    ``__main__`` (a notebook's own) and anything not callable, saying to put
    the function in a module."""
    if isinstance(workload, str):
        return workload, None
    if not callable(workload):
        raise WorkloadError(f"a workload is 'module:function', 'file.py:function' or a "
                            f"function, not {type(workload).__name__}")
    name = callable_name(workload)
    module_name = getattr(workload, "__module__", None) or ""
    qualname = getattr(workload, "__qualname__", "") or ""
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None) if module is not None else None
    where = ("it is defined in this notebook or script (__main__)" if module_name == "__main__"
             else "it is a lambda or defined inside another function"
             if not qualname.isidentifier()
             else f"its module {module_name!r} is not a file" if not path
             else "")
    if where:
        raise WorkloadError(
            f"workload {name}: {where}, and each queue count runs in a fresh Python process "
            f"that imports the workload by name; put the function at the top level of a "
            f"module (e.g. a cell starting with %%writefile my_workload.py, then "
            f"'from my_workload import function_name') and pass the function or "
            f"'my_workload.py:function_name'")
    root = os.path.dirname(os.path.abspath(path))
    depth = module_name.count(".") + (os.path.basename(path).startswith("__init__.") and 1)
    for _ in range(depth):
        root = os.path.dirname(root)
    return f"{module_name}:{qualname}", root


def callable_name(function: Callable[..., Any]) -> str:
    """``module:qualified name`` of a function, the name its result lines
    record (``__main__:my_round`` for one defined in a notebook)."""
    module = getattr(function, "__module__", None) or "?"
    name = getattr(function, "__qualname__", None) or type(function).__name__
    return f"{module}:{name}"


def resolve_workload(workload: Any) -> tuple[str, Callable[[Any, List[Any]], Any]]:
    """(name, function) of a workload given as a SPEC string or as a
    function of this process (``run`` only: a sweep's fresh processes cannot
    import a function defined in a notebook or script). Raises WorkloadError
    as load_workload does, and for anything else that is not callable."""
    if isinstance(workload, str):
        return workload, load_workload(workload)
    if callable(workload):
        return callable_name(workload), workload
    raise WorkloadError(f"a workload is 'module:function', 'file.py:function' or a "
                        f"function, not {type(workload).__name__}")


def run_workload(spec: str, device: Any, *, streams: int = DEFAULT_STREAMS, warmup: int = 3,
                 samples: int = 15,
                 function: Optional[Callable[[Any, List[Any]], Any]] = None) -> Dict[str, Any]:
    """Creates ``streams`` pool streams on ``device``, runs ``warmup`` +
    ``samples`` rounds of the workload and returns the ``workload`` object
    of a result line. Exceptions of the workload propagate unchanged."""
    if isinstance(streams, bool) or not isinstance(streams, int) or streams < 1:
        raise ValueError(f"workload streams must be an int >= 1, got {streams!r}")
    call = function if function is not None else load_workload(spec)
    lanes = WorkloadStreams(device.stream() for _ in range(streams))
    durations: List[int] = []
    for round_index in range(warmup + samples):
        start = time.perf_counter_ns()
        call(device, lanes)
        for stream in lanes:
            stream.synchronize()
        elapsed = time.perf_counter_ns() - start
        if round_index >= warmup:
            durations.append(max(1, elapsed))
    lanes.state.clear()
    for stream in lanes:
        stream.close()
    return summarize_workload(spec, streams, durations)


def build_workload_record(workload: Mapping[str, Any], *, queues: int, repeat: int,
                          warmup: int, batching: Optional[bool], target: str, backend: str,
                          hrx_version: Optional[str], git_commit: Optional[str],
                          git_dirty: Optional[bool], timestamp: str,
                          environment: Mapping[str, Any],
                          memory: Mapping[str, Any]) -> Dict[str, Any]:
    """The workload-only line of a run (see "Your workload alone"): the
    ``workload`` object of run_workload and what the run was."""
    samples = len(workload["round_ns"])
    return {
        "queues": int(queues), "repeat": int(repeat), "driver": WORKLOAD_ONLY,
        "batching": batching, "samples": samples, "warmup": int(warmup),
        "streams": int(workload["streams"]), "target": target, "backend": backend,
        "hrx_version": hrx_version, "git_commit": git_commit, "git_dirty": git_dirty,
        "timestamp": timestamp, "sizes": {"warmup": int(warmup), "samples": samples},
        "environment": dict(environment), "memory": dict(memory),
        "workload": dict(workload),
    }


def summarize_workload(name: str, streams: int, round_ns: List[int]) -> Dict[str, Any]:
    """The ``workload`` object of a line from its timed rounds (ns)."""
    return {
        "name": name,
        "streams": int(streams),
        "round_ns": [int(value) for value in round_ns],
        "round_median_ms": median(round_ns) / 1e6,
        "round_p95_ms": p95(round_ns) / 1e6,
    }
