"""Packaging: ``python -m build`` makes an sdist and, from that sdist, a
wheel, warning about nothing; the sdist carries what the build needs and
the commit it was made from; the wheel installs into a fresh virtual
environment and works there. Also: importing the source checkout's hrx
without a built extension says what to do."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from conftest_bench import checkout_head

pytestmark = pytest.mark.python_only

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(sdist, wheel, build output) of ``python -m build`` on the checkout."""
    pytest.importorskip("build", reason="pip install '.[test]' installs build")
    out = tmp_path_factory.mktemp("dist")
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)   # its own "byte-compiling is disabled" notes
    env.pop("PYTHONPATH", None)
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
                          capture_output=True, text=True, env=env, timeout=900, cwd=out)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    (sdist,) = out.glob("hrx-*.tar.gz")
    (wheel,) = out.glob("hrx-*.whl")
    return sdist, wheel, output


def test_build_warns_about_nothing(built):
    _, _, output = built
    noted = [row for row in output.splitlines()
             if "warning" in row.lower() or "deprecat" in row.lower()]
    assert not noted, "\n".join(noted)


def test_the_sdist_holds_the_sources_license_and_commit(built):
    sdist, _, _ = built
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
        for needed in ("LICENSE", "setup.py", "pyproject.toml", "csrc/include/hrx.h",
                       "csrc/core/stream.h", "csrc/hal/device.h",
                       "csrc/drivers/hip/hip_symbols.h", "examples/queue_counts.ipynb",
                       "hrx/include/hrx_kernel.h",
                       "hrx/_version.py", "hrx/_build_info.py"):
            assert needed in names, needed
        prefix = archive.getnames()[0].split("/")[0]
        info = archive.extractfile(f"{prefix}/hrx/_build_info.py").read().decode()
    head = checkout_head()
    if head:
        assert f"GIT_COMMIT = {head!r}" in info


def test_the_wheel_metadata_has_the_license_and_classifiers(built):
    _, wheel, _ = built
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(archive.read(name).decode() for name in archive.namelist()
                        if name.endswith(".dist-info/METADATA"))
        assert any(name.endswith(".dist-info/licenses/LICENSE") for name in archive.namelist())
    assert "License-Expression: Apache-2.0" in metadata
    assert "Classifier: Programming Language :: Python :: 3" in metadata
    assert "Version: " + _version() in metadata


def _version():
    values = {}
    exec((ROOT / "hrx" / "_version.py").read_text(), values)
    return values["__version__"]


def test_the_wheel_works_in_a_fresh_environment(built, tmp_path):
    _, wheel, _ = built
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)],
                             capture_output=True, text=True, timeout=900)
    assert install.returncode == 0, install.stderr[-4000:]
    code = ("import hrx, numpy as np\n"
            "from hrx.bench.provenance import source_commit\n"
            "device = hrx.Device.open(backend='host')\n"
            "stream = device.stream()\n"
            "buf = device.allocate(64)\n"
            "stream.fill(buf, 7)\n"
            "import os\n"
            "assert os.path.isfile(os.path.join(hrx.kernel_include_dir(), 'hrx_kernel.h'))\n"
            "k = device.compile('__global__ void k(unsigned char* p) { p[threadIdx.x] += 1; }', 'k')\n"
            "stream.launch(k, 1, 4, (buf,))\n"
            "print(hrx.__version__, int(stream.read(buf[:4]).wait().sum()), source_commit()[0])\n")
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env["HRX_KERNEL_CACHE_DIR"] = str(tmp_path / "kernels")
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    version, total, commit = done.stdout.split()
    assert (version, total) == (_version(), "32")
    assert commit == (checkout_head() or "None")


def test_importing_the_checkout_without_the_extension_says_what_to_run(tmp_path):
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT / "hrx", checkout / "hrx",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__", "_build_info.py"))
    (checkout / "setup.py").write_text("")
    # PYTHONSAFEPATH would keep the checkout (the working directory) off sys.path.
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    # -S: no site-packages, so nothing installed (an editable finder) can
    # take the place of the checkout's hrx, first on sys.path as in a REPL.
    done = subprocess.run([sys.executable, "-S", "-c", "import hrx"], capture_output=True,
                          text=True,
                          cwd=checkout, env=env, timeout=60)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: hrx's C extension hrx._hrx cannot be imported")
    assert "pip install -e ." in last and str(checkout) in last


def test_a_tree_without_git_takes_the_commit_from_the_environment(tmp_path, monkeypatch):
    import runpy

    shutil.copy(ROOT / "setup.py", tmp_path / "setup.py")
    module = runpy.run_path(str(tmp_path / "setup.py"), run_name="hrx_setup")
    monkeypatch.delenv("HRX_SOURCE_COMMIT", raising=False)
    assert module["build_info"]() == (None, None)
    monkeypatch.setenv("HRX_SOURCE_COMMIT", "ab" * 20)
    assert module["build_info"]() == ("ab" * 20, None)
    monkeypatch.setenv("HRX_SOURCE_COMMIT", "HEAD")
    with pytest.raises(SystemExit, match="40 hex digits"):
        module["build_info"]()
    monkeypatch.setenv("HRX_SOURCE_COMMIT", "ab" * 20)
    module["write_build_info"](str(tmp_path))   # as an sdist carries it
    monkeypatch.setenv("HRX_SOURCE_COMMIT", "cd" * 20)
    assert module["build_info"]() == ("ab" * 20, None)   # the sdist's record wins
