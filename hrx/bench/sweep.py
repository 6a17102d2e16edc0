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

Before any run. The output file must not hold lines already unless the
call resumes that sweep or appends to it (else one table would silently
mix two sweeps); resume needs the file. One fresh process opens the device
as the children will (``hrx-bench describe``): an unknown backend or a
missing device fails the sweep there, with that process's own error, and
its ``info`` gives the first lines printed (device, runtime, why that
backend) and the backend the size rule applies to.

Several devices. ``device="all"`` sweeps every device of the backend (the
first device's ``info["device_count"]``): in turn, the whole plan on device
0, then on device 1, ...; or, with ``concurrent_devices=True``, each step on
every device at the same time, one child process per device started
together, so that what the devices' host sides share (CPU, driver, memory
bandwidth) shows in the figures. Every line the sweep writes names its
``device``; lines of a concurrent step also carry ``concurrent_devices``
(how many ran at once). Resume matches the device too.
"""
from __future__ import annotations

import concurrent.futures
import datetime
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from .config import (SIZE_FIELDS, BenchConfig, check_size_rule, describe_sizes, preset_name,
                     resolve_rule)
from .drivers import DRIVERS
from .lines import append_line, read_lines
from .progress import Progress
from .provenance import package_root, utc_timestamp
from .results import Results, failure_reason
from .schema import is_error_line, schema_errors
from .drivers import WORKLOAD_ONLY
from .workload import DEFAULT_STREAMS, WorkloadError, check_importable, importable_spec

__all__ = ["REFERENCE_QUEUES", "REFERENCE_ORDERS", "orders", "plan", "Step", "child_command",
           "run_child", "sweep", "sweep_workload", "default_output", "STDERR_TAIL_CHARS",
           "ResultsFileError",
           "SweepError", "describe_command", "describe_device", "header_lines",
           "selection_summary",
           "last_error_line"]

REFERENCE_QUEUES = (1, 2, 4, 8, 16)
REFERENCE_ORDERS = ((1, 2, 4, 8, 16), (16, 8, 4, 2, 1), (4, 1, 16, 2, 8))
STDERR_TAIL_CHARS = 4000
_OWN_GROUP = os.name == "posix"


class SweepError(ValueError):
    """The sweep cannot start as asked (its output file, backend or
    device); raised before any run. ``str(error)`` speaks of sweep()'s
    keyword arguments, ``error.cli`` says the same in hrx-bench's options."""

    def __init__(self, message: str, cli: Optional[str] = None) -> None:
        super().__init__(message)
        self.cli = message if cli is None else cli


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
    device: int = 0

    @property
    def key(self) -> Tuple[int, int, str, Optional[bool], int]:
        """What --resume matches against a recorded line. The raw driver
        bypasses the stream layer, so batching does not apply to it (None)."""
        return (self.queues, self.repeat, self.driver,
                batching_key(self.driver, self.batching), self.device)

    @property
    def label(self) -> str:
        """The driver, and "batching off" when it is."""
        applies = batching_key(self.driver, self.batching) is not None
        return self.driver + ("" if self.batching or not applies else " batching off")

    def on(self, device: int) -> "Step":
        """The same step on another device."""
        return Step(self.queues, self.repeat, self.driver, self.batching, device)


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
        if driver not in DRIVERS and not (driver == WORKLOAD_ONLY and len(drivers) == 1):
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
                  workload_streams: int = DEFAULT_STREAMS, preset: str = "auto") -> List[str]:
    """The command line of one child: ``python -P -m hrx.bench run Q
    SAMPLES`` with every size spelled out, so the child runs exactly
    ``config``; ``preset`` is the size choice the child records
    (``size_rule``). ``-P`` keeps the working directory off ``sys.path``: run from
    a source checkout, the child must still import the same (built) hrx as
    the parent, which ``_child_env`` puts first on PYTHONPATH."""
    alone = step.driver == WORKLOAD_ONLY
    command = [python, "-P", "-m", "hrx.bench", "run", str(step.queues), str(config.samples),
               "--repeat", str(step.repeat)]
    command += ["--only-workload"] if alone else ["--driver", step.driver]
    command += ["--device", str(device), "--batching", "on" if step.batching else "off",
                "--preset", preset]
    if backend:
        command += ["--backend", backend]
    if workload is not None:
        command += ["--workload", workload, "--workload-streams", str(workload_streams)]
    for name in (("warmup",) if alone else SIZE_FIELDS):
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
        "batching": batching_key(step.driver, step.batching), "device": step.device,
        "backend": backend,
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
    if got != step.key[:4]:
        return None, (f"the child ran (queues, repeat, driver, batching) = {got}, "
                      f"expected {step.key[:4]}")
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
              backend: Optional[str], extra_path: Optional[str] = None,
              started: Optional[List[subprocess.Popen]] = None) -> Dict[str, Any]:
    """Runs one child and returns its result line, or an error line when it
    fails, is killed, times out or prints no valid line. The child's process
    group is killed once it is done or timed out (nothing it started stays
    behind), and on KeyboardInterrupt before the interrupt propagates.
    ``started`` (if given) receives the child's process, for a caller that
    runs several at once and must kill them all when interrupted."""
    start = time.monotonic()
    workload = _workload_of(command)
    process = subprocess.Popen(list(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, text=True, errors="replace",
                               env=_child_env(extra_path), start_new_session=_OWN_GROUP,
                               preexec_fn=_parent_death_hook())
    if started is not None:
        started.append(process)
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


def line_device(line: Mapping[str, Any]) -> int:
    """The device a line ran on: its ``device``, else the one its
    environment names (lines of a single-device sweep), else 0."""
    if isinstance(line.get("device"), int):
        return int(line["device"])
    index = (line.get("environment") or {}).get("device_index")
    return int(index) if isinstance(index, int) else 0


def _recorded(path: str, workload: Optional[str] = None
              ) -> Dict[Tuple[int, int, Optional[str], Optional[bool], int], Dict[str, Any]]:
    """The successful runs of ``workload`` (None: runs without one) that
    ``path`` records, by step key (the last line of each key)."""
    if not os.path.exists(path):
        return {}
    lines, _ = read_lines([path])
    return {(int(line["queues"]), int(line["repeat"]), line.get("driver"),
             line.get("batching"), line_device(line)): line
            for line in lines
            if not is_error_line(line) and "queues" in line and "repeat" in line
            and (line.get("workload") or {}).get("name") == workload}


def default_output() -> str:
    """``hrx-sweep-<UTC time>.jsonl`` in the current directory."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return f"hrx-sweep-{now.strftime('%Y%m%dT%H%M%SZ')}.jsonl"


def _choose_output(output: Optional[str], resume: bool, append: bool) -> str:
    """The results file, after the rules: resume needs an existing file; a
    file that already holds lines takes more only with resume or append."""
    if resume:
        if output is None:
            raise SweepError("resume=True needs the results file of the sweep to continue "
                             "(output=...)",
                             cli="--resume needs the results file of the sweep to continue "
                                 "(--output FILE)")
        if not os.path.exists(output):
            raise SweepError(f"cannot resume: {output} does not exist (start the sweep "
                             f"without resume=True to create it)",
                             cli=f"cannot resume: {output} does not exist (start the sweep "
                                 f"without --resume to create it)")
        return output
    path = output or default_output()
    if os.path.exists(path) and os.path.getsize(path) > 0 and not append:
        advice = ("{resume} to finish that sweep, {append} to add this sweep's runs to it "
                  "(the table then aggregates both), or choose another output file")
        raise SweepError(
            f"{path} already holds the lines of an earlier sweep; pass "
            + advice.format(resume="resume=True", append="append=True"),
            cli=f"{path} already holds the lines of an earlier sweep; pass "
                + advice.format(resume="--resume", append="--append"))
    return path


def describe_command(*, backend: Optional[str], device: int,
                     python: str = sys.executable) -> List[str]:
    """The command line of the child that opens the device and describes it
    (``hrx-bench describe``)."""
    command = [python, "-P", "-m", "hrx.bench", "describe", "--device", str(device)]
    if backend:
        command += ["--backend", backend]
    return command


def describe_device(*, backend: Optional[str], device: int, python: str = sys.executable,
                    timeout: Optional[float] = 120.0) -> Dict[str, Any]:
    """The device the sweep's children will open, as a fresh process opens
    it: its ``info`` (backend, name, target, runtime, selection: why that
    backend). Raises SweepError with the child's own last error line when
    it cannot open the device (an unknown backend, no device)."""
    command = describe_command(backend=backend, device=device, python=python)
    try:
        done = subprocess.run(command, capture_output=True, text=True, errors="replace",
                              stdin=subprocess.DEVNULL, env=_child_env(), timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        raise SweepError(f"opening device {device} took more than {timeout:g} s") from None
    except OSError as error:
        raise SweepError(f"cannot start the children's Python interpreter {python!r}: "
                         f"{error.strerror or error}") from None
    texts = [text for text in done.stdout.splitlines() if text.strip()]
    info: Any = None
    if done.returncode == 0 and texts:
        try:
            info = json.loads(texts[-1])
        except json.JSONDecodeError:
            info = None
    if not isinstance(info, dict) or "backend" not in info:
        reason = last_error_line(done.stderr) or f"status {done.returncode}"
        # The child is `hrx-bench describe`: its message, without its name.
        reason = reason[len(_DESCRIBE_PREFIX):] if reason.startswith(_DESCRIBE_PREFIX) \
            else reason
        which = f"backend {backend!r}" if backend else "the automatic backend"
        raise SweepError(f"cannot open device {device} of {which}: {reason}")
    return info


_DESCRIBE_PREFIX = "hrx-bench describe: "


def selection_summary(selection: str) -> str:
    """info["selection"] in one line: how the backend was chosen and which
    backend was passed over, without the reasons (each library the loader
    tried), which ``hrx-bench describe --verbose`` lists."""
    head, passed, reasons = selection.partition("; passed over ")
    if not passed:
        return selection
    name = reasons.split(":", 1)[0]
    return f"{head}; passed over {name} (why: hrx-bench describe --verbose)"


def last_error_line(text: str) -> str:
    """The last non-empty line of a child's stderr (its error message)."""
    rows = [row.strip() for row in (text or "").splitlines() if row.strip()]
    return rows[-1] if rows else ""


def header_lines(info: Mapping[str, Any], config: BenchConfig, rule: str, steps: int,
                 path: str, alone: Optional[str] = None) -> List[str]:
    """What the sweep prints first: the device, its runtime, why that
    backend, the sizes and why (or, for the workload ``alone``, its
    rounds), and the plan."""
    backend = str(info.get("backend"))
    why = {"auto": f"the size rule for the {backend} backend"
                   + (" (a CPU device; the reference preset gives the reference sizes)"
                      if backend == "host" else ""),
           "reference": "asked for (the reference preset)",
           "quick": "asked for (the quick preset)"}[rule]
    return [
        f"Device: {info.get('name')} (backend {backend}, device {info.get('index')}, "
        f"target {info.get('target')})",
        f"Runtime: {info.get('runtime')}",
        f"Backend chosen by: {selection_summary(str(info.get('selection') or 'not reported'))}",
        (f"Sizes: {preset_name(config)}, {describe_sizes(config)}; {why}" if alone is None
         else f"Rounds: {alone} alone, {config.warmup} warm-up + {config.samples} timed "
              f"per run; none of the benchmark's cases"),
        f"Runs: {steps}, each in a fresh process, one after another; results: {path}",
    ]


def sweep(
    queues: Iterable[int] = REFERENCE_QUEUES,
    repeats: int = 3,
    samples: Optional[int] = None,
    *,
    driver: Any = None,
    batching: Any = True,
    backend: Optional[str] = None,
    device: Any = 0,
    concurrent_devices: bool = False,
    output: Optional[str] = None,
    quick: bool = False,
    preset: str = "auto",
    sizes: Optional[Mapping[str, Optional[int]]] = None,
    timeout: Optional[float] = 600.0,
    resume: bool = False,
    append: bool = False,
    progress: bool = True,
    python: str = sys.executable,
    workload: Optional[str] = None,
    workload_streams: int = DEFAULT_STREAMS,
    only_workload: bool = False,
    workload_path: Optional[str] = None,
) -> Results:
    """Runs the sweep and returns the Results of its own runs: the lines
    this call wrote, plus with ``resume`` the lines of the steps it skipped.

    queues, repeats: the plan (see ``plan`` and the module docstring).
    driver: a name or a list of names ("native", "raw", "python"; default
    native).
    batching: True, False or a list of them; each driver but raw runs with
    each setting (hrx.Device.open(batching=...)).
    preset ("auto": the size rule of config.py, quick sizes on the host
    backend and the reference protocol on a GPU; "reference"; "quick"),
    quick (True means preset "quick"), samples, sizes: the sizes, as for
    ``run``; the device is opened once in a fresh process first, to apply
    the rule and to report which device, runtime and backend the sweep
    measures and why; every child then gets every size explicitly.
    timeout: seconds per child (None: no limit). output: the results file
    (default: ``default_output()``); a file that already holds lines is
    refused unless ``resume`` (skip the steps it records as successful; the
    file must exist) or ``append`` (add this sweep's runs to it).
    device: an index, or "all" for every device of the backend, in turn or,
    with ``concurrent_devices``, every step on all of them at once (see the
    module docstring; concurrent_devices needs device="all").
    progress: the header and progress display on stderr. workload: a SPEC
    (``file.py:function`` or ``module:function``) that a fresh process can
    import, or a function at the top level of a module file
    (workload.importable_spec). only_workload: run the workload alone in each child, none of
    the driver's cases (driver "workload"; see sweep_workload, which is the
    way to call it); it needs ``workload`` and no ``driver``.
    workload_path: the directory the children import the workload from
    (default: the working directory). Raises SweepError (a ValueError)
    before any run for a bad output, backend or device, WorkloadError for
    a bad workload,
    KeyboardInterrupt after killing the running child, and
    ResultsFileError when the output file cannot take a line."""
    if workload is not None and not isinstance(workload, str):
        workload, workload_path = importable_spec(workload)
    if only_workload:
        if workload is None:
            raise WorkloadError("only_workload=True times your workload alone: pass "
                                "workload='module:function' (or use sweep_workload)")
        if driver is not None:
            raise SweepError(f"only_workload=True runs no driver's cases; leave driver out "
                             f"(got {driver!r})",
                             cli="--only-workload runs no driver's cases; leave --driver out")
        driver = WORKLOAD_ONLY
    elif driver is None:
        driver = "native"
    drivers = [driver] if isinstance(driver, str) else list(driver)
    batchings = [batching] if isinstance(batching, bool) else list(batching)
    rule = check_size_rule(preset, quick)
    overrides = dict(sizes or {}, samples=samples)
    resolve_rule(rule, "host", overrides)   # bad size names or values fail here
    extra_path = None
    if workload is not None:
        if isinstance(workload_streams, bool) or not isinstance(workload_streams, int) \
                or workload_streams < 1:
            raise ValueError(f"workload_streams must be an int >= 1, got {workload_streams!r}")
        check_importable(workload)   # children inherit the working directory
        extra_path = workload_path or os.getcwd()
    steps = plan(queues, repeats, drivers, batchings)
    every = _all_devices(device, concurrent_devices)
    path = _choose_output(output, resume, append)
    info = describe_device(backend=backend, device=0 if every else device, python=python)
    devices = (list(range(int(info.get("device_count") or 1))) if every
               else [int(device)])
    for other in devices[1:]:   # each device opens before any run
        describe_device(backend=backend, device=other, python=python)
    config = resolve_rule(rule, str(info["backend"]), overrides)
    done = _recorded(path, workload) if resume else {}
    own: List[Dict[str, Any]] = []
    rounds = ([[step.on(d) for d in devices] for step in steps] if concurrent_devices
              else [[step.on(d)] for d in devices for step in steps])
    runs = sum(len(group) for group in rounds)
    named = len(devices) > 1 or concurrent_devices
    display = Progress(runs, repeats, enabled=progress)
    display.header(header_lines(info, config, rule, runs, path,
                                alone=workload if only_workload else None)
                   + _devices_line(devices, concurrent_devices))

    def command_of(step: Step) -> List[str]:
        return child_command(step, config, backend=backend, device=step.device,
                             python=python, workload=workload,
                             workload_streams=workload_streams, preset=rule)

    try:
        for group in rounds:
            todo = [step for step in group if step.key not in done]
            for step in group:
                if step.key in done:
                    own.append(done[step.key])
                    display.skip()
            if not todo:
                continue
            label = _group_label(todo, concurrent_devices, named)
            display.start(todo[0].queues, todo[0].repeat, label)
            start = time.monotonic()
            lines = _run_group(todo, command_of, timeout=timeout, backend=backend,
                               extra_path=extra_path, at_once=concurrent_devices,
                               count=len(devices))
            for step, line in zip(todo, lines):
                try:
                    append_line(path, line)
                except OSError as error:
                    raise ResultsFileError(
                        f"could not record (queues {step.queues}, repeat {step.repeat}, "
                        f"{step.label}, device {step.device}) in {path}: {error}") from error
                own.append(line)
                display.finish(step.queues, step.repeat, _group_label([step], False, named),
                               time.monotonic() - start, ok=not is_error_line(line),
                               reason=failure_reason(line) if is_error_line(line) else "")
    finally:
        display.close()
    return Results(own, sources=[path])


def sweep_workload(
    workload: Any,
    queue_counts: Iterable[int] = (1, 4, 16),
    repeats: int = 3,
    samples: Optional[int] = None,
    *,
    warmup: Optional[int] = None,
    streams: int = DEFAULT_STREAMS,
    batching: Any = True,
    backend: Optional[str] = None,
    device: Any = 0,
    concurrent_devices: bool = False,
    output: Optional[str] = None,
    timeout: Optional[float] = 600.0,
    resume: bool = False,
    append: bool = False,
    progress: bool = True,
    python: str = sys.executable,
) -> Results:
    """Times your workload ALONE (none of the built-in cases) at each queue
    count, each (queue count, repeat) in a fresh process, in the sweep's
    orders, and returns the Results of its own runs: ``.table()`` (median
    round and p95 per queue count, run-to-run ranges, which differences are
    decisive) and ``.recommend()`` (analysis.WORKLOAD_RULE).

    workload: ``module:function``, ``file.py:function``, or a function at
    the top level of an importable module file (``from my_workload import
    my_round``), called as ``function(device, streams)`` once per round
    (workload.py). A function defined in the notebook itself, a lambda or a
    nested function cannot reach the fresh processes: WorkloadError says to
    put it in a module (``%%writefile my_workload.py``).
    samples, warmup: timed and untimed rounds per process (default 15 and
    3). streams: pool streams handed to the workload. The other arguments
    are sweep()'s. Raises as sweep() does."""
    spec, path = importable_spec(workload)
    sizes = {"warmup": warmup} if warmup is not None else None
    return sweep(queue_counts, repeats, samples, batching=batching, backend=backend,
                 device=device, concurrent_devices=concurrent_devices, output=output,
                 sizes=sizes, timeout=timeout, resume=resume, append=append,
                 progress=progress, python=python, workload=spec, workload_streams=streams,
                 only_workload=True, workload_path=path)


def _all_devices(device: Any, concurrent_devices: bool) -> bool:
    """Whether ``device`` asks for every device ("all"); checks the pair."""
    every = device == "all"
    if not every and (isinstance(device, bool) or not isinstance(device, int) or device < 0):
        raise SweepError(f"device must be an index >= 0 or 'all', got {device!r}")
    if concurrent_devices and not every:
        raise SweepError("concurrent_devices=True needs device='all': it runs every device "
                         "of the backend at once",
                         cli="--concurrent-devices needs --device all: it runs every device "
                             "of the backend at once")
    return every


def _devices_line(devices: Sequence[int], concurrent_devices: bool) -> List[str]:
    if len(devices) < 2 and not concurrent_devices:
        return []
    how = ("each step on all of them at once, one process per device"
           if concurrent_devices else "one after another, each swept in full")
    return [f"Devices: {', '.join(str(d) for d in devices)}; {how}"]


def _group_label(steps: Sequence[Step], at_once: bool, named: bool) -> str:
    """The progress label: the driver, and the device(s) where several are
    swept (``named``)."""
    if not named:
        return steps[0].label
    devices = ",".join(str(step.device) for step in steps)
    return steps[0].label + (f" devices {devices} at once" if at_once
                             else f" device {devices}")


def _run_group(steps: Sequence[Step], command_of: Callable[[Step], List[str]], *,
               timeout: Optional[float], backend: Optional[str],
               extra_path: Optional[str], at_once: bool,
               count: int) -> List[Dict[str, Any]]:
    """Runs a step alone, or the same step on several devices at once (one
    child each, started together); every line names its device, and lines
    of a concurrent group how many devices ran at once (``count``, the
    devices swept, also when a resumed group runs fewer)."""
    if not at_once:
        lines = [run_child(steps[0], command_of(steps[0]), timeout=timeout,
                           backend=backend, extra_path=extra_path)]
    else:
        started: List[subprocess.Popen] = []
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=len(steps))
        try:
            futures = [pool.submit(run_child, step, command_of(step), timeout=timeout,
                                   backend=backend, extra_path=extra_path, started=started)
                       for step in steps]
            lines = [future.result() for future in futures]
        except BaseException:
            for process in list(started):
                _kill_group(process)
            raise
        finally:
            pool.shutdown(wait=True)
    for step, line in zip(steps, lines):
        line["device"] = step.device
        if at_once:
            line["concurrent_devices"] = count
    return lines
