/* The environment parser every hrx variable goes through
 * (csrc/core/environment.h): whole decimal numbers only, "0" and "00"
 * alike, anything else or out of range leaves the default. */
#include <stdint.h>
#include <stdlib.h>

#include "core/environment.h"

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
  unsetenv(name);
  CHECK(hrx_env_int(name, 20, 1, 100) == 20);
  CHECK(hrx_env_switch(name, true));
  setenv(name, "42", 1);
  CHECK(hrx_env_int(name, 20, 1, 100) == 42);
  CHECK(hrx_env_int(name, 20, 1, 10) == 20);  /* out of range: default */
  CHECK(hrx_env_switch(name, true));           /* not a switch value */
  setenv(name, "00", 1);
  CHECK(!hrx_env_switch(name, true));
  setenv(name, "0", 1);
  CHECK(!hrx_env_switch(name, true));
  setenv(name, "1", 1);
  CHECK(hrx_env_switch(name, false));
  setenv(name, "on", 1);
  CHECK(!hrx_env_switch(name, false));
  unsetenv(name);
}

int main(void) {
  test_parse_int();
  test_variables();
  printf("%d passed, %d failed\n", hrx_test_passed, hrx_test_failed);
  return hrx_test_failed ? 1 : 0;
}
