/* Kernels (hrx.h, "kernel"): the kernel object, and the one check of a
 * launch that streams and graphs share. Internal to the core. */
#ifndef HRX_CORE_KERNEL_H_
#define HRX_CORE_KERNEL_H_

#include "hal/device.h"
#include "hrx.h"

/* A checked launch, ready for the backend: `launch` points into the other
 * fields (a VIEW argument's device address is in `pointers`). Lives on the
 * caller's stack for one launch; a graph copies what it keeps. */
typedef struct hrx_kernel_prepared_s {
  hrx_kernel_launch_t launch;
  const void* values[HRX_KERNEL_MAX_ARGS];
  uint32_t sizes[HRX_KERNEL_MAX_ARGS];
  void* pointers[HRX_KERNEL_MAX_ARGS];
} hrx_kernel_prepared_t;

/* Checks a launch of `kernel` for work of `device` (hrx_stream_launch's
 * rules; `holder` and `rule` name the device's owner in a message, as
 * hrx_device_check_same does) and fills *out. Nothing is submitted. */
hrx_status_t hrx_kernel_prepare_launch(hrx_kernel_t* kernel,
                                       hrx_device_t* device,
                                       const char* holder, const char* rule,
                                       const hrx_launch_config_t* config,
                                       const hrx_kernel_arg_t* args,
                                       size_t arg_count,
                                       hrx_kernel_prepared_t* out);

/* A copy of the prepared launch in one malloc'ed block (free() it) that
 * lives on its own: the argument values are copied in. NULL when out of
 * memory. */
hrx_kernel_launch_t* hrx_kernel_launch_copy(
    const hrx_kernel_prepared_t* prepared);

/* The backend's kernel (borrowed; valid while the kernel is). */
hrx_native_kernel_t* hrx_kernel_native(const hrx_kernel_t* kernel);

#endif /* HRX_CORE_KERNEL_H_ */
