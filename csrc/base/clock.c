#include "clock.h"

#include "hrx.h"

uint64_t hrx_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void hrx_clock_cond_init(pthread_cond_t* cond) {
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(cond, &attr);
  pthread_condattr_destroy(&attr);
}

struct timespec hrx_clock_timespec(uint64_t at_ns) {
  struct timespec ts = {.tv_sec = (time_t)(at_ns / 1000000000ull),
                        .tv_nsec = (long)(at_ns % 1000000000ull)};
  return ts;
}
