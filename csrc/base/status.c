#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hrx_status_s {
  hrx_status_code_t code;
  bool brief;    /* WOULD_BLOCK for a wait of microseconds (status.h) */
  char location[96];
  char* message; /* owned */
};

/* Returned when a status cannot be allocated; never freed. */
static struct hrx_status_s hrx_status_oom = {
    .code = HRX_STATUS_OUT_OF_MEMORY,
    .message = "out of memory while reporting an error"};

static char* hrx_vformat(const char* format, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int n = vsnprintf(NULL, 0, format, copy);
  va_end(copy);
  if (n < 0) return NULL;
  char* text = malloc((size_t)n + 1);
  if (text) vsnprintf(text, (size_t)n + 1, format, args);
  return text;
}

hrx_status_t hrx_status_make_at(const char* file, int line,
                                hrx_status_code_t code, const char* format,
                                ...) {
  if (code == HRX_STATUS_OK) return NULL;
  hrx_status_t status = calloc(1, sizeof(*status));
  if (!status) return &hrx_status_oom;
  va_list args;
  va_start(args, format);
  status->message = hrx_vformat(format, args);
  va_end(args);
  if (!status->message) {
    free(status);
    return &hrx_status_oom;
  }
  status->code = code;
  const char* base = strrchr(file, '/');
  snprintf(status->location, sizeof(status->location), "%s:%d",
           base ? base + 1 : file, line);
  return status;
}

hrx_status_t hrx_status_make_prefixed(hrx_status_code_t code,
                                      const char* prefix, const char* text) {
  if (code == HRX_STATUS_OK) return NULL;
  size_t a = strlen(prefix);
  size_t b = strlen(text);
  hrx_status_t status = calloc(1, sizeof(*status));
  char* message = malloc(a + b + 1);
  if (!status || !message) {
    free(status);
    free(message);
    return &hrx_status_oom;
  }
  memcpy(message, prefix, a);
  memcpy(message + a, text, b + 1);
  status->code = code;
  status->message = message;
  return status;
}

hrx_status_t hrx_status_annotate(hrx_status_t status, const char* format,
                                 ...) {
  if (!status || status == &hrx_status_oom) return status;
  va_list args;
  va_start(args, format);
  char* prefix = hrx_vformat(format, args);
  va_end(args);
  if (!prefix) return status;
  size_t n = strlen(prefix) + strlen(status->message) + 3;
  char* joined = malloc(n);
  if (joined) {
    snprintf(joined, n, "%s: %s", prefix, status->message);
    free(status->message);
    status->message = joined;
  }
  free(prefix);
  return status;
}

hrx_status_t hrx_status_prefer(hrx_status_t preferred, hrx_status_t other) {
  if (!preferred) return other;
  hrx_status_free(other);
  return preferred;
}

hrx_status_code_t hrx_status_code(hrx_status_t status) {
  return status ? status->code : HRX_STATUS_OK;
}

hrx_status_t hrx_status_mark_brief(hrx_status_t status) {
  if (status && status != &hrx_status_oom) status->brief = true;
  return status;
}

bool hrx_status_would_block_briefly(hrx_status_t status) {
  return status && status->code == HRX_STATUS_WOULD_BLOCK && status->brief;
}

const char* hrx_status_message(hrx_status_t status) {
  return status ? status->message : "";
}

const char* hrx_status_location(hrx_status_t status) {
  return status ? status->location : "";
}

const char* hrx_status_code_name(hrx_status_code_t code) {
  switch (code) {
    case HRX_STATUS_OK: return "OK";
    case HRX_STATUS_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case HRX_STATUS_BUSY: return "BUSY";
    case HRX_STATUS_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
    case HRX_STATUS_UNAVAILABLE: return "UNAVAILABLE";
    case HRX_STATUS_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case HRX_STATUS_OUT_OF_RANGE: return "OUT_OF_RANGE";
    case HRX_STATUS_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case HRX_STATUS_DEVICE_ERROR: return "DEVICE_ERROR";
    case HRX_STATUS_WOULD_BLOCK: return "WOULD_BLOCK";
  }
  return "UNKNOWN";
}

void hrx_status_free(hrx_status_t status) {
  if (!status || status == &hrx_status_oom) return;
  free(status->message);
  free(status);
}

hrx_status_t hrx_status_create(hrx_status_code_t code, const char* message) {
  return hrx_status_make_at(__FILE__, __LINE__, code, "%s",
                            message ? message : "");
}
