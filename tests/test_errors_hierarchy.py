"""The error hierarchy, backend reporting and device selection errors."""
from __future__ import annotations

import json

import pytest

from conftest import run_fresh

import hrx

# hrx error class -> the builtin exception classes it must also be.
HIERARCHY = {
    "InvalidArgumentError": {ValueError},
    "OutOfMemoryError": {MemoryError},
    "OutOfRangeError": {IndexError, ValueError},
    "BusyError": {RuntimeError},
    "UnavailableError": {RuntimeError},
    "ResourceExhaustedError": {RuntimeError},
    "FailedPreconditionError": {RuntimeError},
    "DeviceError": {RuntimeError},
}
# Builtins any exception class derives from; not part of the contract.
_ROOTS = {Exception, BaseException, object}


def builtin_ancestors(cls: type) -> set[type]:
    """The builtin exception classes cls derives from, without those that
    only come with another one (LookupError with IndexError, ...)."""
    found = {k for k in cls.__mro__
             if k.__module__ == "builtins" and k not in _ROOTS}
    implied = {a for k in found for a in k.__mro__[1:]}
    return found - implied


def test_error_base_class():
    assert issubclass(hrx.Error, Exception)
    assert builtin_ancestors(hrx.Error) == set()
    assert hrx.Error.__module__ == "hrx"
    assert hrx.Error.__doc__


@pytest.mark.parametrize("name", sorted(HIERARCHY))
def test_error_class(name):
    cls = getattr(hrx, name)
    assert name in hrx.__all__
    assert issubclass(cls, hrx.Error)
    assert builtin_ancestors(cls) == HIERARCHY[name]
    assert cls.__name__ == name and cls.__module__ == "hrx"
    assert cls.__doc__
    for builtin in HIERARCHY[name] | {hrx.Error}:
        with pytest.raises(builtin) as info:
            raise cls("message")
        assert type(info.value) is cls
        assert str(info.value) == "message"


def test_every_hrx_error_is_listed():
    errors = {name for name in dir(hrx)
              if isinstance(getattr(hrx, name), type)
              and issubclass(getattr(hrx, name), hrx.Error)
              and getattr(hrx, name) is not hrx.Error}
    assert errors == set(HIERARCHY)
    assert len({getattr(hrx, n) for n in errors}) == len(errors)


def test_errors_raised_by_the_runtime_are_hrx_errors(device):
    buf = device.allocate(8)
    with pytest.raises(hrx.Error) as info:
        buf[0:9]
    assert type(info.value) is hrx.OutOfRangeError
    with pytest.raises(IndexError):
        buf.slice(4, 5)
    with pytest.raises(ValueError):
        device.allocate(0)


# ----------------------------------------------------------------- backends

def test_backends_shape():
    reports = hrx.backends()
    assert isinstance(reports, list) and reports
    for report in reports:
        assert isinstance(report, dict)
        assert set(report) == {"name", "available", "reason", "library",
                               "platform", "connections"}
        assert isinstance(report["name"], str) and report["name"]
        assert isinstance(report["available"], bool)
        assert isinstance(report["reason"], str)
        assert report["library"] is None or isinstance(report["library"], str)
        assert report["platform"] in (None, "amd", "nvidia")
        assert (report["library"] is None) == (report["platform"] is None)
        if report["available"] and report["name"] == "hip":
            assert report["library"] and report["platform"]
        if report["name"] == "host":
            assert report["library"] is None and report["platform"] is None
            assert report["connections"] is None
        if report["platform"] is not None:
            # The process's connection budget variable (docs/lanes.md).
            budget = report["connections"]
            assert budget["variable"] == {
                "nvidia": "CUDA_DEVICE_MAX_CONNECTIONS",
                "amd": "GPU_MAX_HW_QUEUES"}[report["platform"]], budget
            assert budget["source"] in ("user", "hrx", "unset"), budget
            assert (budget["value"] is None) == (budget["source"] == "unset")
        if report["available"]:
            assert report["reason"] == ""
        else:
            assert report["reason"].strip(), report
    names = [r["name"] for r in reports]
    assert names == ["hip", "host"]       # automatic-selection order
    assert any(r["available"] for r in reports)
    assert hrx.backends() == reports      # probing twice changes nothing


def test_backends_unavailable_has_reason(fresh):
    """With the HIP library pointed at nothing, hip is unavailable and says
    why; opening it raises UnavailableError with a message."""
    out = fresh("""
        import json
        hip = next(r for r in hrx.backends() if r["name"] == "hip")
        try:
            hrx.Device.open(0, backend="hip")
            error = None
        except hrx.Error as e:
            error = [type(e).__name__, str(e)]
        print(json.dumps({"hip": hip, "error": error}))
    """, env={"HRX_HIP_LIBRARY": "/nonexistent/libamdhip64.so"})
    result = json.loads(out.splitlines()[-1])
    assert result["hip"]["available"] is False
    assert result["hip"]["reason"].strip()
    name, message = result["error"]
    assert name == "UnavailableError"
    assert message.strip()


def test_open_unknown_backend_lists_allowed_names():
    with pytest.raises(hrx.InvalidArgumentError) as info:
        hrx.Device.open(0, backend="nonsense")
    message = str(info.value)
    assert "nonsense" in message
    for report in hrx.backends():
        assert report["name"] in message


def test_out_of_range_device_index(backend):
    with pytest.raises(hrx.OutOfRangeError) as info:
        hrx.Device.open(4096, backend=backend)
    assert type(info.value) is hrx.OutOfRangeError
    assert "4096" in str(info.value)
    assert backend in str(info.value)
    with pytest.raises(hrx.OutOfRangeError):
        hrx.Device.open(-1, backend=backend)
    with pytest.raises(hrx.OutOfRangeError):
        hrx.Stream.open(4096, backend=backend)


def test_device_index_above_int32_has_a_true_message(backend):
    with pytest.raises(hrx.OutOfRangeError) as info:
        hrx.Device.open(2**31, backend=backend)
    assert "must be >= 0" not in str(info.value)


def test_hrx_backend_nonsense_gives_a_clear_error(fresh, backend):
    out = fresh("""
        import json
        result = {}
        for label, call in [("Device.open", lambda: hrx.Device.open()),
                            ("Device()", lambda: hrx.Device()),
                            ("Stream.open", lambda: hrx.Stream.open())]:
            try:
                call()
                result[label] = None
            except Exception as e:
                result[label] = [type(e).__name__, str(e)]
        result["backends"] = [r["name"] for r in hrx.backends()]
        explicit = hrx.Device.open(0, backend=backend)
        result["explicit"] = explicit.info["backend"]
        print(json.dumps(result))
    """, env={"HRX_BACKEND": "nonsense"})
    result = json.loads(out.splitlines()[-1])
    assert result["backends"] == ["hip", "host"]
    assert result["explicit"] == backend      # an explicit name wins
    for label in ("Device.open", "Device()", "Stream.open"):
        name, message = result[label]
        assert name == "InvalidArgumentError", (label, message)
        assert "nonsense" in message and "HRX_BACKEND" in message
        for backend_name in result["backends"]:
            assert backend_name in message


def test_hrx_backend_selects_the_default(fresh, backend):
    out = fresh("""
        d = hrx.Device.open()
        print(d.info["backend"], hrx.Stream.open().device == d)
    """, env={"HRX_BACKEND": backend})
    assert out.split() == [backend, "True"]


def test_automatic_fallback_says_what_was_passed_over():
    # Never silent: a device chosen automatically records why every earlier
    # backend was passed over; an explicit choice says so.
    out = run_fresh("""
    os.environ.pop("HRX_BACKEND", None)
    reasons = {b["name"]: b["reason"] for b in hrx.backends()}
    d = hrx.Device.open()
    selection = d.info["selection"]
    assert selection.startswith("automatic"), selection
    for name, reason in reasons.items():
        if name == d.info["backend"]:
            break
        assert name + ":" in selection, (name, selection)
    explicit = hrx.Device.open(1, backend="host").info["selection"]
    assert explicit == "backend argument", explicit
    print("ok")
    """, backend="host", env={"HRX_BACKEND": ""})
    assert out.strip() == "ok"


def test_the_selection_keeps_a_long_reason_whole():
    # A hip library path of 600 characters: its whole "cannot open" message
    # reaches info["selection"] (the field once stopped at 511 characters).
    long_path = "/nonexistent/" + "x" * 600 + "/libamdhip64.so"
    out = run_fresh("""
    os.environ.pop("HRX_BACKEND", None)
    d = hrx.Device.open()
    if d.info["backend"] == "host":
        print(d.info["selection"])
    """, backend="host", env={"HRX_BACKEND": "", "HRX_HIP_LIBRARY": long_path})
    if not out.strip():
        pytest.skip("a GPU was found: nothing was passed over")
    assert long_path in out
