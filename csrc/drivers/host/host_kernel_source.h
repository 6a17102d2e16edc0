/* The launcher hrx generates for host kernels, from the kernel source as
 * the C compiler preprocessed it (cc -E).
 *
 * For each kernel name it finds the function's definition at file scope
 * (a declaration, a call or a name in a macro does not count), takes the
 * text of each parameter declaration as written, and generates, to be
 * appended to the preprocessed source and compiled with it:
 *   - a struct whose members are the parameters, declared with their own
 *     text (an array or function parameter as the pointer C makes of it;
 *     `register` dropped), so the compiler lays out the parameter block
 *     and knows each parameter's size;
 *   - an entry that runs the threads of one block: it sets the kernel's
 *     view of its launch (hrx_kernel.h) and calls the kernel with the
 *     struct's members, once per thread;
 *   - a thread entry that runs one thread of a block on the fiber the
 *     backend made for it (modules whose source uses barriers), under
 *     hrx_kernel_threads__NAME;
 *   - the layout (offsets, sizes, the entry) under hrx_kernel_layout__NAME,
 *     and once the module marker hrx_kernel_module_abi.
 * `preprocessed` has been through host_kernel_dialect.h's pass, which
 * defines hrx_kernel_block_begin that both entries call.
 * The compiler does the C parsing: this only finds the parameter list and
 * each parameter's name, skipping string and character literals, line
 * markers and nested brackets. The generated code uses no macro (it is
 * compiled after preprocessing).
 *
 * Pure text processing; thread-safe. */
#ifndef HRX_DRIVERS_HOST_HOST_KERNEL_SOURCE_H_
#define HRX_DRIVERS_HOST_HOST_KERNEL_SOURCE_H_

#include <stddef.h>

#include "hrx.h"

/* The code to append to `preprocessed` (length bytes, need not end in
 * NUL) for the kernels names[0..name_count): a malloc'ed NUL-terminated
 * string in *out_code. INVALID_ARGUMENT naming the kernel when it is not
 * defined at file scope, is variadic, has an old-style (K&R) definition or
 * a parameter without a name. */
hrx_status_t hrx_host_kernel_launcher(const char* preprocessed, size_t length,
                                      const char* const* names,
                                      size_t name_count, char** out_code);

#endif /* HRX_DRIVERS_HOST_HOST_KERNEL_SOURCE_H_ */
