"""What `pip install .` gives a user holds no test machinery: no fault
injection ($HRX_FAULTS has no effect), no test hooks in the module, none of
their code or strings in the shared object, and no fake devices or fake
benchmark children in the Python package. The suite itself runs against
the testing build (build/testing, HRX_TESTING_BUILD=1); the same probe run
on that build finds all of it, so the check can fail.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import hrx._hrx

PROBE = r"""
import json
import hrx, hrx._hrx as ext
from pathlib import Path
data = open(ext.__file__, "rb").read()
markers = ("HRX_FAULTS", "hrx_fault_wrap", "injected fault",
           "hrx_device_commands_submitted", "_testing_")
report = {
    "file": ext.__file__,
    "hooks": sorted(n for n in dir(ext) if n.startswith("_testing")),
    "markers": [m for m in markers if m.encode() in data],
    "package": str(Path(hrx.__file__).parent),
}
device = hrx.Device.open(0, backend="host")
stream = device.stream()
buf = device.allocate(64)
stream.fill(buf, 7)
try:
    report["read"] = list(bytes(stream.read(buf[:4]).wait()))
except hrx.Error as error:
    report["read"] = type(error).__name__
print(json.dumps(report))
"""


def probe(tmp_path, *, testing: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if testing:  # the build this test process runs against
        env["PYTHONPATH"] = os.path.dirname(os.path.dirname(hrx._hrx.__file__))
    env["HRX_FAULTS"] = "fill:1"  # the first fill fails where faults exist
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_the_installed_extension_has_no_fault_injection_or_test_hooks(
        tmp_path):
    product = probe(tmp_path, testing=False)
    assert product["file"] != hrx._hrx.__file__, (
        "no installed hrx apart from the testing build: run `pip install .`")
    assert product["hooks"] == []
    assert product["markers"] == []
    assert product["read"] == [7, 7, 7, 7]  # HRX_FAULTS had no effect


def test_the_testing_build_has_them(tmp_path):
    testing = probe(tmp_path, testing=True)
    assert testing["file"] == hrx._hrx.__file__
    assert testing["hooks"] == ["_testing_commands_submitted",
                                "_testing_live_native_objects",
                                "_testing_pinned_direct",
                                "_testing_result_pool",
                                "_testing_staging_allocations",
                                "_testing_staging_evictions",
                                "_testing_submissions_released_gil"]
    assert set(testing["markers"]) == {
        "HRX_FAULTS", "hrx_fault_wrap", "injected fault",
        "hrx_device_commands_submitted", "_testing_"}
    assert testing["read"] == "DeviceError"


TEST_MARKERS = ("HRX_FAULTS", "HRX_BENCH_FAKE", "_testing_", "fake child")


def python_markers(package: Path) -> list:
    """(file, marker) for each test-machinery marker in the package's .py files."""
    return sorted((str(path.relative_to(package)), marker)
                  for path in package.rglob("*.py")
                  for marker in TEST_MARKERS if marker in path.read_text(encoding="utf-8"))


def test_the_installed_python_package_has_no_test_machinery(tmp_path):
    product = Path(probe(tmp_path, testing=False)["package"])
    assert product != Path(hrx._hrx.__file__).parent
    assert list(product.rglob("fake*.py")) == []
    assert python_markers(product) == []


def test_the_marker_scan_finds_the_tests_fake_child():
    tests = Path(__file__).resolve().parent
    assert ("fake_bench_child.py", "HRX_BENCH_FAKE") in python_markers(tests)
