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
    "core": {"hrx.h", "backends/backend.h"},
    "bench": {"hrx.h", "bench/bench.h", "backends/backend.h",
              "core/status.h"},
    "python": {"hrx.h", "bench/bench.h", "bench/bench_kernels.h"},
    "backends/host": {"hrx.h", "backends/backend.h", "core/status.h",
                      "core/environment.h", "core/clock.h",
                      "core/nonblocking.h", "hrx_kernel.h"},
    "backends/hip": {"hrx.h", "backends/backend.h", "core/status.h",
                     "core/environment.h", "core/clock.h",
                     "core/nonblocking.h"},
}
# Reached only from inside #ifdef HRX_TESTING_BUILD.
TESTING_ONLY = {"testing/hrx_testing.h", "backends/fault/fault_backend.h"}


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


# The bindings (csrc/python) in two layers, read from their #include lines.
# A unit is a .c file with its .h (dlpack.c and dlpack.h are the unit
# "dlpack"). The bottom layer (module state, errors and shared helpers)
# includes only its own headers; each type's unit may include the bottom
# and the headers of the units it returns or takes, without a cycle; the
# top, module.c, creates every type and is the only file that includes
# every type's header. Every file of csrc/python belongs to a listed unit.
BINDINGS_BOTTOM = {"state", "args", "handle", "device_handle", "property",
                   "special", "wait", "submit", "host_threads"}
BINDINGS_TYPES = {"device", "stream", "buffer", "event", "readback",
                  "graph", "completion", "kernel"}
# Type-layer units that are no Python type: what the types share.
BINDINGS_TYPE_SUPPORT = {"dlpack", "host_memory", "launch"}
# Module functions beside module.c (module.c's method table names them).
BINDINGS_MODULE_FUNCTIONS = {"bench", "testing"}
BINDINGS_TOP = {"module"}


def binding_includes(folder: str = "python") -> dict[str, set[str]]:
    """File name -> the csrc/python headers it includes (by file name)."""
    root = CSRC / folder
    own = {p.name for p in root.glob("*.h")}
    found = {}
    for path in sorted(root.glob("*.[ch]")):
        names = set()
        for header, _ in includes(path):
            name = header.split("/")[-1] if header.startswith(
                f"{folder}/") else header
            if name in own:
                names.add(name)
        found[path.name] = names
    return found


def layer_violations(folder: str = "python") -> list[str]:
    found = []
    files = binding_includes(folder)
    units = {name.rsplit(".", 1)[0] for name in files}
    listed = (BINDINGS_BOTTOM | BINDINGS_TYPES | BINDINGS_TYPE_SUPPORT |
              BINDINGS_MODULE_FUNCTIONS | BINDINGS_TOP)
    for unit in sorted(units - listed):
        found.append(f"{folder}/{unit}: in no layer of the bindings")
    for name, headers in sorted(files.items()):
        unit = name.rsplit(".", 1)[0]
        if unit in BINDINGS_BOTTOM:
            for header in sorted(headers):
                if header[:-2] not in BINDINGS_BOTTOM:
                    found.append(f"{folder}/{name} (bottom layer) includes "
                                 f"{header}")
    type_headers = {f"{unit}.h" for unit in BINDINGS_TYPES}
    every = sorted(name for name, headers in files.items()
                   if type_headers <= headers)
    if every != ["module.c"]:
        found.append(f"{folder}: the files that include every type's header "
                     f"are {every}, not only module.c")
    # Cycles among units: unit -> the units whose headers it includes.
    graph = {unit: set() for unit in units}
    for name, headers in files.items():
        unit = name.rsplit(".", 1)[0]
        graph[unit] |= {h[:-2] for h in headers} - {unit}
    state = {}

    def visit(unit, path):
        state[unit] = "open"
        for other in sorted(graph.get(unit, ())):
            if state.get(other) == "open":
                cycle = path[path.index(other):] + [other]
                found.append(f"{folder}: include cycle "
                             f"{' -> '.join(cycle)}")
            elif other not in state:
                visit(other, path + [other])
        state[unit] = "done"

    for unit in sorted(graph):
        if unit not in state:
            visit(unit, [unit])
    return found


def test_the_bindings_are_layered():
    assert layer_violations() == []


def test_the_layer_check_sees_violations(tmp_path, monkeypatch):
    python = tmp_path / "python"
    python.mkdir()
    files = {
        # The bottom reaching up to a type, and a cycle through two types.
        "state.h": '#include "hrx.h"\n',
        "handle.h": '#include "state.h"\n',
        "handle.c": '#include "handle.h"\n#include "stream.h"\n',
        "stream.h": '#include "state.h"\n',
        "stream.c": '#include "stream.h"\n#include "event.h"\n',
        "event.h": '#include "state.h"\n',
        "event.c": '#include "event.h"\n#include "python/stream.h"\n',
        # A second file with every type header, and a file in no layer.
        "module.c": "".join(f'#include "{u}.h"\n' for u in
                            sorted(BINDINGS_TYPES)),
        "device.c": "".join(f'#include "{u}.h"\n' for u in
                            sorted(BINDINGS_TYPES)),
        "stray.c": '#include "state.h"\n',
    }
    for unit in BINDINGS_TYPES:
        files.setdefault(f"{unit}.h", '#include "state.h"\n')
    for name, text in files.items():
        (python / name).write_text(text)
    monkeypatch.setattr(__import__(__name__), "CSRC", tmp_path)
    assert layer_violations() == [
        "python/stray: in no layer of the bindings",
        "python/handle.c (bottom layer) includes stream.h",
        "python: the files that include every type's header are "
        "['device.c', 'module.c'], not only module.c",
        "python: include cycle event -> stream -> event",
    ]
