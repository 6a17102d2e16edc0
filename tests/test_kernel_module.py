"""Modules (docs/kernels.md, "Modules"): Device.compile_module compiles a
source once for every kernel it names, on every available backend; the
kernels share one module, a later compile() of one of the names finds it,
and the disk cache keeps the module whole. compile() of one name compiles
every kernel the source declares, so compiling the others one by one runs
the compiler once too.

Compiler runs are counted by the testing build's fault wrapper
(HRX_FAULTS=none: it counts, injects nothing), so the counting scenarios
run in fresh interpreters, each with a cache directory of its own.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import hrx
from kernel_sources import EXTERN_C, SOURCES

HERE = os.path.dirname(os.path.abspath(__file__))

# Three kernels of tests/kernel_sources.py in one source.
THREE = ["saxpy", "add_one", "where"]

# Compiles THREE as a module (or one by one) and prints what happened.
REPORT = """
    import json
    from kernel_sources import EXTERN_C, SOURCES
    source = "".join(EXTERN_C + SOURCES[n] for n in NAMES)
    dev = hrx.Device.open(0, backend=backend)
    count = lambda: hrx._hrx._testing_live_native_objects()["kernel_compiles"]
    before = count()
    if MODULE:
        m = dev.compile_module(source, NAMES)
        origins = [m[n].origin for n in NAMES]
    else:
        origins = [dev.compile(source, n).origin for n in NAMES]
    compiled = count() - before
    again = [dev.compile(source, n).origin for n in NAMES]
    print(json.dumps({"origins": origins, "again": again,
                      "compiles": compiled, "total": count() - before}))
"""


@pytest.fixture
def report(fresh, tmp_path):
    import json

    def run(module=True, **env):
        settings = {"HRX_FAULTS": "none",
                    "HRX_KERNEL_CACHE_DIR": str(tmp_path / "cache"),
                    "PYTHONPATH": os.pathsep.join(
                        [os.environ.get("PYTHONPATH", ""), HERE])}
        settings.update(env)
        code = REPORT.replace("NAMES", repr(THREE)).replace(
            "MODULE", repr(module))
        out = fresh(code, env=settings)
        return json.loads(out.strip().splitlines()[-1])
    return run


def test_a_module_compiles_once_for_every_kernel(report):
    first = report()
    assert first["compiles"] == 1 and first["total"] == 1
    assert first["origins"] == ["compiled"] * 3
    # compile() of each name finds the module: no compiler run.
    assert first["again"] == ["memory cache"] * 3
    # A fresh process reads the whole module from the disk cache.
    second = report()
    assert second["compiles"] == 0
    assert second["origins"] == ["disk cache"] * 3


def test_kernels_compiled_one_by_one_compile_once(report):
    # compile() of the first name compiles every kernel the source
    # declares; the other names find that module, as CuPy's RawModule
    # gives every kernel of one compile.
    single = report(module=False, HRX_KERNEL_CACHE="0")
    assert single["compiles"] == 1
    assert single["origins"] == ["compiled"] + ["memory cache"] * 2
    assert single["again"] == ["memory cache"] * 3


def _source(names):
    return "".join(EXTERN_C + SOURCES[n] for n in names)


def test_module_is_a_mapping_of_its_kernels(device, stream):
    m = device.compile_module(_source(THREE), THREE)
    assert isinstance(m, hrx.Module)
    assert m.names == tuple(THREE) and list(m) == THREE and len(m) == 3
    assert "saxpy" in m and "other" not in m
    assert m.get("saxpy") is m["saxpy"]
    assert [m[n].name for n in THREE] == THREE
    images = {m[n].image for n in THREE}
    assert len(images) == 1                     # one module
    assert repr(m) == "<hrx.Module of 3 kernels: saxpy, add_one, where>"
    with pytest.raises(KeyError, match="no kernel 'other'; its kernels .*"
                       "saxpy, add_one, where"):
        m["other"]
    with pytest.raises(TypeError, match="a kernel name is a str"):
        m.get(1)
    # The kernels launch like any other.
    n = 256
    x, y = device.allocate(4 * n), device.allocate(4 * n)
    stream.upload(x, np.ones(n, np.float32))
    stream.fill(y, 0)
    stream.launch(m["saxpy"], 1, n, (x, y, np.float32(3), np.int32(n)))
    assert set(stream.read(y).wait().view(np.float32)) == {3.0}


def test_a_closed_kernel_leaves_the_others_running(device, stream):
    m = device.compile_module(_source(["add_one", "saxpy"]),
                              ["add_one", "saxpy"])
    m["saxpy"].close()
    b = device.allocate(64)
    stream.fill(b, 1)
    stream.launch(m["add_one"], 1, 64, (b, np.uint32(64)))
    assert set(stream.read(b).wait()) == {2}
    # Dropping the module object keeps the kernels taken from it working.
    add_one = m["add_one"]
    del m
    stream.launch(add_one, 1, 64, (b, np.uint32(64)))
    assert set(stream.read(b).wait()) == {3}


@pytest.mark.parametrize("names, error, match", [
    (["saxpy", "saxpy"], hrx.InvalidArgumentError, "given twice"),
    ([], hrx.InvalidArgumentError, "0 kernel names; a compile takes 1 to"),
    (["saxpy", "not a name"], hrx.InvalidArgumentError,
     "not a C identifier"),
    (["saxpy", 3], TypeError, "names must be str; name 1 is int"),
    ("saxpy", TypeError, "not one string"),
    (["saxpy", "missing"], hrx.InvalidArgumentError, "missing"),
])
def test_bad_names_are_refused(device, names, error, match):
    with pytest.raises(error, match=match):
        device.compile_module(_source(["saxpy"]), names)


def test_too_many_names_are_refused(device):
    names = [f"k{i}" for i in range(hrx.KERNEL_MAX_MODULE_NAMES + 1)]
    with pytest.raises(hrx.InvalidArgumentError,
                       match=f"{len(names)} kernel names"):
        device.compile_module(_source(["saxpy"]), names)


def test_module_cannot_be_created_directly():
    with pytest.raises(TypeError, match="compile_module"):
        hrx.Module()
