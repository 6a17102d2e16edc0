/* Device memory and pinned host memory of a backend device. */
#ifndef HRX_HAL_MEMORY_H_
#define HRX_HAL_MEMORY_H_

#include "objects.h"

typedef struct hrx_hal_memory_vtable_s {
  /* Device memory. free() does not return the memory until no work
   * submitted before the call, on any queue, can still touch it (it may
   * block until then, as cudaFree and hipFree do). */
  hrx_status_t (*alloc)(hrx_backend_device_t* device, uint64_t size,
                        void** out_ptr);
  void (*free)(hrx_backend_device_t* device, void* ptr);
  /* Host memory the device can transfer to and from asynchronously (pinned
   * on GPUs). The core calls host_free only once no submitted work can
   * still touch the memory (its read staging is pooled, core/staging.h), so
   * a driver need not wait for anything. */
  hrx_status_t (*host_alloc)(hrx_backend_device_t* device, uint64_t size,
                             void** out_ptr);
  void (*host_free)(hrx_backend_device_t* device, void* ptr);
  /* Optional, both or neither: makes `size` bytes of existing host memory
   * at `ptr` (the caller's, page-locked by this call: cudaHostRegister /
   * hipHostRegister) usable like host_alloc's memory until
   * host_unregister. Memory the runtime has pinned already (another
   * library's pinned allocation or registration) is usable as it is:
   * success with *out_registered false, and no host_unregister for it;
   * else *out_registered is true. NULL where all host memory already is
   * (host): the core then only tracks the range (core/pinned.h). The core
   * calls host_unregister only once no submitted work can touch the
   * memory. A refusal (out of memory, bad memory) is an error carrying
   * the runtime's message, and nothing stays registered. */
  hrx_status_t (*host_register)(hrx_backend_device_t* device, void* ptr,
                                uint64_t size, bool* out_registered);
  void (*host_unregister)(hrx_backend_device_t* device, void* ptr);
} hrx_hal_memory_vtable_t;

#endif /* HRX_HAL_MEMORY_H_ */
