/* hrx_kernel.h: what a kernel of hrx's host backend sees.
 *
 * Host kernels are C, compiled at run time by the system C compiler
 * (Device.compile / hrx_device_compile_kernel) into a shared object that
 * hrx loads. hrx includes this header in every host kernel source before
 * the source's first line (the compiler's -include), so a source needs no
 * #include of its own; including it again does nothing. The directory that
 * holds it is hrx.kernel_include_dir(), for editors and offline builds.
 *
 * A kernel is a function defined at file scope that returns void, e.g.
 *
 *   extern "C" __global__ void saxpy(const float* x, float* y, float a,
 *                                    int n) {
 *     int i = blockIdx.x * blockDim.x + threadIdx.x;
 *     if (i < n) y[i] = a * x[i] + y[i];
 *   }
 *
 * The same text compiles as CUDA or HIP. The CUDA dialect C lacks is given
 * here (the names below, unless HRX_KERNEL_NO_CUDA_NAMES is defined) or
 * rewritten by hrx in the preprocessed text before it is compiled, keeping
 * the source's line numbers: `extern "C"` and `extern "C" { ... }` are
 * dropped (C has one linkage), and `extern __shared__ T name[];` becomes
 * a pointer to the block's dynamic shared memory. C++ itself (templates,
 * references, overloading, classes) is not C and does not compile.
 * HRX_KERNEL is the kernel marker's own name; __global__ is defined as it.
 *
 * What runs: a launch of grid (gx, gy, gz) and block (bx, by, bz) calls the
 * kernel once per thread of every block. The blocks run on the host
 * device's engines, several at once where several engines are free; the
 * threads of one block run on one engine thread, in x, then y, then z
 * order. In a module whose source calls __syncthreads() anywhere, every
 * thread of a block runs as a fiber with its own stack, and a barrier
 * switches to the block's next thread until all its threads that have not
 * returned reached the barrier. In other modules each thread runs to its
 * end before the next starts (no fibers: the fast path).
 *
 * Inside a kernel (and functions it calls on the same thread):
 *   threadIdx, blockIdx   the thread's index within its block, the block's
 *                         index within the grid (hrx_dim3: .x .y .z)
 *   blockDim, gridDim     the block's and the grid's extents
 *   __shared__ T v[...];  one copy per block, seen by all its threads
 *                         (thread-local storage of the engine thread
 *                         running the block); not initialised per block
 *   extern __shared__ T v[];  the block's dynamic shared memory: the
 *                         launch's `shared` bytes, 64-byte aligned
 *   hrx_dynamic_shared    the same memory as a void* (NULL for 0 bytes)
 *   __syncthreads()       the block's barrier (above)
 *   atomicAdd, atomicSub, atomicExch, atomicMin, atomicMax, atomicCAS,
 *   atomicAnd, atomicOr, atomicXor, atomicInc, atomicDec
 *                         on the types CUDA declares them for (relaxed
 *                         atomics: blocks run on several threads at once)
 *   min, max, math.h, __fdividef, __expf, rsqrtf, __ldg, ...
 * Warp intrinsics (__shfl_sync, __ballot_sync, warpSize, ...) and the
 * reducing barriers (__syncthreads_count, _and, _or) refuse to compile,
 * naming themselves: host blocks have no warps. min and max are macros:
 * a source that defines its own function of either name #undefs it first.
 *
 * Arguments are the kernel's parameters, passed by value as declared: a
 * buffer or view is a pointer to its first byte (a host address on this
 * backend). A parameter of a type that C passes by value (int, double,
 * pointers, structs) works; variadic kernels do not.
 *
 * The rest of this header is hrx's side of the contract between its
 * launcher and the code it generates; kernels do not use it. */
#ifndef HRX_KERNEL_H_
#define HRX_KERNEL_H_

typedef struct hrx_dim3_s {
  unsigned int x, y, z;
} hrx_dim3;

/* One thread of a block run as a fiber, as the launcher's thread entry
 * sees it: its index and the barrier of its block (a call switches to the
 * block's next fiber and returns once every fiber of the block that has
 * not returned made the same call). */
typedef struct hrx_kernel_fiber_s {
  hrx_dim3 thread_idx;
  void (*barrier)(void* scheduler);
  void* scheduler;
} hrx_kernel_fiber_t;

/* hrx's backend includes this header for the launcher's types only. */
#ifndef HRX_KERNEL_ABI_ONLY

#include <math.h>
#include <stdbool.h>

/* The running thread's place in its launch. One per engine thread and per
 * module (static thread-local storage), written by the launcher before
 * each call of the kernel. */
typedef struct hrx_kernel_thread_s {
  hrx_dim3 thread_idx;
  hrx_dim3 block_idx;
  hrx_dim3 block_dim;
  hrx_dim3 grid_dim;
  void* shared;
  /* The barrier of the block's fibers (NULL on the fast path). */
  void (*barrier)(void* scheduler);
  void* scheduler;
} hrx_kernel_thread_t;

static __thread hrx_kernel_thread_t hrx_kernel_thread;

#define threadIdx (hrx_kernel_thread.thread_idx)
#define blockIdx (hrx_kernel_thread.block_idx)
#define blockDim (hrx_kernel_thread.block_dim)
#define gridDim (hrx_kernel_thread.grid_dim)
#define hrx_dynamic_shared (hrx_kernel_thread.shared)

/* The kernel marker. Kernels need not be visible outside their module: the
 * launcher hrx generates calls them from the same translation unit. */
#define HRX_KERNEL

/* The barrier: `barrier` is set by the launcher's thread entry of a
 * module that uses barriers. A fiber's own index is kept on its stack
 * across the switch: the engine thread's copy is the last fiber's. */
static __inline__ __attribute__((unused)) void hrx_kernel_sync_threads(void) {
  hrx_dim3 self = hrx_kernel_thread.thread_idx;
  if (!hrx_kernel_thread.barrier) __builtin_trap();
  hrx_kernel_thread.barrier(hrx_kernel_thread.scheduler);
  hrx_kernel_thread.thread_idx = self;
}

/* Atomics, as CUDA declares them (relaxed, like CUDA's). */
#define HRX_KERNEL_ATOMIC_FETCH(name, op, suffix, T)                       \
  static __inline__ __attribute__((unused)) T hrx_atomic_##name##_##suffix( \
      T* address, T value) {                                               \
    return __atomic_fetch_##op(address, value, __ATOMIC_RELAXED);          \
  }
#define HRX_KERNEL_ATOMIC_INTEGERS(name, op)                           \
  HRX_KERNEL_ATOMIC_FETCH(name, op, i, int)                            \
  HRX_KERNEL_ATOMIC_FETCH(name, op, u, unsigned int)                   \
  HRX_KERNEL_ATOMIC_FETCH(name, op, ull, unsigned long long)
HRX_KERNEL_ATOMIC_INTEGERS(add, add)
HRX_KERNEL_ATOMIC_INTEGERS(sub, sub)
HRX_KERNEL_ATOMIC_INTEGERS(and, and)
HRX_KERNEL_ATOMIC_INTEGERS(or, or)
HRX_KERNEL_ATOMIC_INTEGERS(xor, xor)

/* Exchange, compare-and-swap, and min, max, add of floats (CAS loops):
 * for any type of 4 or 8 bytes (the generic __atomic builtins). */
#define HRX_KERNEL_ATOMIC_EXCH(suffix, T)                                  \
  static __inline__ __attribute__((unused)) T hrx_atomic_exch_##suffix(    \
      T* address, T value) {                                               \
    T old;                                                                 \
    __atomic_exchange(address, &value, &old, __ATOMIC_RELAXED);            \
    return old;                                                            \
  }                                                                        \
  static __inline__ __attribute__((unused)) T hrx_atomic_cas_##suffix(     \
      T* address, T compare, T value) {                                    \
    __atomic_compare_exchange(address, &compare, &value, 0,                \
                              __ATOMIC_RELAXED, __ATOMIC_RELAXED);         \
    return compare; /* the old value, equal or not */                      \
  }
HRX_KERNEL_ATOMIC_EXCH(i, int)
HRX_KERNEL_ATOMIC_EXCH(u, unsigned int)
HRX_KERNEL_ATOMIC_EXCH(ull, unsigned long long)
HRX_KERNEL_ATOMIC_EXCH(f, float)
HRX_KERNEL_ATOMIC_EXCH(d, double)

/* old = *address; *address = next(old, value) as one atomic step. */
#define HRX_KERNEL_ATOMIC_UPDATE(name, suffix, T, next)                    \
  static __inline__ __attribute__((unused)) T hrx_atomic_##name##_##suffix( \
      T* address, T value) {                                               \
    T old, updated;                                                        \
    __atomic_load(address, &old, __ATOMIC_RELAXED);                        \
    do {                                                                   \
      updated = (next);                                                    \
    } while (!__atomic_compare_exchange(address, &old, &updated, 1,        \
                                        __ATOMIC_RELAXED,                  \
                                        __ATOMIC_RELAXED));                \
    return old;                                                            \
  }
HRX_KERNEL_ATOMIC_UPDATE(add, f, float, old + value)
HRX_KERNEL_ATOMIC_UPDATE(add, d, double, old + value)
#define HRX_KERNEL_ATOMIC_MIN_MAX(suffix, T)                               \
  HRX_KERNEL_ATOMIC_UPDATE(min, suffix, T, value < old ? value : old)      \
  HRX_KERNEL_ATOMIC_UPDATE(max, suffix, T, value > old ? value : old)
HRX_KERNEL_ATOMIC_MIN_MAX(i, int)
HRX_KERNEL_ATOMIC_MIN_MAX(u, unsigned int)
HRX_KERNEL_ATOMIC_MIN_MAX(ll, long long)
HRX_KERNEL_ATOMIC_MIN_MAX(ull, unsigned long long)
/* CUDA's wrapping increment and decrement of unsigned int. */
HRX_KERNEL_ATOMIC_UPDATE(inc, u, unsigned int, old >= value ? 0u : old + 1u)
HRX_KERNEL_ATOMIC_UPDATE(dec, u, unsigned int,
                         old == 0u || old > value ? value : old - 1u)

#ifndef HRX_KERNEL_NO_CUDA_NAMES
#define __global__ HRX_KERNEL
#define __device__
#define __host__
#define __constant__
/* One copy per engine thread, which runs one block at a time: per block. */
#define __shared__ static __thread
/* gnu_inline: the definition is emitted where a call is not inlined. */
#define __forceinline__ __inline__ __attribute__((always_inline, gnu_inline))
#define __noinline__ __attribute__((noinline))
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __syncthreads() hrx_kernel_sync_threads()
#define __threadfence() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define __threadfence_block() __atomic_thread_fence(__ATOMIC_SEQ_CST)

#define HRX_KERNEL_INTEGER_ATOMIC(name, p)              \
  _Generic((p), int*: hrx_atomic_##name##_i,            \
           unsigned int*: hrx_atomic_##name##_u,        \
           unsigned long long*: hrx_atomic_##name##_ull)
#define atomicAdd(p, v)                                              \
  _Generic((p), int*: hrx_atomic_add_i, unsigned int*: hrx_atomic_add_u, \
           unsigned long long*: hrx_atomic_add_ull,                      \
           float*: hrx_atomic_add_f, double*: hrx_atomic_add_d)((p), (v))
#define atomicSub(p, v) HRX_KERNEL_INTEGER_ATOMIC(sub, p)((p), (v))
#define atomicAnd(p, v) HRX_KERNEL_INTEGER_ATOMIC(and, p)((p), (v))
#define atomicOr(p, v) HRX_KERNEL_INTEGER_ATOMIC(or, p)((p), (v))
#define atomicXor(p, v) HRX_KERNEL_INTEGER_ATOMIC(xor, p)((p), (v))
#define atomicExch(p, v)                                                   \
  _Generic((p), int*: hrx_atomic_exch_i, unsigned int*: hrx_atomic_exch_u, \
           unsigned long long*: hrx_atomic_exch_ull,                       \
           float*: hrx_atomic_exch_f)((p), (v))
#define atomicCAS(p, c, v) HRX_KERNEL_INTEGER_ATOMIC(cas, p)((p), (c), (v))
#define atomicMin(p, v)                                                  \
  _Generic((p), int*: hrx_atomic_min_i, unsigned int*: hrx_atomic_min_u, \
           long long*: hrx_atomic_min_ll,                                \
           unsigned long long*: hrx_atomic_min_ull)((p), (v))
#define atomicMax(p, v)                                                  \
  _Generic((p), int*: hrx_atomic_max_i, unsigned int*: hrx_atomic_max_u, \
           long long*: hrx_atomic_max_ll,                                \
           unsigned long long*: hrx_atomic_max_ull)((p), (v))
#define atomicInc(p, v) hrx_atomic_inc_u((p), (v))
#define atomicDec(p, v) hrx_atomic_dec_u((p), (v))

/* min and max of any arithmetic types, after the usual conversions (as
 * CUDA's overloads), each argument evaluated once. */
#define min(a, b)                                                  \
  __extension__({                                                  \
    __typeof__((a) + (b)) hrx_min_a_ = (a), hrx_min_b_ = (b);      \
    hrx_min_b_ < hrx_min_a_ ? hrx_min_b_ : hrx_min_a_;             \
  })
#define max(a, b)                                                  \
  __extension__({                                                  \
    __typeof__((a) + (b)) hrx_max_a_ = (a), hrx_max_b_ = (b);      \
    hrx_max_b_ > hrx_max_a_ ? hrx_max_b_ : hrx_max_a_;             \
  })

/* Fast-math and load intrinsics: the plain C operations here. */
#define __ldg(p) (*(p))
#define __fdividef(a, b) ((float)(a) / (float)(b))
#define __expf(x) expf(x)
#define __logf(x) logf(x)
#define __log2f(x) log2f(x)
#define __sinf(x) sinf(x)
#define __cosf(x) cosf(x)
#define __powf(x, y) powf((x), (y))
#define __fsqrt_rn(x) sqrtf(x)
#define __saturatef(x) fminf(fmaxf((x), 0.0f), 1.0f)
#define rsqrtf(x) (1.0f / sqrtf(x))
#define rsqrt(x) (1.0 / sqrt(x))
static __inline__ __attribute__((unused)) int __float_as_int(float x) {
  int i;
  __builtin_memcpy(&i, &x, sizeof(i));
  return i;
}
static __inline__ __attribute__((unused)) unsigned int __float_as_uint(
    float x) {
  unsigned int i;
  __builtin_memcpy(&i, &x, sizeof(i));
  return i;
}
static __inline__ __attribute__((unused)) float __int_as_float(int i) {
  float x;
  __builtin_memcpy(&x, &i, sizeof(x));
  return x;
}
static __inline__ __attribute__((unused)) float __uint_as_float(
    unsigned int i) {
  float x;
  __builtin_memcpy(&x, &i, sizeof(x));
  return x;
}

/* Warp intrinsics refuse to compile, naming themselves: a host block's
 * threads run on one engine thread and form no warps. */
#if defined(__GNUC__)
#define HRX_KERNEL_NO_WARP(name)                                           \
  int hrx_kernel_warp_##name(void) __attribute__((error(                   \
      #name " is a warp intrinsic: host kernels have no warps (the "       \
      "threads of a block run on one engine thread); see hrx_kernel.h")));
HRX_KERNEL_NO_WARP(__shfl_sync)
HRX_KERNEL_NO_WARP(__shfl_up_sync)
HRX_KERNEL_NO_WARP(__shfl_down_sync)
HRX_KERNEL_NO_WARP(__shfl_xor_sync)
HRX_KERNEL_NO_WARP(__shfl)
HRX_KERNEL_NO_WARP(__shfl_up)
HRX_KERNEL_NO_WARP(__shfl_down)
HRX_KERNEL_NO_WARP(__shfl_xor)
HRX_KERNEL_NO_WARP(__ballot_sync)
HRX_KERNEL_NO_WARP(__any_sync)
HRX_KERNEL_NO_WARP(__all_sync)
HRX_KERNEL_NO_WARP(__activemask)
HRX_KERNEL_NO_WARP(__syncwarp)
HRX_KERNEL_NO_WARP(warpSize)
#define __shfl_sync(...) hrx_kernel_warp___shfl_sync()
#define __shfl_up_sync(...) hrx_kernel_warp___shfl_up_sync()
#define __shfl_down_sync(...) hrx_kernel_warp___shfl_down_sync()
#define __shfl_xor_sync(...) hrx_kernel_warp___shfl_xor_sync()
#define __shfl(...) hrx_kernel_warp___shfl()
#define __shfl_up(...) hrx_kernel_warp___shfl_up()
#define __shfl_down(...) hrx_kernel_warp___shfl_down()
#define __shfl_xor(...) hrx_kernel_warp___shfl_xor()
#define __ballot_sync(...) hrx_kernel_warp___ballot_sync()
#define __any_sync(...) hrx_kernel_warp___any_sync()
#define __all_sync(...) hrx_kernel_warp___all_sync()
#define __activemask(...) hrx_kernel_warp___activemask()
#define __syncwarp(...) hrx_kernel_warp___syncwarp()
#define warpSize (hrx_kernel_warp_warpSize())
/* Barriers that also reduce a predicate: not given (only __syncthreads). */
#define HRX_KERNEL_NO_REDUCING_BARRIER(name)                               \
  int hrx_kernel_barrier_##name(void) __attribute__((error(                \
      #name " is not supported by host kernels: use __syncthreads with a " \
      "__shared__ counter and atomicAdd; see hrx_kernel.h")));
HRX_KERNEL_NO_REDUCING_BARRIER(__syncthreads_count)
HRX_KERNEL_NO_REDUCING_BARRIER(__syncthreads_and)
HRX_KERNEL_NO_REDUCING_BARRIER(__syncthreads_or)
#define __syncthreads_count(...) hrx_kernel_barrier___syncthreads_count()
#define __syncthreads_and(...) hrx_kernel_barrier___syncthreads_and()
#define __syncthreads_or(...) hrx_kernel_barrier___syncthreads_or()
#endif
#endif /* HRX_KERNEL_NO_CUDA_NAMES */

#endif /* HRX_KERNEL_ABI_ONLY */

/* ---------------------------------------------------------------- launcher
 *
 * For each kernel named when compiling, hrx appends to the preprocessed
 * source a struct of its parameters (declared with their own text) and a
 * layout, an entry point and a thread entry that the backend finds with
 * dlsym:
 *   const hrx_kernel_layout_t hrx_kernel_layout__NAME;
 *   const hrx_kernel_thread_entry_t hrx_kernel_threads__NAME;
 * and once per module the markers
 *   const unsigned int hrx_kernel_module_abi = HRX_KERNEL_ABI;
 *   const unsigned int hrx_kernel_module_barriers;  (1: the source calls
 *       __syncthreads, so blocks run through the thread entry as fibers;
 *       0: through the layout's entry)
 * (the literal values). */
#define HRX_KERNEL_ABI 2

/* One block of a launch, as the entry runs it. */
typedef struct hrx_kernel_block_s {
  hrx_dim3 block_idx;
  hrx_dim3 block_dim;
  hrx_dim3 grid_dim;
  void* shared;
} hrx_kernel_block_t;

/* Runs every thread of one block with the parameters at `params` (a
 * struct laid out as the layout's offsets say). */
typedef void (*hrx_kernel_entry_t)(const void* params,
                                   const hrx_kernel_block_t* block);

/* Runs one thread of one block, `fiber->thread_idx`, on the fiber the
 * backend made for it; its barrier calls fiber->barrier. */
typedef void (*hrx_kernel_thread_entry_t)(const void* params,
                                          const hrx_kernel_block_t* block,
                                          const hrx_kernel_fiber_t* fiber);

typedef struct hrx_kernel_layout_s {
  unsigned int abi;                  /* HRX_KERNEL_ABI */
  unsigned int param_count;
  unsigned int params_size;          /* sizeof the parameter struct */
  unsigned int params_align;         /* its alignment */
  const unsigned int* param_offset;  /* [param_count] */
  const unsigned int* param_size;    /* [param_count] */
  hrx_kernel_entry_t entry;
} hrx_kernel_layout_t;

#endif /* HRX_KERNEL_H_ */
