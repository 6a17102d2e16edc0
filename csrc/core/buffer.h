/* Internal checks of buffer views, shared by streams and graphs. */
#ifndef HRX_CORE_BUFFER_H_
#define HRX_CORE_BUFFER_H_

#include <stdbool.h>
#include <stdint.h>

#include "hrx.h"

/* The one check of a view that work for `device` uses: it has a buffer, of
 * that device (else INVALID_ARGUMENT naming both devices; `holder` and
 * `rule` as in hrx_device_check_same), is non-empty (INVALID_ARGUMENT) and
 * lies within its buffer (OUT_OF_RANGE). `role` names the argument in the
 * message ("copy source"). */
hrx_status_t hrx_view_check(hrx_device_t* device, hrx_view_t view,
                            const char* role, const char* holder,
                            const char* rule);

/* Whether hrx_view_check(device, view, ...) passes: for a caller that
 * formats the role only for a view that fails (a launch checks every
 * buffer argument of every launch). */
bool hrx_view_usable(hrx_device_t* device, hrx_view_t view);

/* The device address of the view's first byte. */
uint8_t* hrx_view_pointer(hrx_view_t view);

/* The rules of a copy between two checked views: equal lengths and, within
 * one buffer, disjoint ranges (INVALID_ARGUMENT otherwise). */
hrx_status_t hrx_view_check_copy(hrx_view_t dst, hrx_view_t src);

#endif /* HRX_CORE_BUFFER_H_ */
