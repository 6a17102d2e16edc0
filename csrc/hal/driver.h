/* A driver (a backend: hip, host) and the list of the drivers compiled in.
 * The core selects among them by name (core/backend_registry.h) and opens
 * devices only through hrx_hal_device_open; the list, and the fault
 * injection the testing build wraps around a device, live beside the
 * drivers (drivers/registry.c). */
#ifndef HRX_HAL_DRIVER_H_
#define HRX_HAL_DRIVER_H_

#include "device.h"
#include "objects.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The core's settings a driver needs when a device opens (it reads no
 * setting of the core's from the environment itself). */
typedef struct hrx_hal_device_settings_s {
  /* Whether the device's streams start with submission batching on
   * (HRX_BATCHING, core/batching.h): a driver may prepare what batches
   * need ahead of the first one (hip: the copy kernel). */
  bool batching;
  /* Whether the driver's own large host copies into staging (from a size
   * of its choosing up) write around the CPU caches (base/streaming_copy.h;
   * HRX_STAGED_COPY_STREAMING, core/staged_transfer.h). */
  bool streaming_copies;
} hrx_hal_device_settings_t;

struct hrx_backend_s {
  const char* name;
  /* Loads the runtime once per process (thread-safe, idempotent) and returns
   * the number of devices. A failure explains why the backend is unusable:
   * UNAVAILABLE with the loader's or runtime's message. `opening`: the load
   * is made to open a device (hrx_backend_select), not to list or probe; a
   * runtime that reads process settings only when it starts (hip: the
   * connection budget) gets them applied first, and only then. */
  hrx_status_t (*load)(bool opening, int* out_device_count);
  /* Opens device `index` (already checked against the count). */
  hrx_status_t (*device_open)(int index,
                              const hrx_hal_device_settings_t* settings,
                              hrx_backend_device_t** out_device);
  /* Optional (NULL: nothing to add): fills the parts of
   * hrx_backend_query_info beyond the zeroed defaults. Never loads. */
  void (*describe)(hrx_backend_info_t* out_info);
  /* Whether a host function run by a queue's host_call may itself call the
   * runtime (query an event, ask for free memory). False where the runtime
   * forbids runtime calls inside host functions (cudaLaunchHostFunc and
   * hipLaunchHostFunc do: such a call fails, e.g. with
   * cudaErrorNotPermitted); the core then refuses the queries that reach the
   * runtime inside host callbacks (core/entry.h). */
  bool host_functions_may_call_runtime;
};

/* The drivers compiled in, in the order automatic selection tries them
 * (static; *out_count entries). */
const hrx_backend_t* const* hrx_hal_drivers(int* out_count);

/* What hrx_hal_device_open made. */
typedef struct hrx_hal_opened_device_s {
  hrx_backend_device_t* device;  /* owned by the caller */
  /* Every native call of the device is numbered in order (the testing
   * build's fault injection, $HRX_FAULTS): the caller makes no call at a
   * time of its own choosing (the read staging's warm-up), which would
   * shift that numbering. */
  bool calls_numbered;
} hrx_hal_opened_device_t;

/* Opens device `index` of `driver` (driver->device_open), wrapped in fault
 * injection in the testing build when $HRX_FAULTS asks for it. Nothing is
 * left open on failure. */
hrx_status_t hrx_hal_device_open(const hrx_backend_t* driver, int index,
                                 const hrx_hal_device_settings_t* settings,
                                 hrx_hal_opened_device_t* out);

#ifdef __cplusplus
}
#endif

#endif /* HRX_HAL_DRIVER_H_ */
