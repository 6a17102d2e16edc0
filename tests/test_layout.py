"""The C layers depend one way, as docs/architecture.md draws them: its
table of layers (which folder may include which) is read from the document
and every quoted #include under csrc/ is checked against it. Beyond the
table: no core file includes a driver's header, a driver's folder includes
no other driver's (drivers/registry.c names them all), the core has no
include circle between its modules, and the testing build's headers
(csrc/testing, csrc/drivers/fault) are reached only inside
`#ifdef HRX_TESTING_BUILD`.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# Reached only from inside #ifdef HRX_TESTING_BUILD.
TESTING_ONLY = ("testing/", "drivers/fault/")
# The benchmark driver's headers the bindings may use (its public API).
BENCH_PUBLIC = {"bench/bench.h", "bench/bench_kernels.h"}
# Headers outside csrc/ a layer may include: the host kernels' header.
OUTSIDE = {"drivers": {"hrx_kernel.h"}}


def layer_table(text: str) -> dict[str, set[str]]:
    """{layer: layers it may include} from the document's table of layers
    (the first ```text block after the 'layers:' comment)."""
    block = text.split("<!-- layers:", 1)[1].split("```text", 1)[1]
    block = block.split("```", 1)[0]
    table = {}
    for line in block.strip().splitlines()[1:]:
        folder, allowed = re.match(r"csrc/(\S+)\s+(.+?)\s{2,}", line).groups()
        table[folder] = set() if allowed == "-" else {
            name.strip() for name in allowed.split(",")}
    return table


def layer_of(relative: str) -> str:
    """The layer of a path relative to csrc/ ("drivers/hip/x.c" -> drivers)."""
    return relative.split("/", 1)[0]


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


def resolve(path: Path, header: str, csrc: Path) -> str | None:
    """The included header relative to csrc/ (None: outside csrc/)."""
    if (path.parent / header).exists():
        return str((path.parent / header).relative_to(csrc))
    if header == "hrx.h":
        return "include/hrx.h"
    if (csrc / header).exists():
        return header
    return None


def violations(csrc: Path, table: dict[str, set[str]]) -> list[str]:
    found = []
    for path in sorted(csrc.rglob("*.[ch]")):
        source = str(path.relative_to(csrc))
        layer = layer_of(source)
        for header, testing in includes(path):
            target = resolve(path, header, csrc)
            where = f"{source} includes {header}"
            if target is None:
                if header not in OUTSIDE.get(layer, set()):
                    found.append(f"{where} (outside csrc/)")
                continue
            if target.startswith(TESTING_ONLY) and not testing and \
                    not source.startswith(TESTING_ONLY):
                found.append(f"{where} outside #ifdef HRX_TESTING_BUILD")
                continue
            if target.startswith(TESTING_ONLY):
                continue
            target_layer = layer_of(target)
            if target_layer != layer and target_layer not in table[layer]:
                found.append(f"{where} ({layer} may include "
                             f"{', '.join(sorted(table[layer])) or 'nothing'})")
            elif layer == "python" and target_layer == "bench" and \
                    target not in BENCH_PUBLIC:
                found.append(f"{where} (the bindings use the benchmark "
                             f"driver's public headers only)")
            elif layer == "drivers" and target_layer == "drivers":
                own = source.split("/")[1] if source.count("/") > 1 else None
                other = target.split("/")[1] if target.count("/") > 1 else None
                if own and other and own != other:
                    found.append(f"{where} (a driver includes no other "
                                 f"driver's header)")
    return found


def core_cycles(csrc: Path) -> list[list[str]]:
    """The include circles between the core's modules (a module: a .c file
    and its header), each as a list of module names."""
    core = csrc / "core"
    graph: dict[str, set[str]] = {}
    for path in core.glob("*.[ch]"):
        edges = graph.setdefault(path.stem, set())
        for header, _ in includes(path):
            target = resolve(path, header, csrc)
            if target and target.startswith("core/"):
                stem = Path(target).stem
                if stem != path.stem:
                    edges.add(stem)
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


TABLE = layer_table(ARCHITECTURE.read_text())


def test_the_table_names_every_folder_of_csrc():
    # Every folder that holds C sources (a copy of the tree may keep an
    # emptied folder behind: it is no layer).
    folders = {p.name for p in CSRC.iterdir()
               if p.is_dir() and any(p.rglob("*.[ch]"))}
    assert folders == set(TABLE), (folders, set(TABLE))
    for allowed in TABLE.values():
        assert allowed <= set(TABLE), allowed


def test_includes_point_one_way():
    assert violations(CSRC, TABLE) == []


def test_the_core_has_no_include_circle():
    assert core_cycles(CSRC) == []


def test_no_core_file_includes_a_driver():
    assert "drivers" not in TABLE["core"]
    assert all(layer_of(f) != "drivers" for f in TABLE["core"])


def test_nothing_in_bench_includes_a_core_header():
    assert "core" not in TABLE["bench"]


@pytest.mark.parametrize("source,line,message", [
    ("python/bad.c", '#include "drivers/hip/hip_backend.h"',
     "python/bad.c includes drivers/hip/hip_backend.h (python may include "
     "bench, include)"),
    ("core/bad.c", '#include "drivers/host/host_driver.h"',
     "core/bad.c includes drivers/host/host_driver.h (core may include base, "
     "hal, include)"),
    ("bench/bad.c", '#include "core/stream.h"',
     "bench/bad.c includes core/stream.h (bench may include base, hal, "
     "include)"),
    ("drivers/hip/bad.c", '#include "drivers/host/host_driver.h"',
     "drivers/hip/bad.c includes drivers/host/host_driver.h (a driver "
     "includes no other driver's header)"),
    ("python/bad.c", '#include "bench/bench_run.h"',
     "python/bad.c includes bench/bench_run.h (the bindings use the "
     "benchmark driver's public headers only)"),
    ("core/bad.c", '#include "testing/hrx_testing.h"',
     "core/bad.c includes testing/hrx_testing.h outside #ifdef "
     "HRX_TESTING_BUILD"),
])
def test_the_check_sees_a_wrong_way_include(tmp_path, source, line, message):
    for header in ("drivers/hip/hip_backend.h", "drivers/host/host_driver.h",
                   "core/stream.h", "bench/bench_run.h",
                   "testing/hrx_testing.h"):
        (tmp_path / header).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / header).write_text("")
    (tmp_path / source).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / source).write_text(
        '#include "hrx.h"\n#ifdef HRX_TESTING_BUILD\n'
        '#include "testing/hrx_testing.h"\n#endif\n' + line + "\n")
    assert violations(tmp_path, TABLE) == [message]


def test_the_check_sees_an_include_circle(tmp_path):
    core = tmp_path / "core"
    core.mkdir()
    (core / "a.h").write_text('#include "b.h"\n')
    (core / "a.c").write_text('#include "a.h"\n')
    (core / "b.h").write_text("")
    (core / "b.c").write_text('#include "b.h"\n#include "c.h"\n')
    (core / "c.h").write_text("")
    (core / "c.c").write_text('#include "a.h"\n')
    assert core_cycles(tmp_path) == [["a", "b", "c"]]


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
                  "graph", "completion", "kernel", "kernel_module", "pinned",
                  "result_memory"}
# Type-layer units that are no Python type: what the types share.
BINDINGS_TYPE_SUPPORT = {"dlpack", "host_memory", "launch", "dtype",
                         "typed_view", "typed_create"}
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
