#include "core/environment.h"

#include <errno.h>
#include <stdlib.h>

bool hrx_env_parse_int(const char* text, int64_t min, int64_t max,
                       int64_t* out_value) {
  if (!text || !*text) return false;
  const char* digits = (*text == '-' || *text == '+') ? text + 1 : text;
  if (*digits < '0' || *digits > '9') return false;  /* no spaces, no "" */
  char* end = NULL;
  errno = 0;
  long long value = strtoll(text, &end, 10);
  if (errno || *end || value < min || value > max) return false;
  *out_value = value;
  return true;
}

int64_t hrx_env_int(const char* name, int64_t fallback, int64_t min,
                    int64_t max) {
  int64_t value = fallback;
  hrx_env_parse_int(getenv(name), min, max, &value);
  return value;
}

bool hrx_env_switch(const char* name, bool fallback) {
  return hrx_env_int(name, fallback ? 1 : 0, 0, 1) != 0;
}
