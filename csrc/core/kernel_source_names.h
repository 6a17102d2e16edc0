/* Kernel names in text: the characters a name may have, whether a
 * compiler's message names a kernel, and the kernels a CUDA-style source
 * defines, read from its text without a compiler, so that a compile of one
 * of them can compile every one (a later compile of another name of the
 * same source then finds the module in the kernel cache, as CuPy's
 * RawModule gives every kernel of one compile). Internal to the core.
 *
 * What counts: a function declared `__global__` at file scope (or inside
 * an `extern "C" { ... }` block), not a template, not qualified
 * (`ns::k`), named by a C identifier of at most HRX_KERNEL_MAX_NAME
 * characters. Comments, string and character literals and preprocessor
 * lines are skipped; attribute groups between `__global__` and the name
 * (`__launch_bounds__(...)`, `__attribute__((...))`) are passed over.
 * Kernels in namespaces, classes or made by macros are not found, and a
 * kernel inside a disabled `#if` block is (the caller compiles again with
 * only the names it was asked for when the compiler refuses the list).
 *
 * Pure text processing; thread-safe. */
#ifndef HRX_CORE_KERNEL_SOURCE_NAMES_H_
#define HRX_CORE_KERNEL_SOURCE_NAMES_H_

#include <stdbool.h>
#include <stddef.h>

#include "hrx.h"

/* Whether `c` may stand in a C identifier after its first character
 * (letters, digits, '_'): the one rule of a kernel name's characters. */
bool hrx_kernel_name_char(char c);

/* Whether `text` (a compiler's message) names `name` as a whole word. */
bool hrx_kernel_text_names(const char* text, const char* name);

/* The kernel names `source` defines, each once, in the order of their
 * first declaration: *out_names (malloc'ed, each name malloc'ed) holds
 * *out_count of them, at most `limit` (the rest are left out). Free with
 * hrx_kernel_source_names_free. OUT_OF_MEMORY is the only failure. */
hrx_status_t hrx_kernel_source_names(const char* source, size_t limit,
                                     char*** out_names, size_t* out_count);
void hrx_kernel_source_names_free(char** names, size_t count);

#endif /* HRX_CORE_KERNEL_SOURCE_NAMES_H_ */
