/* The system C compiler, as the host backend runs it for kernels.
 *
 * Which compiler: $HRX_HOST_CC, else $CC (each a command: a program, by
 * path or on PATH, and options of its own, split at spaces), else the
 * first of cc, gcc and clang on PATH. Read at every compile; the version
 * (`<compiler> --version`, first line) is asked once per command.
 *
 * A compile (in a private temporary directory, removed afterwards):
 *   1. the source and hrx_kernel.h (host_kernel_header.h) are written there;
 *   2. `<cc> -E -include hrx_kernel.h <options>` preprocesses the source;
 *   3. the launcher is generated for the kernels named
 *      (host_kernel_source.h) and appended to the preprocessed text;
 *   4. `<cc> -shared -fPIC -O2 <options>` builds a shared object of it,
 *      whose bytes are the image (host_kernel_module.h loads it).
 * The options come after hrx's own, so they can override them (-O0), and
 * after the input file, so libraries (-lm) link. A step the compiler
 * refuses is INVALID_ARGUMENT carrying its output.
 *
 * Thread-safe; blocks while the compiler runs. Never touches Python. */
#ifndef HRX_DRIVERS_HOST_HOST_KERNEL_COMPILER_H_
#define HRX_DRIVERS_HOST_HOST_KERNEL_COMPILER_H_

#include <pthread.h>
#include <stddef.h>

#include "hal/device.h"

typedef struct hrx_host_compiler_s {
  pthread_mutex_t mutex;
  char* command;                     /* owned: the command described */
  hrx_kernel_compiler_t toolchain;  /* of `command`; mutex */
} hrx_host_compiler_t;

void hrx_host_compiler_initialize(hrx_host_compiler_t* compiler);
void hrx_host_compiler_deinitialize(hrx_host_compiler_t* compiler);

/* The toolchain: language "c", the compiler's path and version, target
 * "host-<machine>", image format "elf". UNAVAILABLE when no compiler is
 * found or the one named cannot run, saying what was looked for and how
 * to point hrx at one (HRX_HOST_CC). */
hrx_status_t hrx_host_compiler_describe(hrx_host_compiler_t* compiler,
                                        hrx_kernel_compiler_t* out);

/* Compiles as described above; *out_image is malloc'ed. */
hrx_status_t hrx_host_compiler_compile(hrx_host_compiler_t* compiler,
                                       const char* source,
                                       const char* const* names,
                                       size_t name_count,
                                       const char* const* options,
                                       size_t option_count, void** out_image,
                                       size_t* out_size);

#endif /* HRX_DRIVERS_HOST_HOST_KERNEL_COMPILER_H_ */
