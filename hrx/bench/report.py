"""Report files that say how to make them again.

A report written with ``-o FILE`` (``hrx-bench table``, ``hrx-bench
compare``, the analysis scripts in bench/scripts) starts with one line that
names the command which, run in the file's own directory, writes the same
bytes again, then a blank line, then the report::

    # command (run in this file's directory): hrx-bench table sweep.jsonl -o sweep-table.txt

Every path in the command is relative to that directory, so the line stays
true wherever the file and its inputs move together (a results folder such
as bench/results/h200/). tests/test_recorded_results.py runs each committed
report's command and compares the bytes.
"""
from __future__ import annotations

import os
import shlex
from typing import List, Optional, Sequence, Union

__all__ = ["HEADER", "relative_to", "write_report", "recorded_command"]

PathLike = Union[str, "os.PathLike[str]"]

HEADER = "# command (run in this file's directory): "
"""The start of a report's first line; the command follows (shlex quoting)."""


def relative_to(path: PathLike, output: PathLike) -> str:
    """``path`` as seen from the directory of ``output``."""
    start = os.path.dirname(os.path.abspath(os.fspath(output)))
    return os.path.relpath(os.path.abspath(os.fspath(path)), start)


def write_report(output: PathLike, text: str, command: Sequence[str]) -> None:
    """Writes ``text`` to ``output`` after the header naming ``command``
    (its paths already relative to the output's directory)."""
    with open(os.fspath(output), "w", encoding="utf-8") as handle:
        handle.write(f"{HEADER}{shlex.join(command)}\n\n{text}")


def recorded_command(path: PathLike) -> Optional[List[str]]:
    """The command a report's first line names, split as a shell would, or
    None when the file has no such line."""
    with open(os.fspath(path), encoding="utf-8", errors="replace") as handle:
        first = handle.readline().rstrip("\n")
    if not first.startswith(HEADER):
        return None
    return shlex.split(first[len(HEADER):])
