/* Loading the hip backend's runtime library, without a GPU, one scenario
 * per process (the backend loads its runtime once per process):
 *
 *   test_hip_library_load amd-no-device LIBRARY
 *       HRX_HIP_LIBRARY=LIBRARY names a real libamdhip64 on a machine without
 *       an AMD GPU: UNAVAILABLE, naming the library and the runtime's
 *       "no device" error; no crash.
 *   test_hip_library_load amd-no-device-opening LIBRARY
 *       The same, loaded for a device open: GPU_MAX_HW_QUEUES is applied
 *       right before the runtime's first call, and withdrawn when that
 *       runtime refuses.
 *   test_hip_library_load missing-library PATH
 *       HRX_HIP_LIBRARY=PATH does not exist: UNAVAILABLE naming PATH.
 *
 * make -f tests/c/hip.mk hip-load runs them against Debian's libamdhip64.
 * Exit status 0 on success. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "drivers/hip/hip_backend.h"
#include "drivers/hip/hip_connections.h"
#include "hip_test_support.h"

/* Expects load() to fail with UNAVAILABLE, twice (the second from the
 * kept result), and device_open to fail the same way. Returns the message
 * of the first failure (caller frees) or NULL. */
static char* expect_unavailable(bool opening) {
  int count = -1;
  hrx_status_t status = hrx_hip_backend.load(opening, &count);
  CHECK(status != NULL, "load succeeded with %d devices", count);
  if (!status) return NULL;
  CHECK(hrx_status_code(status) == HRX_STATUS_UNAVAILABLE, "code %s: %s",
        hrx_status_code_name(hrx_status_code(status)),
        hrx_status_message(status));
  CHECK(count == -1, "out_device_count written on failure");
  char* message = strdup(hrx_status_message(status));
  printf("load: %s: %s\n", hrx_status_code_name(hrx_status_code(status)),
         message);
  hrx_status_free(status);

  status = hrx_hip_backend.load(opening, &count);
  CHECK(status && hrx_status_code(status) == HRX_STATUS_UNAVAILABLE &&
            strcmp(hrx_status_message(status), message) == 0,
        "second load differs: %s", hrx_status_message(status));
  hrx_status_free(status);

  hrx_backend_device_t* device = NULL;
  status = hrx_hip_backend.device_open(0, &hrx_test_settings, &device);
  CHECK(status && hrx_status_code(status) == HRX_STATUS_UNAVAILABLE,
        "device_open on an unavailable backend: %s",
        hrx_status_message(status));
  CHECK(device == NULL, "device written on failure");
  hrx_status_free(status);
  return message;
}

/* The connection budget around the runtime's first call (hipGetDeviceCount,
 * which refuses here): a load for an open applied GPU_MAX_HW_QUEUES right
 * before it, a listing load did not; the refused runtime's value is
 * withdrawn either way, leaving the environment as it was. */
static void check_budget_at_start(bool opening) {
  hrx_connection_budget_t seen;
  memset(&seen, 0, sizeof(seen));
  CHECK(hrx_hip_connections_last_start(&seen), "no runtime start recorded");
  CHECK(strcmp(seen.variable, "GPU_MAX_HW_QUEUES") == 0, "variable %s",
        seen.variable);
  if (opening) {
    CHECK(strcmp(seen.source, "hrx") == 0 &&
              seen.value == HRX_CONNECTIONS_WANTED(
                                HRX_DEFAULT_STREAM_QUEUE_COUNT),
          "an open's load started the runtime with %s=%d (%s)",
          seen.variable, seen.value, seen.source);
  } else {
    CHECK(strcmp(seen.source, "unset") == 0 && seen.value == 0,
          "a listing load set %s=%d (%s)", seen.variable, seen.value,
          seen.source);
  }
  hrx_connection_budget_t now;
  CHECK(!hrx_hip_connections_at_start(&now),
        "a refused runtime is reported as started (%s)", now.source);
  CHECK(getenv("GPU_MAX_HW_QUEUES") == NULL, "left GPU_MAX_HW_QUEUES=%s",
        getenv("GPU_MAX_HW_QUEUES"));
  CHECK(getenv("HRX_CONNECTION_BUDGET_SET") == NULL,
        "left HRX_CONNECTION_BUDGET_SET=%s",
        getenv("HRX_CONNECTION_BUDGET_SET"));
}

static int scenario_amd_no_device(const char* library, bool opening) {
  setenv("HRX_HIP_LIBRARY", library, 1);
  unsetenv("GPU_MAX_HW_QUEUES");
  unsetenv("HRX_CONNECTION_BUDGET_SET");
  char* message = expect_unavailable(opening);
  if (!message) return 1;
  CHECK(strstr(message, library) != NULL, "library not named: %s", message);
  CHECK(strstr(message, "loaded, but hipGetDeviceCount") != NULL,
        "not the runtime's refusal: %s", message);
  CHECK(strcasestr(message, "device") != NULL, "no 'device' text: %s",
        message);
  free(message);
  const char* loaded = hrx_hip_loaded_library();
  CHECK(loaded && strcmp(loaded, library) == 0, "hrx_hip_loaded_library: %s",
        loaded ? loaded : "(null)");
  const char* platform = hrx_hip_platform();
  CHECK(platform && strcmp(platform, "amd") == 0, "hrx_hip_platform: %s",
        platform ? platform : "(null)");
  check_budget_at_start(opening);
  return 0;
}

static int scenario_missing_library(const char* path) {
  setenv("HRX_HIP_LIBRARY", path, 1);
  char* message = expect_unavailable(true);
  if (!message) return 1;
  CHECK(strstr(message, "HRX_HIP_LIBRARY") != NULL, "variable not named: %s",
        message);
  CHECK(strstr(message, path) != NULL, "path not named: %s", message);
  free(message);
  CHECK(hrx_hip_loaded_library() == NULL, "hrx_hip_loaded_library: %s",
        hrx_hip_loaded_library());
  CHECK(hrx_hip_platform() == NULL, "hrx_hip_platform: %s",
        hrx_hip_platform());
  return 0;
}

static int run_amd_no_device(const char* library) {
  return scenario_amd_no_device(library, false);
}

static int run_amd_no_device_opening(const char* library) {
  return scenario_amd_no_device(library, true);
}

static const hip_scenario_t scenarios[] = {
    {"amd-no-device", "LIBRARY", run_amd_no_device},
    {"amd-no-device-opening", "LIBRARY", run_amd_no_device_opening},
    {"missing-library", "PATH", scenario_missing_library},
};

int main(int argc, char** argv) {
  return hip_scenario_main(argc, argv, scenarios,
                           sizeof(scenarios) / sizeof(scenarios[0]));
}
