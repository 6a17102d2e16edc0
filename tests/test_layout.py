"""The C layers depend one way (docs/architecture.md): csrc/include (the
public API) <- csrc/core (policy) <- csrc/backends (translation); the
benchmark driver (csrc/bench) uses the public API and the backend interface;
the bindings (csrc/python) use the public header, the benchmark driver's
header and, in their testing-build file, the testing header. Test machinery
(csrc/testing, csrc/backends/fault) is reached only inside
`#ifdef HRX_TESTING_BUILD`. Read from the sources' #include lines.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

CSRC = Path(__file__).resolve().parent.parent / "csrc"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')

# Folder -> what its files may include beyond their own folder's headers.
ALLOWED = {
    "include": set(),
    "base": {"hrx.h"},
    "hal": {"hrx.h"},
    "core": {"hrx.h", "hal/backend.h", "base/status.h", "base/clock.h",
             "base/environment.h", "base/nonblocking.h",
             "base/thread_state.h"},
    "bench": {"hrx.h", "bench/bench.h", "hal/backend.h", "base/status.h"},
    "python": {"hrx.h", "bench/bench.h", "bench/bench_kernels.h"},
    "drivers/host": {"hrx.h", "hal/backend.h", "base/status.h",
                     "base/environment.h", "base/clock.h",
                     "base/nonblocking.h", "hrx_kernel.h"},
    "drivers/hip": {"hrx.h", "hal/backend.h", "base/status.h",
                    "base/environment.h", "base/clock.h",
                    "base/nonblocking.h"},
}
# Reached only from inside #ifdef HRX_TESTING_BUILD.
TESTING_ONLY = {"testing/hrx_testing.h", "drivers/fault/fault_backend.h"}


def includes(path: Path):
    """(header, inside #ifdef HRX_TESTING_BUILD) for each quoted include."""
    depth, testing_at = 0, None
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("#if"):
            depth += 1
            if "HRX_TESTING_BUILD" in stripped and testing_at is None:
                testing_at = depth
        elif stripped.startswith("#endif"):
            if testing_at == depth:
                testing_at = None
            depth -= 1
        match = INCLUDE.match(line)
        if match:
            yield match.group(1), testing_at is not None


def violations(folder: str, allowed: set[str]) -> list[str]:
    found = []
    for path in sorted((CSRC / folder).glob("*.[ch]")):
        own = {p.name for p in (CSRC / folder).glob("*.h")}
        own |= {f"{folder}/{name}" for name in own}
        for header, testing in includes(path):
            if header in own or header in allowed:
                continue
            if testing and header in TESTING_ONLY:
                continue
            found.append(f"{path.relative_to(CSRC)} includes {header}")
    return found


@pytest.mark.parametrize("folder", sorted(ALLOWED))
def test_includes_point_one_way(folder):
    assert violations(folder, ALLOWED[folder]) == []


def test_the_check_sees_a_wrong_way_include(tmp_path, monkeypatch):
    (tmp_path / "python").mkdir()
    (tmp_path / "python" / "bad.c").write_text(
        '#include "hrx.h"\n#include "backends/hip/hip_backend.h"\n'
        '#ifdef HRX_TESTING_BUILD\n#include "testing/hrx_testing.h"\n#endif\n'
        '#include "testing/hrx_testing.h"\n')
    monkeypatch.setattr(__import__(__name__), "CSRC", tmp_path)
    assert violations("python", ALLOWED["python"]) == [
        "python/bad.c includes backends/hip/hip_backend.h",
        "python/bad.c includes testing/hrx_testing.h"]
