"""Where a result came from: hrx's version, the commit of the hrx source
tree, and the time."""
from __future__ import annotations

import datetime
import os
import subprocess
from typing import Optional, Tuple

__all__ = ["hrx_version", "source_commit", "build_commit", "utc_timestamp", "package_root"]


def package_root() -> str:
    """The directory that holds the ``hrx`` package being run."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.dirname(os.path.dirname(here))


def hrx_version() -> Optional[str]:
    """``hrx.__version__``, else the installed distribution's version, else None."""
    try:
        import hrx

        version = getattr(hrx, "__version__", None)
        if version:
            return str(version)
    except Exception:  # noqa: BLE001 - provenance never fails a run
        pass
    try:
        from importlib.metadata import version as distribution_version

        return distribution_version("hrx")
    except Exception:  # noqa: BLE001
        return None


def _git(root: str, *args: str) -> Optional[str]:
    try:
        done = subprocess.run(["git", "-C", root, *args], capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def build_commit() -> Tuple[Optional[str], Optional[bool]]:
    """(commit, dirty) that the build of the installed package recorded
    (hrx/_build_info.py, written by setup.py), or (None, None)."""
    try:
        from hrx import _build_info  # type: ignore[attr-defined]
    except ImportError:
        return None, None
    commit = getattr(_build_info, "GIT_COMMIT", None)
    dirty = getattr(_build_info, "GIT_DIRTY", None)
    return (str(commit) if commit else None), (bool(dirty) if dirty is not None else None)


def source_commit() -> Tuple[Optional[str], Optional[bool]]:
    """(commit, dirty) of the source the running hrx comes from: the git
    checkout it lives in (an editable install, PYTHONPATH), else the commit
    its build recorded (build_commit), else (None, None). dirty: tracked
    files differed from the commit."""
    root = package_root()
    top = _git(root, "rev-parse", "--show-toplevel")
    if not top or os.path.realpath(top) != os.path.realpath(root):
        return build_commit()
    commit = _git(root, "rev-parse", "HEAD")
    if not commit:
        return build_commit()
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    return commit, (bool(status) if status is not None else None)


def utc_timestamp() -> str:
    """The current time, ISO 8601 in UTC with a Z suffix, to the second."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")
