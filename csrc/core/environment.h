/* The one parser of hrx's environment variables, for the core and the
 * backends. A variable is a whole decimal number (an optional sign, then
 * digits only: "0" and "00" are both zero); anything else, and a number
 * outside the range a caller allows, counts as unset, so the default
 * applies. Switches (HRX_BATCHING) are numbers in [0, 1]. Thread-safe as
 * getenv is. */
#ifndef HRX_CORE_ENVIRONMENT_H_
#define HRX_CORE_ENVIRONMENT_H_

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* True with *out_value when `text` is a whole decimal number in [min, max];
 * false (out unchanged) for NULL, "", anything else, or out of range. */
bool hrx_env_parse_int(const char* text, int64_t min, int64_t max,
                       int64_t* out_value);

/* $name parsed as above, or `fallback` when it is unset or not valid. */
int64_t hrx_env_int(const char* name, int64_t fallback, int64_t min,
                    int64_t max);

/* $name as a switch: 0 off, 1 on, `fallback` otherwise. */
bool hrx_env_switch(const char* name, bool fallback);

#ifdef __cplusplus
}
#endif

#endif /* HRX_CORE_ENVIRONMENT_H_ */
