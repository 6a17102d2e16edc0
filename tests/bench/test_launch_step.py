"""The launch-bound step workload (hrx/bench/launch_step.py): its launch
plan is what the docstring says (21 launches of four kernels with several
grids, arguments that change every step); every version matches the numpy
reference on the device and fails its check, with no number, when a
kernel is wrong; the captured forms compute what the by-value forms do; and
the CuPy versions run as written against a stand-in for CuPy that launches
on hrx (arrays are hrx buffers, a capture records launches that its graph
replays), which is how they are checked where CuPy is not.
"""
from __future__ import annotations

import gc

from types import SimpleNamespace

import numpy as np
import pytest

from hrx.bench import launch_step
from hrx.bench.launch_step import (CAPTURED_KERNELS, CHECK_STEPS, KERNELS,
                                   CheckFailed, StepPlan, StepShape)

SMALL = StepShape(n=300, m=8, reps=3)
"""A shape whose chunks do not divide N and whose grids are partial."""

# (what is wrong, text of SOURCE, replacement, which forms it breaks)
WRONG_KERNELS = [
    ("axpy subtracts", "dst[i] = a * x[i] + src[i];",
     "dst[i] = a * x[i] - src[i];", "both"),
    ("axpy ignores the step", "return (float)((step & 7u) + 1u)",
     "return (float)(1u)", "both"),
    ("reduce drops a share", "for (unsigned int k = 0; k < blockDim.x; ++k)",
     "for (unsigned int k = 1; k < blockDim.x; ++k)", "both"),
    ("reduce drops each chunk's last float", "? begin + chunk : n",
     "? begin + chunk - 1u : n", "both"),
    ("matvec transposes", "a[r * m + c] * v[c]", "a[c * m + r] * v[c]",
     "both"),
    ("count adds 2", "counter[0] += 1u;", "counter[0] += 2u;", "both"),
    ("captured axpy keeps the roles", "odd ? y1 : y0, odd ? y0 : y1",
     "y0, y1", "captured"),
    ("captured reduce reads the source",
     "step_reduce_body(odd ? y0 : y1", "step_reduce_body(odd ? y1 : y0",
     "captured"),
    ("captured forms read no step", "unsigned int step = counter[0];",
     "unsigned int step = 0u;", "captured"),
]


def _wrong_source(old, new):
    assert launch_step.SOURCE.count(old) == 1, old
    return launch_step.SOURCE.replace(old, new)


# ------------------------------------------------------------------ plan

def _plan(shape=StepShape()):
    names = set(KERNELS) | set(CAPTURED_KERNELS)
    buffers = {name: name for name in launch_step.initial_state(shape)}
    return StepPlan(shape, {name: name for name in names}, buffers,
                    lambda name: [f"{name}[{j}]" for j in range(shape.reps)])


def test_a_step_is_21_launches_of_four_kernels_with_changing_arguments():
    plan = _plan()
    first, second = plan.step(6), plan.step(7)
    assert len(first) == len(second) == StepShape().launches_per_step == 21
    assert {launch[0] for launch in first} == set(KERNELS)
    assert len({(grid, block) for _, grid, block, _, _ in first}) >= 4
    # The same kernels and shapes every step; the arguments differ: the
    # step by value, and the two buffers in each other's places.
    assert [l[:3] for l in first] == [l[:3] for l in second]
    axpy = [(args[1], args[2], int(args[4])) for kernel, _, _, args, _
            in first if kernel == "step_axpy" and args[0] == "x"]
    axpy_next = [(args[1], args[2], int(args[4])) for kernel, _, _, args, _
                 in second if kernel == "step_axpy" and args[0] == "x"]
    assert axpy == [("y0", "y1", 6), ("y1", "y0", 6), ("y0", "y1", 6),
                    ("y1", "y0", 6), ("y0", "y1", 6)]
    assert axpy_next == [("y1", "y0", 7), ("y0", "y1", 7), ("y1", "y0", 7),
                         ("y0", "y1", 7), ("y1", "y0", 7)]
    assert first[-1] == ("step_count", (1,), (1,), ("counter",), 0)


def test_the_captured_step_has_the_same_shapes_and_fixed_arguments():
    plan = _plan()
    captured, by_value = plan.captured(), plan.step(0)
    assert len(captured) == 21
    assert {launch[0] for launch in captured} == set(CAPTURED_KERNELS)
    assert [l[1:3] + l[4:] for l in captured] == \
        [l[1:3] + l[4:] for l in by_value]
    # Every launch but the matrix product's (whose arguments never change)
    # reads the step from the counter.
    assert all("counter" in args for kernel, _, _, args, _ in captured
               if kernel != "step_matvec")


def test_the_reference_counts_steps_and_moves_every_buffer():
    state = launch_step.initial_state(SMALL)
    state["counter"][0] = 5
    after = launch_step.reference_steps(state, SMALL, 2)
    assert int(after["counter"][0]) == 7
    for name in ("y0", "y1", "partial", "h", "w"):
        assert not np.allclose(after[name], state[name]), name
    launch_step.compare(after, after, "itself")
    bent = dict(after, h=after["h"].copy())
    bent["h"][4] += 0.01 * max(1.0, np.abs(after["h"]).max())
    with pytest.raises(CheckFailed, match=r"h\[4\]"):
        launch_step.compare(bent, after, "bent")
    bent["h"][4] = np.nan
    with pytest.raises(CheckFailed, match=r"h\[4\] = nan"):
        launch_step.compare(bent, after, "nan")


# ------------------------------------------------------------- on hrx

@pytest.mark.parametrize("captured", [False, True],
                         ids=["by value", "captured"])
@pytest.mark.parametrize("shape", [StepShape(), SMALL],
                         ids=["default", "small"])
def test_the_step_matches_numpy_on_the_device(device, captured, shape):
    r = launch_step.hrx_step_rate(device, steps=7, warmup=2, shape=shape,
                                  captured=captured)
    assert r["steps"] == 7 and r["elapsed_ns"] > 0
    assert r["launches_per_step"] == shape.launches_per_step
    assert r["checked_steps"] == CHECK_STEPS
    # How the timed steps' launches went out (pool_stats): a share, and a
    # mean gathered batch of at least two wherever any was gathered.
    assert 0.0 <= r["share_batched"] <= 1.0, r
    assert (r["launches_per_batch"] >= 2.0) == (r["share_batched"] > 0), r


def test_the_step_says_nothing_was_gathered_with_batching_off(device):
    was = device.batching
    device.set_batching(False)
    try:
        r = launch_step.hrx_step_rate(device, steps=5, warmup=1, shape=SMALL)
    finally:
        device.set_batching(was)
    assert (r["launches_per_batch"], r["share_batched"]) == (0.0, 0.0), r


@pytest.mark.parametrize("captured", [False, True],
                         ids=["by value", "captured"])
@pytest.mark.parametrize("what,old,new,breaks", WRONG_KERNELS,
                         ids=[w[0] for w in WRONG_KERNELS])
def test_a_wrong_kernel_fails_the_check(device, what, old, new, breaks,
                                        captured):
    source = _wrong_source(old, new)
    if breaks == "captured" and not captured:
        # The by-value forms do not use it: the check still passes.
        launch_step.hrx_step_rate(device, steps=1, warmup=0, source=source,
                                  shape=SMALL)
        return
    with pytest.raises(CheckFailed, match="does not match|step counter"):
        launch_step.hrx_step_rate(device, steps=1, warmup=0, source=source,
                                  shape=SMALL, captured=captured)


def test_a_counter_that_stops_counting_fails_after_the_timed_steps(device):
    """The check's two steps pass; the counter then stays put."""
    source = _wrong_source("counter[0] += 1u;",
                           "if (counter[0] < 2u) counter[0] += 1u;")
    with pytest.raises(CheckFailed, match="step counter is 2 after 5 steps"):
        launch_step.hrx_step_rate(device, steps=2, warmup=1, source=source,
                                  shape=SMALL)


def test_bad_counts_are_refused(device):
    with pytest.raises(ValueError):
        launch_step.hrx_step_rate(device, steps=0)
    with pytest.raises(ValueError):
        StepShape(m=0)


# ----------------------------------------------- CuPy, on a stand-in

class _StandInCupy:
    """The part of CuPy's API launch_step uses, with CuPy's signatures
    (cupy.asarray, cupy.asnumpy(a, stream=None), cupy.RawModule(code=)
    .get_function(name), RawKernel(grid, block, args, *, shared_mem=0),
    cupy.cuda.Stream(non_blocking=True) as a context manager with
    synchronize, begin_capture(mode=None), end_capture() -> Graph,
    Graph.launch(stream=None), cupy.cuda.Device(index) and
    Device().synchronize()), run by an hrx device: each CuPy stream is an
    hrx stream, a capture records launches instead of making them, and a
    graph's launch makes them again."""

    def __init__(self, device):
        self.device = device
        self.launches = 0
        self.replays = 0
        self.captured = []
        null = self._Stream(self)
        self._current = [null]
        cupy = self

        class Device:
            def __init__(self, index=0):
                pass

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

            def synchronize(self):
                cupy.device.synchronize()

        self.cuda = SimpleNamespace(
            Stream=lambda non_blocking=False: self._Stream(self),
            Device=Device)

    class _Array:
        def __init__(self, buffer, dtype, size):
            self.buffer, self.dtype, self.size = buffer, dtype, size

        def __getitem__(self, where):
            start, stop, step = where.indices(self.size)
            assert step == 1
            item = self.dtype.itemsize
            return type(self)(self.buffer[start * item:stop * item],
                              self.dtype, stop - start)

    class _Stream:
        def __init__(self, cupy):
            self.cupy = cupy
            self.stream = cupy.device.stream()
            self.capture = None

        def __enter__(self):
            self.cupy._current.append(self)
            return self

        def __exit__(self, *exc):
            self.cupy._current.pop()
            return False

        def synchronize(self):
            assert self.capture is None, "a capturing stream was synchronized"
            self.stream.synchronize()

        def begin_capture(self, mode=None):
            assert self.capture is None
            self.capture = []

        def end_capture(self):
            launches, self.capture = self.capture, None
            self.cupy.captured.append(launches)
            return _StandInGraph(self.cupy, launches)

    class _Kernel:
        def __init__(self, cupy, kernel):
            self.cupy, self.kernel = cupy, kernel

        def __call__(self, grid, block, args, *, shared_mem=0):
            assert all(isinstance(x, tuple) for x in (grid, block, args))
            assert all(isinstance(a, (_StandInCupy._Array, np.generic))
                       for a in args), "arrays, or numpy scalars for C values"
            stream = self.cupy._current[-1]
            values = tuple(a.buffer if isinstance(a, _StandInCupy._Array)
                           else a for a in args)
            launch = (self.kernel, grid, block, values, shared_mem)
            if stream.capture is not None:
                stream.capture.append(launch)
            else:
                self.cupy.launches += 1
                stream.stream.launch(*launch)

    def RawModule(self, *, code):  # noqa: N802 - CuPy's name
        device = self.device
        cupy = self
        return SimpleNamespace(get_function=lambda name: cupy._Kernel(
            cupy, device.compile(code, name)))

    def asarray(self, array):
        stream = self._current[-1].stream
        buffer = self.device.allocate(array.nbytes)
        stream.upload(buffer, array)
        return self._Array(buffer, array.dtype, array.size)

    def asnumpy(self, array, stream=None):
        stream = (stream or self._current[-1]).stream
        return stream.read(array.buffer).wait().view(array.dtype)


class _StandInGraph:
    def __init__(self, cupy, launches):
        self.cupy, self.launches = cupy, launches

    def launch(self, stream=None):
        stream = stream or self.cupy._current[-1]
        self.cupy.replays += 1
        for launch in self.launches:
            stream.stream.launch(*launch)


@pytest.fixture
def stand_in(backend, device):
    if backend != "host":
        pytest.skip("the stand-in for CuPy runs on hrx's host backend")
    cupy = _StandInCupy(device)
    yield cupy
    # Its Device class refers back to it: a cycle that would keep the
    # device's streams, and so the device, open for tests after this one
    # that size a fresh pool (bench/test_workload.py) until a collection
    # (pytest holds the value itself until after this teardown).
    cupy.__dict__.clear()
    gc.collect()


def test_cupy_eager_launches_the_plan_and_checks_it(stand_in):
    r = launch_step.cupy_eager_step_rate(stand_in, steps=6, warmup=3,
                                         shape=SMALL)
    assert r["steps"] == 6 and r["elapsed_ns"] > 0
    assert stand_in.launches == SMALL.launches_per_step * (CHECK_STEPS + 9)
    assert stand_in.captured == []


def test_cupy_graph_captures_one_step_and_replays_it(stand_in):
    r = launch_step.cupy_graph_step_rate(stand_in, steps=6, warmup=3,
                                         shape=SMALL)
    assert r["steps"] == 6
    assert [len(c) for c in stand_in.captured] == [SMALL.launches_per_step]
    assert stand_in.launches == 0
    assert stand_in.replays == CHECK_STEPS + 9


@pytest.mark.parametrize("version", ["eager", "graph"])
def test_a_wrong_kernel_fails_the_cupy_versions(stand_in, version):
    run = {"eager": launch_step.cupy_eager_step_rate,
           "graph": launch_step.cupy_graph_step_rate}[version]
    source = _wrong_source("a[r * m + c] * v[c]", "a[c * m + r] * v[c]")
    with pytest.raises(CheckFailed, match=f"step, CuPy {version}"):
        run(stand_in, steps=1, warmup=0, shape=SMALL, source=source)
