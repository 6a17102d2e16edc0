"""What is committed under bench/results: each result line is schema-valid
and says where it came from: the commit of the code that measured it
(git_commit) or, for lines measured before commits were recorded, the
commit that added it to the repository (committed_in); each table and
comparison names the command that makes it from its .jsonl, and that
command makes it again byte for byte."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest_bench import child_env

from hrx.bench.cli import main as cli_main
from hrx.bench.lines import read_lines
from hrx.bench.report import recorded_command
from hrx.bench.schema import is_error_line, schema_errors

pytestmark = pytest.mark.python_only

ROOT = Path(__file__).resolve().parent.parent


def _recorded_files(suffix: str = ".jsonl"):
    """The committed files under bench/results with that suffix (in a git
    checkout: the tracked ones, not a sweep that ``make bench`` just wrote
    beside them)."""
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "bench/results"],
                             capture_output=True, text=True, check=False)
    if tracked.returncode == 0 and tracked.stdout:
        names = [name for name in tracked.stdout.split("\0") if name.endswith(suffix)]
        return sorted(ROOT / name for name in names)
    return sorted((ROOT / "bench" / "results").rglob("*" + suffix))


FILES = _recorded_files()


def _full_history() -> bool:
    """True in a git checkout of this tree with its whole history (a shallow
    clone lacks older commits)."""
    top = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--show-toplevel"],
                         capture_output=True, text=True, check=False)
    if top.returncode or Path(top.stdout.strip()).resolve() != ROOT:
        return False
    shallow = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--is-shallow-repository"],
                             capture_output=True, text=True, check=False)
    return shallow.stdout.strip() == "false"


# A line of bench/scripts/host_bandwidth.py (one timed measurement of one
# row at one size), the one kind of .jsonl under bench/results that is not
# a sweep's.
BANDWIDTH_KEYS = ("row", "direction", "bytes", "iters", "repeat", "seconds",
                  "gb_per_s", "device", "git_commit")


def _line_errors(line):
    """What is wrong with a recorded line, by its kind."""
    if "gb_per_s" in line and "row" in line:
        errors = [f"missing key {key!r}" for key in BANDWIDTH_KEYS
                  if key not in line]
        if line.get("direction") not in ("up", "down"):
            errors.append(f"direction {line.get('direction')!r}")
        if not (isinstance(line.get("gb_per_s"), (int, float))
                and line["gb_per_s"] > 0):
            errors.append(f"gb_per_s {line.get('gb_per_s')!r}")
        return errors
    return schema_errors(line, use_jsonschema=False)


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.name)
def test_a_recorded_line_names_its_commit(path):
    lines, unreadable = read_lines([path])
    assert lines and not unreadable
    commits = set()
    for number, line in enumerate(lines, 1):
        if is_error_line(line):
            continue
        assert _line_errors(line) == [], (number, line.get("queues"))
        commit = line.get("git_commit") or line.get("committed_in")
        assert commit, f"{path.name}:{number} names no commit"
        commits.add(commit)
    if _full_history():
        for commit in commits:
            # An ancestor of HEAD, not merely an object in this clone: a commit
            # dropped by a rebase lingers locally but is missing from a fresh clone.
            known = subprocess.run(["git", "-C", str(ROOT), "merge-base", "--is-ancestor", commit, "HEAD"],
                                   capture_output=True, check=False)
            assert known.returncode == 0, f"{path.name}: {commit} is not in this branch's history"


# ------------------------------------------------------------------ reports

REPORTS = _recorded_files(".txt")
RESULTS = ROOT / "bench" / "results"

MADE_ELSEWHERE = {
    "h200/before-after.txt": "its two builds' .jsonl files are not kept (an older tree's "
                             "lines may predate the recorded fields); its header names the "
                             "h200.sh stage",
    "host-2core/make-bench.txt": "the console output of one make bench, not a report of a "
                                 "file here",
}
"""Reports that hold an hrx-bench table but cannot be made again from the
files of this tree, and why."""


def _holds_a_table(path: Path) -> bool:
    return any(line.startswith("| Queues |")
               for line in path.read_text(encoding="utf-8", errors="replace").splitlines())


def test_every_committed_table_names_the_command_that_makes_it():
    """A table or comparison under bench/results starts with the line
    (hrx/bench/report.py) naming the command that writes it again from its
    .jsonl, unless it is one of the few made from files not kept here."""
    unnamed = [str(path.relative_to(RESULTS)) for path in REPORTS
               if _holds_a_table(path) and recorded_command(path) is None
               and str(path.relative_to(RESULTS)) not in MADE_ELSEWHERE]
    assert unnamed == []
    for name in MADE_ELSEWHERE:
        assert (RESULTS / name).exists(), f"{name} is gone: drop it from MADE_ELSEWHERE"


def _regenerate(path: Path, work: Path, root: Path = ROOT) -> bytes:
    """Runs the command recorded in ``path`` (a file under ``root``) in a
    copy of its directory under ``work``, its inputs copied to the same
    relative places, and returns the bytes it writes."""
    command = recorded_command(path)
    place = work / path.parent.relative_to(root)
    place.mkdir(parents=True, exist_ok=True)
    output = command[command.index("-o") + 1]
    for argument in command[1:]:
        source = (path.parent / argument).resolve()
        if argument != output and source.is_file() and root in source.parents:
            target = work / source.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
    if command[0] == "hrx-bench":
        previous = os.getcwd()
        os.chdir(place)
        try:
            assert cli_main(command[1:]) == 0
        finally:
            os.chdir(previous)
    else:
        assert command[:2] == ["python3", "-P"], command
        done = subprocess.run([sys.executable] + command[1:], cwd=place, env=child_env(),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    return (place / output).read_bytes()


@pytest.mark.parametrize("path", [p for p in REPORTS if recorded_command(p)],
                         ids=lambda path: str(path.relative_to(RESULTS)))
def test_a_committed_report_is_made_again_byte_for_byte(path, tmp_path):
    assert _regenerate(path, tmp_path) == path.read_bytes()


def test_the_regeneration_check_sees_a_report_its_file_no_longer_gives(tmp_path, monkeypatch):
    """A report made by its recorded command passes; once one of its cells
    or its .jsonl changes, it fails."""
    root = tmp_path / "tree"
    folder = root / "bench" / "results" / "machine"
    folder.mkdir(parents=True)
    shutil.copyfile(RESULTS / "host-2core" / "sweep-quick.jsonl", folder / "r.jsonl")
    monkeypatch.chdir(folder)
    assert cli_main(["table", "r.jsonl", "-o", "r-table.txt"]) == 0
    report = folder / "r-table.txt"
    made = report.read_bytes()
    assert _regenerate(report, tmp_path / "a", root) == made
    row = next(line for line in made.decode().splitlines() if line.startswith("| 1 | "))
    report.write_text(made.decode().replace(row, row.replace("| 1 | ", "| 1 | 9", 1)))
    assert _regenerate(report, tmp_path / "b", root) != report.read_bytes()
    report.write_bytes(made)
    lines = (folder / "r.jsonl").read_text().splitlines()
    (folder / "r.jsonl").write_text("\n".join(lines[1:]) + "\n")   # one run fewer
    assert _regenerate(report, tmp_path / "c", root) != made
