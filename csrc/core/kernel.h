/* Kernels (hrx.h, "kernel"): the kernel object, and the one check of a
 * launch that streams and graphs share. Internal to the core. */
#ifndef HRX_CORE_KERNEL_H_
#define HRX_CORE_KERNEL_H_

#include "hal/device.h"
#include "hrx.h"
#include "launch_copies.h"

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

/* A launch command of a stream's pending batch (hal/batch.h,
 * HRX_BATCH_LAUNCH) that lives on its own until it is published or
 * dropped: *out is `command` with the launch copied (argument values
 * included) into a block of `copies` (launch_copies.h; the caller guards
 * it) and its kernel (command->owner, an hrx_kernel_t*) retained, so that
 * neither the caller's arguments nor a release of the kernel change or
 * unload what runs. False (nothing made) when out of memory. */
bool hrx_kernel_pending_launch_make(const hrx_batch_command_t* command,
                                    hrx_launch_copies_t* copies,
                                    hrx_batch_command_t* out);
/* Drops the kernel's reference that hrx_kernel_pending_launch_make took
 * (the last one goes to the device's cleanup thread); the caller gives the
 * copy back to its `copies` (hrx_launch_copies_give_back). */
void hrx_kernel_pending_launch_release(const hrx_batch_command_t* command);

/* The backend's kernel (borrowed; valid while the kernel is). */
hrx_native_kernel_t* hrx_kernel_native(const hrx_kernel_t* kernel);

#endif /* HRX_CORE_KERNEL_H_ */
