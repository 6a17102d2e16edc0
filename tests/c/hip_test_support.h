/* What the run-time tests of the hip backend share. Each of them
 * (test_hip_library_load.c, test_hip_rtc.c, test_hip_fake_cudart.c,
 * test_hip_device.c) is a program that runs one scenario per process, since
 * the backend loads its runtime once per process, and is linked with
 * hip_test_support.c (tests/c/hip.mk). Here: the failure count and its
 * CHECK / CHECK_OK, a failure expected with its message, the runtime's last
 * error left clean, the kernel source that the compilers and a device
 * compile, a device with its vtable, and the main that picks a scenario by
 * name and prints its PASS or FAILED line. */
#ifndef HRX_TESTS_C_HIP_TEST_SUPPORT_H_
#define HRX_TESTS_C_HIP_TEST_SUPPORT_H_

#include <stddef.h>
#include <stdio.h>

#include "hal/driver.h"
#include "base/status.h"

/* The failed checks of this process. */
extern int failures;

#define CHECK(cond, ...)                                            \
  do {                                                              \
    if (!(cond)) {                                                  \
      ++failures;                                                   \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                 \
      fputc('\n', stderr);                                          \
    }                                                               \
  } while (0)

/* Fails the test (and returns 1 from the enclosing function) on error. */
#define CHECK_OK(expr)                                                     \
  do {                                                                     \
    hrx_status_t check_status_ = (expr);                                   \
    if (check_status_) {                                                   \
      ++failures;                                                          \
      fprintf(stderr, "FAIL %s:%d: %s: %s: %s\n", __FILE__, __LINE__,      \
              #expr, hrx_status_code_name(hrx_status_code(check_status_)), \
              hrx_status_message(check_status_));                         \
      hrx_status_free(check_status_);                                      \
      return 1;                                                            \
    }                                                                      \
  } while (0)

/* One source for both platforms (hip_test_support.c): saxpy, a kernel that
 * needs kernel_options and a C++-linkage kernel. */
/* The core's settings a driver is opened with here (batching on). */
extern const hrx_hal_device_settings_t hrx_test_settings;

extern const char kernel_source[];
extern const char* const kernel_options[3];
extern const char* const kernel_names[3];

/* Expects `status` to be a failure with `code` whose message contains
 * each of the NULL-terminated `needles`. Frees it. */
void expect_failure(hrx_status_t status, hrx_status_code_t code,
                    const char* what, ...);

/* The runtime's per-thread last error is clean: hrx reported its own
 * failures without leaving them for another library on the thread. */
void expect_last_error_clean(const char* after);

typedef struct device_fixture_s {
  hrx_backend_device_t* device;
  const hrx_backend_vtable_t* vt;
} device_fixture_t;

/* A queue of the normal lane. */
hrx_status_t create_queue(device_fixture_t* f, hrx_native_queue_t** out_queue);

/* A scenario: its name on the command line, what its one argument names
 * (NULL: it takes none), and what runs it (with that argument). */
typedef struct hip_scenario_s {
  const char* name;
  const char* argument;
  int (*run)(const char* argument);
} hip_scenario_t;

/* Runs the scenario argv[1] names, with argv[2] where it takes an argument:
 * prints "PASS <name>" and returns 0 when it returned 0 with no failed
 * check, else prints "FAILED <name>" and returns 1; a usage line and 2 for
 * a command line that names none of `scenarios`. */
int hip_scenario_main(int argc, char** argv, const hip_scenario_t* scenarios,
                      size_t count);

#endif /* HRX_TESTS_C_HIP_TEST_SUPPORT_H_ */
