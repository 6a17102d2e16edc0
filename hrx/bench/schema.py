"""The JSON schema of result and error lines, and their validator.

``validate(line)`` checks a line against RESULT_SCHEMA (or ERROR_SCHEMA when
it has an ``error`` key) with ``jsonschema`` when it is installed, else with
a small built-in checker of the same keyword subset, then checks what a
schema cannot say: the raw arrays have the lengths the sizes imply and the
summary is the one the raw arrays give.
"""
from __future__ import annotations

import math
import re
from typing import Any, Dict, List, Mapping, Optional

from . import contention
from .drivers import WORKLOAD_ONLY
from .record import PROBE_RAW_KEYS, PROBE_SUMMARY_KEYS, RAW_KEYS, REFERENCE_KEYS, summarize
from .stats import median, p95

__all__ = ["RESULT_SCHEMA", "WORKLOAD_RESULT_SCHEMA", "ERROR_SCHEMA", "is_workload_only",
           "SchemaError", "validate", "schema_errors",
           "is_error_line"]

_INT = {"type": "integer", "minimum": 0}
_POS_INT = {"type": "integer", "minimum": 1}
_NUM = {"type": "number", "minimum": 0}
_POS_NUM = {"type": "number", "exclusiveMinimum": 0}
_OPT_INT = {"type": ["integer", "null"], "minimum": 0}
_OPT_STR = {"type": ["string", "null"]}
_TIMESTAMP = {"type": "string", "pattern": r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$"}
_DRIVER = {"type": "string", "enum": ["native", "raw", "python"]}
_ANY_DRIVER = {"type": "string", "enum": ["native", "raw", "python", WORKLOAD_ONLY]}

_SUMMARY_PROPERTIES: Dict[str, Any] = {
    "bulk_batch_median_ms": _POS_NUM, "bulk_batch_p95_ms": _POS_NUM,
    "bulk_copy_gb_s": _POS_NUM,
    "idle_latency_median_us": _NUM, "idle_latency_p95_us": _NUM,
    "loaded_latency_median_us": _NUM, "loaded_latency_p95_us": _NUM,
    "queues": _POS_INT, "repeat": _POS_INT, "samples": _POS_INT,
    "small_batch_median_ms": _POS_NUM, "small_batch_p95_ms": _POS_NUM,
    "small_commands_per_second": _POS_NUM,
    "stream_creation_ms": _NUM, "streams": _POS_INT, "target": {"type": "string", "minLength": 1},
    "threaded_batch_median_ms": _POS_NUM, "threaded_batch_p95_ms": _POS_NUM,
    "threaded_commands_per_second": _POS_NUM, "warmup": _POS_INT,
    # Optional: the loaded-latency probe variants (native driver).
    **{key: _NUM for key in PROBE_SUMMARY_KEYS},
    # Optional: the contention cases (contention.py); older lines lack them.
    **{key: _NUM for key in contention.SUMMARY_KEYS},
}

_SIZES = {
    "type": "object",
    "required": ["lanes", "retained_streams", "small_bytes", "small_copies", "bulk_bytes",
                 "bulk_copies", "loaded_copies", "warmup", "samples", "preset"],
    "properties": {
        **{key: _POS_INT for key in ("lanes", "retained_streams", "small_bytes", "small_copies",
                                      "bulk_bytes", "bulk_copies", "loaded_copies", "warmup",
                                      "samples")},
        # Optional: the contention cases' sizes (lines before them lack them).
        **{key: _POS_INT for key in contention.SIZE_KEYS},
        "preset": {"type": "string", "enum": ["default", "quick", "custom"]},
    },
}

_ENVIRONMENT = {
    "type": "object",
    "required": ["device_name", "backend", "target", "runtime", "driver_version", "cpu_model",
                 "logical_cpus", "ram_bytes", "os", "kernel", "c_compiler", "python_version",
                 "host_memcpy_gb_s"],
    "properties": {
        "device_name": _OPT_STR, "backend": {"type": "string"}, "target": _OPT_STR,
        "runtime": _OPT_STR, "driver_version": _OPT_STR, "cpu_model": _OPT_STR,
        "logical_cpus": {"type": ["integer", "null"], "minimum": 1}, "ram_bytes": _OPT_INT,
        "os": _OPT_STR, "kernel": _OPT_STR,
        "c_compiler": {"type": "object", "required": ["command", "version"],
                       "properties": {"command": _OPT_STR, "version": _OPT_STR}},
        "python_version": {"type": "string"},
        "host_memcpy_gb_s": _POS_NUM,
        # Optional (lines before it lack it): the bulk case's own copies.
        "host_memcpy_bulk_gb_s": {"type": ["number", "null"], "exclusiveMinimum": 0},
        # Optional: the device's hardware connection budget (pool_stats()).
        "connections": {
            "type": ["object", "null"],
            "required": ["variable", "value", "wanted", "source"],
            "properties": {"variable": _OPT_STR, "value": _OPT_INT, "wanted": _INT,
                           "source": {"type": "string"}},
        },
    },
}

_MEMORY = {
    "type": "object",
    "required": ["peak_rss_bytes", "host_mem_available_before_bytes",
                 "host_mem_available_after_bytes", "device_memory_total_bytes",
                 "device_memory_used_before_bytes", "device_memory_used_after_bytes"],
    "properties": {key: _OPT_INT for key in (
        "peak_rss_bytes", "host_mem_total_bytes", "host_mem_available_before_bytes",
        "host_mem_available_after_bytes", "device_memory_total_bytes",
        "device_memory_used_before_bytes", "device_memory_used_after_bytes")},
}

_RAW = {
    "type": "object",
    "required": ["unit", "stream_creation_ns", *RAW_KEYS],
    "properties": {
        "unit": {"const": "ns"},
        "stream_creation_ns": _INT,
        **{key: {"type": "array", "minItems": 1, "items": _INT}
           for key in RAW_KEYS + PROBE_RAW_KEYS + contention.RAW_KEYS},
    },
}

_WORKLOAD = {
    "type": "object",
    "required": ["name", "streams", "round_ns", "round_median_ms", "round_p95_ms"],
    "properties": {
        "name": {"type": "string", "minLength": 3},
        "streams": _POS_INT,
        "round_ns": {"type": "array", "minItems": 1, "items": _INT},
        "round_median_ms": _NUM,
        "round_p95_ms": _NUM,
    },
}

RESULT_SCHEMA: Dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "hrx benchmark result line",
    "type": "object",
    "required": [*REFERENCE_KEYS, "backend", "driver", "hrx_version", "git_commit",
                 "timestamp", "sizes", "environment", "memory", "raw"],
    "properties": {
        **_SUMMARY_PROPERTIES,
        "backend": {"type": "string", "minLength": 1},
        "driver": _DRIVER,
        "hrx_version": _OPT_STR,
        "git_commit": {"anyOf": [{"type": "null"},
                                 {"type": "string", "pattern": "^[0-9a-f]{40}$"}]},
        "git_dirty": {"type": ["boolean", "null"]},
        # Where git_commit is null (lines measured before commits were
        # recorded): the commit that added the line to the repository.
        "committed_in": {"type": "string", "pattern": "^[0-9a-f]{40}$"},
        # The size choice asked for (config.py); sizes.preset is what it gave.
        # Absent in lines recorded before the size rule existed.
        "size_rule": {"type": "string", "enum": ["auto", "reference", "quick"]},
        # Submission batching as run; null for the raw driver; absent in
        # lines recorded before batching existed.
        "batching": {"type": ["boolean", "null"]},
        "queues_used": _POS_INT,
        # The device index the sweep ran it on, and, for a step run on
        # every device at once, how many devices ran (absent: alone).
        "device": _INT,
        "concurrent_devices": _POS_INT,
        "timestamp": _TIMESTAMP,
        "sizes": _SIZES,
        "environment": _ENVIRONMENT,
        "memory": _MEMORY,
        "raw": _RAW,
        "workload": _WORKLOAD,
    },
}

WORKLOAD_RESULT_SCHEMA: Dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "hrx benchmark workload-only line (the user's workload alone)",
    "type": "object",
    "required": ["queues", "repeat", "driver", "batching", "samples", "warmup", "streams",
                 "target", "backend", "hrx_version", "git_commit", "timestamp", "sizes",
                 "environment", "memory", "workload"],
    "properties": {
        "queues": _POS_INT, "repeat": _POS_INT, "samples": _POS_INT, "warmup": _INT,
        "streams": _POS_INT,
        "driver": {"const": WORKLOAD_ONLY},
        "batching": {"type": ["boolean", "null"]},
        "target": {"type": "string", "minLength": 1},
        "backend": {"type": "string", "minLength": 1},
        "hrx_version": _OPT_STR,
        "git_commit": RESULT_SCHEMA["properties"]["git_commit"],
        "git_dirty": {"type": ["boolean", "null"]},
        "committed_in": RESULT_SCHEMA["properties"]["committed_in"],
        "device": _INT,
        "concurrent_devices": _POS_INT,
        "timestamp": _TIMESTAMP,
        "sizes": {"type": "object", "required": ["warmup", "samples"],
                  "properties": {"warmup": _INT, "samples": _POS_INT}},
        "environment": _ENVIRONMENT,
        "memory": _MEMORY,
        "workload": _WORKLOAD,
    },
}
"""A line of ``--only-workload`` (workload.py, "Your workload alone")."""

ERROR_SCHEMA: Dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "hrx benchmark error line (a run that produced no result)",
    "type": "object",
    "required": ["error", "queues", "repeat", "driver", "returncode", "stderr_tail", "timestamp"],
    "properties": {
        "error": {"type": "string", "minLength": 1},
        "queues": _POS_INT, "repeat": _POS_INT, "driver": _ANY_DRIVER,
        "batching": {"type": ["boolean", "null"]},
        "returncode": {"type": ["integer", "null"]},
        "stderr_tail": {"type": "string"},
        "timestamp": _TIMESTAMP,
        "elapsed_s": _NUM,
        "backend": _OPT_STR,
        "device": _INT,
        "concurrent_devices": _POS_INT,
        "workload": {"type": "string", "minLength": 3},
    },
}


class SchemaError(ValueError):
    """A line does not follow the schema; ``errors`` lists every problem."""

    def __init__(self, errors: List[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


def is_error_line(line: Mapping[str, Any]) -> bool:
    """True for the record of a run that failed (it has an ``error`` key)."""
    return "error" in line


def is_workload_only(line: Mapping[str, Any]) -> bool:
    """True for the line of a run of the user's workload alone."""
    return line.get("driver") == WORKLOAD_ONLY and not is_error_line(line)


def _schema_of(line: Mapping[str, Any]) -> Mapping[str, Any]:
    if is_error_line(line):
        return ERROR_SCHEMA
    return WORKLOAD_RESULT_SCHEMA if is_workload_only(line) else RESULT_SCHEMA


_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def _builtin_errors(value: Any, schema: Mapping[str, Any], path: str) -> List[str]:
    """The keyword subset the schemas above use: type, required, properties,
    items, minimum, exclusiveMinimum, minItems, minLength, enum, const,
    pattern, anyOf."""
    where = path or "line"
    if "anyOf" in schema:
        if all(_builtin_errors(value, option, path) for option in schema["anyOf"]):
            return [f"{where}: {value!r} matches none of the allowed forms"]
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_TYPES[name](value) for name in types):
            return [f"{where}: {value!r} is not of type {' or '.join(types)}"]
    errors: List[str] = []
    if "const" in schema and value != schema["const"]:
        errors.append(f"{where}: {value!r} is not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} is not one of {schema['enum']!r}")
    if _TYPES["number"](value):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{where}: {value!r} is less than {schema['minimum']}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            errors.append(f"{where}: {value!r} is not greater than {schema['exclusiveMinimum']}")
        if isinstance(value, float) and not math.isfinite(value):
            errors.append(f"{where}: {value!r} is not finite")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            errors.append(f"{where}: {value!r} is too short")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{where}: {value!r} does not match {schema['pattern']!r}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{where}: has {len(value)} items, needs {schema['minItems']}")
        if "items" in schema:
            for index, item in enumerate(value):
                errors.extend(_builtin_errors(item, schema["items"], f"{path}[{index}]"))
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{where}: missing key {key!r}")
        for key, subschema in schema.get("properties", {}).items():
            if key in value:
                errors.extend(_builtin_errors(value[key], subschema,
                                              f"{path}.{key}" if path else key))
    return errors


def _jsonschema_errors(line: Mapping[str, Any], schema: Mapping[str, Any]) -> Optional[List[str]]:
    try:
        import jsonschema
    except ImportError:
        return None
    validator = jsonschema.Draft202012Validator(schema)
    return [f"{'.'.join(str(p) for p in error.absolute_path) or 'line'}: {error.message}"
            for error in validator.iter_errors(line)]


def _workload_errors(workload: Mapping[str, Any], samples: int) -> List[str]:
    """A workload object's rounds against the samples and its summary."""
    rounds = workload["round_ns"]
    if len(rounds) != samples:
        return [f"workload.round_ns has {len(rounds)} entries, expected {samples} "
                f"(sizes.samples)"]
    return [f"workload.{key} is {workload[key]!r} but workload.round_ns gives {value!r}"
            for key, value in (("round_median_ms", median(rounds) / 1e6),
                               ("round_p95_ms", p95(rounds) / 1e6))
            if not math.isclose(float(workload[key]), value, rel_tol=1e-9, abs_tol=1e-12)]


def _workload_only_errors(line: Mapping[str, Any]) -> List[str]:
    sizes, workload = line["sizes"], line["workload"]
    errors = [f"{key} is {line[key]} but {where} is {value}"
              for key, where, value in (("samples", "sizes.samples", sizes["samples"]),
                                        ("warmup", "sizes.warmup", sizes["warmup"]),
                                        ("streams", "workload.streams", workload["streams"]))
              if line[key] != value]
    return errors or _workload_errors(workload, sizes["samples"])


def _consistency_errors(line: Mapping[str, Any]) -> List[str]:
    if is_workload_only(line):
        return _workload_only_errors(line)
    sizes, raw = line["sizes"], line["raw"]
    errors = [f"{key} is {line[key]} but sizes.{size} is {sizes[size]}"
              for key, size in (("streams", "lanes"), ("samples", "samples"), ("warmup", "warmup"))
              if line[key] != sizes[size]]
    if errors:
        return errors
    try:
        expected = summarize({**sizes, **raw, "queues": line["queues"], "driver": line["driver"]})
    except (ValueError, ZeroDivisionError) as error:
        return [f"raw: {error}"]
    for key in PROBE_SUMMARY_KEYS + contention.SUMMARY_KEYS:
        if key in line and key not in expected:
            errors.append(f"{key} is present but raw has no samples for it")
    for key, value in expected.items():
        if key not in line:
            errors.append(f"missing key {key!r} (raw has its samples)")
            continue
        if not math.isclose(float(line[key]), float(value), rel_tol=1e-9, abs_tol=1e-12):
            errors.append(f"{key} is {line[key]!r} but the raw samples give {value!r}")
    workload = line.get("workload")
    if workload is not None:
        errors += _workload_errors(workload, sizes["samples"])
    return errors


def schema_errors(line: Mapping[str, Any], *, use_jsonschema: Optional[bool] = None) -> List[str]:
    """Every problem of a result or error line; [] when it is valid.
    use_jsonschema: True requires the jsonschema package, False forces the
    built-in checker, None uses jsonschema when it is installed."""
    schema = _schema_of(line)
    errors: Optional[List[str]] = None
    if use_jsonschema is not False:
        errors = _jsonschema_errors(line, schema)
        if errors is None and use_jsonschema:
            raise ImportError("jsonschema is not installed (pip install 'hrx[test]')")
    if errors is None:
        errors = _builtin_errors(line, schema, "")
    if not errors and not is_error_line(line):
        errors = _consistency_errors(line)
    return errors


def validate(line: Mapping[str, Any], *, use_jsonschema: Optional[bool] = None) -> None:
    """Raises SchemaError listing every problem unless the line is valid."""
    errors = schema_errors(line, use_jsonschema=use_jsonschema)
    if errors:
        raise SchemaError(errors)
