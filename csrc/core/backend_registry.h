/* Backends by name and automatic selection, among the drivers compiled in
 * (hal/driver.h, hrx_hal_drivers). */
#ifndef HRX_CORE_BACKEND_REGISTRY_H_
#define HRX_CORE_BACKEND_REGISTRY_H_

#include "hal/driver.h"

/* The backend named `name`, or NULL. */
const hrx_backend_t* hrx_backend_lookup(const char* name);

/* Resolves a backend name for device `index`: `name` if given; else
 * $HRX_BACKEND; else the first backend (in hrx_backend_names order) that
 * loads and has device `index`. On failure the status says why each
 * candidate was rejected. On success out_note (capacity bytes) says how the
 * backend was chosen and why earlier candidates were passed over. */
hrx_status_t hrx_backend_select(const char* name, int index,
                                const hrx_backend_t** out_backend,
                                char* out_note, size_t capacity);

#endif /* HRX_CORE_BACKEND_REGISTRY_H_ */
