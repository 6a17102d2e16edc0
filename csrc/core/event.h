/* Internal constructors and accessors of events. */
#ifndef HRX_CORE_EVENT_H_
#define HRX_CORE_EVENT_H_

#include "hal/device.h"
#include "hrx.h"

/* Creates an unrecorded event of the device (retains the device). */
hrx_status_t hrx_event_create(hrx_device_t* device, hrx_event_t** out_event);
/* The same with the backend's event_create_timing (UNAVAILABLE when the
 * backend has none). */
hrx_status_t hrx_event_create_timing(hrx_device_t* device,
                                     hrx_event_t** out_event);
/* The native event (borrowed; lives as long as the event). */
hrx_native_event_t* hrx_event_native(hrx_event_t* event);

#endif /* HRX_CORE_EVENT_H_ */
