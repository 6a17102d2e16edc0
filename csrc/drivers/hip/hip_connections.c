#include "hip_connections.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/environment.h"

static pthread_mutex_t hrx_hip_connections_mutex = PTHREAD_MUTEX_INITIALIZER;

/* When hrx sets a variable it also sets this marker to "VARIABLE=value", so
 * that this process and its children (which inherit both, e.g. the sweep's
 * fresh processes) can tell hrx's value from the user's: a variable whose
 * value matches the marker was set by hrx and may be resized. */
#define HRX_HIP_CONNECTIONS_MARKER "HRX_CONNECTION_BUDGET_SET"

/* Mutex held. */
static bool hrx_hip_connections_set_by_hrx(const char* variable,
                                           const char* text) {
  const char* marker = getenv(HRX_HIP_CONNECTIONS_MARKER);
  size_t n = strlen(variable);
  return marker && strncmp(marker, variable, n) == 0 && marker[n] == '=' &&
         strcmp(marker + n + 1, text) == 0;
}

/* Mutex held. */
static void hrx_hip_connections_write(const char* variable, int value) {
  char text[16];
  char marker[80];
  snprintf(text, sizeof(text), "%d", value);
  snprintf(marker, sizeof(marker), "%s=%s", variable, text);
  setenv(variable, text, 1);
  setenv(HRX_HIP_CONNECTIONS_MARKER, marker, 1);
}

const char* hrx_hip_connections_variable(const char* platform_id) {
  if (!platform_id) return NULL;
  if (strcmp(platform_id, "nvidia") == 0) return "CUDA_DEVICE_MAX_CONNECTIONS";
  if (strcmp(platform_id, "amd") == 0) return "GPU_MAX_HW_QUEUES";
  return NULL;
}

static int hrx_hip_connections_max(const char* platform_id) {
  return strcmp(platform_id, "nvidia") == 0 ? HRX_HIP_CUDA_MAX_CONNECTIONS
                                            : HRX_HIP_AMD_MAX_HW_QUEUES;
}

static int hrx_hip_connections_clamp(const char* platform_id, int wanted) {
  int max = hrx_hip_connections_max(platform_id);
  return wanted < 1 ? 1 : wanted > max ? max : wanted;
}

/* The user's value of the variable, or NULL when unset or set by hrx.
 * Mutex held. */
static const char* hrx_hip_connections_user_value(const char* variable) {
  const char* text = getenv(variable);
  if (!text || !*text) return NULL;
  if (hrx_hip_connections_set_by_hrx(variable, text)) return NULL;
  return text;
}

static int hrx_hip_connections_parse(const char* text) {
  int64_t value = 0;
  hrx_env_parse_int(text, 0, 1 << 20, &value);
  return (int)value;
}

static void hrx_hip_connections_describe(const char* platform_id, int wanted,
                                         bool apply,
                                         hrx_connection_budget_t* out) {
  memset(out, 0, sizeof(*out));
  out->wanted = wanted;
  const char* variable = hrx_hip_connections_variable(platform_id);
  if (!variable) {
    snprintf(out->source, sizeof(out->source), "not applicable");
    return;
  }
  snprintf(out->variable, sizeof(out->variable), "%s", variable);
  pthread_mutex_lock(&hrx_hip_connections_mutex);
  const char* user = hrx_hip_connections_user_value(variable);
  if (user) {
    out->value = hrx_hip_connections_parse(user);
    snprintf(out->source, sizeof(out->source), "user");
  } else {
    out->value = hrx_hip_connections_clamp(platform_id, wanted);
    if (apply) {
      hrx_hip_connections_write(variable, out->value);
      snprintf(out->source, sizeof(out->source), "hrx");
    } else {
      snprintf(out->source, sizeof(out->source), "pending");
    }
  }
  pthread_mutex_unlock(&hrx_hip_connections_mutex);
}

void hrx_hip_connections_apply(const char* platform_id, int wanted,
                               hrx_connection_budget_t* out_budget) {
  hrx_hip_connections_describe(platform_id, wanted, true, out_budget);
}

void hrx_hip_connections_preview(const char* platform_id, int wanted,
                                 hrx_connection_budget_t* out_budget) {
  hrx_hip_connections_describe(platform_id, wanted, false, out_budget);
}

void hrx_hip_connections_current(const char* platform_id,
                                 hrx_connection_budget_t* out_budget) {
  memset(out_budget, 0, sizeof(*out_budget));
  out_budget->wanted = HRX_CONNECTIONS_WANTED(HRX_DEFAULT_STREAM_QUEUE_COUNT);
  const char* variable = hrx_hip_connections_variable(platform_id);
  if (!variable) {
    snprintf(out_budget->source, sizeof(out_budget->source), "not applicable");
    return;
  }
  snprintf(out_budget->variable, sizeof(out_budget->variable), "%s", variable);
  pthread_mutex_lock(&hrx_hip_connections_mutex);
  const char* text = getenv(variable);
  if (!text || !*text) {
    snprintf(out_budget->source, sizeof(out_budget->source), "unset");
  } else {
    out_budget->value = hrx_hip_connections_parse(text);
    bool ours = hrx_hip_connections_set_by_hrx(variable, text);
    snprintf(out_budget->source, sizeof(out_budget->source), "%s",
             ours ? "hrx" : "user");
  }
  pthread_mutex_unlock(&hrx_hip_connections_mutex);
}

int hrx_hip_connections_open_wanted(const char* platform_id) {
  if (platform_id && strcmp(platform_id, "nvidia") == 0) {
    return HRX_HIP_CUDA_MAX_CONNECTIONS;
  }
  return HRX_CONNECTIONS_WANTED(HRX_DEFAULT_STREAM_QUEUE_COUNT);
}

/* What the runtime saw when it started; hrx_hip_connections_mutex. */
static bool hrx_hip_connections_started = false;
static hrx_connection_budget_t hrx_hip_connections_start;
/* What the last runtime to start (refused ones included) saw. */
static bool hrx_hip_connections_attempted = false;
static hrx_connection_budget_t hrx_hip_connections_attempt;

static void hrx_hip_connections_save_one(const char* name, bool* out_had,
                                         char* out_text, size_t capacity) {
  const char* text = getenv(name);
  *out_had = text != NULL;
  snprintf(out_text, capacity, "%s", text ? text : "");
}

void hrx_hip_connections_before_start(const char* platform_id, bool opening,
                                      hrx_hip_connections_saved_t* out_saved) {
  memset(out_saved, 0, sizeof(*out_saved));
  const char* variable = hrx_hip_connections_variable(platform_id);
  if (!variable) return;
  pthread_mutex_lock(&hrx_hip_connections_mutex);
  out_saved->variable = variable;
  hrx_hip_connections_save_one(variable, &out_saved->had_value,
                               out_saved->value, sizeof(out_saved->value));
  hrx_hip_connections_save_one(HRX_HIP_CONNECTIONS_MARKER,
                               &out_saved->had_marker, out_saved->marker,
                               sizeof(out_saved->marker));
  pthread_mutex_unlock(&hrx_hip_connections_mutex);
  hrx_connection_budget_t start;
  if (opening) {
    hrx_hip_connections_apply(
        platform_id, hrx_hip_connections_open_wanted(platform_id), &start);
  } else {
    hrx_hip_connections_current(platform_id, &start);
  }
  start.wanted = hrx_hip_connections_open_wanted(platform_id);
  pthread_mutex_lock(&hrx_hip_connections_mutex);
  hrx_hip_connections_start = start;
  hrx_hip_connections_started = true;
  hrx_hip_connections_attempt = start;
  hrx_hip_connections_attempted = true;
  pthread_mutex_unlock(&hrx_hip_connections_mutex);
}

static void hrx_hip_connections_restore_one(const char* name, bool had,
                                            const char* text) {
  if (had) {
    setenv(name, text, 1);
  } else {
    unsetenv(name);
  }
}

void hrx_hip_connections_withdraw(const hrx_hip_connections_saved_t* saved) {
  if (!saved->variable) return;
  pthread_mutex_lock(&hrx_hip_connections_mutex);
  hrx_hip_connections_restore_one(saved->variable, saved->had_value,
                                  saved->value);
  hrx_hip_connections_restore_one(HRX_HIP_CONNECTIONS_MARKER,
                                  saved->had_marker, saved->marker);
  hrx_hip_connections_started = false;
  pthread_mutex_unlock(&hrx_hip_connections_mutex);
}

/* Copies *recorded to *out when *present, under the mutex. */
static bool hrx_hip_connections_read(const bool* present,
                                     const hrx_connection_budget_t* recorded,
                                     hrx_connection_budget_t* out) {
  pthread_mutex_lock(&hrx_hip_connections_mutex);
  bool found = *present;
  if (found) *out = *recorded;
  pthread_mutex_unlock(&hrx_hip_connections_mutex);
  return found;
}

bool hrx_hip_connections_at_start(hrx_connection_budget_t* out_budget) {
  return hrx_hip_connections_read(&hrx_hip_connections_started,
                                  &hrx_hip_connections_start, out_budget);
}

bool hrx_hip_connections_last_start(hrx_connection_budget_t* out_budget) {
  return hrx_hip_connections_read(&hrx_hip_connections_attempted,
                                  &hrx_hip_connections_attempt, out_budget);
}
