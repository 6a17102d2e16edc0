/* Internal checks of buffer views, shared by streams and graphs. */
#ifndef HRX_CORE_BUFFER_H_
#define HRX_CORE_BUFFER_H_

#include "hrx.h"

/* OUT_OF_RANGE when the view exceeds its buffer, INVALID_ARGUMENT when it is
 * empty. `role` names the argument in the message ("copy source"). The
 * buffer must be set. */
hrx_status_t hrx_view_check_range(hrx_view_t view, const char* role);

/* The rules of a copy between two checked views: equal lengths and, within
 * one buffer, disjoint ranges (INVALID_ARGUMENT otherwise). */
hrx_status_t hrx_view_check_copy(hrx_view_t dst, hrx_view_t src);

#endif /* HRX_CORE_BUFFER_H_ */
