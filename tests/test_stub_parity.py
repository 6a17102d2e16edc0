"""The hand-written stubs (hrx/_hrx.pyi, hrx/fabric.pyi) match the runtime
modules, in both directions.

Compared: public module names and their kind (class, function, constant);
each class's public members and protocol dunders with their kind (method,
classmethod, staticmethod, property), its bases and whether it is final;
constant values; parameter names and which of them may be passed by
keyword where the runtime states them (the text signature,
``inspect.signature``; else the first line of a docstring,
``name(a, b=1)``); and, by calling with a deliberately bad value, that
keyword-capable stub parameters are accepted as keywords and positional-only
ones are refused as keywords.

The helpers are tested too (``test_diff_detects_*``): a parity test that
cannot fail is worse than none.
"""
from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re
import textwrap
import types
from pathlib import Path

import pytest

import hrx
import hrx._hrx
import hrx.fabric

ROOT = Path(__file__).resolve().parent.parent
STUB_FILES = {
    "hrx._hrx": ROOT / "hrx" / "_hrx.pyi",
    "hrx.fabric": ROOT / "hrx" / "fabric.pyi",
}

# Dunders that are part of a class's API. Others (__repr__, __lt__, ...) are
# not compared.
PROTOCOL_DUNDERS = frozenset({
    "__new__", "__init__", "__enter__", "__exit__", "__getitem__",
    "__setitem__", "__len__", "__iter__", "__contains__", "__call__",
    "__bool__", "__eq__", "__ne__", "__hash__", "__dlpack__", "__dlpack_device__",
})
PY_TPFLAGS_BASETYPE = 1 << 10


def _public(name: str) -> bool:
    return not name.startswith("_")


def _is_member(name: str) -> bool:
    return _public(name) or name in PROTOCOL_DUNDERS


@dataclasses.dataclass
class ClassApi:
    members: dict[str, str] = dataclasses.field(default_factory=dict)
    bases: tuple[str, ...] = ()
    final: bool = False
    # member -> parameter names (self/cls excluded); stub side only.
    params: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    # member -> names that may be passed by keyword; stub side only.
    keywords: dict[str, list[str]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class ModuleApi:
    names: dict[str, str] = dataclasses.field(default_factory=dict)
    classes: dict[str, ClassApi] = dataclasses.field(default_factory=dict)
    constants: dict[str, object] = dataclasses.field(default_factory=dict)
    params: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    keywords: dict[str, list[str]] = dataclasses.field(default_factory=dict)


# ------------------------------------------------------------------ stub side

def _decorator_names(node: ast.FunctionDef | ast.ClassDef) -> set[str]:
    names = set()
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if isinstance(target, ast.Attribute):
            names.add(target.attr)
        elif isinstance(target, ast.Name):
            names.add(target.id)
    return names


def _function_kind(node: ast.FunctionDef) -> str:
    if node.name == "__new__":
        return "staticmethod"  # implicitly, in Python's data model
    decorators = _decorator_names(node)
    for kind in ("property", "classmethod", "staticmethod"):
        if kind in decorators:
            return kind
    if "setter" in decorators or "deleter" in decorators:
        return "property"
    return "method"


def _parameters(node: ast.FunctionDef, *, bound: bool):
    args = node.args
    positional = [a.arg for a in args.posonlyargs + args.args]
    if bound and positional:
        positional = positional[1:]  # self / cls
    names = positional + [a.arg for a in args.kwonlyargs]
    n_posonly = max(len(args.posonlyargs) - (1 if bound else 0), 0)
    keywords = names[n_posonly:]
    return names, keywords


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ast.unparse(node)


def _stub_class(node: ast.ClassDef) -> tuple[ClassApi, list[str]]:
    api = ClassApi(bases=tuple(_base_name(b) for b in node.bases),
                   final="final" in _decorator_names(node))
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not _is_member(item.name):
                continue
            kind = _function_kind(item)
            api.members[item.name] = kind
            if kind != "property":
                names, keywords = _parameters(
                    item, bound=kind != "staticmethod" or item.name == "__new__")
                api.params[item.name] = names
                api.keywords[item.name] = keywords
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target,
                                                            ast.Name):
            if _is_member(item.target.id):
                api.members[item.target.id] = "attribute"
    return api, list(api.bases)


def collect_stub(source: str, *, resolve=None) -> ModuleApi:
    """The public API a stub declares. `resolve(module, name)` returns the
    ClassApi of a class another stub defines (for re-exports)."""
    tree = ast.parse(source)
    api = ModuleApi()
    local_bases: dict[str, list[str]] = {}
    exported: set[str] | None = None
    imported: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            api.classes[node.name], local_bases[node.name] = _stub_class(node)
            api.names[node.name] = "class"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            api.names[node.name] = "function"
            names, keywords = _parameters(node, bound=False)
            api.params[node.name] = names
            api.keywords[node.name] = keywords
        elif isinstance(node, (ast.AnnAssign, ast.Assign)):
            targets = ([node.target] if isinstance(node, ast.AnnAssign)
                       else node.targets)
            for target in targets:
                if not isinstance(target, ast.Name):
                    continue
                if target.id == "__all__":
                    if node.value is not None:
                        exported = set(ast.literal_eval(node.value))
                    continue
                annotation = getattr(node, "annotation", None)
                if annotation is not None and "TypeAlias" in ast.unparse(
                        annotation):
                    continue
                if isinstance(node.value, ast.Call) and _base_name(
                        node.value.func) in ("TypeVar", "NewType"):
                    continue
                api.names[target.id] = "constant"
                if node.value is not None:
                    try:
                        api.constants[target.id] = ast.literal_eval(node.value)
                    except ValueError:
                        pass
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                local = alias.asname or alias.name
                imported[local] = (node.module, alias.name, alias.asname)
    # Re-exports: `from m import A as A`, or listed in __all__.
    for local, (module, name, asname) in imported.items():
        if asname == name or (exported and local in exported):
            cls = resolve(module, name) if resolve else None
            if cls is not None:
                api.classes[local] = cls
                api.names[local] = "class"
            else:
                api.names[local] = "imported"
    # Inherited members from classes of the same stub.
    def merged(name: str, seen=()) -> dict[str, str]:
        members: dict[str, str] = {}
        for base in local_bases.get(name, []):
            if base in api.classes and base not in seen:
                members.update(merged(base, seen + (name,)))
        members.update(api.classes[name].members)
        return members

    for name in local_bases:
        api.classes[name].members = merged(name)
        for base in local_bases[name]:
            if base in local_bases:
                for table in ("params", "keywords"):
                    inherited = dict(getattr(api.classes[base], table))
                    inherited.update(getattr(api.classes[name], table))
                    setattr(api.classes[name], table, inherited)
    if exported is not None:
        api.names = {k: v for k, v in api.names.items() if k in exported}
        api.classes = {k: v for k, v in api.classes.items() if k in exported}
    api.names = {k: v for k, v in api.names.items() if _public(k)}
    api.classes = {k: v for k, v in api.classes.items() if _public(k)}
    return api


def load_stub(module: str, source: str | None = None) -> ModuleApi:
    cache: dict[str, ModuleApi] = {}

    def resolve(other: str, name: str):
        if other not in STUB_FILES:
            return None
        if other not in cache:
            cache[other] = load_stub(other)
        return cache[other].classes.get(name)

    text = STUB_FILES[module].read_text() if source is None else source
    return collect_stub(text, resolve=resolve)


# --------------------------------------------------------------- runtime side

def _runtime_kind(value: object, name: str = "") -> str:
    if name == "__new__":
        return "staticmethod"  # also CPython's generic wrapper of tp_new
    if isinstance(value, (classmethod, types.ClassMethodDescriptorType)):
        return "classmethod"
    if isinstance(value, staticmethod):
        return "staticmethod"
    if isinstance(value, (property, types.GetSetDescriptorType,
                          types.MemberDescriptorType)):
        return "property"
    if callable(value):
        return "method"
    return "attribute"


def _runtime_class(cls: type) -> ClassApi:
    api = ClassApi(bases=tuple(b.__name__ for b in cls.__bases__
                               if b is not object),
                   final=not cls.__flags__ & PY_TPFLAGS_BASETYPE)
    for klass in reversed(cls.__mro__):
        if klass.__module__ == "builtins":
            continue  # object, Exception, ValueError...
        for name, value in vars(klass).items():
            if _is_member(name):
                api.members[name] = _runtime_kind(value, name)
    return api


def collect_runtime(module: object) -> ModuleApi:
    api = ModuleApi()
    for name in dir(module):
        if not _public(name):
            continue
        value = getattr(module, name)
        if isinstance(value, type):
            api.names[name] = "class"
            api.classes[name] = _runtime_class(value)
        elif isinstance(value, types.ModuleType):
            api.names[name] = "module"
        elif callable(value):
            api.names[name] = "function"
        else:
            api.names[name] = "constant"
            api.constants[name] = value
    return api


_DOC_SIGNATURE = re.compile(r"^\s*([A-Za-z_]\w*)\((.*?)\)")


_BOUND_NAMES = ("self", "type", "cls", "module")


def signature_params(obj: object):
    """Parameter names from the text signature (inspect.signature), without
    the bound first one (self, type, cls, module) and *args/**kwargs, and
    the names that may be passed by keyword; None without a signature."""
    if getattr(obj, "__text_signature__", None) is None:
        return None
    try:
        parameters = list(inspect.signature(obj).parameters.values())
    except (TypeError, ValueError):
        return None
    if parameters and parameters[0].name in _BOUND_NAMES and \
            parameters[0].kind == inspect.Parameter.POSITIONAL_ONLY:
        parameters = parameters[1:]
    named = [p for p in parameters if p.kind not in (inspect.Parameter.VAR_POSITIONAL,
                                                      inspect.Parameter.VAR_KEYWORD)]
    keywords = [p.name for p in named if p.kind != inspect.Parameter.POSITIONAL_ONLY]
    return [p.name for p in named], keywords


def documented_params(obj: object, name: str):
    """Parameter names from the text signature, else from a docstring's
    first line `name(a, b=1)`, whether the list is partial ('...'), and the
    names that may be passed by keyword (None when only a docstring states
    the parameters); None if neither states any."""
    if not isinstance(obj, str):
        stated = signature_params(obj)
        if stated is not None:
            return stated[0], False, stated[1]
    doc = inspect.getdoc(obj) if not isinstance(obj, str) else obj
    if not doc:
        return None
    match = _DOC_SIGNATURE.match(doc.splitlines()[0])
    if not match or match.group(1) != name:
        return None
    params, partial = [], False
    for part in match.group(2).split(","):
        part = part.strip().split("=")[0].strip()
        if part == "...":
            partial = True
        elif part and part not in ("*", "/", "self", "cls"):
            params.append(part.lstrip("*"))
    return params, partial, None


def runtime_params(module: object) -> dict[str, tuple[list[str], bool, list[str] | None]]:
    """'func' or 'Class.member' -> documented parameters."""
    found = {}
    for name in dir(module):
        if not _public(name):
            continue
        value = getattr(module, name)
        if isinstance(value, type):
            # The class docstring may state the constructor: "Queue(device)".
            stated = documented_params(value, value.__name__)
            if stated is not None:
                found[f"{name}.__new__"] = stated
            for member in dir(value):
                if not _is_member(member):
                    continue
                attr = inspect.getattr_static(value, member)
                if member == "__new__" and stated is None and \
                        member in vars(value):
                    stated = signature_params(getattr(value, member))
                    if stated is not None:
                        found[f"{name}.__new__"] = (stated[0], False, stated[1])
                    continue
                if member == "__new__":
                    continue
                if _runtime_kind(attr) in ("method", "classmethod"):
                    stated = documented_params(getattr(value, member), member)
                    if stated is not None:
                        found[f"{name}.{member}"] = stated
        elif callable(value):
            stated = documented_params(value, name)
            if stated is not None:
                found[name] = stated
    return found


# ----------------------------------------------------------------- the diff

def diff(stub: ModuleApi, runtime: ModuleApi,
         documented: dict[str, tuple[list[str], bool, list[str] | None]] | None = None
         ) -> list[str]:
    """Human-readable differences; empty when the stub matches."""
    problems = []
    for name in sorted(set(stub.names) | set(runtime.names)):
        if name not in stub.names:
            problems.append(f"{name}: at run time ({runtime.names[name]}) "
                            f"but missing from the stub")
            continue
        if name not in runtime.names:
            problems.append(f"{name}: in the stub ({stub.names[name]}) but "
                            f"missing at run time")
            continue
        if stub.names[name] not in (runtime.names[name], "imported"):
            problems.append(f"{name}: stub says {stub.names[name]}, run time "
                            f"has a {runtime.names[name]}")
    for name in sorted(set(stub.classes) & set(runtime.classes)):
        s, r = stub.classes[name], runtime.classes[name]
        if s.bases != r.bases:
            problems.append(f"{name}: stub bases {s.bases}, run-time bases "
                            f"{r.bases}")
        if s.final != r.final:
            problems.append(f"{name}: stub {'is' if s.final else 'is not'} "
                            f"@final but the runtime class "
                            f"{'is not' if s.final else 'is'} final")
        for member in sorted(set(s.members) | set(r.members)):
            if member not in s.members:
                problems.append(f"{name}.{member}: at run time "
                                f"({r.members[member]}) but missing from "
                                f"the stub")
            elif member not in r.members:
                problems.append(f"{name}.{member}: in the stub "
                                f"({s.members[member]}) but missing at run "
                                f"time")
            elif s.members[member] != r.members[member]:
                problems.append(f"{name}.{member}: stub says "
                                f"{s.members[member]}, run time has a "
                                f"{r.members[member]}")
    for name, value in stub.constants.items():
        if name in runtime.constants and runtime.constants[name] != value:
            problems.append(f"{name}: stub value {value!r}, run-time value "
                            f"{runtime.constants[name]!r}")
    for qualified, (params, partial, keywords) in sorted((documented or {}).items()):
        owner, _, member = qualified.partition(".")
        if member:
            cls = stub.classes.get(owner)
            declared = cls.params.get(member) if cls else None
            by_keyword = cls.keywords.get(member) if cls else None
        else:
            declared = stub.params.get(owner)
            by_keyword = stub.keywords.get(owner)
        if declared is None:
            continue  # a missing name is reported above
        compared = declared[:len(params)] if partial else declared
        if compared != params:
            problems.append(f"{qualified}: stub parameters {declared}, the "
                            f"runtime documents {params}"
                            f"{' (partial)' if partial else ''}")
        elif keywords is not None and by_keyword != keywords:
            problems.append(f"{qualified}: stub takes {by_keyword} by keyword, the "
                            f"runtime's signature {keywords}")
    return problems


def check(module_name: str, stub_source: str | None = None,
          runtime_module: object | None = None) -> list[str]:
    module = (importlib.import_module(module_name) if runtime_module is None
              else runtime_module)
    return diff(load_stub(module_name, stub_source), collect_runtime(module),
                runtime_params(module))


# ------------------------------------------------------------- parity tests

@pytest.mark.parametrize("module_name", sorted(STUB_FILES))
def test_stub_matches_runtime(module_name):
    problems = check(module_name)
    assert not problems, "stub and runtime differ:\n" + "\n".join(problems)


def test_stub_covers_every_hrx_export():
    """Everything hrx re-exports from the extension is typed by the stub."""
    stub = load_stub("hrx._hrx")
    from_extension = {
        name for name in hrx.__all__
        if getattr(hrx._hrx, name, None) is getattr(hrx, name)
    }
    assert from_extension, "hrx re-exports nothing from hrx._hrx?"
    assert from_extension <= set(stub.names)


def test_stub_declares_readback_and_bench_result_types():
    tree = ast.parse(STUB_FILES["hrx._hrx"].read_text())
    returns = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.returns is not None:
            returns.setdefault(node.name, ast.unparse(node.returns))
    assert returns["wait"] == "numpy.typing.NDArray[Any]"
    assert returns["bench_run"] == "dict[str, Any]"


class _Bad:
    """An argument no hrx call accepts (no __index__, no buffer, not str)."""


_KEYWORD_REFUSED = ("no keyword arguments", "invalid keyword argument",
                    "unexpected keyword argument")


def probe_keywords(stub: ModuleApi, device) -> list[str]:
    """Each stub parameter that may be passed by keyword must be accepted as
    a keyword at run time, and each positional-only one refused. The probe
    passes an unusable value, so no call does anything."""
    stream = device.stream()
    buffer = device.allocate(16)
    event = stream.record_event()
    readback = stream.read(buffer)
    queue = hrx.fabric.Queue(device)
    instances = {"Device": device, "Stream": stream, "Buffer": buffer,
                 "Event": event, "Readback": readback, "FabricQueue": queue}
    probes = []
    for cls_name, obj in instances.items():
        cls = stub.classes[cls_name]
        for member, names in cls.params.items():
            if member in ("__exit__", "__eq__"):
                continue  # slot wrappers; keywords make no sense there
            target = (getattr(hrx._hrx, cls_name) if member == "__new__"
                      else getattr(obj, member))
            probes += [(f"{cls_name}.{member}", target, p,
                        p in cls.keywords[member]) for p in names]
    for func in ("bench_run", "backends", "now_ns"):
        probes += [(func, getattr(hrx._hrx, func), p, p in stub.keywords[func])
                   for p in stub.params[func]]
    mismatches = []
    try:
        for label, target, param, keyword_ok in probes:
            with pytest.raises(Exception) as info:
                target(**{param: _Bad()})
            refused = (isinstance(info.value, TypeError) and any(
                text in str(info.value) for text in _KEYWORD_REFUSED))
            if keyword_ok and refused:
                mismatches.append(f"{label}: stub allows {param}= as a "
                                  f"keyword; run time: {info.value}")
            if not keyword_ok and not refused:
                mismatches.append(f"{label}: stub makes {param} "
                                  f"positional-only; run time accepted the "
                                  f"keyword")
    finally:
        for obj in (readback, event, buffer, queue, stream):
            obj.close()
    assert len(probes) > 20, "the probe lost its targets"
    return mismatches


def test_stub_keyword_parameters_match_runtime(device):
    mismatches = probe_keywords(load_stub("hrx._hrx"), device)
    assert not mismatches, "\n".join(mismatches)


# ------------------------------------------------ the helpers can fail

def _edit_stub(transform) -> str:
    """The real _hrx.pyi with `transform(tree)` applied."""
    tree = ast.parse(STUB_FILES["hrx._hrx"].read_text())
    transform(tree)
    return ast.unparse(tree)


def _class(tree: ast.Module, name: str) -> ast.ClassDef:
    return next(n for n in tree.body
                if isinstance(n, ast.ClassDef) and n.name == name)


def test_diff_detects_method_missing_from_stub():
    def drop_event_query(tree):
        cls = _class(tree, "Event")
        cls.body = [n for n in cls.body
                    if not (isinstance(n, ast.FunctionDef)
                            and n.name == "query")]
    problems = check("hrx._hrx", _edit_stub(drop_event_query))
    assert problems == ["Event.query: at run time (method) but missing from "
                        "the stub"]


def test_diff_detects_inherited_member_missing():
    """A method dropped from Stream is also missing from FabricQueue."""
    def drop_stream_fill(tree):
        cls = _class(tree, "Stream")
        cls.body = [n for n in cls.body
                    if not (isinstance(n, ast.FunctionDef)
                            and n.name == "fill")]
    problems = check("hrx._hrx", _edit_stub(drop_stream_fill))
    assert "Stream.fill: at run time (method) but missing from the stub" in (
        problems)
    assert ("FabricQueue.fill: at run time (method) but missing from the "
            "stub") in problems


def test_diff_detects_stub_only_names():
    source = STUB_FILES["hrx._hrx"].read_text() + textwrap.dedent("""
        def brand_new_function() -> None: ...
        BRAND_NEW_CONSTANT: int
        class Buffer2: ...
    """)
    source = source.replace(
        "    def elapsed_time(self, end: Event, /) -> float:",
        "    def not_there(self) -> None: ...\n"
        "    def elapsed_time(self, end: Event, /) -> float:")
    problems = check("hrx._hrx", source)
    assert sorted(problems) == sorted([
        "brand_new_function: in the stub (function) but missing at run time",
        "BRAND_NEW_CONSTANT: in the stub (constant) but missing at run time",
        "Buffer2: in the stub (class) but missing at run time",
        "Event.not_there: in the stub (method) but missing at run time",
    ])


def test_diff_detects_runtime_only_names():
    fake = types.ModuleType("hrx._hrx")
    for name in dir(hrx._hrx):
        setattr(fake, name, getattr(hrx._hrx, name))
    fake.injected_function = len
    fake.INJECTED_CONSTANT = 3
    # A class with one public method more than the stub declares.
    fake.BusyError = type("BusyError", (hrx.Error, RuntimeError),
                          {"retry": lambda self: None})
    problems = check("hrx._hrx", runtime_module=fake)
    assert sorted(problems) == sorted([
        "INJECTED_CONSTANT: at run time (constant) but missing from the stub",
        "injected_function: at run time (function) but missing from the stub",
        "BusyError.retry: at run time (method) but missing from the stub",
    ])


def test_diff_detects_kind_bases_final_value_and_parameter_changes():
    source = STUB_FILES["hrx._hrx"].read_text()
    edits = [
        # property -> method
        ("    @property\n    def free_memory(self) -> int:",
         "    def free_memory(self) -> int:"),
        # classmethod -> method
        ("    @classmethod\n    def open(\n        cls, index: int = 0, backend: str |"
         " None = None, *,\n        batching: bool | None = None,\n    ) -> Self:",
         "    def open(\n        self, index: int = 0, backend: str | None = None, *,"
         "\n        batching: bool | None = None,\n    ) -> Self:"),
        ("class OutOfRangeError(Error, IndexError, ValueError):",
         "class OutOfRangeError(Error, IndexError):"),
        ("@final\nclass Event:", "class Event:"),
        ("DEFAULT_STREAM_QUEUE_COUNT: Final = 8",
         "DEFAULT_STREAM_QUEUE_COUNT: Final = 9"),
        ("def fill(self, dst: Buffer, value: int | float | complex, /) -> None:",
         "def fill(self, dst: Buffer, byte: int | float | complex, /) -> None:"),
    ]
    for old, new in edits:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    problems = check("hrx._hrx", source)
    assert sorted(problems) == sorted([
        "Device.free_memory: stub says method, run time has a property",
        "Stream.open: stub says method, run time has a classmethod",
        "FabricQueue.open: stub says method, run time has a classmethod",
        "OutOfRangeError: stub bases ('Error', 'IndexError'), run-time bases "
        "('Error', 'IndexError', 'ValueError')",
        "Event: stub is not @final but the runtime class is final",
        "DEFAULT_STREAM_QUEUE_COUNT: stub value 9, run-time value 8",
        "Stream.fill: stub parameters ['dst', 'byte'], the runtime "
        "documents ['dst', 'value']",
        "FabricQueue.fill: stub parameters ['dst', 'byte'], the runtime "
        "documents ['dst', 'value']",
    ])


def test_diff_detects_fabric_reexport_changes():
    problems = check("hrx.fabric", 'from hrx._hrx import Stream as Queue\n'
                                   '__all__ = ["Queue"]\n')
    # Stream.__new__ (which refuses) takes no documented parameters.
    assert ("Queue.__new__: stub parameters [], the runtime documents "
            "['device']") in problems
    assert "Queue: stub bases (), run-time bases ('Stream',)" in problems
    problems = check("hrx.fabric", '__all__: list[str]\n')
    assert "Queue: at run time (class) but missing from the stub" in problems


def test_documented_params_parser():
    assert documented_params("copy(dst, src): device copy", "copy") == (
        ["dst", "src"], False, None)
    assert documented_params("open(index=0, backend=None) -> Device",
                             "open") == (["index", "backend"], False, None)
    assert documented_params("bench_run(device, *, driver='native', ...) -> "
                             "dict", "bench_run") == (["device", "driver"],
                                                      True, None)
    assert documented_params("close(): drop", "close") == ([], False, None)
    # The text signature comes first, with what may go by keyword.
    assert documented_params(hrx.Device.stream, "stream") == (
        ["priority", "reserve"], False, ["priority", "reserve"])
    assert documented_params(hrx.Stream.copy, "copy") == (["dst", "src"], False, [])
    assert documented_params(hrx.Device.__new__, "__new__") == (
        ["index", "backend", "batching"], False, ["index", "backend", "batching"])
    assert documented_params("Drops the handle.", "close") is None
    assert documented_params("other(a)", "close") is None


def test_keyword_probe_detects_wrong_positional_only_markers(device):
    source = STUB_FILES["hrx._hrx"].read_text()
    edits = [
        ("def slice(self, offset: int, length: int) -> Buffer:",
         "def slice(self, offset: int, length: int, /) -> Buffer:"),
        ("def fill(self, dst: Buffer, value: int | float | complex, /) -> None:",
         "def fill(self, dst: Buffer, value: int | float | complex) -> None:"),
    ]
    for old, new in edits:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    mismatches = probe_keywords(load_stub("hrx._hrx", source), device)
    found = sorted(" ".join(re.match(r"(\S+): stub \w+ (\w+)", m).groups())
                   for m in mismatches)
    assert found == [
        "Buffer.slice length", "Buffer.slice offset",
        "FabricQueue.fill dst", "FabricQueue.fill value",
        "Stream.fill dst", "Stream.fill value",
    ], mismatches


# ------------------------------------------------ typed dicts of the stub

def stub_typed_dicts(source: str | None = None) -> dict[str, set[str]]:
    tree = ast.parse(STUB_FILES["hrx._hrx"].read_text()
                     if source is None else source)
    return {
        node.name: {item.target.id for item in node.body
                    if isinstance(item, ast.AnnAssign)}
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        and any(_base_name(b) == "TypedDict" for b in node.bases)
    }


def typed_dict_mismatches(typed: dict[str, set[str]], device) -> list[str]:
    """Keys of the dicts the runtime returns vs the stub's TypedDicts."""
    stream = device.stream()
    runtime = {
        "_BackendReport": [set(r) for r in hrx._hrx.backends()],
        "_DeviceInfo": [set(device.info)],
        "_PoolInfo": [set(device.pool_info())],
    }
    stream.close()
    problems = []
    for name, samples in runtime.items():
        for keys in samples:
            if typed.get(name) != keys:
                problems.append(f"{name}: stub keys {sorted(typed.get(name, ()))}"
                                f", run-time keys {sorted(keys)}")
    return problems


def test_stub_typed_dicts_match_runtime_dicts(device):
    problems = typed_dict_mismatches(stub_typed_dicts(), device)
    assert not problems, "\n".join(problems)


def test_typed_dict_check_detects_a_missing_key(device):
    source = STUB_FILES["hrx._hrx"].read_text()
    old = "    max_native_queues: int"
    assert source.count(old) == 1
    typed = stub_typed_dicts(source.replace(old, "    max_queues: int"))
    assert typed_dict_mismatches(typed, device) == [
        "_DeviceInfo: stub keys ['backend', 'batch_publication', "
        "'device_count', 'engines', 'index', 'launch_publication', "
        "'max_block_dim', 'max_grid_dim', 'max_queues', "
        "'max_shared_bytes_per_block', 'max_threads_per_block', 'name', "
        "'peer', 'platform', 'runtime', 'selection', 'target', "
        "'total_memory'], "
        "run-time keys ['backend', 'batch_publication', 'device_count', "
        "'engines', 'index', 'launch_publication', 'max_block_dim', "
        "'max_grid_dim', 'max_native_queues', 'max_shared_bytes_per_block', "
        "'max_threads_per_block', 'name', 'peer', 'platform', 'runtime', "
        "'selection', 'target', 'total_memory']"]


def test_diff_detects_a_keyword_the_text_signature_does_not_allow():
    source = STUB_FILES["hrx._hrx"].read_text()
    old = "def slice(self, offset: int, length: int) -> Buffer:"
    assert source.count(old) == 1
    problems = check("hrx._hrx", source.replace(
        old, "def slice(self, offset: int, length: int, /) -> Buffer:"))
    assert problems == ["Buffer.slice: stub takes [] by keyword, the runtime's signature "
                        "['offset', 'length']"]
