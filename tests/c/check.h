/* The checks the C tests of the core share (one translation unit each, so
 * the counters are per test binary). CHECK counts a condition; CHECK_CODE
 * consumes a status and checks its code and, when `part` is not NULL, that
 * its message contains `part`; CHECK_OK expects success. A test's main
 * prints "N passed, M failed" from hrx_test_passed / hrx_test_failed. */
#ifndef HRX_TESTS_C_CHECK_H_
#define HRX_TESTS_C_CHECK_H_

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "hrx.h"

static int hrx_test_passed = 0;
static int hrx_test_failed = 0;

#define CHECK(cond)                                                   \
  do {                                                                \
    if (cond) {                                                       \
      hrx_test_passed++;                                              \
    } else {                                                          \
      hrx_test_failed++;                                              \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
              #cond);                                                 \
    }                                                                 \
  } while (0)

/* Checks a status's code (consuming it) and optionally a message part. */
__attribute__((unused))
static void check_status(hrx_status_t status, hrx_status_code_t code,
                         const char* part, const char* file, int line) {
  bool ok = hrx_status_code(status) == code &&
            (!part || strstr(hrx_status_message(status), part));
  if (ok) {
    hrx_test_passed++;
  } else {
    hrx_test_failed++;
    fprintf(stderr, "%s:%d: expected %s%s%s, got %s: %s\n", file, line,
            hrx_status_code_name(code), part ? " containing " : "",
            part ? part : "", hrx_status_code_name(hrx_status_code(status)),
            hrx_status_message(status));
  }
  hrx_status_free(status);
}
#define CHECK_CODE(expr, code, part) \
  check_status((expr), (code), (part), __FILE__, __LINE__)
#define CHECK_OK(expr) CHECK_CODE((expr), HRX_STATUS_OK, NULL)

#endif /* HRX_TESTS_C_CHECK_H_ */
