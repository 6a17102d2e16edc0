/* The one parser of hrx's environment variables, for the core and the
 * backends. A variable is a whole decimal number (an optional sign, then
 * digits only: "0" and "00" are both zero) within the range its reader
 * allows; switches (HRX_BATCHING) are 0 or 1; text (HRX_KERNEL_CACHE_DIR,
 * HRX_HOST_CC) is taken as it is. Unset or empty: the default.
 * Anything else is refused with INVALID_ARGUMENT naming the variable, what
 * it allows and what it holds, never silently replaced by the default.
 * Thread-safe as getenv is. */
#ifndef HRX_BASE_ENVIRONMENT_H_
#define HRX_BASE_ENVIRONMENT_H_

#include <stdbool.h>
#include <stdint.h>

#include "hrx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* True with *out_value when `text` is a whole decimal number in [min, max];
 * false (out unchanged) for NULL, "", anything else, or out of range. */
bool hrx_env_parse_int(const char* text, int64_t min, int64_t max,
                       int64_t* out_value);

/* $name into *out_value: `fallback` when unset or empty, its value when it
 * is a whole number in [min, max], else INVALID_ARGUMENT (out unchanged). */
hrx_status_t hrx_env_int(const char* name, int64_t fallback, int64_t min,
                         int64_t max, int64_t* out_value);

/* $name as a switch: 0 off, 1 on, `fallback` when unset or empty, else
 * INVALID_ARGUMENT (out unchanged). */
hrx_status_t hrx_env_switch(const char* name, bool fallback, bool* out_value);

/* The CPUs this process may run on (its affinity; the online CPUs where
 * that cannot be read), at least 1: what the defaults of the variables
 * that size thread pools (HRX_HOST_ENGINES, HRX_STAGED_COPY_THREADS) are
 * made from. */
int hrx_env_usable_cpus(void);

/* $name as text (a path, a command): NULL when unset or empty, else its
 * value (borrowed from the environment); a value with a control character
 * (a newline, a tab is allowed) is INVALID_ARGUMENT (out unchanged). */
hrx_status_t hrx_env_string(const char* name, const char** out_value);

#ifdef __cplusplus
}
#endif

#endif /* HRX_BASE_ENVIRONMENT_H_ */
