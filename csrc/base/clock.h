/* The one clock of hrx: hrx_now_ns (hrx.h), CLOCK_MONOTONIC. Timed waits on
 * condition variables use it too, through these helpers. */
#ifndef HRX_BASE_CLOCK_H_
#define HRX_BASE_CLOCK_H_

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Initializes `cond` so that its timed waits take hrx_now_ns deadlines. */
void hrx_clock_cond_init(pthread_cond_t* cond);

/* The hrx_now_ns time `at_ns` as the timespec pthread_cond_timedwait takes
 * for a condition made by hrx_clock_cond_init. */
struct timespec hrx_clock_timespec(uint64_t at_ns);

#ifdef __cplusplus
}
#endif

#endif /* HRX_BASE_CLOCK_H_ */
