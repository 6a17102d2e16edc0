"""The kernel cache (docs/kernels.md, "Cache"): a live device compiles a
(source, options, name) once; fresh processes read it from the disk cache
without running the compiler; corrupt, truncated and foreign entries are
never loaded but compiled again and rewritten; the cache can be turned off;
an unwritable directory leaves kernels uncached, saying so in cache_note.

Compiler runs are counted by the testing build's fault wrapper
(HRX_FAULTS=none: it counts, injects nothing), so every scenario runs in a
fresh interpreter. Each uses a cache directory of its own.
"""
from __future__ import annotations

import os
import pathlib

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

# Compiles kernel `name` of tests/kernel_sources.py and prints what the
# cache did: origin, compiler runs, path, note.
REPORT = """
    import json
    from kernel_sources import compile_kernel
    dev = hrx.Device.open(0, backend=backend)
    before = hrx._hrx._testing_live_native_objects()["kernel_compiles"]
    k = compile_kernel(dev, NAME)
    again = compile_kernel(dev, NAME)
    after = hrx._hrx._testing_live_native_objects()["kernel_compiles"]
    print(json.dumps({"origin": k.origin, "again": again.origin,
                      "compiles": after - before, "path": k.cache_path,
                      "note": k.cache_note}))
"""


@pytest.fixture
def cached(fresh, tmp_path):
    """Runs REPORT in a fresh process with a cache directory of the test."""
    import json

    def run(name="add_one", **env):
        settings = {"HRX_FAULTS": "none",
                    "HRX_KERNEL_CACHE_DIR": str(tmp_path / "cache"),
                    "PYTHONPATH": os.pathsep.join(
                        [os.environ.get("PYTHONPATH", ""), HERE])}
        settings.update(env)
        out = fresh(REPORT.replace("NAME", repr(name)), env=settings)
        return json.loads(out.strip().splitlines()[-1])
    return run


def test_compiled_once_then_read_from_disk(cached, tmp_path):
    first = cached()
    assert first["origin"] == "compiled" and first["compiles"] == 1
    assert first["again"] == "memory cache"
    path = pathlib.Path(first["path"])
    assert path.parent == tmp_path / "cache" and path.is_file()
    assert first["note"] == ""
    second = cached()
    assert second["origin"] == "disk cache" and second["compiles"] == 0
    assert second["path"] == first["path"]
    # Written whole and renamed into place: no temporary file is left.
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def _damage(path: pathlib.Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "corrupt":
        data[-100] ^= 0xFF                     # a byte of the image
        path.write_bytes(bytes(data))
    elif how == "truncated":
        path.write_bytes(bytes(data[:len(data) // 2]))
    elif how == "foreign":
        path.write_bytes(b"not a cache entry at all\n" * 4)
    elif how == "version":
        data[8] ^= 0x7F                        # the format version
        path.write_bytes(bytes(data))


@pytest.mark.parametrize("how,part", [
    ("corrupt", "does not match its checksum"),
    ("truncated", "truncated"),
    ("foreign", "not a kernel cache entry"),
    ("version", "another cache format version"),
])
def test_a_damaged_entry_is_rebuilt_and_rewritten(cached, how, part):
    path = pathlib.Path(cached()["path"])
    _damage(path, how)
    rebuilt = cached()
    assert rebuilt["origin"] == "compiled" and rebuilt["compiles"] == 1
    assert part in rebuilt["note"] and "compiled again" in rebuilt["note"]
    assert rebuilt["path"] == str(path)
    assert cached()["origin"] == "disk cache"


def test_an_entry_of_another_kernel_under_the_name_is_not_used(cached):
    """A file whose stored key differs (what a hash collision looks like)."""
    ours = pathlib.Path(cached("add_one")["path"])
    theirs = pathlib.Path(cached("saxpy")["path"])
    ours.write_bytes(theirs.read_bytes())
    rebuilt = cached("add_one")
    assert rebuilt["origin"] == "compiled"
    assert "belongs to another kernel" in rebuilt["note"]


def test_the_cache_can_be_turned_off(cached, tmp_path):
    off = cached(HRX_KERNEL_CACHE="0")
    assert off["origin"] == "compiled" and off["path"] is None
    assert "HRX_KERNEL_CACHE=0" in off["note"]
    assert not (tmp_path / "cache").exists()
    assert cached(HRX_KERNEL_CACHE="0")["compiles"] == 1


def test_an_unwritable_directory_leaves_the_kernel_uncached(cached, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = cached(HRX_KERNEL_CACHE_DIR=str(blocker / "kernels"))
    assert result["origin"] == "compiled" and result["path"] is None
    assert "not cached: cannot create the cache directory" in result["note"]


def test_the_default_directory_is_the_users_cache(fresh, tmp_path):
    out = fresh("""
        from kernel_sources import compile_kernel
        os.environ.pop("HRX_KERNEL_CACHE_DIR", None)
        dev = hrx.Device.open(0, backend=backend)
        print(compile_kernel(dev, "add_one").cache_path)
        os.environ.pop("XDG_CACHE_HOME")
        print(compile_kernel(dev, "saxpy").cache_path)
    """, env={"XDG_CACHE_HOME": str(tmp_path / "xdg"),
              "HOME": str(tmp_path / "home"),
              "PYTHONPATH": os.pathsep.join(
                  [os.environ.get("PYTHONPATH", ""), HERE])})
    xdg, home = out.split()
    assert xdg.startswith(str(tmp_path / "xdg" / "hrx" / "kernels") + "/")
    assert home.startswith(
        str(tmp_path / "home" / ".cache" / "hrx" / "kernels") + "/")


def test_a_malformed_switch_is_refused(fresh):
    out = fresh("""
        from kernel_sources import compile_kernel
        dev = hrx.Device.open(0, backend=backend)
        try:
            compile_kernel(dev, "add_one")
        except hrx.InvalidArgumentError as e:
            assert "HRX_KERNEL_CACHE must be an integer from 0 to 1" in str(e)
            print("ok")
    """, env={"HRX_KERNEL_CACHE": "yes",
              "PYTHONPATH": os.pathsep.join(
                  [os.environ.get("PYTHONPATH", ""), HERE])})
    assert out.strip() == "ok"
