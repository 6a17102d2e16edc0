"""help() and inspect.signature show every public callable of the extension
as CPython's own modules show theirs: each function, type, method, class
method, static method and special method of hrx._hrx has a text signature
(the docstring starts ``name($self, nbytes, /)\\n--\\n\\n``) and a docstring
that says what it does, never the generic text CPython gives a slot it
fills in itself ("Create and return a new object", "Return self<value.").
The hrx packages list no stray public names (``from __future__ import
annotations`` leaves one).

The checks walk the extension, so whatever it gains is covered too.
"""
from __future__ import annotations

import inspect
import types
from typing import Iterator, List, Tuple

import pytest

import hrx
import hrx._hrx
import hrx.bench
import hrx.fabric

GENERIC_DOCS = {
    "__new__": "Create and return a new object.",
    "__eq__": "Return self==value.",
    "__ne__": "Return self!=value.",
    "__lt__": "Return self<value.",
    "__le__": "Return self<=value.",
    "__gt__": "Return self>value.",
    "__ge__": "Return self>=value.",
}
"""Docstrings CPython gives the special methods it adds for a type's slots
that tell a reader nothing about this type (an ordering comparison it adds
for ==-only types would raise; __new__ names no parameter)."""

CALLABLE_KINDS = (types.BuiltinFunctionType, types.MethodDescriptorType,
                  types.ClassMethodDescriptorType, types.WrapperDescriptorType,
                  staticmethod, classmethod)


def _public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def extension_types(module: types.ModuleType = hrx._hrx) -> List[Tuple[str, type]]:
    """(name in the module, type) of the module's public types."""
    return [(name, value) for name, value in sorted(vars(module).items())
            if isinstance(value, type) and not name.startswith("_")]


def extension_callables(module: types.ModuleType = hrx._hrx
                        ) -> Iterator[Tuple[str, object]]:
    """(qualified name, callable as reached through its owner) of every
    public function of the module and every callable its types define
    themselves (not what they inherit from object or Exception)."""
    for name, value in sorted(vars(module).items()):
        if isinstance(value, types.BuiltinFunctionType) and not name.startswith("_"):
            yield name, value
    for owner, cls in extension_types(module):
        for name, raw in sorted(vars(cls).items()):
            if _public(name) and isinstance(raw, CALLABLE_KINDS):
                yield f"{owner}.{name}", getattr(cls, name)


def problems_of(name: str, obj: object) -> List[str]:
    """What a reader of help(obj) would miss."""
    found = []
    short = name.rpartition(".")[2]
    if getattr(obj, "__text_signature__", None) is None:
        found.append(f"{name}: no text signature (its docstring must start "
                     f"'{short}($self, ...)\\n--\\n\\n')")
    else:
        try:
            inspect.signature(obj)
        except (TypeError, ValueError) as error:
            found.append(f"{name}: inspect.signature fails: {error}")
    doc = (obj.__doc__ or "").strip()
    if not doc:
        found.append(f"{name}: no docstring after its signature")
    elif short in GENERIC_DOCS and doc.startswith(GENERIC_DOCS[short]):
        found.append(f"{name}: CPython's generic docstring {doc!r}")
    return found


def test_every_callable_of_the_extension_has_a_signature_and_a_docstring():
    found = [problem for name, obj in extension_callables()
             for problem in problems_of(name, obj)]
    assert found == []


def test_the_walk_reaches_what_it_should():
    names = dict(extension_callables())
    for expected in ("backends", "bench_run", "Device.open", "Device.__new__",
                     "Device.__eq__", "Stream.copy", "Stream.__enter__",
                     "Stream.__exit__", "Buffer.__getitem__", "Buffer.__dlpack__",
                     "Graph.launch", "Completion.result", "FabricQueue.__new__"):
        assert expected in names, expected


def test_every_type_says_how_it_is_made():
    """A type that can be created has a text signature (help(hrx.Graph)
    shows Graph(device)); the others refuse creation with a TypeError that
    says so. Exceptions are made as Python's are."""
    found = []
    for owner, cls in extension_types():
        if not (cls.__doc__ or "").strip():
            found.append(f"{owner}: no docstring")
        if issubclass(cls, BaseException) or cls.__text_signature__ is not None:
            continue
        try:
            made = cls()
        except TypeError as error:
            if "cannot" not in str(error):
                found.append(f"{owner}: no text signature, and {owner}() fails with {error}")
        else:
            found.append(f"{owner}() works, but the type has no text signature")
            close = getattr(made, "close", None)
            if close:
                close()
    assert found == []


def test_every_property_says_what_it_holds():
    found = [f"{owner}.{name}" for owner, cls in extension_types()
             for name, raw in sorted(vars(cls).items())
             if _public(name) and isinstance(raw, types.GetSetDescriptorType)
             and name != "__weakref__" and not (raw.__doc__ or "").strip()]
    assert found == []


def test_types_answer_only_the_comparisons_they_list():
    """A type lists an ordering comparison only when it answers it: hrx's
    handles compare with == and != alone, and `<` raises TypeError as for
    any object without an order."""
    device = hrx.Device.open(0, backend="host")
    try:
        listed = [f"{owner}.{name}" for owner, cls in extension_types()
                  for name in ("__lt__", "__le__", "__gt__", "__ge__")
                  if name in vars(cls)]
        assert listed == []
        assert device == device.clone() and not device != device.clone()
        with pytest.raises(TypeError, match="'<' not supported"):
            device < device.clone()  # noqa: B015 - the comparison must raise
    finally:
        device.close()


def test_new_takes_the_type_first_and_refuses_other_types():
    device = hrx.Device.__new__(hrx.Device, 0, "host")
    try:
        assert isinstance(device, hrx.Device)
        graph = hrx.Graph.__new__(hrx.Graph, device)
        assert isinstance(graph, hrx.Graph)
        graph.close()
        for call, message in ((lambda: hrx.Device.__new__(hrx.Graph, device),
                               "hrx.Graph is not a subtype of hrx.Device"),
                              (lambda: hrx.Device.__new__(int, 5), "not a type of hrx"),
                              (lambda: hrx.Device.__new__(), "must be the type"),
                              (lambda: hrx.Stream.__new__(hrx.Stream),
                               "cannot be created directly")):
            with pytest.raises(TypeError, match=message):
                call()
    finally:
        device.close()


def test_exit_takes_the_three_arguments_its_signature_names():
    device = hrx.Device.open(0, backend="host")
    with pytest.raises(TypeError, match="__exit__ expected 3 arguments, got 2"):
        device.__exit__(None, None)
    assert device.__exit__(None, None, None) is False and device.closed


@pytest.mark.parametrize("module", [hrx, hrx.fabric, hrx.bench], ids=lambda m: m.__name__)
def test_a_package_lists_no_stray_public_name(module):
    """dir() of an hrx package shows what it exports and its submodules,
    nothing a `from __future__` import or a helper left behind."""
    stray = [name for name in dir(module)
             if not name.startswith("_") and name not in module.__all__
             and not isinstance(getattr(module, name), types.ModuleType)]
    assert stray == []


def test_the_check_sees_a_missing_signature_and_a_generic_docstring():
    """The helper is live: it reports what the extension once had."""
    class Old:
        def method(self):
            """allocate(nbytes) -> Buffer of device memory."""

    assert problems_of("Device.allocate", hrx.Device.allocate) == []
    assert problems_of("len", len) == []
    assert problems_of("Old.method", Old.method)[0].startswith("Old.method: no text signature")
    assert problems_of("object.__new__", object.__new__) == [
        "object.__new__: CPython's generic docstring 'Create and return a new object.  "
        "See help(type) for accurate signature.'"]
    assert problems_of("object.__lt__", object.__lt__) == [
        "object.__lt__: CPython's generic docstring 'Return self<value.'"]
