"""The hip backend on a machine without a GPU: it loads the real AMD runtime
(Debian's libamdhip64, which CI installs) and reports "no device" cleanly;
automatic selection then falls back to host and says why."""
import os

import pytest

from conftest import run_fresh

AMD_LIBRARY = "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5"


@pytest.mark.skipif(not os.path.exists(AMD_LIBRARY),
                    reason="Debian's libamdhip64-5 is not installed")
def test_real_amd_runtime_reports_no_device_and_host_is_chosen():
    out = run_fresh("""
    hip = next(b for b in hrx.backends() if b["name"] == "hip")
    assert not hip["available"], hip
    assert hip["platform"] == "amd" and "libamdhip64" in hip["library"], hip
    assert "hipErrorNoDevice" in hip["reason"], hip["reason"]
    try:
        hrx.Device.open(0, backend="hip")
    except hrx.UnavailableError as e:
        assert "no device" in str(e).lower() or "NoDevice" in str(e), str(e)
    else:
        raise AssertionError("UnavailableError expected")
    d = hrx.Device.open()
    assert d.info["backend"] == "host"
    assert "hip:" in d.info["selection"], d.info["selection"]
    print("ok")
    """, backend="host", env={"HRX_HIP_LIBRARY": AMD_LIBRARY,
                              "HRX_BACKEND": ""})
    assert out.strip() == "ok"


def test_missing_hip_library_is_reported_with_its_path():
    out = run_fresh("""
    hip = next(b for b in hrx.backends() if b["name"] == "hip")
    assert not hip["available"]
    assert "/nonexistent/libamdhip64.so" in hip["reason"], hip["reason"]
    print("ok")
    """, backend="host", env={"HRX_HIP_LIBRARY": "/nonexistent/libamdhip64.so"})
    assert out.strip() == "ok"


def _long_directory(root, length):
    """A directory under `root` whose path is at least `length` characters,
    made of 200-character components (each under NAME_MAX)."""
    path = root
    while len(str(path)) < length:
        path = path / ("d" * 200)
    path.mkdir(parents=True)
    return path


def _hip_reason(library):
    return run_fresh("""
    hip = next(b for b in hrx.backends() if b["name"] == "hip")
    assert not hip["available"], hip
    print(hip["reason"])
    """, backend="host", env={"HRX_HIP_LIBRARY": str(library)}).strip()


def test_a_long_missing_library_path_reaches_the_reason_whole(tmp_path):
    # dlopen's message names the whole 3000-character path.
    library = _long_directory(tmp_path, 3000) / "libamdhip64.so"
    reason = _hip_reason(library)
    assert str(library) in reason, len(reason)
    assert reason.startswith(f"HRX_HIP_LIBRARY={library}: "), reason[:80]


@pytest.mark.skipif(not os.path.exists(AMD_LIBRARY),
                    reason="Debian's libamdhip64-5 is not installed")
def test_a_long_refusal_of_the_real_runtime_reaches_the_reason_whole(tmp_path):
    # The real runtime under a 3000-character path loads and reports no
    # device: the refusal names the whole path and the runtime's error.
    library = _long_directory(tmp_path, 3000) / "libamdhip64.so"
    library.symlink_to(AMD_LIBRARY)
    reason = _hip_reason(library)
    assert f"{library} loaded, but hipGetDeviceCount failed: " in reason, \
        len(reason)
    assert "hipErrorNoDevice" in reason, reason[-200:]
