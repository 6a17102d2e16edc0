/* Kernel modules of a live device, and the device's memory cache of them.
 * Internal to the core.
 *
 * A module is one image loaded through the backend with the kernels looked
 * up in it (the names it was compiled or loaded for), and what hrx_kernel_t
 * reports about them (names, image, attributes, the disk cache's path or
 * note). Modules are reference counted: the device's cache holds one
 * reference to each module it compiled, each kernel object one. A module
 * unloads (backend module_unload, which keeps it until no launch of it can
 * run) when its last reference goes; the cache's references go when the
 * device is torn down, after every kernel (each retains the device) and
 * every queue.
 *
 * The cache maps (source, options) to modules: a compile on a live device
 * whose names a cached module of the same source and options has is a
 * lookup, so one compile of a module gives every kernel it names. A miss
 * compiles for every kernel the source declares (kernel_source_names.h)
 * where those include the names asked for, sorted, so that a compile of
 * any of them is the same module and disk entry; where the compiler
 * refuses them together for a kernel not asked for (its message names
 * one), for the names asked for alone, as every later compile of that
 * source on the device (the cache remembers such sources). It looks in the
 * disk cache (kernel_disk_cache.h), keyed by that, the names and the
 * backend's toolchain, and only then compiles (once for all the names),
 * writing the disk entry: the image with what the compiler recorded of the
 * kernels' parameters (hal/kernel.h), which a cubin does not keep. Two
 * threads missing on the same key may both compile; the first to finish
 * is kept.
 *
 * Thread-safe. */
#ifndef HRX_CORE_KERNEL_CACHE_H_
#define HRX_CORE_KERNEL_CACHE_H_

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hal/device.h"
#include "hal/kernel.h"
#include "hrx.h"

/* One kernel of a module. */
typedef struct hrx_kernel_entry_s {
  char* name;                     /* owned */
  hrx_native_kernel_t* kernel;    /* borrowed from the module's native */
  hrx_kernel_attributes_t info;
} hrx_kernel_entry_t;

typedef struct hrx_kernel_module_s {
  atomic_int ref_count;
  hrx_backend_device_t* backend;  /* borrowed: outlives every module */
  hrx_native_module_t* native;    /* owned */
  hrx_kernel_entry_t* kernels;    /* owned, [kernel_count] */
  size_t kernel_count;
  void* image;                    /* owned */
  size_t image_size;
  char* cache_path;               /* owned, or NULL */
  char* cache_note;               /* owned, or NULL ("") */
  /* The memory cache's key: (options, source) serialised. */
  uint64_t hash;
  void* key;                      /* owned, or NULL outside the cache */
  size_t key_size;
  struct hrx_kernel_module_s* next;  /* the cache's list */
} hrx_kernel_module_t;

void hrx_kernel_module_retain(hrx_kernel_module_t* module);
void hrx_kernel_module_release(hrx_kernel_module_t* module);

/* The kernel `name` of the module, or NULL. */
const hrx_kernel_entry_t* hrx_kernel_module_find(
    const hrx_kernel_module_t* module, const char* name);

/* A module of an image (hrx_device_load_kernel): not cached. Copies the
 * image. What the image records of the kernel's parameters (hal/kernel.h,
 * describe_image) fills its attributes as a compile's record would. One
 * reference. */
hrx_status_t hrx_kernel_module_from_image(hrx_backend_device_t* backend,
                                          const void* image, size_t size,
                                          const char* name,
                                          hrx_kernel_module_t** out_module);

/* Fills `info` (what module_get_kernel told) from what the compiler
 * recorded (hal/kernel.h) where the kinds are all unknown: the kinds
 * where the counts and sizes agree, and the count, sizes and offsets too
 * where the count is unknown (-1). A record of count -1, or one that
 * disagrees, changes nothing. */
void hrx_kernel_attributes_apply_record(
    hrx_kernel_attributes_t* info, const hrx_kernel_param_record_t* record);

/* A disk cache entry's image is the compile's parameter records of the
 * module's kernels, then the module's image (kernel_cache.c says the
 * layout). make: *out_payload malloc'ed, false when out of memory. split:
 * reads `record_count` records into `records` and the image's offset into
 * *out_image_offset; false for bytes of another layout or count, or no
 * image after them. */
bool hrx_kernel_payload_make(const hrx_kernel_param_record_t* records,
                             size_t record_count, const void* image,
                             size_t image_size, void** out_payload,
                             size_t* out_size);
bool hrx_kernel_payload_split(const void* payload, size_t size,
                              size_t record_count,
                              hrx_kernel_param_record_t* records,
                              size_t* out_image_offset);

typedef struct hrx_kernel_cache_s hrx_kernel_cache_t;

hrx_status_t hrx_kernel_cache_create(hrx_kernel_cache_t** out_cache);
/* Drops the cache's references (NULL: nothing). */
void hrx_kernel_cache_destroy(hrx_kernel_cache_t* cache);

/* The module of (source, options) for `backend` that has every kernel of
 * names[0..name_count) (distinct, checked C identifiers): cached, read from
 * disk or compiled (see above); retained for the caller. *out_origin says
 * which. Blocks while compiling. */
hrx_status_t hrx_kernel_cache_get(hrx_kernel_cache_t* cache,
                                  hrx_backend_device_t* backend,
                                  const char* source,
                                  const char* const* names, size_t name_count,
                                  const char* const* options,
                                  size_t option_count,
                                  hrx_kernel_module_t** out_module,
                                  hrx_kernel_origin_t* out_origin);

#endif /* HRX_CORE_KERNEL_CACHE_H_ */
