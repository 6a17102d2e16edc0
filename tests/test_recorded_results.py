"""The result lines committed under bench/results: each is schema-valid and
says where it came from: the commit of the code that measured it
(git_commit) or, for lines measured before commits were recorded, the
commit that added it to the repository (committed_in)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hrx.bench.lines import read_lines
from hrx.bench.schema import is_error_line, schema_errors

pytestmark = pytest.mark.python_only

ROOT = Path(__file__).resolve().parent.parent


def _recorded_files():
    """The committed results files (in a git checkout: the tracked ones, not
    a sweep that ``make bench`` just wrote beside them)."""
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "bench/results"],
                             capture_output=True, text=True, check=False)
    if tracked.returncode == 0 and tracked.stdout:
        names = [name for name in tracked.stdout.split("\0") if name.endswith(".jsonl")]
        return sorted(ROOT / name for name in names)
    return sorted((ROOT / "bench" / "results").rglob("*.jsonl"))


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


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.name)
def test_a_recorded_line_names_its_commit(path):
    lines, unreadable = read_lines([path])
    assert lines and not unreadable
    commits = set()
    for number, line in enumerate(lines, 1):
        if is_error_line(line):
            continue
        assert schema_errors(line, use_jsonschema=False) == [], (number, line.get("queues"))
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
