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
 *   __global__ void saxpy(const float* x, float* y, float a, int n) {
 *     int i = blockIdx.x * blockDim.x + threadIdx.x;
 *     if (i < n) y[i] = a * x[i] + y[i];
 *   }
 *
 * The same text compiles as CUDA or HIP (with extern "C" before it there,
 * under #ifdef __cplusplus). HRX_KERNEL is the marker's own name;
 * __global__ is defined as it unless HRX_KERNEL_NO_CUDA_NAMES is defined.
 *
 * What runs: a launch of grid (gx, gy, gz) and block (bx, by, bz) calls the
 * kernel once per thread of every block. The blocks run on the host
 * device's engines, several at once where several engines are free; the
 * threads of one block run one after another, in x, then y, then z order,
 * on one engine thread. So a block has no barrier (__syncthreads refuses
 * to compile), and threads of a block must not wait for each other.
 *
 * Inside a kernel (and functions it calls on the same thread):
 *   threadIdx, blockIdx   the thread's index within its block, the block's
 *                         index within the grid (hrx_dim3: .x .y .z)
 *   blockDim, gridDim     the block's and the grid's extents
 *   hrx_dynamic_shared    the block's dynamic shared memory (the launch's
 *                         `shared` bytes, 64-byte aligned; NULL for 0): a
 *                         scratch area of the block, not initialised,
 *                         shared by its threads (which run one after
 *                         another)
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

/* hrx's backend includes this header for the launcher's types only. */
#ifndef HRX_KERNEL_ABI_ONLY

/* The running thread's place in its launch. One per engine thread and per
 * module (static thread-local storage), written by the launcher before
 * each call of the kernel. */
typedef struct hrx_kernel_thread_s {
  hrx_dim3 thread_idx;
  hrx_dim3 block_idx;
  hrx_dim3 block_dim;
  hrx_dim3 grid_dim;
  void* shared;
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

#ifndef HRX_KERNEL_NO_CUDA_NAMES
#define __global__ HRX_KERNEL
#define __device__
#endif

#if defined(__GNUC__)
void hrx_kernel_no_barrier(void) __attribute__((error(
    "host kernels have no barrier: the threads of a block run one after "
    "another on one engine thread (see hrx_kernel.h)")));
#define __syncthreads() hrx_kernel_no_barrier()
#endif

#endif /* HRX_KERNEL_ABI_ONLY */

/* ---------------------------------------------------------------- launcher
 *
 * For each kernel named when compiling, hrx appends to the preprocessed
 * source a struct of its parameters (declared with their own text) and a
 * layout and entry point that the backend finds with dlsym:
 *   const hrx_kernel_layout_t hrx_kernel_layout__NAME;
 * and once per module the marker
 *   const unsigned int hrx_kernel_module_abi = HRX_KERNEL_ABI;
 * (the literal value). */
#define HRX_KERNEL_ABI 1

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
