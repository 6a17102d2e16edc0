"""The hardware connection budget (CUDA_DEVICE_MAX_CONNECTIONS on NVIDIA,
GPU_MAX_HW_QUEUES on AMD) is applied by opening a hip device, right before
the runtime's first call, never by listing or probing backends; an open
after a listing started the runtime reports that the budget could not take
effect. os.environ agrees with the C environment after either. Each case runs in a fresh interpreter: the variables are
process-wide."""

import textwrap

import pytest

import hrx
from conftest import run_fresh

# Shared by the snippets: the budget variables as os.environ and as the C
# environment (libc getenv) see them.
PRELUDE = """
import ctypes
libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_char_p
NAMES = ("CUDA_DEVICE_MAX_CONNECTIONS", "GPU_MAX_HW_QUEUES",
         "HRX_CONNECTION_BUDGET_SET")
def c_env():
    out = {}
    for name in NAMES:
        value = libc.getenv(name.encode())
        out[name] = value.decode() if value is not None else None
    return out
def py_env():
    return {name: os.environ.get(name) for name in NAMES}
for name in NAMES:
    os.environ.pop(name, None)   # unsets the C variable too
"""


def _run(code: str, **kwargs) -> str:
    return run_fresh(PRELUDE + textwrap.dedent(code), **kwargs)


def _hip_available() -> bool:
    return any(b["name"] == "hip" and b["available"] for b in hrx.backends())


@pytest.mark.parametrize("hip_library", [None, "/nonexistent/libamdhip64.so"],
                         ids=["default-search", "hip-missing"])
def test_listing_backends_leaves_the_environment_alone(hip_library):
    env = {"HRX_HIP_LIBRARY": hip_library} if hip_library else {}
    out = _run("""
    before = c_env()
    assert before == py_env() == dict.fromkeys(NAMES), (before, py_env())
    listed = {b["name"]: b for b in hrx.backends()}
    hrx.backends()
    assert c_env() == before, ("C environment changed by listing", c_env())
    assert py_env() == before, ("os.environ changed by listing", py_env())
    hip = listed["hip"]
    if hip["connections"] is not None:
        assert hip["connections"]["source"] == "unset", hip["connections"]
    print("hip available" if hip["available"] else "hip unavailable")
    """, backend="host", env=env)
    assert "hip" in out


def test_listing_keeps_a_user_value():
    out = _run("""
    os.environ["GPU_MAX_HW_QUEUES"] = "3"
    os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "5"
    before = c_env()
    hrx.backends()
    assert c_env() == before and py_env() == before, (c_env(), py_env())
    print("ok")
    """, backend="host")
    assert out.strip() == "ok"


def test_automatic_open_without_hip_leaves_the_environment_alone():
    # Device.open() tries hip first; when hip has no device the host device
    # it opens does not apply a budget.
    out = _run("""
    if any(b["name"] == "hip" and b["available"] for b in hrx.backends()):
        print("skip: hip available")
    else:
        d = hrx.Device.open()
        assert d.info["backend"] == "host", d.info
        assert c_env() == py_env() == dict.fromkeys(NAMES), (c_env(), py_env())
        print("ok")
    """, backend="host", env={"HRX_BACKEND": ""})
    assert out.strip() in ("ok", "skip: hip available")


@pytest.mark.skipif(not _hip_available(), reason="needs a hip device (GPU)")
@pytest.mark.parametrize("user", [None, "8"], ids=["hrx-sets", "user-set"])
def test_opening_a_hip_device_first_applies_it_and_os_environ_agrees(user):
    """The open starts the runtime: the budget is applied right before the
    runtime's first call, where the runtime reads it."""
    out = _run(f"""
    user = {user!r}
    if user:   # both: the platform is not known before the open
        os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = user
        os.environ["GPU_MAX_HW_QUEUES"] = user
    assert c_env() == py_env()
    d = hrx.Device.open(0, backend="hip")   # no listing before it
    variable = {{"nvidia": "CUDA_DEVICE_MAX_CONNECTIONS",
                "amd": "GPU_MAX_HW_QUEUES"}}[d.info["platform"]]
    after = c_env()
    assert after == py_env(), ("os.environ disagrees with C", after, py_env())
    budget = d.pool_stats()["connections"]
    assert budget["variable"] == variable, budget
    if user:
        assert after[variable] == user and budget["source"] == "user", budget
        assert budget["value"] == int(user), budget
        assert after["HRX_CONNECTION_BUDGET_SET"] is None, after
    else:
        assert budget["source"] == "hrx", budget
        assert after[variable] == str(budget["value"]), (after, budget)
        assert after["HRX_CONNECTION_BUDGET_SET"] == (
            variable + "=" + after[variable]), after
    report = next(b for b in hrx.backends() if b["name"] == "hip")
    assert report["connections"]["source"] == budget["source"], report
    print("ok")
    """, backend="hip")
    assert out.strip() == "ok"


@pytest.mark.skipif(not _hip_available(), reason="needs a hip device (GPU)")
def test_opening_after_a_listing_started_the_runtime_reports_no_effect():
    """hrx.backends() started the runtime with nothing set: the runtime read
    the variable then, so the open sets nothing and says so."""
    out = _run("""
    listed = next(b for b in hrx.backends() if b["name"] == "hip")
    assert listed["connections"]["source"] == "unset", listed
    before = c_env()
    d = hrx.Device.open(0, backend="hip")
    assert c_env() == py_env() == before, (c_env(), py_env(), before)
    budget = d.pool_stats()["connections"]
    assert budget["source"] == "runtime-started", budget
    assert budget["value"] is None, budget   # the runtime's default
    print("ok")
    """, backend="hip")
    assert out.strip() == "ok"


def test_os_environ_follows_the_c_environment_after_an_open():
    # What an open does after the C core set the budget with the GIL
    # released: os.environ is brought in line with the C values (set and
    # unset), whichever backend was opened; here the C side is changed
    # directly, as the hip backend would.
    out = _run("""
    libc.setenv(b"GPU_MAX_HW_QUEUES", b"17", 1)
    libc.setenv(b"HRX_CONNECTION_BUDGET_SET", b"GPU_MAX_HW_QUEUES=17", 1)
    os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "stale"
    libc.unsetenv(b"CUDA_DEVICE_MAX_CONNECTIONS")
    assert py_env() != c_env()
    d = hrx.Device.open(0, backend=backend)
    assert py_env() == c_env() == {
        "CUDA_DEVICE_MAX_CONNECTIONS": None, "GPU_MAX_HW_QUEUES": "17",
        "HRX_CONNECTION_BUDGET_SET": "GPU_MAX_HW_QUEUES=17"}, py_env()
    print("ok")
    """, backend="host")
    assert out.strip() == "ok"
