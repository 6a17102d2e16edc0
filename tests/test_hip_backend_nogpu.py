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
