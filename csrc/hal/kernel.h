/* Kernels: a driver that runs them compiles source into an image, loads
 * images as modules, looks kernels up by name and launches them on a queue.
 * The core owns everything above that: the kernel cache (memory and disk),
 * argument checks against the kernel's attributes and the device's limits,
 * the stream rules. The descriptions are the public API's
 * (hrx_kernel_compiler_t, hrx_kernel_attributes_t, HRX_KERNEL_MAX_ARGS and
 * HRX_KERNEL_MAX_ARG_BYTES in hrx.h): one definition for both sides. */
#ifndef HRX_HAL_KERNEL_H_
#define HRX_HAL_KERNEL_H_

#include "batch.h"
#include "objects.h"

/* One launch. The core has checked the dimensions (each in [1, the
 * device's limit], the block's product within the kernel's
 * max_threads_per_block), shared_bytes against max_dynamic_shared_bytes
 * and, where param_count >= 0, the argument count and sizes. */
typedef struct hrx_kernel_launch_s {
  uint32_t grid[3];
  uint32_t block[3];
  uint64_t shared_bytes;      /* dynamic shared memory per block */
  uint32_t arg_count;         /* <= HRX_KERNEL_MAX_ARGS */
  /* args[i] points at argument i's value, arg_sizes[i] bytes (the sizes add
   * up to at most HRX_KERNEL_MAX_ARG_BYTES). Borrowed for the call only: a
   * driver copies the values before it returns. */
  const void* const* args;
  const uint32_t* arg_sizes;
} hrx_kernel_launch_t;

/* What a compile records of one kernel's parameters beyond what the loaded
 * module tells (NVIDIA: the types in the PTX NVRTC produced, which a cubin
 * does not keep). The core keeps it with the module and its disk cache
 * entry and fills the kernel's attributes from it where module_get_kernel
 * left the kinds unknown (the count, sizes and offsets too where those are
 * unknown). */
typedef struct hrx_kernel_param_record_s {
  int count;  /* -1: nothing recorded; else at most HRX_KERNEL_MAX_ARGS */
  uint8_t kind[HRX_KERNEL_MAX_ARGS];  /* hrx_kernel_param_kind_t */
  uint32_t size[HRX_KERNEL_MAX_ARGS];
  uint32_t offset[HRX_KERNEL_MAX_ARGS];
} hrx_kernel_param_record_t;

/* The first six: all, or none (NULL where the driver runs no kernels, and
 * the core refuses them with UNAVAILABLE). The last three are optional. */
typedef struct hrx_hal_kernel_vtable_s {
  /* Describes the compiler compile() would use, without compiling
   * (written into the kernel cache key, named in messages); UNAVAILABLE
   * when there is none, saying what was looked for and how to point hrx at
   * one. */
  hrx_status_t (*toolchain)(hrx_backend_device_t* device,
                            hrx_kernel_compiler_t* out_toolchain);
  /* Compiles `source` with `options` (passed through to the compiler, in
   * order) into an image (malloc'ed, *out_size bytes; the caller frees it)
   * that defines at least the kernels in names[0..name_count) (the names
   * the caller will look up; a driver may generate per-kernel code from
   * them). A source the compiler rejects is INVALID_ARGUMENT whose message
   * carries the compiler's own log. out_params[i] (name_count entries,
   * each with count -1 on entry) is what the compiler records of names[i]'s
   * parameters, where it records more than the module will tell (left as
   * it is otherwise). May block for as long as the compiler runs. */
  hrx_status_t (*compile)(hrx_backend_device_t* device, const char* source,
                          const char* const* names, size_t name_count,
                          const char* const* options, size_t option_count,
                          void** out_image, size_t* out_size,
                          hrx_kernel_param_record_t* out_params);
  /* Loads an image (a compile() image, or one the user built offline in the
   * toolchain's image_format; the driver keeps no pointer into `image`). An
   * image the runtime cannot load (corrupt, of another architecture or
   * format) is INVALID_ARGUMENT with the runtime's message; nothing stays
   * loaded. module_unload waits until no launch of the module's kernels can
   * still run, then unloads it (its kernels go with it). */
  hrx_status_t (*module_load)(hrx_backend_device_t* device, const void* image,
                              size_t size, hrx_native_module_t** out_module);
  void (*module_unload)(hrx_backend_device_t* device,
                        hrx_native_module_t* module);
  /* Looks a kernel up by its symbol name (INVALID_ARGUMENT naming it when
   * the module defines none) and describes it: param_count is -1 (offsets
   * and sizes zero) where the runtime cannot tell the parameters. The
   * kernel is borrowed from the module. */
  hrx_status_t (*module_get_kernel)(hrx_backend_device_t* device,
                                    hrx_native_module_t* module,
                                    const char* name,
                                    hrx_native_kernel_t** out_kernel,
                                    hrx_kernel_attributes_t* out_attributes);
  /* An asynchronous command like a queue's copy(): in order with the
   * queue's other work, published once the call returns successfully,
   * nothing submitted on failure; it may wait for queue space like copy()
   * (and reports WOULD_BLOCK in non-blocking mode instead). A kernel that
   * faults on the device fails later work of the runtime's context the way
   * the runtime reports it; a launch the runtime refuses at the call is a
   * failed command (its status is returned). */
  hrx_status_t (*launch)(hrx_backend_device_t* device,
                         hrx_native_queue_t* queue, hrx_native_kernel_t* kernel,
                         const hrx_kernel_launch_t* launch);
  /* Optional (NULL: the core publishes each launch with launch()). Publishes
   * the launches commands[0..count) (each HRX_BATCH_LAUNCH; count in
   * [2, HRX_BATCH_MAX_COMMANDS]) in order, after the queue's earlier work,
   * as few native operations as the driver can (hip: one launch of a
   * native graph whose kernel nodes it rewrites; host: the queue's ring in
   * one go). Like launch(): nothing of `commands` is kept after the call.
   * On failure *out_published (never NULL) is the number of leading
   * launches that were published anyway; the others were not. It may wait
   * for queue space like launch(). */
  hrx_status_t (*launch_batch)(hrx_backend_device_t* device,
                               hrx_native_queue_t* queue,
                               const hrx_batch_command_t* commands,
                               uint32_t count, uint32_t* out_published);
  /* Optional, with launch_batch: whether the core uses launch_batch when
   * the user has not said (HRX_BATCH_LAUNCHES unset, core/batching.h).
   * False where the runtime's graph updates are not trusted yet. */
  bool (*launch_batch_by_default)(hrx_backend_device_t* device);
  /* Optional (NULL: loaded images record nothing). What an image the user
   * loads (module_load's bytes) records of its kernels' parameters beyond
   * what the loaded module tells, as compile()'s out_params: out_params[i]
   * for names[i], each with count -1 on entry, left as it is where the
   * image records nothing (NVIDIA: a PTX image's types; a cubin has none).
   * Reads only the bytes: never fails, never blocks. */
  void (*describe_image)(hrx_backend_device_t* device, const void* image,
                         size_t size, const char* const* names,
                         size_t name_count,
                         hrx_kernel_param_record_t* out_params);
} hrx_hal_kernel_vtable_t;

#endif /* HRX_HAL_KERNEL_H_ */
