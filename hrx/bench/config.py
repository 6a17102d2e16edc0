"""The benchmark's sizes: one frozen value per run, the reference protocol
("default") and a smaller preset for CPU devices ("quick"), and the rule
that picks one for a device.

The size rule (``preset="auto"``, the default of ``run``, ``sweep`` and
``hrx-bench``): a run on the **host** backend (a CPU device) uses the quick
sizes; a run on any other backend (a GPU) uses the reference protocol.
``preset="reference"`` (``--preset reference``) always uses the reference
sizes, ``preset="quick"`` (``--quick``) always the quick ones. Every result
line records the choice asked for (``size_rule``) and what it gave
(``sizes.preset`` and every size).

Why: the reference protocol is sized for a GPU that copies at hundreds to
thousands of GB/s. Each round moves 16 lanes x 16 x 32 MiB = 8 GiB of bulk
copies, and every loaded-latency sample (16 per round, in four variants)
first queues 16 x 4 x 32 MiB = 2 GiB; a CPU copies at 5-50 GB/s, so one
reference run takes minutes on a 2-core machine and the 15-process sweep
more than half an hour. The quick sizes divide the bulk traffic by 128
(4 x 1 MiB per lane and round, 1 MiB per queued loaded copy), the small
copies per lane by 4 (256) and the loaded copies per lane by 4 (one: a
16 MiB backlog before each loaded probe, drained before the next; with
four copies per lane those drains were most of a process's time on two
cores); the lanes, retained streams, 4 KiB small copies, warm-up and
sample counts stay the reference's, so every column is measured the same
way, with a working set (16 x 2 x 1 MiB of bulk buffers) that a CPU's
caches and memory handle in milliseconds. A quick process takes a few
seconds on two cores, so the 15-process sweep fits ``make bench``'s budget
(bench/results/host-2core/make-bench.txt).

The contention cases (csrc/bench/bench_contention.h) have sizes of their
own. On a GPU: 20 µs spin blocks; 512 launches per concurrency round;
behind compute, 4 kernels of 16384 one-thread blocks per bulk lane (a few
times what an H200's SMs hold at once: about 5 ms of backlog); behind
transfers, one 8 MiB read (then upload) per bulk lane (128 MiB, a few ms at
tens of GB/s); 16 compute and 8 transfer samples per probe series, so the
cases add about 2 s to a process. Quick: the same 20 µs blocks, 256 launches,
one kernel of 32 blocks and 16 transfers of 64 KiB per bulk lane, 8 samples
of each series: a few seconds on two cores. The host engines finish the
command they run before they turn to a more urgent queue, so the quick
transfers are short (a probe waits about one of them) and many (the
round-robin probe's queue holds a backlog of its own even at 16 queues)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Dict, Mapping, Optional

__all__ = ["BenchConfig", "DEFAULT", "QUICK", "SIZE_FIELDS", "SIZE_RULES", "preset",
           "preset_name", "resolve", "automatic_preset", "check_size_rule", "resolve_rule", "describe_sizes"]

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB


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
    warmup / samples: unrecorded and recorded rounds per case (``warmup``
    is also the unrecorded samples before each contention probe series).
    kernel_spin_ns: each block of the spin kernel, in ns.
    kernel_launches: 1-block kernels per round of the concurrency case.
    backlog_blocks / backlog_kernels: grid of one compute-backlog kernel /
    such kernels per bulk lane before each compute probe.
    transfer_bytes / transfer_copies: one transfer of the transfer backlog /
    transfers per bulk lane before each transfer probe.
    compute_samples / transfer_samples: recorded samples per probe kind and
    operation behind the compute / transfer backlog.
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
    kernel_spin_ns: int = 20_000
    kernel_launches: int = 512
    backlog_blocks: int = 16384
    backlog_kernels: int = 4
    transfer_bytes: int = 8 * MiB
    transfer_copies: int = 1
    compute_samples: int = 16
    transfer_samples: int = 8

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

QUICK = BenchConfig(small_copies=256, bulk_bytes=1 * MiB, bulk_copies=4,
                    loaded_copies=1, kernel_launches=256, backlog_blocks=32, backlog_kernels=1,
                    transfer_bytes=64 * KiB, transfer_copies=16, compute_samples=8)
"""For CPU-only machines: the same lanes, streams, cases and rounds, with
1 MiB bulk copies, 4 bulk copies per lane, 256 small copies per lane and
one loaded copy per lane, so the whole run takes seconds on the host
backend instead of minutes."""

_PRESETS = {"default": DEFAULT, "quick": QUICK}

SIZE_RULES = ("auto", "reference", "quick")
"""The size choices: the rule above, the reference protocol, the quick preset."""


def automatic_preset(backend: str) -> str:
    """The preset the size rule gives a backend: "quick" for host (a CPU
    device), "default" (the reference protocol) for every other backend."""
    return "quick" if backend == "host" else "default"


def check_size_rule(rule: str, quick: bool = False) -> str:
    """The size choice ``rule`` (one of SIZE_RULES), with the older
    ``quick=True`` meaning "quick". Raises ValueError for another name or
    for ``quick=True`` with a rule other than "auto" or "quick"."""
    if rule not in SIZE_RULES:
        raise ValueError(f"preset must be one of {', '.join(SIZE_RULES)}; got {rule!r}")
    if quick:
        if rule not in ("auto", "quick"):
            raise ValueError(f"quick=True contradicts preset={rule!r}")
        return "quick"
    return rule


def resolve_rule(rule: str, backend: str,
                 overrides: Optional[Mapping[str, Any]] = None) -> BenchConfig:
    """The sizes that the size choice ``rule`` gives a run on ``backend``,
    with the non-None ``overrides`` applied (as ``resolve``)."""
    name = {"auto": automatic_preset(backend), "reference": "default",
            "quick": "quick"}[check_size_rule(rule)]
    return resolve(name == "quick", overrides)


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


def _bytes(size: int) -> str:
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def describe_sizes(config: BenchConfig) -> str:
    """The sizes in one line: per lane and round, the small and bulk copies,
    then the lanes and rounds."""
    return (f"per lane and round {config.small_copies} x {_bytes(config.small_bytes)} small and "
            f"{config.bulk_copies} x {_bytes(config.bulk_bytes)} bulk copies, "
            f"{config.loaded_copies} bulk {'copy' if config.loaded_copies == 1 else 'copies'} "
            f"queued per lane before each loaded probe; {config.lanes} lanes, "
            f"{config.retained_streams} retained streams, {config.warmup} warm-up + "
            f"{config.samples} measured rounds; contention: "
            f"{config.kernel_launches} launches of {config.kernel_spin_ns} ns blocks, "
            f"{config.backlog_kernels} x {config.backlog_blocks}-block kernels and "
            f"{config.transfer_copies} x {_bytes(config.transfer_bytes)} transfers per "
            f"bulk lane, {config.compute_samples} compute and {config.transfer_samples} "
            f"transfer samples per probe")
