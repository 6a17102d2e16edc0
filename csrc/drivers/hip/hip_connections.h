/* The hardware connection budget of the process: how many hardware queues
 * (NVIDIA: "connections", CUDA_DEVICE_MAX_CONNECTIONS, default 8, at most
 * 32; AMD: GPU_MAX_HW_QUEUES, default 4) the runtime spreads its streams
 * over. Streams beyond it share hardware queues, so a high-priority or
 * reserved stream can still wait behind bulk work of another stream
 * (reference/h200-measurements.md). The runtime reads the variable when
 * it creates its context, so hrx applies the budget when a hip device is
 * opened; listing or probing backends (hrx_backend_probe, hrx.backends())
 * never touches the environment.
 *
 * When the runtime reads it: measured on an H200 (CUDA 12/13), a value set
 * after the runtime's first call (cudaGetDeviceCount, which runs cuInit)
 * has no effect, even before the device's context exists. So the budget is
 * applied right before that first call, when the load is made by opening a
 * device (hrx_hip_connections_before_start with opening = true). When an
 * earlier listing already started the runtime with no value set, opening a
 * device can no longer change it: the device reports source
 * "runtime-started" (value 0, the runtime's default) and hrx sets nothing.
 *
 * Rule: a value the user already set is respected as is ("user"); else
 * opening a device sets the variable ("hrx"): on NVIDIA to the maximum, on
 * AMD to what the default pool wants (count * lanes + headroom), clamped
 * to [1, max]. The variable is process-wide: a context created earlier by
 * another library keeps the value it was created with. hrx marks its own
 * value in HRX_CONNECTION_BUDGET_SET ("VARIABLE=value"), so a child process
 * that inherits it resizes it rather than mistaking it for the user's. The
 * Python binding copies both into os.environ after an open (the C
 * environment is the truth; os.environ is Python's copy of it).
 *
 * Thread-safe (one mutex guards the variable and what hrx set). */
#ifndef HRX_DRIVERS_HIP_HIP_CONNECTIONS_H_
#define HRX_DRIVERS_HIP_HIP_CONNECTIONS_H_

#include <stdbool.h>

#include "hrx.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HRX_HIP_CUDA_MAX_CONNECTIONS 32
#define HRX_HIP_AMD_MAX_HW_QUEUES 32

/* The variable of a platform ("nvidia" / "amd"); NULL for another id. */
const char* hrx_hip_connections_variable(const char* platform_id);

/* Sets the variable for `wanted` unless the user set it, and describes the
 * outcome. */
void hrx_hip_connections_apply(const char* platform_id, int wanted,
                               hrx_connection_budget_t* out_budget);

/* Describes what apply would do now, without doing it ("pending", or
 * "user" when the user set it). */
void hrx_hip_connections_preview(const char* platform_id, int wanted,
                                 hrx_connection_budget_t* out_budget);

/* The budget an open asks for: on NVIDIA the maximum (priority lanes and
 * reserved queues only help when streams get connections of their own), on
 * AMD what the default pool wants. */
int hrx_hip_connections_open_wanted(const char* platform_id);

/* The variables as they were before hrx_hip_connections_before_start, so a
 * runtime that then refuses can give them back. */
typedef struct hrx_hip_connections_saved_s {
  const char* variable;  /* NULL: nothing was touched */
  bool had_value;
  char value[64];
  bool had_marker;
  char marker[96];
} hrx_hip_connections_saved_t;

/* Called right before the runtime's first call (the moment it reads the
 * variable). opening: the load is made by opening a device, so the budget
 * for `platform_id` is applied first (hrx_hip_connections_apply with
 * hrx_hip_connections_open_wanted); otherwise nothing is set. Records what
 * the runtime is about to see (hrx_hip_connections_at_start). */
void hrx_hip_connections_before_start(const char* platform_id, bool opening,
                                      hrx_hip_connections_saved_t* out_saved);

/* The runtime of that attempt refused (its library is skipped): restores
 * the variables before_start changed and forgets what it recorded. */
void hrx_hip_connections_withdraw(const hrx_hip_connections_saved_t* saved);

/* What the variable was when the runtime started: "user" or "hrx" with the
 * value it started with, or "unset" (value 0: the runtime's default). false
 * (and *out_budget untouched) when no start was recorded. */
bool hrx_hip_connections_at_start(hrx_connection_budget_t* out_budget);

/* Like hrx_hip_connections_at_start, for the last runtime that was
 * started, including one that then refused (its budget withdrawn). */
bool hrx_hip_connections_last_start(hrx_connection_budget_t* out_budget);

/* Describes the process's variable now, for hrx.backends(): "user" or
 * "hrx" with its value, or "unset" (value 0: the runtime's default). wanted
 * is what the default pool asks for. */
void hrx_hip_connections_current(const char* platform_id,
                                 hrx_connection_budget_t* out_budget);

#ifdef __cplusplus
}
#endif

#endif /* HRX_DRIVERS_HIP_HIP_CONNECTIONS_H_ */
