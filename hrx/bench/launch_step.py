"""A launch-bound step workload: each step is a short run of small kernels
of four kinds, with grids of several shapes and arguments that change
every step, as a solver's or a model's inner loop makes them. It measures
what launching costs when the launches are not all alike, beside the tiny
kernel of ``hrx.bench.kernel_launches``.

One step ``s`` (``StepShape``: N floats, an M x M matrix, ``reps``
repetitions; defaults 4096, 64, 5) runs, for each repetition j:

  step_axpy     dst = a(s) * x + src over N floats, where (src, dst) is
                (y0, y1) or (y1, y0) by the parity of s * reps + j: the
                two buffers change roles at every launch, so with an odd
                ``reps`` a step's buffer arguments are swapped against the
                step before; grid N/256 of 256 threads
  step_reduce   partial_j[b] = the sum of dst's b-th chunk of N/M floats,
                for b < M: each thread adds a strided share, one thread
                adds the block's shares; grid M of 64 threads
  step_matvec   h_j = A partial_j (an M x M matrix, one thread a row);
                grid M/32 of 32 threads
  step_axpy     w = a(s) * h_j + w over M floats; grid M/64 of 64 threads

then ``step_count`` adds 1 to a step counter in device memory (one thread):
4 * reps + 1 launches, 21 by default. ``a(s) = (s mod 8 + 1) / 256``; the
elementwise kernels get ``s`` by value and compute it. Every version runs
the same source (``SOURCE``: CUDA or HIP C++ on a GPU, C on hrx's host
backend, where a block's threads run one after another when the source
has no barrier, so its last thread adds the shares instead of thread 0
after a barrier, which would run the block's threads as fibers).

``StepPlan`` lists a step's launches for either API. Three ways of
running it, each timing ``steps`` steps on one stream from one Python
thread after ``warmup`` steps, synchronized at both ends:

  hrx_step_rate          Stream.launch per kernel, step and buffers passed
                         by value each step
  cupy_eager_step_rate   the same kernels through cupy.RawKernel
  cupy_graph_step_rate   one step captured once with CuPy's stream capture
                         (Stream.begin_capture / end_capture) and replayed
                         with Graph.launch. A replay cannot change its
                         arguments, so the captured step uses the
                         ``*_at`` forms of the elementwise and reduction
                         kernels: they read the step from the counter that
                         step_count advances on the device and pick the
                         buffer roles from it, which computes the same as
                         the by-value forms. ``hrx_step_rate(...,
                         captured=True)`` launches those forms one by one
                         with the captured arguments, which checks them on
                         hrx's host backend, where CuPy does not run.

Each first runs ``CHECK_STEPS`` steps from a known state and compares
every buffer with ``reference_steps`` (numpy, float64, within
``TOLERANCE`` of each buffer's largest value): a mismatch raises
``CheckFailed``, never a number; after the timed steps the counter must
have counted every step. Each returns ``{"steps", "elapsed_ns",
"launches_per_step", "checked_steps"}``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

__all__ = ["SOURCE", "KERNELS", "CAPTURED_KERNELS", "StepShape",
           "CheckFailed", "CHECK_STEPS", "TOLERANCE", "initial_state",
           "step_scale", "reference_steps", "compare", "StepPlan",
           "hrx_step_rate", "cupy_eager_step_rate", "cupy_graph_step_rate"]

SOURCE = r"""
#ifdef __cplusplus
extern "C" {
/* A GPU: every thread writes its share, the block waits, thread 0 adds. */
#define STEP_SCRATCH(name) extern __shared__ float name[]
#define STEP_BARRIER() __syncthreads()
#define STEP_ADDS_SHARES(t) ((t) == 0u)
#else
/* hrx's host backend: without a barrier a block's threads run one after
 * another (its fast path), so the last one sees every share. */
#define STEP_SCRATCH(name) float* name = (float*)hrx_dynamic_shared
#define STEP_BARRIER()
#define STEP_ADDS_SHARES(t) ((t) == blockDim.x - 1u)
#endif

/* a(s) = (s mod 8 + 1) / 256, exact in float. */
static __device__ float step_scale(unsigned int step) {
  return (float)((step & 7u) + 1u) * (1.0f / 256.0f);
}

static __device__ void step_axpy_body(const float* x, const float* src,
                                      float* dst, unsigned int n, float a) {
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = a * x[i] + src[i];
}

/* partial[block] = the sum of src[block * chunk, +chunk) within n. The
 * block's threads all reach the barrier. */
static __device__ void step_reduce_body(const float* src, float* partial,
                                        unsigned int n, unsigned int chunk,
                                        float* shares) {
  unsigned int t = threadIdx.x;
  unsigned int begin = blockIdx.x * chunk;
  unsigned int end = begin + chunk < n ? begin + chunk : n;
  float sum = 0.0f;
  for (unsigned int i = begin + t; i < end; i += blockDim.x) sum += src[i];
  shares[t] = sum;
  STEP_BARRIER();
  if (STEP_ADDS_SHARES(t)) {
    float total = 0.0f;
    for (unsigned int k = 0; k < blockDim.x; ++k) total += shares[k];
    partial[blockIdx.x] = total;
  }
}

__global__ void step_axpy(const float* x, const float* src, float* dst,
                          unsigned int n, unsigned int step) {
  step_axpy_body(x, src, dst, n, step_scale(step));
}

/* Shared memory: blockDim.x floats. */
__global__ void step_reduce(const float* src, float* partial, unsigned int n,
                            unsigned int chunk) {
  STEP_SCRATCH(shares);
  step_reduce_body(src, partial, n, chunk, shares);
}

__global__ void step_matvec(const float* a, const float* v, float* h,
                            unsigned int m) {
  unsigned int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= m) return;
  float sum = 0.0f;
  for (unsigned int c = 0; c < m; ++c) sum += a[r * m + c] * v[c];
  h[r] = sum;
}

__global__ void step_count(unsigned int* counter) {
  if (blockIdx.x == 0u && threadIdx.x == 0u) counter[0] += 1u;
}

/* The captured step's forms: the step comes from the counter, and the
 * roles of y0 and y1 from the parity of step * reps + rep, as the host
 * chooses them for the by-value forms. */
__global__ void step_axpy_at(const float* x, float* y0, float* y1,
                             unsigned int n, const unsigned int* counter,
                             unsigned int rep, unsigned int reps) {
  unsigned int step = counter[0];
  unsigned int odd = (step * reps + rep) & 1u;
  step_axpy_body(x, odd ? y1 : y0, odd ? y0 : y1, n, step_scale(step));
}

__global__ void step_reduce_at(const float* y0, const float* y1,
                               float* partial, unsigned int n,
                               unsigned int chunk,
                               const unsigned int* counter, unsigned int rep,
                               unsigned int reps) {
  STEP_SCRATCH(shares);
  unsigned int odd = (counter[0] * reps + rep) & 1u;
  step_reduce_body(odd ? y0 : y1, partial, n, chunk, shares);
}

#ifdef __cplusplus
}
#endif
"""
"""The step's kernels, one text for every kernel language."""

KERNELS = ("step_axpy", "step_reduce", "step_matvec", "step_count")
"""The kernels of a step launched one by one (arguments by value)."""

CAPTURED_KERNELS = ("step_axpy_at", "step_reduce_at", "step_matvec",
                    "step_count")
"""The kernels of the captured step (the step read from the counter)."""

AXPY_BLOCK = 256
REDUCE_BLOCK = 64
MATVEC_BLOCK = 32
SMALL_AXPY_BLOCK = 64

CHECK_STEPS = 2
"""Steps run from the known state and compared before timing: two, so
that the second finds its buffers swapped and its step advanced."""

TOLERANCE = 1e-4
"""A buffer matches its reference when every element is within this
fraction of the reference's largest magnitude (at least 1): the GPU adds
in another order than numpy and may fuse multiply-adds."""


class CheckFailed(RuntimeError):
    """A version of the step computed something other than the reference."""


@dataclass(frozen=True)
class StepShape:
    n: int = 4096      # floats of x, y0, y1
    m: int = 64        # rows and columns of A; partial sums per reduction
    reps: int = 5      # repetitions of the four launches per step

    def __post_init__(self) -> None:
        if self.n < 1 or self.m < 1 or self.reps < 1:
            raise ValueError("n, m and reps must be >= 1")

    @property
    def chunk(self) -> int:
        """Floats each reduction block adds."""
        return -(-self.n // self.m)

    @property
    def launches_per_step(self) -> int:
        return 4 * self.reps + 1


def step_scale(step: int) -> float:
    """a(s), as the kernels compute it."""
    return ((step & 7) + 1) / 256.0


def initial_state(shape: StepShape, seed: int = 0) -> Dict[str, np.ndarray]:
    """The known state every check starts from (float32 buffers, the
    counter at 0). ``partial`` and ``h`` hold one row per repetition."""
    rng = np.random.default_rng(seed)
    n, m = shape.n, shape.m

    def uniform(*size: int, scale: float = 1.0) -> np.ndarray:
        return (rng.uniform(-1.0, 1.0, size) * scale).astype(np.float32)

    return {
        "x": uniform(n), "y0": uniform(n), "y1": uniform(n),
        "a": uniform(m * m, scale=1.0 / np.sqrt(m)),
        "partial": np.zeros(shape.reps * m, np.float32),
        "h": np.zeros(shape.reps * m, np.float32),
        "w": uniform(m),
        "counter": np.zeros(1, np.uint32),
    }


def reference_steps(state: Dict[str, np.ndarray], shape: StepShape,
                    steps: int) -> Dict[str, np.ndarray]:
    """What ``steps`` steps from ``state`` (its counter is the first step)
    leave in every buffer, computed with numpy in float64."""
    n, m, reps, chunk = shape.n, shape.m, shape.reps, shape.chunk
    f64 = np.float64
    x = state["x"].astype(f64)
    y = [state["y0"].astype(f64), state["y1"].astype(f64)]
    a = state["a"].astype(f64).reshape(m, m)
    partial = state["partial"].astype(f64).reshape(reps, m)
    h = state["h"].astype(f64).reshape(reps, m)
    w = state["w"].astype(f64)
    first = int(state["counter"][0])
    padded = np.zeros(m * chunk, f64)
    for step in range(first, first + steps):
        scale = step_scale(step)
        for rep in range(reps):
            odd = (step * reps + rep) & 1
            src, dst = (1, 0) if odd else (0, 1)
            y[dst] = scale * x + y[src]
            padded[:n] = y[dst]
            partial[rep] = padded.reshape(m, chunk).sum(axis=1)
            h[rep] = a @ partial[rep]
            w = scale * h[rep] + w
    return {"x": x, "y0": y[0], "y1": y[1], "a": a.reshape(-1),
            "partial": partial.reshape(-1), "h": h.reshape(-1), "w": w,
            "counter": np.array([first + steps], np.uint32)}


def compare(got: Dict[str, np.ndarray], want: Dict[str, np.ndarray],
            what: str) -> None:
    """Raises CheckFailed naming every buffer of ``got`` that is not
    within TOLERANCE of ``want`` (the counter exactly)."""
    wrong: List[str] = []
    for name, expected in want.items():
        actual = np.asarray(got[name])
        if name == "counter":
            if int(actual[0]) != int(expected[0]):
                wrong.append(f"counter {int(actual[0])}, expected "
                             f"{int(expected[0])}")
            continue
        actual = actual.astype(np.float64)
        limit = TOLERANCE * max(1.0, float(np.abs(expected).max()))
        error = np.abs(actual - expected)
        if not (error <= limit).all():   # NaN counts as wrong
            index = int(np.argmax(np.where(np.isnan(error), np.inf, error)))
            wrong.append(f"{name}[{index}] = {float(actual[index]):.9g}, "
                         f"expected {float(expected[index]):.9g} (within "
                         f"{limit:.3g})")
    if wrong:
        raise CheckFailed(f"{what}: the step workload does not match its "
                          f"numpy reference: {'; '.join(wrong)}")


# ---------------------------------------------------------------- launches

Launch = Tuple[Any, Tuple[int], Tuple[int], Tuple[Any, ...], int]
"""(kernel, grid, block, args, dynamic shared bytes): one launch of a
step, in the form both hrx (``Stream.launch``) and CuPy (``RawKernel``)
take."""


def _blocks(count: int, block: int) -> Tuple[int]:
    return (-(-count // block),)


class StepPlan:
    """The launches of a step over one set of buffers, for whichever API
    launches them. ``kernels`` maps every name of KERNELS and
    CAPTURED_KERNELS used to that API's kernel; ``buffers`` every name of
    ``initial_state`` to that API's buffer; ``rows(name)`` gives the
    per-repetition views of ``partial`` and ``h``."""

    def __init__(self, shape: StepShape, kernels: Dict[str, Any],
                 buffers: Dict[str, Any],
                 rows: Callable[[str], List[Any]]) -> None:
        self.shape = shape
        self._kernels = kernels
        self._buffers = buffers
        self._partial = rows("partial")
        self._h = rows("h")
        u32 = np.uint32
        self._n, self._m = u32(shape.n), u32(shape.m)
        self._chunk, self._reps = u32(shape.chunk), u32(shape.reps)

    def step(self, step: int) -> List[Launch]:
        """Step ``step`` with its arguments by value (KERNELS)."""
        k, b, shape = self._kernels, self._buffers, self.shape
        x, w, a, y = b["x"], b["w"], b["a"], (b["y0"], b["y1"])
        s = np.uint32(step)
        launches: List[Launch] = []
        for j in range(shape.reps):
            odd = (step * shape.reps + j) & 1
            src, dst = (y[1], y[0]) if odd else (y[0], y[1])
            partial, h = self._partial[j], self._h[j]
            launches += [
                (k["step_axpy"], _blocks(shape.n, AXPY_BLOCK), (AXPY_BLOCK,),
                 (x, src, dst, self._n, s), 0),
                (k["step_reduce"], (shape.m,), (REDUCE_BLOCK,),
                 (dst, partial, self._n, self._chunk), 4 * REDUCE_BLOCK),
                (k["step_matvec"], _blocks(shape.m, MATVEC_BLOCK),
                 (MATVEC_BLOCK,), (a, partial, h, self._m), 0),
                (k["step_axpy"], _blocks(shape.m, SMALL_AXPY_BLOCK),
                 (SMALL_AXPY_BLOCK,), (h, w, w, self._m, s), 0)]
        launches.append((k["step_count"], (1,), (1,), (b["counter"],), 0))
        return launches

    def captured(self) -> List[Launch]:
        """Any step, its arguments fixed: the step comes from the device
        counter (CAPTURED_KERNELS), as a captured graph needs."""
        k, b, shape = self._kernels, self._buffers, self.shape
        x, w, a, counter = b["x"], b["w"], b["a"], b["counter"]
        y0, y1 = b["y0"], b["y1"]
        launches: List[Launch] = []
        for j in range(shape.reps):
            rep = np.uint32(j)
            partial, h = self._partial[j], self._h[j]
            launches += [
                (k["step_axpy_at"], _blocks(shape.n, AXPY_BLOCK),
                 (AXPY_BLOCK,),
                 (x, y0, y1, self._n, counter, rep, self._reps), 0),
                (k["step_reduce_at"], (shape.m,), (REDUCE_BLOCK,),
                 (y0, y1, partial, self._n, self._chunk, counter, rep,
                  self._reps), 4 * REDUCE_BLOCK),
                (k["step_matvec"], _blocks(shape.m, MATVEC_BLOCK),
                 (MATVEC_BLOCK,), (a, partial, h, self._m), 0),
                (k["step_axpy_at"], _blocks(shape.m, SMALL_AXPY_BLOCK),
                 (SMALL_AXPY_BLOCK,),
                 (h, w, w, self._m, counter, rep, self._reps), 0)]
        launches.append((k["step_count"], (1,), (1,), (counter,), 0))
        return launches


def _result(shape: StepShape, steps: int, elapsed_ns: int) -> Dict[str, Any]:
    return {"steps": steps, "elapsed_ns": elapsed_ns,
            "launches_per_step": shape.launches_per_step,
            "checked_steps": CHECK_STEPS}


def _check_counts(steps: int, warmup: int) -> None:
    if steps < 1 or warmup < 0:
        raise ValueError("steps must be >= 1 and warmup >= 0")


def _measure(run: Callable[[int, int], None], synchronize: Callable[[], None],
             read: Callable[[], Dict[str, np.ndarray]], shape: StepShape,
             steps: int, warmup: int, what: str,
             tally: Optional[Callable[[], Tuple[int, int, int]]] = None
             ) -> Dict[str, Any]:
    """The check (CHECK_STEPS steps from the known state, which the buffers
    hold, against the reference), then ``warmup`` steps, then ``steps``
    timed ones, then the counter's check. ``run(first, count)`` submits
    steps first.. first+count-1; ``read()`` synchronizes and returns every
    buffer. ``tally()``, where given, returns (commands submitted, batches
    published, commands batched) so far; their changes over the timed
    steps become the result's ``launches_per_batch`` (the mean gathered
    batch) and ``share_batched`` (the launches that went out in one)."""
    run(0, CHECK_STEPS)
    compare(read(), reference_steps(initial_state(shape), shape,
                                    CHECK_STEPS), what)
    run(CHECK_STEPS, warmup)
    synchronize()
    before = tally() if tally else None
    start = time.perf_counter_ns()
    run(CHECK_STEPS + warmup, steps)
    synchronize()
    elapsed = time.perf_counter_ns() - start
    after = tally() if tally else None
    counted = int(read()["counter"][0])
    if counted != CHECK_STEPS + warmup + steps:
        raise CheckFailed(f"{what}: the step counter is {counted} after "
                          f"{CHECK_STEPS + warmup + steps} steps")
    result = _result(shape, steps, elapsed)
    if before is not None and after is not None:
        commands, batches, batched = (a - b for a, b in zip(after, before))
        result["launches_per_batch"] = batched / batches if batches else 0.0
        result["share_batched"] = batched / commands if commands else 0.0
    return result


def pool_tally(device: Any) -> Tuple[int, int, int]:
    """(commands submitted, batches published, commands batched) over every
    queue of the device's pool (``Device.pool_stats``)."""
    queues = device.pool_stats()["queues"]
    return (sum(q["commands_submitted"] for q in queues),
            sum(q["batches_published"] for q in queues),
            sum(q["commands_batched"] for q in queues))


# ------------------------------------------------------------------ hrx

def hrx_step_rate(device: Any, *, steps: int = 5000, warmup: int = 100,
                  shape: StepShape = StepShape(), source: str = SOURCE,
                  captured: bool = False) -> Dict[str, Any]:
    """The step through ``Stream.launch`` on one pool stream of ``device``
    (see the module's docstring). With ``captured``, every step launches
    the captured step's kernels and fixed arguments instead (what a graph
    replay runs, one launch at a time): how the host backend checks the
    captured forms."""
    _check_counts(steps, warmup)
    names = CAPTURED_KERNELS if captured else KERNELS
    kernels = {name: device.compile(source, name) for name in names}
    state = initial_state(shape)
    stream = device.stream()
    try:
        buffers = {name: device.allocate(array.nbytes)
                   for name, array in state.items()}
        for name, array in state.items():
            stream.upload(buffers[name], array)
        row = 4 * shape.m
        plan = StepPlan(shape, kernels, buffers, lambda name: [
            buffers[name][row * j:row * (j + 1)] for j in range(shape.reps)])
        launch = stream.launch
        if captured:
            fixed = plan.captured()

            def run(first: int, count: int) -> None:
                for _ in range(count):
                    for kernel, grid, block, args, shared in fixed:
                        launch(kernel, grid, block, args, shared)
        else:
            def run(first: int, count: int) -> None:
                for step in range(first, first + count):
                    for kernel, grid, block, args, shared in plan.step(step):
                        launch(kernel, grid, block, args, shared)

        def read() -> Dict[str, np.ndarray]:
            return {name: stream.read(buffer).wait().view(state[name].dtype)
                    for name, buffer in buffers.items()}

        what = ("step, hrx Stream.launch" +
                (" of the captured step" if captured else ""))
        return _measure(run, stream.synchronize, read, shape, steps, warmup,
                        what, tally=lambda: pool_tally(device))
    finally:
        stream.close()


# ----------------------------------------------------------------- CuPy

def _cupy_plan(cupy: Any, shape: StepShape, source: str,
               names: Sequence[str]) -> Tuple[StepPlan, Dict[str, Any]]:
    """The plan over the known state on CuPy's current device, its kernels
    loaded now (not at their first launch, which may be inside a capture),
    everything synchronized."""
    module = cupy.RawModule(code=source)
    kernels = {name: module.get_function(name) for name in names}
    arrays = {name: cupy.asarray(array)
              for name, array in initial_state(shape).items()}
    cupy.cuda.Device().synchronize()
    m = shape.m
    plan = StepPlan(shape, kernels, arrays, lambda name: [
        arrays[name][m * j:m * (j + 1)] for j in range(shape.reps)])
    return plan, arrays


def _cupy_read(cupy: Any, stream: Any, arrays: Dict[str, Any]):
    def read() -> Dict[str, np.ndarray]:
        stream.synchronize()
        return {name: cupy.asnumpy(array, stream=stream)
                for name, array in arrays.items()}
    return read


def cupy_eager_step_rate(cupy: Any, *, steps: int = 5000, warmup: int = 100,
                         shape: StepShape = StepShape(),
                         source: str = SOURCE) -> Dict[str, Any]:
    """The step through ``cupy.RawKernel`` calls on a non-blocking stream
    of CuPy's current device (``cupy`` is the imported module)."""
    _check_counts(steps, warmup)
    plan, arrays = _cupy_plan(cupy, shape, source, KERNELS)
    stream = cupy.cuda.Stream(non_blocking=True)

    def run(first: int, count: int) -> None:
        for step in range(first, first + count):
            for kernel, grid, block, args, shared in plan.step(step):
                kernel(grid, block, args, shared_mem=shared)

    with stream:
        return _measure(run, stream.synchronize,
                        _cupy_read(cupy, stream, arrays), shape, steps,
                        warmup, "step, CuPy eager")


def cupy_graph_step_rate(cupy: Any, *, steps: int = 5000, warmup: int = 100,
                         shape: StepShape = StepShape(),
                         source: str = SOURCE) -> Dict[str, Any]:
    """One step captured with CuPy's stream capture and replayed with
    ``Graph.launch`` once per step; the captured kernels take the step from
    the device counter (see the module's docstring)."""
    _check_counts(steps, warmup)
    plan, arrays = _cupy_plan(cupy, shape, source, CAPTURED_KERNELS)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        try:
            for kernel, grid, block, args, shared in plan.captured():
                kernel(grid, block, args, shared_mem=shared)
        except BaseException:
            stream.end_capture()   # the launch's error is the one to see
            raise
        graph = stream.end_capture()

        def run(first: int, count: int) -> None:
            launch = graph.launch
            for _ in range(count):   # the step comes from the counter
                launch(stream)

        return _measure(run, stream.synchronize,
                        _cupy_read(cupy, stream, arrays), shape, steps,
                        warmup, "step, CuPy graph replay")
