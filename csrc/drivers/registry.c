/* The drivers compiled in, and the device open that wraps a device in
 * fault injection in the testing build (hal/driver.h). */
#include "hal/driver.h"

#include "drivers/hip/hip_backend.h"
#include "drivers/host/host_driver.h"

#ifdef HRX_TESTING_BUILD
#include "drivers/fault/fault_backend.h"
#endif

/* Automatic selection tries them in this order: a GPU first. */
static const hrx_backend_t* const hrx_drivers[] = {&hrx_hip_backend,
                                                    &hrx_host_backend};

const hrx_backend_t* const* hrx_hal_drivers(int* out_count) {
  *out_count = (int)(sizeof(hrx_drivers) / sizeof(hrx_drivers[0]));
  return hrx_drivers;
}

hrx_status_t hrx_hal_device_open(const hrx_backend_t* driver, int index,
                                 const hrx_hal_device_settings_t* settings,
                                 hrx_hal_opened_device_t* out) {
  hrx_backend_device_t* device = NULL;
  hrx_status_t status = driver->device_open(index, settings, &device);
  if (status) return status;
  out->device = device;
  out->calls_numbered = false;
#ifdef HRX_TESTING_BUILD
  /* $HRX_FAULTS wraps the device in fault injection, which numbers every
   * native call. */
  status = hrx_fault_wrap_from_env(&out->device);
  if (status) {
    device->vtable->destroy(device);
    return status;
  }
  out->calls_numbered = out->device != device;
#endif
  return NULL;
}
