"""JSON-lines files that survive crashes: whole-line appends and a tolerant
reader."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Tuple, Union

from .record import dumps_line

__all__ = ["append_line", "read_lines", "Unreadable", "PathLike"]

PathLike = Union[str, "os.PathLike[str]"]


def _ends_with_newline(fd: int) -> bool:
    size = os.fstat(fd).st_size
    if size == 0:
        return True
    if hasattr(os, "pread"):
        return os.pread(fd, 1, size - 1) == b"\n"
    os.lseek(fd, size - 1, os.SEEK_SET)
    return os.read(fd, 1) == b"\n"


def _remove_partial(fd: int, start: int, length: int) -> None:
    """After a failed or interrupted append of ``length`` bytes at offset
    ``start``: cuts a partially written line off again, so the file keeps
    whole lines only. A line that went out whole is kept. If another
    process appended after our partial bytes the file is left alone (the
    torn line is then reported by read_lines, never fatal)."""
    size = os.fstat(fd).st_size
    if start < size < start + length:
        os.ftruncate(fd, start)


def append_line(path: PathLike, line: Mapping[str, Any]) -> None:
    """Appends ``line`` as one JSON line: the whole line and its newline go
    out in a single ``os.write`` on an O_APPEND descriptor, then fsync, so an
    interruption leaves either the whole line or none of it. A write that
    fails or stops short (a full disk, a file size limit) or is interrupted
    (KeyboardInterrupt) takes its partial line back out before the error
    propagates; a short write raises OSError saying so. If the file's last
    line was left unterminated by someone else, a newline is written first
    so the new line stays readable (with a concurrent appender this may add
    a blank line, which read_lines skips)."""
    data = (dumps_line(line) + "\n").encode("utf-8")
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(os.fspath(path), flags, 0o644)
    try:
        if not _ends_with_newline(fd):
            data = b"\n" + data
        start = os.fstat(fd).st_size
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(
                    f"short write to {os.fspath(path)}: {written} of {len(data)} bytes "
                    f"(disk full or file size limit?); the partial line was removed")
            os.fsync(fd)
        except BaseException:
            _remove_partial(fd, start, len(data))
            raise
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Unreadable:
    """A line of a results file that is not a JSON object."""

    path: str
    number: int
    reason: str


def read_lines(paths: Iterable[PathLike]) -> Tuple[List[Dict[str, Any]], List[Unreadable]]:
    """Every JSON object line of the files, in order, and the lines that were
    not (a torn or foreign line is reported, never fatal). Blank lines are
    skipped. A missing file raises FileNotFoundError."""
    lines: List[Dict[str, Any]] = []
    unreadable: List[Unreadable] = []
    for path in paths:
        name = os.fspath(path)
        with open(name, encoding="utf-8", errors="replace") as handle:
            for number, text in enumerate(handle, start=1):
                if not text.strip():
                    continue
                try:
                    value = json.loads(text)
                except json.JSONDecodeError as error:
                    unreadable.append(Unreadable(name, number, f"not JSON ({error.msg})"))
                    continue
                if not isinstance(value, dict):
                    unreadable.append(Unreadable(name, number, "not a JSON object"))
                    continue
                lines.append(value)
    return lines, unreadable
