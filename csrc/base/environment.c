#include "environment.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "status.h"

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

hrx_status_t hrx_env_int(const char* name, int64_t fallback, int64_t min,
                         int64_t max, int64_t* out_value) {
  const char* text = getenv(name);
  if (!text || !*text) {
    *out_value = fallback;
    return NULL;
  }
  if (hrx_env_parse_int(text, min, max, out_value)) return NULL;
  return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                         "%s must be an integer from %lld to %lld, got '%.64s'",
                         name, (long long)min, (long long)max, text);
}

hrx_status_t hrx_env_switch(const char* name, bool fallback, bool* out_value) {
  int64_t value = 0;
  HRX_RETURN_IF_ERROR(hrx_env_int(name, fallback ? 1 : 0, 0, 1, &value));
  *out_value = value != 0;
  return NULL;
}

hrx_status_t hrx_env_string(const char* name, const char** out_value) {
  const char* text = getenv(name);
  if (!text || !*text) {
    *out_value = NULL;
    return NULL;
  }
  for (const char* c = text; *c; ++c) {
    if ((unsigned char)*c < 0x20 && *c != '\t') {
      return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                             "%s holds a control character (code %d); it "
                             "must be printable text",
                             name, (int)(unsigned char)*c);
    }
  }
  *out_value = text;
  return NULL;
}

int hrx_env_usable_cpus(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int count = CPU_COUNT(&set);
    if (count > 0) return count;
  }
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? (int)online : 1;
}
