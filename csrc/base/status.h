/* Internal helpers for building statuses. Public accessors are in hrx.h. */
#ifndef HRX_BASE_STATUS_H_
#define HRX_BASE_STATUS_H_

#include "hrx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Makes a status with a printf-style message. The file and line of the call
 * site are kept (hrx_status_location) for debugging. Never returns NULL for a
 * non-OK code: if memory runs out, a static OUT_OF_MEMORY status is returned
 * (freeing it is a no-op). */
#define hrx_make_status(code, ...) \
  hrx_status_make_at(__FILE__, __LINE__, (code), __VA_ARGS__)

hrx_status_t hrx_status_make_at(const char* file, int line,
                                hrx_status_code_t code, const char* format, ...)
    __attribute__((format(printf, 4, 5)));

/* A status whose message is `prefix` followed by `text` (both copied),
 * made without formatting. */
hrx_status_t hrx_status_make_prefixed(hrx_status_code_t code,
                                      const char* prefix, const char* text);

/* Prefixes the status's message with more context; returns the status. */
hrx_status_t hrx_status_annotate(hrx_status_t status, const char* format, ...)
    __attribute__((format(printf, 2, 3)));

/* Marks a WOULD_BLOCK as one for a wait of microseconds
 * (hrx_status_would_block_briefly, hrx.h); returns the status. */
hrx_status_t hrx_status_mark_brief(hrx_status_t status);

/* The status to report when two may have failed: `preferred` when it is a
 * failure (`other` is freed), else `other`. Takes both. */
hrx_status_t hrx_status_prefer(hrx_status_t preferred, hrx_status_t other);

/* "file.c:123" of the call site that made the status. */
const char* hrx_status_location(hrx_status_t status);

#define HRX_RETURN_IF_ERROR(expr)        \
  do {                                   \
    hrx_status_t hrx_status_ = (expr);   \
    if (hrx_status_) return hrx_status_; \
  } while (0)

#ifdef __cplusplus
}
#endif

#endif /* HRX_BASE_STATUS_H_ */
