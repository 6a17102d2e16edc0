/* A module of host kernels: a shared object that hrx compiled
 * (host_kernel_compiler.h), loaded from its bytes with dlopen, and the
 * kernels looked up in it.
 *
 * Lifetime: a module is reference counted; the backend's module_unload
 * drops the loader's reference and each launch's grid holds one until it
 * has run, so the shared object stays mapped while a launch of it may still
 * run and is closed (dlclose) by whoever drops the last reference.
 *
 * Thread-safe. Never touches Python. */
#ifndef HRX_DRIVERS_HOST_HOST_KERNEL_MODULE_H_
#define HRX_DRIVERS_HOST_HOST_KERNEL_MODULE_H_

#include <stddef.h>
#include <stdint.h>

#include "hal/device.h"

#define HRX_KERNEL_ABI_ONLY
#include "hrx_kernel.h"

/* The host device's launch limits (hrx_device_info_t). A block's threads
 * run on one engine thread (one after another, or as fibers when the
 * module uses barriers), so these only keep host kernels within what GPUs
 * allow (CUDA's limits): a launch that runs here runs there too. Dynamic
 * shared memory is a scratch area per engine thread. */
#define HRX_HOST_MAX_THREADS_PER_BLOCK 1024u
#define HRX_HOST_MAX_BLOCK_X 1024u
#define HRX_HOST_MAX_BLOCK_Y 1024u
#define HRX_HOST_MAX_BLOCK_Z 64u
#define HRX_HOST_MAX_GRID_X 2147483647u
#define HRX_HOST_MAX_GRID_Y 65535u
#define HRX_HOST_MAX_GRID_Z 65535u
#define HRX_HOST_MAX_SHARED_BYTES (256u * 1024u)

typedef struct hrx_host_module_s hrx_host_module_t;

/* A kernel of a module: borrowed from it, valid while it is loaded. */
typedef struct hrx_host_kernel_s {
  hrx_host_module_t* module;          /* borrowed: the owner */
  const hrx_kernel_layout_t* layout;  /* in the module's image */
  /* The thread entry when the module's source uses barriers (its blocks
   * run as fibers, host_fibers.h), else NULL (the layout's entry). */
  hrx_kernel_thread_entry_t threads;
  struct hrx_host_kernel_s* next;     /* the module's list */
  char name[];
} hrx_host_kernel_t;

/* Loads an image: the bytes of a shared object for this host that hrx
 * compiled (it carries hrx's module marker). INVALID_ARGUMENT for
 * anything else (not ELF, another machine or class, not a shared object,
 * no marker, or what dlopen refuses, with its message); nothing stays
 * loaded. One reference. */
hrx_status_t hrx_host_module_load(const void* image, size_t size,
                                  hrx_host_module_t** out_module);
void hrx_host_module_retain(hrx_host_module_t* module);
void hrx_host_module_release(hrx_host_module_t* module);

/* Looks up the kernel `name` (INVALID_ARGUMENT naming it when the module
 * has no launcher for it) and describes it. */
hrx_status_t hrx_host_module_get_kernel(hrx_host_module_t* module,
                                        const char* name,
                                        hrx_host_kernel_t** out_kernel,
                                        hrx_kernel_attributes_t* out_info);

#endif /* HRX_DRIVERS_HOST_HOST_KERNEL_MODULE_H_ */
