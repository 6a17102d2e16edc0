#include "backend_registry.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"

/* The names of hrx_hal_drivers(), in its order, made once. */
enum { HRX_BACKEND_NAMES_MAX = 8 };
static const char* hrx_backend_name_list[HRX_BACKEND_NAMES_MAX];
static int hrx_backend_name_count;
static pthread_once_t hrx_backend_names_once = PTHREAD_ONCE_INIT;

static void hrx_backend_names_make(void) {
  int count = 0;
  const hrx_backend_t* const* drivers = hrx_hal_drivers(&count);
  for (int i = 0; i < count && i < HRX_BACKEND_NAMES_MAX; ++i) {
    hrx_backend_name_list[hrx_backend_name_count++] = drivers[i]->name;
  }
}

int hrx_backend_names(const char* const** out_names) {
  pthread_once(&hrx_backend_names_once, hrx_backend_names_make);
  *out_names = hrx_backend_name_list;
  return hrx_backend_name_count;
}

const hrx_backend_t* hrx_backend_lookup(const char* name) {
  int count = 0;
  const hrx_backend_t* const* drivers = hrx_hal_drivers(&count);
  for (int i = 0; i < count; ++i) {
    if (name && strcmp(drivers[i]->name, name) == 0) return drivers[i];
  }
  return NULL;
}

static hrx_status_t hrx_backend_unknown(const char* name, const char* origin) {
  const char* const* names = NULL;
  int count = hrx_backend_names(&names);
  char expected[256] = "";
  for (int i = 0; i < count; ++i) {
    size_t used = strlen(expected);
    snprintf(expected + used, sizeof(expected) - used, "%s%s", i ? ", " : "",
             names[i]);
  }
  return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                         "unknown backend '%s'%s; expected one of: %s", name,
                         origin, expected);
}

/* Loads `backend` (for an open or a listing, see hrx_backend_t.load) and
 * checks that it has device `index`. */
static hrx_status_t hrx_backend_check(const hrx_backend_t* backend, int index,
                                      bool opening) {
  int count = 0;
  HRX_RETURN_IF_ERROR(backend->load(opening, &count));
  if (index < 0 || index >= count) {
    return hrx_make_status(HRX_STATUS_OUT_OF_RANGE,
                           "device index %d is out of range: backend '%s' has "
                           "%d device%s (valid: 0..%d)",
                           index, backend->name, count, count == 1 ? "" : "s",
                           count - 1);
  }
  return NULL;
}

hrx_status_t hrx_backend_probe(const char* name) {
  const hrx_backend_t* backend = hrx_backend_lookup(name);
  return backend ? hrx_backend_check(backend, 0, false)
                 : hrx_backend_unknown(name ? name : "(null)", "");
}

void hrx_backend_query_info(const char* name, hrx_backend_info_t* out_info) {
  memset(out_info, 0, sizeof(*out_info));
  const hrx_backend_t* backend = hrx_backend_lookup(name);
  if (backend && backend->describe) backend->describe(out_info);
}

hrx_status_t hrx_backend_select(const char* name, int index,
                                const hrx_backend_t** out_backend,
                                char* out_note, size_t capacity) {
  const char* origin = "";
  const char* how = "backend argument";
  if (!name || !*name) {
    const char* env = getenv("HRX_BACKEND");
    if (env && *env) {
      name = env;
      origin = " (from HRX_BACKEND)";
      how = "HRX_BACKEND";
    }
  }
  if (name && *name) {
    const hrx_backend_t* backend = hrx_backend_lookup(name);
    if (!backend) return hrx_backend_unknown(name, origin);
    HRX_RETURN_IF_ERROR(hrx_backend_check(backend, index, true));
    *out_backend = backend;
    snprintf(out_note, capacity, "%s", how);
    return NULL;
  }
  /* Automatic: the first backend that has the device. */
  char reasons[2048] = "";
  int count = 0;
  const hrx_backend_t* const* drivers = hrx_hal_drivers(&count);
  for (int i = 0; i < count; ++i) {
    hrx_status_t status = hrx_backend_check(drivers[i], index, true);
    if (!status) {
      *out_backend = drivers[i];
      snprintf(out_note, capacity, "automatic%s%s", reasons[0] ? "; passed over " : "",
               reasons);
      return NULL;
    }
    size_t used = strlen(reasons);
    snprintf(reasons + used, sizeof(reasons) - used, "%s%s: %s",
             used ? "; " : "", drivers[i]->name,
             hrx_status_message(status));
    hrx_status_free(status);
  }
  return hrx_make_status(HRX_STATUS_UNAVAILABLE,
                         "no backend has device %d (%s)", index, reasons);
}
