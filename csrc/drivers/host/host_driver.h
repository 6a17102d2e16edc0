/* The host driver: a real CPU device whose queues are command rings served
 * by a few engine threads (host_device.c). */
#ifndef HRX_DRIVERS_HOST_HOST_DRIVER_H_
#define HRX_DRIVERS_HOST_HOST_DRIVER_H_

#include "hal/driver.h"

/* The driver (drivers/registry.c lists it). */
extern const hrx_backend_t hrx_host_backend;

#endif /* HRX_DRIVERS_HOST_HOST_DRIVER_H_ */
