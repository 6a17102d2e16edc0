/* The hip driver (the HIP runtime on AMD, the CUDA runtime on NVIDIA,
 * loaded at run time), and facts about the runtime library it loaded, for
 * tests, CI and hrx.backends().
 *
 * The functions are thread-safe, never load anything themselves, and return
 * static strings that stay valid for the life of the process. */
#ifndef HRX_DRIVERS_HIP_HIP_BACKEND_H_
#define HRX_DRIVERS_HIP_HIP_BACKEND_H_

#include "hal/driver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The driver (drivers/registry.c lists it). */
extern const hrx_backend_t hrx_hip_backend;

/* The library the backend's load settled on, as passed to dlopen (a soname
 * such as "libcudart.so.13" or a path): the one in use, or, when the load
 * failed because that library's runtime refused (no device, a failed call,
 * a missing symbol), the first such library. NULL before the load, or when
 * no HIP or CUDA runtime library could be loaded at all. */
const char* hrx_hip_loaded_library(void);

/* "amd" (libamdhip64, hip* names) or "nvidia" (libcudart, cuda* names) for
 * the library above; NULL when it is NULL. */
const char* hrx_hip_platform(void);

#ifdef __cplusplus
}
#endif

#endif /* HRX_DRIVERS_HIP_HIP_BACKEND_H_ */
