"""The sweep under faults: a child that is killed, hangs with a grandchild
holding its pipes, a full disk (injected, a file size limit, a real full
tmpfs), the sweep itself killed or terminated. Each leaves the results file
with whole lines only, and ``--resume`` finishes the sweep."""
import errno
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest
from conftest_bench import FAKE_PYTHON, bench_command, child_env

from figures import figures
from hrx.bench import lines as lines_module
from hrx.bench import sweep
from hrx.bench.cli import build_parser
from hrx.bench.lines import append_line, read_lines
from hrx.bench.schema import schema_errors
from hrx.bench.sweep import ResultsFileError

pytestmark = pytest.mark.python_only

TINY = {"small_copies": 2, "bulk_bytes": 4096, "bulk_copies": 1, "loaded_copies": 1,
        "warmup": 1}
CLI_TINY = ["--samples", "3", "--quick", "--small-copies", "2", "--bulk-bytes", "4096",
            "--no-progress", "--python", FAKE_PYTHON]
FIGURES = figures("sweep faults")
posix_only = pytest.mark.skipif(os.name != "posix", reason="signals and process groups")


def whole_lines(path):
    """The file's lines; fails unless every line is a whole JSON object
    with a valid schema and the file ends with a newline."""
    data = pathlib.Path(path).read_bytes()
    assert data == b"" or data.endswith(b"\n"), "the file ends inside a line"
    parsed, unreadable = read_lines([path])
    assert unreadable == [], unreadable
    for line in parsed:
        assert schema_errors(line) == [], line
    FIGURES["result files checked"] += 1
    FIGURES["lines checked"] += len(parsed)
    return parsed


def keys(lines, ok=True):
    return sorted((line["queues"], line["repeat"]) for line in lines
                  if ("error" not in line) == ok)


def gone(pid):
    """True when pid has exited (a zombie waiting for init counts)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            return any(line.split()[1:2] == ["Z"] for line in handle
                       if line.startswith("State:"))
    except FileNotFoundError:
        return True


def test_the_per_child_timeout_exists():
    args = build_parser().parse_args(["sweep"])
    assert args.timeout == 600.0
    assert build_parser().parse_args(["sweep", "--timeout", "2"]).timeout == 2.0


@posix_only
def test_a_killed_child_is_recorded_and_resume_reruns_it(tmp_path, monkeypatch):
    path = tmp_path / "r.jsonl"
    monkeypatch.setenv("HRX_BENCH_FAKE", "ok,2/1=kill")
    sweep([1, 2], repeats=2, samples=3, quick=True, sizes=TINY, output=str(path),
          progress=False, python=FAKE_PYTHON)
    lines = whole_lines(path)
    [error] = [line for line in lines if "error" in line]
    assert (error["queues"], error["repeat"]) == (2, 1)
    assert error["returncode"] == -signal.SIGKILL
    assert error["error"] == f"the child killed by signal {int(signal.SIGKILL)}"
    monkeypatch.setenv("HRX_BENCH_FAKE", "ok")
    sweep([1, 2], repeats=2, samples=3, quick=True, sizes=TINY, output=str(path),
          resume=True, progress=False, python=FAKE_PYTHON)
    lines = whole_lines(path)
    assert len(lines) == 5
    assert keys(lines) == [(1, 1), (1, 2), (2, 1), (2, 2)]
    FIGURES["children killed"] += 1


@posix_only
def test_a_hang_whose_grandchild_holds_the_pipes_is_bounded(tmp_path, monkeypatch):
    """The timeout kills the child's whole process group: a grandchild that
    keeps stdout and stderr open can neither keep the sweep waiting nor
    outlive it."""
    path = tmp_path / "r.jsonl"
    monkeypatch.setenv("HRX_BENCH_FAKE", "ok,2=orphan")
    start = time.monotonic()
    sweep([1, 2, 4], repeats=1, samples=3, quick=True, sizes=TINY, output=str(path),
          timeout=3, progress=False, python=FAKE_PYTHON)
    assert time.monotonic() - start < 60
    lines = whole_lines(path)
    [error] = [line for line in lines if "error" in line]
    assert error["error"] == "timed out after 3 s"
    pid = int(error["stderr_tail"].split("grandchild pid ")[1].split()[0])
    deadline = time.monotonic() + 10
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(pid), f"grandchild {pid} outlived the sweep"
    assert keys(lines) == [(1, 1), (4, 1)]
    FIGURES["children timed out"] += 1


# ----------------------------------------------------------- full disk

def test_a_short_write_leaves_no_partial_line(tmp_path, monkeypatch):
    path = tmp_path / "r.jsonl"
    append_line(path, {"a": 1})
    before = path.read_bytes()
    real_write = os.write

    def half_write(fd, data):
        return real_write(fd, data[:len(data) // 2])

    monkeypatch.setattr(lines_module.os, "write", half_write)
    with pytest.raises(OSError, match="short write"):
        append_line(path, {"b": "x" * 1000})
    assert path.read_bytes() == before
    monkeypatch.setattr(lines_module.os, "write", real_write)
    append_line(path, {"c": 3})
    assert read_lines([path]) == ([{"a": 1}, {"c": 3}], [])


def test_an_interrupted_append_keeps_a_whole_line_or_none(tmp_path, monkeypatch):
    """KeyboardInterrupt after the bytes went out keeps the whole line; a
    partial one is removed."""
    path = tmp_path / "r.jsonl"
    real_write = os.write

    def write_then_interrupt(fd, data):
        real_write(fd, data)
        raise KeyboardInterrupt

    def part_then_interrupt(fd, data):
        real_write(fd, data[:7])
        raise KeyboardInterrupt

    monkeypatch.setattr(lines_module.os, "write", write_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        append_line(path, {"whole": 1})
    monkeypatch.setattr(lines_module.os, "write", part_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        append_line(path, {"partial": 2})
    assert read_lines([path]) == ([{"whole": 1}], [])
    assert path.read_bytes().endswith(b"\n")


def test_enospc_stops_the_sweep_with_whole_lines_and_resume_finishes(tmp_path,
                                                                    monkeypatch):
    path = tmp_path / "r.jsonl"
    monkeypatch.setenv("HRX_BENCH_FAKE", "ok")
    real_write = os.write
    calls = []

    def disk_fills_on_third_line(fd, data):
        calls.append(len(data))
        if len(calls) < 3:
            return real_write(fd, data)
        real_write(fd, data[:100])       # some bytes fit, then the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(lines_module.os, "write", disk_fills_on_third_line)
    with pytest.raises(ResultsFileError, match="No space left") as info:
        sweep([1, 2, 4], repeats=2, samples=3, quick=True, sizes=TINY, output=str(path),
              progress=False, python=FAKE_PYTHON)
    assert "queues 4, repeat 1" in str(info.value)
    assert keys(whole_lines(path)) == [(1, 1), (2, 1)]
    monkeypatch.setattr(lines_module.os, "write", real_write)
    sweep([1, 2, 4], repeats=2, samples=3, quick=True, sizes=TINY, output=str(path),
          resume=True, progress=False, python=FAKE_PYTHON)
    lines = whole_lines(path)
    assert len(lines) == 6 and keys(lines) == [(q, r) for q in (1, 2, 4) for r in (1, 2)]
    FIGURES["full disks (injected ENOSPC)"] += 1


def _line_size(tmp_path):
    probe = tmp_path / "probe.jsonl"
    done = subprocess.run(bench_command("sweep", "--queues", "1", "--repeats", "1",
                                        "--output", str(probe), *CLI_TINY),
                          env=child_env(HRX_BENCH_FAKE="ok"), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return len(probe.read_bytes())


def _cli_disk_full_then_resume(path, *, preexec=None, make_room=None):
    args = ["sweep", "--queues", "1,2,4", "--repeats", "2", "--output", str(path),
            *CLI_TINY]
    env = child_env(HRX_BENCH_FAKE="ok")
    full = subprocess.run(bench_command(*args), env=env, capture_output=True, text=True,
                          timeout=300, preexec_fn=preexec)
    assert full.returncode == 74, full.stderr
    assert "rerun with --resume" in full.stderr
    partial = whole_lines(path)
    assert 1 <= len(partial) < 6, "the disk should fill part-way"
    if make_room:
        make_room()
    done = subprocess.run(bench_command(*args, "--resume"), env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = whole_lines(path)
    assert len(lines) == 6 and keys(lines) == [(q, r) for q in (1, 2, 4) for r in (1, 2)]
    return partial


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_FSIZE, Linux")
def test_a_file_size_limit_mid_sweep(tmp_path):
    """The kernel refuses the write past RLIMIT_FSIZE part-way through a
    line (EFBIG / a short write): exit 74, whole lines, resume finishes."""
    import resource

    size = _line_size(tmp_path)
    limit = int(size * 2.5)

    def limit_file_size():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    partial = _cli_disk_full_then_resume(tmp_path / "r.jsonl", preexec=limit_file_size)
    assert len(partial) == 2
    FIGURES["full disks (file size limit)"] += 1


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 64 KiB tmpfs, or skip where mounting is not permitted."""
    mount_point = tmp_path / "tmpfs"
    mount_point.mkdir()
    if os.geteuid() != 0 or not sys.platform.startswith("linux"):
        pytest.skip("mounting a tmpfs needs root on Linux")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs",
                           str(mount_point)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    yield mount_point
    subprocess.run(["umount", str(mount_point)], check=True)


def test_a_real_full_disk_mid_sweep(tmp_path, small_tmpfs):
    """ENOSPC from a real (tmpfs) file system: a filler leaves room for two
    and a half lines; exit 74, whole lines; after the filler is removed,
    resume finishes."""
    size = _line_size(tmp_path)
    filler = small_tmpfs / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)   # fill it completely
    try:
        while os.write(fd, b"\0" * 4096) == 4096:
            pass
    except OSError as error:
        assert error.errno == errno.ENOSPC
    finally:
        os.close(fd)
    assert size * 2.5 < os.path.getsize(filler)
    os.truncate(filler, os.path.getsize(filler) - int(size * 2.5))
    path = small_tmpfs / "r.jsonl"
    partial = _cli_disk_full_then_resume(path, make_room=filler.unlink)
    assert 1 <= len(partial) <= 3
    FIGURES["full disks (tmpfs ENOSPC)"] += 1


# ----------------------------------------------------------- the sweep killed

def _start_cli_sweep(path, pidfile, extra_env=None):
    args = ["sweep", "--queues", "1,2,4", "--repeats", "2", "--output", str(path), *CLI_TINY]
    env = child_env(HRX_BENCH_FAKE="slow", HRX_BENCH_FAKE_SLEEP="0.6",
                    HRX_BENCH_FAKE_PIDFILE=str(pidfile), **(extra_env or {}))
    process = subprocess.Popen(bench_command(*args), env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= 2:
            break
        time.sleep(0.05)
    time.sleep(0.3)                     # a child is running now
    return process, args, env


def _children_gone(pidfile):
    pids = [int(text) for text in pidfile.read_text().split()]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(gone(pid) for pid in pids):
        time.sleep(0.05)
    return [pid for pid in pids if not gone(pid)]


def _resume_finishes(path, args, env):
    env = dict(env)
    env.pop("HRX_BENCH_FAKE_PIDFILE")
    done = subprocess.run(bench_command(*args, "--resume"), env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = whole_lines(path)
    assert len(lines) == 6 and keys(lines) == [(q, r) for q in (1, 2, 4) for r in (1, 2)]


@posix_only
def test_the_sweep_killed_leaves_whole_lines_and_no_child(tmp_path):
    """SIGKILL to the sweep alone (no cleanup can run): its running child
    dies with it (parent-death signal on Linux), the file holds whole
    lines, resume finishes."""
    path, pidfile = tmp_path / "r.jsonl", tmp_path / "pids"
    process, args, env = _start_cli_sweep(path, pidfile)
    process.kill()
    process.communicate(timeout=30)
    assert 2 <= len(whole_lines(path)) < 6
    if sys.platform.startswith("linux"):
        assert _children_gone(pidfile) == []
    _resume_finishes(path, args, env)
    FIGURES["sweeps killed"] += 1


@posix_only
def test_the_sweep_terminated_kills_its_child_and_says_how_to_resume(tmp_path):
    path, pidfile = tmp_path / "r.jsonl", tmp_path / "pids"
    process, args, env = _start_cli_sweep(path, pidfile)
    process.terminate()
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert "rerun with --resume" in stderr
    assert 2 <= len(whole_lines(path)) < 6
    assert _children_gone(pidfile) == []
    _resume_finishes(path, args, env)
    FIGURES["sweeps terminated"] += 1


@posix_only
def test_ctrl_c_kills_the_child_in_its_own_group(tmp_path):
    """Ctrl-C reaches the sweep's process group; the child runs in its own,
    and the sweep kills it before exiting."""
    path, pidfile = tmp_path / "r.jsonl", tmp_path / "pids"
    process, args, env = _start_cli_sweep(path, pidfile)
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert 2 <= len(whole_lines(path)) < 6
    assert _children_gone(pidfile) == []
    _resume_finishes(path, args, env)
    FIGURES["sweeps interrupted (Ctrl-C)"] += 1
