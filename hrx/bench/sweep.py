"""The sweep: every (queue count, repeat, driver) in a fresh process, one
after another, each appending one line to a results file.

Orders. The reference's queue counts 1,2,4,8,16 run in the orders
``1,2,4,8,16``, ``16,8,4,2,1``, ``4,1,16,2,8`` for repeats 1, 2, 3; other
lists run ascending, descending, then the "middle-out" order (the middle
count, then the smallest, the largest, the second smallest, the second
largest, ...), which gives exactly ``4,1,16,2,8`` for the reference list.
Further repeats cycle the three orders.

Failures. A child that exits non-zero, is killed, times out, or prints no
valid result line is recorded as an error line (``error``, ``queues``,
``repeat``, ``driver``, ``returncode``, ``stderr_tail``, ``workload`` when
one was run, ...) and the sweep goes on. Each child runs in a process group
of its own (POSIX), and the whole group is killed when the child times out
or finishes, so a process it started cannot keep the sweep waiting or
outlive it; on Linux a child also dies with the sweep (parent-death
signal). On KeyboardInterrupt the running child's group is killed, nothing
is recorded for it, and the interrupt propagates. If the results file
cannot take a line (a full disk), the partial line is removed and
ResultsFileError is raised. In every case the file holds whole lines only,
and ``resume=True`` later skips every (queues, repeat, driver) that it
records as successful.
"""
from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from .config import SIZE_FIELDS, BenchConfig, resolve
from .drivers import DRIVERS
from .lines import append_line, read_lines
from .progress import Progress
from .provenance import package_root, utc_timestamp
from .results import Results, load
from .schema import is_error_line, schema_errors
from .workload import DEFAULT_STREAMS, load_workload

__all__ = ["REFERENCE_QUEUES", "REFERENCE_ORDERS", "orders", "plan", "Step", "child_command",
           "run_child", "sweep", "default_output", "STDERR_TAIL_CHARS", "ResultsFileError"]

REFERENCE_QUEUES = (1, 2, 4, 8, 16)
REFERENCE_ORDERS = ((1, 2, 4, 8, 16), (16, 8, 4, 2, 1), (4, 1, 16, 2, 8))
STDERR_TAIL_CHARS = 4000
_OWN_GROUP = os.name == "posix"


class ResultsFileError(OSError):
    """The results file could not take a line (e.g. the disk is full). The
    file still holds whole lines only; the step is not recorded, so a
    resumed sweep runs it again."""


def _middle_out(ascending: Sequence[int]) -> Tuple[int, ...]:
    middle = len(ascending) // 2
    rest = list(ascending[:middle]) + list(ascending[middle + 1:])
    order = [ascending[middle]]
    while rest:
        order.append(rest.pop(0))
        if rest:
            order.append(rest.pop())
    return tuple(order)


def orders(queues: Iterable[int]) -> Tuple[Tuple[int, ...], ...]:
    """The three run orders of a list of queue counts (duplicates removed)."""
    ascending = tuple(sorted(set(int(q) for q in queues)))
    if not ascending or ascending[0] < 1:
        raise ValueError("queue counts must be positive integers")
    if ascending == REFERENCE_QUEUES:
        return REFERENCE_ORDERS
    return ascending, ascending[::-1], _middle_out(ascending)


@dataclass(frozen=True)
class Step:
    """One child process of the sweep."""

    queues: int
    repeat: int
    driver: str
    batching: bool = True

    @property
    def key(self) -> Tuple[int, int, str, Optional[bool]]:
        """What --resume matches against a recorded line. The raw driver
        bypasses the stream layer, so batching does not apply to it (None)."""
        return self.queues, self.repeat, self.driver, batching_key(self.driver, self.batching)

    @property
    def label(self) -> str:
        """The driver, and "batching off" when it is."""
        applies = batching_key(self.driver, self.batching) is not None
        return self.driver + ("" if self.batching or not applies else " batching off")


def batching_key(driver: str, batching: bool) -> Optional[bool]:
    """The batching value a result line of ``driver`` records."""
    return None if driver == "raw" else bool(batching)


def plan(queues: Iterable[int], repeats: int, drivers: Sequence[str],
         batchings: Sequence[bool] = (True,)) -> List[Step]:
    """Every step in run order: repeat r uses orders(queues)[(r - 1) % 3];
    at each queue count the drivers run in the given order, each with every
    batching setting in the given order (once for raw, which has none)."""
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    for driver in drivers:
        if driver not in DRIVERS:
            raise ValueError(f"unknown driver {driver!r}; choose from {', '.join(DRIVERS)}")
    if not batchings:
        raise ValueError("batching needs at least one setting")
    cycle = orders(queues)
    steps: List[Step] = []
    for repeat in range(1, repeats + 1):
        for q in cycle[(repeat - 1) % len(cycle)]:
            for driver in drivers:
                for batching in (batchings if driver != "raw" else batchings[:1]):
                    steps.append(Step(q, repeat, driver, bool(batching)))
    return steps


def child_command(step: Step, config: BenchConfig, *, backend: Optional[str], device: int,
                  python: str = sys.executable, workload: Optional[str] = None,
                  workload_streams: int = DEFAULT_STREAMS) -> List[str]:
    """The command line of one child: ``python -P -m hrx.bench run Q
    SAMPLES`` with every size spelled out, so the child runs exactly
    ``config``. ``-P`` keeps the working directory off ``sys.path``: run from
    a source checkout, the child must still import the same (built) hrx as
    the parent, which ``_child_env`` puts first on PYTHONPATH."""
    command = [python, "-P", "-m", "hrx.bench", "run", str(step.queues), str(config.samples),
               "--repeat", str(step.repeat), "--driver", step.driver, "--device", str(device),
               "--batching", "on" if step.batching else "off"]
    if backend:
        command += ["--backend", backend]
    if workload is not None:
        command += ["--workload", workload, "--workload-streams", str(workload_streams)]
    for name in SIZE_FIELDS:
        if name != "samples":
            command += ["--" + name.replace("_", "-"), str(getattr(config, name))]
    return command


def _child_env(extra_path: Optional[str] = None) -> Dict[str, str]:
    """The parent's environment with hrx's package root first on PYTHONPATH
    and ``extra_path`` (the directory a workload module is imported from)
    last, so that it cannot shadow hrx."""
    env = dict(os.environ)
    root = package_root()
    paths = [root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != root]
    if extra_path and extra_path not in paths:
        paths.append(extra_path)
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def _tail(text: str) -> str:
    return text[-STDERR_TAIL_CHARS:]


def _error_line(step: Step, error: str, *, returncode: Optional[int], stderr: str,
                elapsed: float, backend: Optional[str], stdout: str = "",
                workload: Optional[str] = None) -> Dict[str, Any]:
    line: Dict[str, Any] = {
        "error": error, "queues": step.queues, "repeat": step.repeat, "driver": step.driver,
        "batching": batching_key(step.driver, step.batching), "backend": backend,
        "returncode": returncode, "stderr_tail": _tail(stderr),
        "timestamp": utc_timestamp(), "elapsed_s": round(elapsed, 3),
    }
    if stdout.strip():
        line["stdout_tail"] = _tail(stdout)
    if workload is not None:
        line["workload"] = workload
    return line


def _parse_result(step: Step, stdout: str,
                  workload: Optional[str] = None) -> Tuple[Optional[Dict[str, Any]], str]:
    texts = [text for text in stdout.splitlines() if text.strip()]
    if not texts:
        return None, "the child printed no result line"
    try:
        line = json.loads(texts[-1])
    except json.JSONDecodeError as error:
        return None, f"the child's last line is not JSON ({error.msg})"
    if not isinstance(line, dict) or is_error_line(line):
        return None, "the child's last line is not a result object"
    problems = schema_errors(line)
    if problems:
        return None, "invalid result line: " + "; ".join(problems[:5])
    got = (line["queues"], line["repeat"], line["driver"], line.get("batching"))
    if got != step.key:
        return None, (f"the child ran (queues, repeat, driver, batching) = {got}, "
                      f"expected {step.key}")
    ran = (line.get("workload") or {}).get("name")
    if ran != workload:
        return None, f"the child ran workload {ran!r}, expected {workload!r}"
    return line, ""


def _workload_of(command: Sequence[str]) -> Optional[str]:
    items = list(command)
    if "--workload" in items:
        index = items.index("--workload")
        if index + 1 < len(items):
            return items[index + 1]
    return None


def _kill_group(process: subprocess.Popen) -> None:
    """Kills the child and, on POSIX, every process of its group."""
    if _OWN_GROUP:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    if process.poll() is None:
        process.kill()


def _parent_death_hook() -> Optional[Callable[[], None]]:
    """A preexec_fn for the child (Linux): the kernel kills the child if the
    sweep dies, even by SIGKILL, so no benchmark outlives its sweep and
    disturbs the next one. None where there is no parent-death signal."""
    if sys.platform != "linux":
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def hook() -> None:
        prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the sweep died before prctl took effect
            os._exit(1)

    return hook


def _drain(process: subprocess.Popen) -> Tuple[str, str]:
    """The child's remaining output after it was killed; gives up after a
    few seconds if something outside its group still holds the pipes."""
    try:
        return process.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        for pipe in (process.stdout, process.stderr):
            if pipe:
                pipe.close()
        process.wait()
        return "", "(output abandoned: the pipes stayed open after the child was killed)"


def run_child(step: Step, command: Sequence[str], *, timeout: Optional[float],
              backend: Optional[str], extra_path: Optional[str] = None) -> Dict[str, Any]:
    """Runs one child and returns its result line, or an error line when it
    fails, is killed, times out or prints no valid line. The child's process
    group is killed once it is done or timed out (nothing it started stays
    behind), and on KeyboardInterrupt before the interrupt propagates."""
    start = time.monotonic()
    workload = _workload_of(command)
    process = subprocess.Popen(list(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, text=True, errors="replace",
                               env=_child_env(extra_path), start_new_session=_OWN_GROUP,
                               preexec_fn=_parent_death_hook())
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        stdout, stderr = _drain(process)
        return _error_line(step, f"timed out after {timeout:g} s", returncode=process.returncode,
                           stderr=stderr, stdout=stdout, elapsed=time.monotonic() - start,
                           backend=backend, workload=workload)
    except BaseException:
        _kill_group(process)
        process.wait()
        raise
    _kill_group(process)  # whatever the child left running
    elapsed = time.monotonic() - start
    if process.returncode != 0:
        reason = (f"killed by signal {-process.returncode}" if process.returncode < 0
                  else f"exited with status {process.returncode}")
        return _error_line(step, f"the child {reason}", returncode=process.returncode,
                           stderr=stderr, stdout=stdout, elapsed=elapsed, backend=backend,
                           workload=workload)
    line, problem = _parse_result(step, stdout, workload)
    if line is None:
        return _error_line(step, problem, returncode=process.returncode, stderr=stderr,
                           stdout=stdout, elapsed=elapsed, backend=backend, workload=workload)
    return line


def _recorded(path: str, workload: Optional[str] = None
              ) -> Set[Tuple[int, int, Optional[str], Optional[bool]]]:
    """The steps ``path`` records as successful runs of ``workload`` (None:
    runs without one)."""
    if not os.path.exists(path):
        return set()
    lines, _ = read_lines([path])
    return {(int(line["queues"]), int(line["repeat"]), line.get("driver"),
             line.get("batching"))
            for line in lines
            if not is_error_line(line) and "queues" in line and "repeat" in line
            and (line.get("workload") or {}).get("name") == workload}


def default_output() -> str:
    """``hrx-sweep-<UTC time>.jsonl`` in the current directory."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return f"hrx-sweep-{now.strftime('%Y%m%dT%H%M%SZ')}.jsonl"


def sweep(
    queues: Iterable[int] = REFERENCE_QUEUES,
    repeats: int = 3,
    samples: Optional[int] = None,
    *,
    driver: Any = "native",
    batching: Any = True,
    backend: Optional[str] = None,
    device: int = 0,
    output: Optional[str] = None,
    quick: bool = False,
    sizes: Optional[Mapping[str, Optional[int]]] = None,
    timeout: Optional[float] = 600.0,
    resume: bool = False,
    progress: bool = True,
    python: str = sys.executable,
    workload: Optional[str] = None,
    workload_streams: int = DEFAULT_STREAMS,
) -> Results:
    """Runs the sweep and returns the Results of the whole output file.

    queues, repeats: the plan (see ``plan`` and the module docstring).
    driver: a name or a list of names ("native", "raw", "python").
    batching: True, False or a list of them; each driver but raw runs with
    each setting (hrx.Device.open(batching=...)).
    samples, quick, sizes: the sizes, as for ``run``; every child gets them
    explicitly. timeout: seconds per child (None: no limit). output: the
    results file, appended to (default: ``default_output()``). resume: skip
    steps the file records as successful. progress: the stderr display.
    Raises KeyboardInterrupt after killing the running child, and
    ResultsFileError when the output file cannot take a line."""
    drivers = [driver] if isinstance(driver, str) else list(driver)
    batchings = [batching] if isinstance(batching, bool) else list(batching)
    config = resolve(quick, dict(sizes or {}, samples=samples))
    extra_path = None
    if workload is not None:
        if isinstance(workload_streams, bool) or not isinstance(workload_streams, int) \
                or workload_streams < 1:
            raise ValueError(f"workload_streams must be an int >= 1, got {workload_streams!r}")
        load_workload(workload)   # children inherit the working directory
        extra_path = os.getcwd()
    path = output or default_output()
    steps = plan(queues, repeats, drivers, batchings)
    done = _recorded(path, workload) if resume else set()
    display = Progress(len(steps), repeats, enabled=progress)
    try:
        for step in steps:
            if step.key in done:
                display.skip()
                continue
            display.start(step.queues, step.repeat, step.label)
            start = time.monotonic()
            command = child_command(step, config, backend=backend, device=device,
                                    python=python, workload=workload,
                                    workload_streams=workload_streams)
            line = run_child(step, command, timeout=timeout, backend=backend,
                             extra_path=extra_path)
            try:
                append_line(path, line)
            except OSError as error:
                raise ResultsFileError(
                    f"could not record (queues {step.queues}, repeat {step.repeat}, "
                    f"{step.label}) in {path}: {error}") from error
            display.finish(step.queues, step.repeat, step.label, time.monotonic() - start,
                           ok=not is_error_line(line))
    finally:
        display.close()
    return load(path)
