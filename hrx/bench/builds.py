"""Builds of hrx measured side by side by the benchmark's scripts
(bench/scripts/python_threads.py, launch_call_cost.py): each named by a
LABEL=PATH spec, PATH the directory a child process imports hrx from (a
testing build's build/testing, another checkout's), run with
``python3 -P`` so that the working directory's source tree is never
imported instead."""
from __future__ import annotations

import argparse
import os
from typing import Dict, List, Optional, Sequence, Tuple

__all__ = ["parse_builds", "python_env"]


def parse_builds(parser: argparse.ArgumentParser, specs: Sequence[str],
                 option: str) -> List[Tuple[str, str]]:
    """(label, path) of each LABEL=PATH spec; a spec without a label or a
    path is the parser's error, naming `option`."""
    builds = []
    for spec in specs:
        label, _, path = spec.partition("=")
        if not label or not path:
            parser.error(f"{option} takes LABEL=PATH, got {spec!r}")
        builds.append((label, path))
    return builds


def python_env(path: Optional[str]) -> Dict[str, str]:
    """The environment of a child importing hrx from `path` (None: the
    installed hrx)."""
    env = dict(os.environ)
    if path:
        env["PYTHONPATH"] = os.path.abspath(path)
    return env
