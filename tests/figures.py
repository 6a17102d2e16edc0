"""Figures that reliability tests report (programs run, commands, bytes
compared, ...): each test module takes a named Counter with ``figures``;
conftest.py prints every non-empty one in pytest's terminal summary."""
from __future__ import annotations

import collections

REGISTRY: dict[str, collections.Counter] = {}


def figures(title: str) -> collections.Counter:
    """The counter reported under `title` (one per title, shared)."""
    return REGISTRY.setdefault(title, collections.Counter())


def report() -> list[str]:
    lines = []
    for title, counter in REGISTRY.items():
        if counter:
            body = ", ".join(f"{key}: {value:,}" for key, value in
                             sorted(counter.items()))
            lines.append(f"{title}: {body}")
    return lines
