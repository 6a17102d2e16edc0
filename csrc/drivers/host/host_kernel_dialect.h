/* The CUDA dialect of host kernel sources, rewritten into C.
 *
 * Host kernels are compiled by the system C compiler. hrx_kernel.h gives
 * the CUDA names that C can define as macros and functions (__global__,
 * __shared__, __syncthreads, atomics, ...); this pass rewrites, in the
 * preprocessed text (cc -E), the two constructs that no macro can:
 *   - `extern "C"` before a declaration, and `extern "C" { ... }` around
 *     declarations: dropped (their braces too). C has one linkage, and
 *     the launcher calls kernels from the same translation unit.
 *   - `extern __shared__ T name[];` (after hrx_kernel.h's macros:
 *     `extern static __thread T name [ ] ;`, never valid C): the block's
 *     dynamic shared memory. Inside a function it becomes
 *     `T* const name = <the block's shared memory>;`; at file scope a
 *     thread-local `T* name;` that the launcher's hrx_kernel_block_begin
 *     (appended here) points at the block's shared memory before the
 *     block's first thread runs.
 * Rewritten text keeps its lines (line breaks inside a rewritten span are
 * kept after it), so the compiler's messages name the source's lines.
 *
 * Why a rewrite and not C++ (g++): host kernels are C, and existing ones
 * rely on it (void* converting to any pointer, C's designated and compound
 * initialisers, $HRX_HOST_CC naming a C compiler); compiling every source
 * as C++ would change what they mean and need a second compiler to be
 * found. CUDA sources, for their part, mostly use the C subset of C++;
 * what they use beyond it is either a name hrx_kernel.h can give C (with
 * _Generic for CUDA's overloaded atomics and statement expressions for
 * min and max) or one of the two constructs above, which this pass finds
 * on tokens and so cannot confuse with text in strings or comments (the
 * preprocessor has removed comments).
 *
 * It also tells whether the source (anything but hrx_kernel.h, by the line
 * markers) calls __syncthreads, and appends the module's marker
 * hrx_kernel_module_barriers with that answer (hrx_kernel.h, "launcher").
 *
 * Pure text processing; thread-safe. */
#ifndef HRX_DRIVERS_HOST_HOST_KERNEL_DIALECT_H_
#define HRX_DRIVERS_HOST_HOST_KERNEL_DIALECT_H_

#include <stdbool.h>
#include <stddef.h>

#include "hrx.h"

/* The rewritten text of `preprocessed` (length bytes) with the appended
 * code, malloc'ed and NUL-terminated, in *out_text (*out_length bytes);
 * *out_barriers: whether the source calls __syncthreads. INVALID_ARGUMENT
 * for an `extern __shared__` declaration of any other form than
 * `extern __shared__ T name[];`. Outputs unchanged on failure. */
hrx_status_t hrx_host_kernel_dialect(const char* preprocessed, size_t length,
                                     char** out_text, size_t* out_length,
                                     bool* out_barriers);

#endif /* HRX_DRIVERS_HOST_HOST_KERNEL_DIALECT_H_ */
