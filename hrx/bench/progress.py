"""A one-line progress display on stderr, without dependencies."""
from __future__ import annotations

import sys
import time
from typing import List, Optional, TextIO

from .stats import median

__all__ = ["Progress", "format_duration"]


def format_duration(seconds: float) -> str:
    """H:MM:SS, or M:SS under an hour."""
    whole = max(0, int(round(seconds)))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """Shows ``[done/total] repeat r/R  queues q  driver d  elapsed  ETA  errors``.

    On a terminal the line is redrawn in place with ``\\r``; otherwise one
    line is printed per finished run. The ETA is the median duration of the
    runs finished in this session (so one timed-out run does not dominate)
    times the runs left."""

    def __init__(self, total: int, repeats: int, *, stream: Optional[TextIO] = None,
                 enabled: bool = True) -> None:
        self.total = total
        self.repeats = repeats
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.done = 0
        self.errors = 0
        self.skipped = 0
        self._started = time.monotonic()
        self._durations: List[float] = []
        self._live = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self._width = 0

    def _eta(self) -> str:
        left = self.total - self.done - self.skipped
        if not self._durations:
            return "?"
        return format_duration(median(self._durations) * left)

    def _line(self, queues: int, repeat: int, driver: str, state: str) -> str:
        elapsed = format_duration(time.monotonic() - self._started)
        return (f"[{self.done + self.skipped:>{len(str(self.total))}}/{self.total}] "
                f"repeat {repeat}/{self.repeats}  queues {queues:>2}  {driver}  {state}  "
                f"elapsed {elapsed}  ETA {self._eta()}  errors {self.errors}")

    def _show(self, text: str, final: bool) -> None:
        if not self.enabled:
            return
        if self._live:
            pad = max(0, self._width - len(text))
            self.stream.write("\r" + text + " " * pad + ("\n" if final else ""))
            self._width = 0 if final else len(text)
        elif final:
            self.stream.write(text + "\n")
        self.stream.flush()

    def header(self, lines: List[str]) -> None:
        """Lines printed once before the first run (what is measured)."""
        if self.enabled:
            for text in lines:
                self.stream.write(text + "\n")
            self.stream.flush()

    def skip(self) -> None:
        """A run already recorded (resume)."""
        self.skipped += 1

    def start(self, queues: int, repeat: int, driver: str) -> None:
        self._show(self._line(queues, repeat, driver, "running"), final=False)

    def finish(self, queues: int, repeat: int, driver: str, seconds: float, ok: bool,
               reason: str = "") -> None:
        """A run ended; ``reason`` says why a failed one failed."""
        self.done += 1
        self._durations.append(seconds)
        if not ok:
            self.errors += 1
        state = f"{'ok' if ok else 'FAILED'} in {seconds:.1f} s"
        text = self._line(queues, repeat, driver, state)
        if reason:
            text += f"\n    {reason}"
        self._show(text, final=(not self._live) or not ok or self.done + self.skipped == self.total)

    def close(self) -> None:
        """Ends an in-place line (after an interruption)."""
        if self.enabled and self._live and self._width:
            self.stream.write("\n")
            self.stream.flush()
            self._width = 0
