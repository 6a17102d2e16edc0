"""The benchmark's sizes: one frozen value per run, with the reference
protocol as the default and a smaller preset for CPU-only machines."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Dict, Mapping, Optional

__all__ = ["BenchConfig", "DEFAULT", "QUICK", "SIZE_FIELDS", "preset", "preset_name", "resolve"]

KiB = 1024
MiB = 1024 * KiB


@dataclass(frozen=True)
class BenchConfig:
    """Sizes of one benchmark run, exactly the keyword arguments of
    ``hrx._hrx.bench_run`` except ``driver``.

    lanes: small lanes = bulk lanes = worker threads of the concurrent case.
    retained_streams: empty pool streams kept alive for the whole run (their
    creation is the timed "stream creation").
    small_bytes / small_copies: per small copy / copies per lane per round.
    bulk_bytes / bulk_copies: per bulk copy / copies per bulk lane per round.
    loaded_copies: bulk copies queued per bulk lane before each loaded probe.
    warmup / samples: unrecorded and recorded rounds per case.
    """

    lanes: int = 16
    retained_streams: int = 16
    small_bytes: int = 4 * KiB
    small_copies: int = 1024
    bulk_bytes: int = 32 * MiB
    bulk_copies: int = 16
    loaded_copies: int = 4
    warmup: int = 3
    samples: int = 15

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{field.name} must be an int, got {value!r}")
            if value < 1:
                raise ValueError(f"{field.name} must be >= 1, got {value}")

    def as_dict(self) -> Dict[str, int]:
        """The sizes as a plain dict (the ``sizes`` object of a result line)."""
        return asdict(self)

    def with_overrides(self, **overrides: Optional[int]) -> "BenchConfig":
        """A copy with every non-None override applied."""
        given = {key: value for key, value in overrides.items() if value is not None}
        return replace(self, **given)


SIZE_FIELDS = tuple(field.name for field in fields(BenchConfig))

DEFAULT = BenchConfig()
"""The reference protocol (reference/queue-pool-measurements.md)."""

QUICK = BenchConfig(small_copies=256, bulk_bytes=1 * MiB, bulk_copies=4)
"""For CPU-only machines: the same lanes, streams, cases and rounds, with
1 MiB bulk copies, 4 bulk copies per lane and 256 small copies per lane, so
the whole run takes seconds on the host backend instead of minutes."""

_PRESETS = {"default": DEFAULT, "quick": QUICK}


def preset(name: str) -> BenchConfig:
    """The named preset ("default" or "quick"); KeyError for another name."""
    return _PRESETS[name]


def resolve(quick: bool = False, overrides: Optional[Mapping[str, Any]] = None) -> BenchConfig:
    """The preset chosen by ``quick`` with the non-None ``overrides`` (keys of
    SIZE_FIELDS) applied. Raises TypeError for an unknown key."""
    unknown = set(overrides or {}) - set(SIZE_FIELDS)
    if unknown:
        raise TypeError(f"unknown size option(s): {', '.join(sorted(unknown))}")
    return (QUICK if quick else DEFAULT).with_overrides(**dict(overrides or {}))


def preset_name(config: BenchConfig) -> str:
    """"default" or "quick" when config equals that preset apart from the
    number of samples (a separate choice), else "custom"."""
    for name, value in _PRESETS.items():
        if replace(config, samples=value.samples) == value:
            return name
    return "custom"
