/* The environment parser every hrx variable goes through
 * (csrc/base/environment.h): whole decimal numbers only, "0" and "00"
 * alike, unset or empty gives the default, anything else is refused naming
 * the variable. */
#include <stdint.h>
#include <stdlib.h>

#include "base/environment.h"

#include "check.h"

static void test_parse_int(void) {
  int64_t value = -7;
  CHECK(hrx_env_parse_int("0", 0, 1, &value) && value == 0);
  CHECK(hrx_env_parse_int("00", 0, 1, &value) && value == 0);
  CHECK(hrx_env_parse_int("01", 0, 1, &value) && value == 1);
  CHECK(hrx_env_parse_int("-3", -5, 5, &value) && value == -3);
  CHECK(hrx_env_parse_int("+4", -5, 5, &value) && value == 4);
  value = -7;
  const char* refused[] = {NULL, "", " 1", "1 ", "x", "1x", "0x10", "-",
                           "2", "-1", "99999999999999999999999"};
  for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); ++i) {
    CHECK(!hrx_env_parse_int(refused[i], 0, 1, &value));
  }
  CHECK(value == -7);  /* unchanged by every refusal */
}

static void test_variables(void) {
  const char* name = "HRX_TEST_ENVIRONMENT_VALUE";
  int64_t value = -7;
  bool on = false;
  unsetenv(name);
  CHECK_OK(hrx_env_int(name, 20, 1, 100, &value));
  CHECK(value == 20);
  CHECK_OK(hrx_env_switch(name, true, &on));
  CHECK(on);
  setenv(name, "", 1);  /* empty counts as unset */
  CHECK_OK(hrx_env_int(name, 20, 1, 100, &value));
  CHECK(value == 20);
  setenv(name, "42", 1);
  CHECK_OK(hrx_env_int(name, 20, 1, 100, &value));
  CHECK(value == 42);
  value = -7;
  CHECK_CODE(hrx_env_int(name, 20, 1, 10, &value), HRX_STATUS_INVALID_ARGUMENT,
             "HRX_TEST_ENVIRONMENT_VALUE must be an integer from 1 to 10, "
             "got '42'");
  CHECK(value == -7);  /* unchanged on refusal */
  CHECK_CODE(hrx_env_switch(name, true, &on), HRX_STATUS_INVALID_ARGUMENT,
             "from 0 to 1");
  setenv(name, "00", 1);
  on = true;
  CHECK_OK(hrx_env_switch(name, true, &on));
  CHECK(!on);
  setenv(name, "0", 1);
  on = true;
  CHECK_OK(hrx_env_switch(name, true, &on));
  CHECK(!on);
  setenv(name, "1", 1);
  CHECK_OK(hrx_env_switch(name, false, &on));
  CHECK(on);
  setenv(name, "on", 1);
  CHECK_CODE(hrx_env_switch(name, false, &on), HRX_STATUS_INVALID_ARGUMENT,
             "got 'on'");
  unsetenv(name);
}

int main(void) {
  test_parse_int();
  test_variables();
  printf("%d passed, %d failed\n", hrx_test_passed, hrx_test_failed);
  return hrx_test_failed ? 1 : 0;
}
