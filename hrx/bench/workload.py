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
from typing import Any, Callable, Dict, List, Optional

from .stats import median, p95

__all__ = ["WorkloadError", "WorkloadStreams", "DEFAULT_STREAMS", "load_workload",
           "resolve_workload", "check_importable", "callable_name", "run_workload", "summarize_workload"]

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
    SPEC whose function a fresh process can import. Raises WorkloadError
    for a function object, a function of ``__main__``, and as
    load_workload."""
    advice = ("a sweep runs each queue count in a fresh Python process, which cannot "
              "import a function defined in this notebook or script; write it to a file "
              "(e.g. with %%writefile my_workload.py) and pass "
              "workload='my_workload.py:function_name', or use hrx.bench.run(queues, "
              "workload=function) to time it in this process")
    if not isinstance(workload, str):
        if callable(workload):
            raise WorkloadError(f"workload {callable_name(workload)}: {advice}")
        _split(workload)
    function = load_workload(workload)
    if _split(workload)[0] == "__main__" or getattr(function, "__module__", None) == "__main__":
        raise WorkloadError(f"workload {workload!r} is defined in __main__: {advice}")
    return function


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


def summarize_workload(name: str, streams: int, round_ns: List[int]) -> Dict[str, Any]:
    """The ``workload`` object of a line from its timed rounds (ns)."""
    return {
        "name": name,
        "streams": int(streams),
        "round_ns": [int(value) for value in round_ns],
        "round_median_ms": median(round_ns) / 1e6,
        "round_p95_ms": p95(round_ns) / 1e6,
    }
