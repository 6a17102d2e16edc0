/* A device's cleanup thread (cleanup.h). */
#include "cleanup.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "hal/device.h"
#include "base/clock.h"
#include "base/status.h"
#include "base/thread_state.h"

typedef struct hrx_cleanup_task_s {
  void (*run)(void* arg);
  void* arg;
  struct hrx_cleanup_task_s* next;
} hrx_cleanup_task_t;

struct hrx_cleanup_s {
  pthread_mutex_t mutex;
  pthread_cond_t work_cond;      /* a task was queued, or stopping */
  pthread_cond_t done_cond;      /* `finished` moved */
  hrx_cleanup_task_t* head;      /* owned, oldest first; mutex */
  hrx_cleanup_task_t* tail;      /* mutex */
  uint64_t queued;               /* tasks queued so far; mutex */
  uint64_t finished;             /* tasks run so far; mutex */
  atomic_bool busy;              /* queued != finished; written under mutex */
  bool stopping;                 /* mutex */
  bool ends_itself;              /* destroyed from one of its tasks; mutex */
  pthread_t thread;
};

static void hrx_cleanup_free(hrx_cleanup_t* cleanup) {
  pthread_cond_destroy(&cleanup->work_cond);
  pthread_cond_destroy(&cleanup->done_cond);
  pthread_mutex_destroy(&cleanup->mutex);
  free(cleanup);
}

static void* hrx_cleanup_main(void* arg) {
  hrx_cleanup_t* cleanup = arg;
  hrx_thread_state()->cleanup_thread = cleanup;
  pthread_mutex_lock(&cleanup->mutex);
  for (;;) {
    while (!cleanup->head && !cleanup->stopping) {
      pthread_cond_wait(&cleanup->work_cond, &cleanup->mutex);
    }
    hrx_cleanup_task_t* task = cleanup->head;
    if (!task) break; /* stopping, and everything queued has run */
    cleanup->head = task->next;
    if (!cleanup->head) cleanup->tail = NULL;
    pthread_mutex_unlock(&cleanup->mutex);
    task->run(task->arg);
    free(task);
    pthread_mutex_lock(&cleanup->mutex);
    if (++cleanup->finished == cleanup->queued) {
      atomic_store(&cleanup->busy, false);
    }
    pthread_cond_broadcast(&cleanup->done_cond);
  }
  bool ends_itself = cleanup->ends_itself;
  pthread_mutex_unlock(&cleanup->mutex);
  if (ends_itself) hrx_cleanup_free(cleanup);
  return NULL;
}

hrx_status_t hrx_cleanup_create(hrx_cleanup_t** out_cleanup) {
  hrx_cleanup_t* cleanup = calloc(1, sizeof(*cleanup));
  if (!cleanup) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate the device's cleanup thread");
  }
  pthread_mutex_init(&cleanup->mutex, NULL);
  pthread_cond_init(&cleanup->work_cond, NULL);
  /* Timed waits measure deadlines on hrx_now_ns's clock. */
  hrx_clock_cond_init(&cleanup->done_cond);
  atomic_init(&cleanup->busy, false);
  int error =
      pthread_create(&cleanup->thread, NULL, hrx_cleanup_main, cleanup);
  if (error) {
    hrx_cleanup_free(cleanup);
    return hrx_make_status(HRX_STATUS_RESOURCE_EXHAUSTED,
                           "cannot start the device's cleanup thread "
                           "(error %d)",
                           error);
  }
  *out_cleanup = cleanup;
  return NULL;
}

bool hrx_cleanup_queue(hrx_cleanup_t* cleanup, void (*run)(void* arg),
                       void* arg) {
  hrx_cleanup_task_t* task = malloc(sizeof(*task));
  if (!task) return false;
  task->run = run;
  task->arg = arg;
  task->next = NULL;
  pthread_mutex_lock(&cleanup->mutex);
  if (cleanup->tail) {
    cleanup->tail->next = task;
  } else {
    cleanup->head = task;
  }
  cleanup->tail = task;
  cleanup->queued++;
  atomic_store(&cleanup->busy, true);
  pthread_cond_signal(&cleanup->work_cond);
  pthread_mutex_unlock(&cleanup->mutex);
  return true;
}

bool hrx_cleanup_busy(hrx_cleanup_t* cleanup) {
  return atomic_load_explicit(&cleanup->busy, memory_order_acquire);
}

uint64_t hrx_cleanup_pending(hrx_cleanup_t* cleanup) {
  if (!hrx_cleanup_busy(cleanup)) return 0;
  pthread_mutex_lock(&cleanup->mutex);
  uint64_t pending = cleanup->queued - cleanup->finished;
  pthread_mutex_unlock(&cleanup->mutex);
  return pending;
}

bool hrx_cleanup_on_thread(const hrx_cleanup_t* cleanup) {
  return hrx_thread_state()->cleanup_thread == cleanup;
}

bool hrx_cleanup_wait_for(void* arg, uint64_t timeout_ns) {
  hrx_cleanup_t* cleanup = arg;
  if (!hrx_cleanup_busy(cleanup) || hrx_cleanup_on_thread(cleanup)) {
    return true;
  }
  struct timespec deadline = {0};
  if (timeout_ns != HRX_WAIT_FOREVER) {
    deadline = hrx_clock_timespec(hrx_now_ns() + timeout_ns);
  }
  pthread_mutex_lock(&cleanup->mutex);
  uint64_t target = cleanup->queued;
  bool done = true;
  while (cleanup->finished < target) {
    if (timeout_ns == HRX_WAIT_FOREVER) {
      pthread_cond_wait(&cleanup->done_cond, &cleanup->mutex);
    } else if (pthread_cond_timedwait(&cleanup->done_cond, &cleanup->mutex,
                                      &deadline) == ETIMEDOUT) {
      done = cleanup->finished >= target;
      break;
    }
  }
  pthread_mutex_unlock(&cleanup->mutex);
  return done;
}

void hrx_cleanup_wait(hrx_cleanup_t* cleanup) {
  hrx_cleanup_wait_for(cleanup, HRX_WAIT_FOREVER);
}

void hrx_cleanup_destroy(hrx_cleanup_t* cleanup) {
  if (!cleanup) return;
  bool on_thread = hrx_cleanup_on_thread(cleanup);
  pthread_mutex_lock(&cleanup->mutex);
  cleanup->stopping = true;
  cleanup->ends_itself = on_thread;
  pthread_cond_signal(&cleanup->work_cond);
  pthread_mutex_unlock(&cleanup->mutex);
  if (on_thread) {
    pthread_detach(cleanup->thread);
    return;
  }
  pthread_join(cleanup->thread, NULL);
  hrx_cleanup_free(cleanup);
}
