/* Completions: host-side latches that a graph launch's last host call sets.
 * A completion never wraps a native event, so it can order work across
 * queues and devices without the native runtime. */
#include "completion.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "hal/device.h"
#include "base/clock.h"
#include "entry.h"
#include "base/status.h"

struct hrx_completion_s {
  atomic_int ref_count;
  pthread_mutex_t mutex;
  pthread_cond_t cond;            /* CLOCK_MONOTONIC */
  atomic_bool done;               /* set once, under mutex */
  hrx_status_t failure;           /* owned; first failure; under mutex */
  void* payload;                  /* owned via payload_free; under mutex */
  void (*payload_free)(void*);
  /* Attached by the running callback; settled when it returns. Written
   * only by the thread running the launch's callbacks. */
  void* staged_payload;
  void (*staged_free)(void*);
  hrx_device_t* device;           /* borrowed; held keeps it alive */
  void* held;                     /* owned via held_release */
  void (*held_release)(void*);
  hrx_completion_visit_fn_t held_visit;
};

hrx_status_t hrx_completion_create(hrx_device_t* device, void* held,
                                   void (*held_release)(void*),
                                   hrx_completion_visit_fn_t held_visit,
                                   hrx_completion_t** out_completion) {
  hrx_completion_t* completion = calloc(1, sizeof(*completion));
  if (!completion) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a completion");
  }
  hrx_clock_cond_init(&completion->cond);
  pthread_mutex_init(&completion->mutex, NULL);
  atomic_init(&completion->ref_count, 1);
  atomic_init(&completion->done, false);
  completion->device = device;
  completion->held = held;
  completion->held_release = held_release;
  completion->held_visit = held_visit;
  *out_completion = completion;
  return NULL;
}

void hrx_completion_retain(hrx_completion_t* completion) {
  if (completion) {
    atomic_fetch_add_explicit(&completion->ref_count, 1, memory_order_relaxed);
  }
}

static void hrx_completion_release_object(void* completion) {
  hrx_completion_release(completion);
}

void hrx_completion_release(hrx_completion_t* completion) {
  /* Its last release frees the launch (graph, buffers): not on a callback
   * thread. */
  if (!completion ||
      !hrx_entry_release_last(completion->device, &completion->ref_count,
                              hrx_completion_release_object, completion,
                              true)) {
    return;
  }
  if (completion->staged_free) completion->staged_free(completion->staged_payload);
  if (completion->payload_free) completion->payload_free(completion->payload);
  hrx_status_free(completion->failure);
  if (completion->held_release) completion->held_release(completion->held);
  pthread_cond_destroy(&completion->cond);
  pthread_mutex_destroy(&completion->mutex);
  free(completion);
}

void hrx_completion_run(hrx_completion_t* completion, hrx_host_fn_t fn,
                        void* user_data) {
  hrx_entry_callback_begin();
  hrx_status_t status = fn(user_data, completion);
  hrx_entry_callback_end();
  void* staged = completion->staged_payload;
  void (*staged_free)(void*) = completion->staged_free;
  completion->staged_payload = NULL;
  completion->staged_free = NULL;
  if (status) {
    pthread_mutex_lock(&completion->mutex);
    bool first = completion->failure == NULL;
    if (first) {
      completion->failure = status;
      completion->payload = staged;
      completion->payload_free = staged_free;
    }
    pthread_mutex_unlock(&completion->mutex);
    if (first) return;
    hrx_status_free(status);
  }
  if (staged_free) staged_free(staged);
}

void hrx_completion_attach_payload(hrx_completion_t* completion,
                                   void* payload,
                                   void (*payload_free)(void* payload)) {
  /* Only the thread running the launch's callbacks gets here (it is the
   * callback's own call), so the staged slot needs no lock. */
  if (completion->staged_free) {
    completion->staged_free(completion->staged_payload);
  }
  completion->staged_payload = payload;
  completion->staged_free = payload_free;
}

int hrx_completion_visit_host_data(hrx_completion_t* completion,
                                   int (*visit)(void* user_data, void* arg),
                                   void* arg) {
  if (!completion->held_visit) return 0;
  return completion->held_visit(completion->held, visit, arg);
}

void* hrx_completion_payload(hrx_completion_t* completion) {
  pthread_mutex_lock(&completion->mutex);
  void* payload = completion->payload;
  pthread_mutex_unlock(&completion->mutex);
  return payload;
}

void hrx_completion_finish(hrx_completion_t* completion) {
  pthread_mutex_lock(&completion->mutex);
  atomic_store(&completion->done, true);
  pthread_cond_broadcast(&completion->cond);
  pthread_mutex_unlock(&completion->mutex);
}

bool hrx_completion_done(hrx_completion_t* completion) {
  return atomic_load(&completion->done);
}

/* Whether the latch is set and its setter has left the completion: a done
 * completion may be freed only after this (the setter broadcasts under the
 * lock). */
static bool hrx_completion_settled(hrx_completion_t* completion) {
  if (!atomic_load(&completion->done)) return false;
  pthread_mutex_lock(&completion->mutex);
  pthread_mutex_unlock(&completion->mutex);
  return true;
}

/* Waits for the latch (timeout_ns < 0: no limit); true when set. */
static bool hrx_completion_block(hrx_completion_t* completion,
                                 int64_t timeout_ns) {
  struct timespec deadline = {0};
  if (timeout_ns >= 0) {
    deadline = hrx_clock_timespec(hrx_now_ns() + (uint64_t)timeout_ns);
  }
  pthread_mutex_lock(&completion->mutex);
  while (!atomic_load(&completion->done)) {
    if (timeout_ns < 0) {
      pthread_cond_wait(&completion->cond, &completion->mutex);
    } else if (pthread_cond_timedwait(&completion->cond, &completion->mutex,
                                      &deadline) == ETIMEDOUT) {
      break;
    }
  }
  bool done = atomic_load(&completion->done);
  pthread_mutex_unlock(&completion->mutex);
  return done;
}

hrx_status_t hrx_completion_wait(hrx_completion_t* completion,
                                 int64_t timeout_ns, bool* out_done) {
  if (!completion) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT, "completion is NULL");
  }
  if (!atomic_load(&completion->done)) {
    HRX_RETURN_IF_ERROR(hrx_entry_check(NULL, HRX_ENTRY_BLOCKING,
                                        "waiting for a completion"));
  }
  *out_done = hrx_completion_block(completion, timeout_ns);
  return NULL;
}

hrx_status_t hrx_completion_result(hrx_completion_t* completion) {
  if (!atomic_load(&completion->done)) {
    return hrx_make_status(HRX_STATUS_FAILED_PRECONDITION,
                           "the launch is not complete yet; wait for it "
                           "first");
  }
  pthread_mutex_lock(&completion->mutex);
  hrx_status_t result = NULL;
  if (completion->failure) {
    result = hrx_make_status(hrx_status_code(completion->failure), "%s",
                             hrx_status_message(completion->failure));
  }
  pthread_mutex_unlock(&completion->mutex);
  return result;
}

/* ------------------------------------------------------------------ lists */

void hrx_completion_list_initialize(hrx_completion_list_t* list) {
  pthread_mutex_init(&list->mutex, NULL);
  list->items = NULL;
  atomic_init(&list->count, 0);
  list->capacity = 0;
}

void hrx_completion_list_deinitialize(hrx_completion_list_t* list) {
  for (size_t i = 0; i < list->count; ++i) {
    hrx_completion_release(list->items[i]);
  }
  free(list->items);
  pthread_mutex_destroy(&list->mutex);
}

/* Moves the done entries into `out` (capacity list->count); returns how
 * many. Called with the list locked. */
static size_t hrx_completion_list_take_done_locked(hrx_completion_list_t* list,
                                                   hrx_completion_t** out) {
  size_t kept = 0;
  size_t taken = 0;
  for (size_t i = 0; i < list->count; ++i) {
    hrx_completion_t* item = list->items[i];
    if (hrx_completion_settled(item)) {
      out[taken++] = item;
    } else {
      list->items[kept++] = item;
    }
  }
  list->count = kept;
  return taken;
}

hrx_status_t hrx_completion_list_add(hrx_completion_list_t* list,
                                     hrx_completion_t* completion) {
  pthread_mutex_lock(&list->mutex);
  size_t n = list->count;
  hrx_completion_t** done = n ? malloc(n * sizeof(*done)) : NULL;
  size_t taken = done ? hrx_completion_list_take_done_locked(list, done) : 0;
  hrx_status_t status = NULL;
  if (list->count == list->capacity) {
    size_t capacity = list->capacity ? list->capacity * 2 : 4;
    hrx_completion_t** grown =
        realloc(list->items, capacity * sizeof(*grown));
    if (grown) {
      list->items = grown;
      list->capacity = capacity;
    } else {
      status = hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                               "cannot grow a stream's completion list");
    }
  }
  if (!status) {
    hrx_completion_retain(completion);
    list->items[list->count++] = completion;
  }
  pthread_mutex_unlock(&list->mutex);
  for (size_t i = 0; i < taken; ++i) hrx_completion_release(done[i]);
  free(done);
  return status;
}

void hrx_completion_list_prune_entries(hrx_completion_list_t* list) {
  pthread_mutex_lock(&list->mutex);
  size_t n = list->count;
  hrx_completion_t** done = n ? malloc(n * sizeof(*done)) : NULL;
  size_t taken = done ? hrx_completion_list_take_done_locked(list, done) : 0;
  pthread_mutex_unlock(&list->mutex);
  for (size_t i = 0; i < taken; ++i) hrx_completion_release(done[i]);
  free(done);
}

bool hrx_completion_list_wait_for(void* arg, uint64_t timeout_ns) {
  hrx_completion_list_t* list = arg;
  if (hrx_completion_list_empty(list)) return true;
  bool forever = timeout_ns == HRX_WAIT_FOREVER;
  uint64_t deadline = forever ? 0 : hrx_now_ns() + timeout_ns;
  for (;;) {
    pthread_mutex_lock(&list->mutex);
    if (list->count == 0) {
      pthread_mutex_unlock(&list->mutex);
      return true;
    }
    hrx_completion_t* pending = NULL;
    for (size_t i = 0; i < list->count && !pending; ++i) {
      if (!hrx_completion_settled(list->items[i])) pending = list->items[i];
    }
    if (pending) {
      /* Another caller may drop the entry once it is done. */
      hrx_completion_retain(pending);
      pthread_mutex_unlock(&list->mutex);
      int64_t left = -1;
      if (!forever) {
        uint64_t now = hrx_now_ns();
        left = now < deadline ? (int64_t)(deadline - now) : 0;
      }
      bool done = hrx_completion_block(pending, left);
      hrx_completion_release(pending);
      if (!done) return false;
      continue;
    }
    /* Everything listed is done: drop it all outside the lock. */
    hrx_completion_t** items = list->items;
    size_t count = list->count;
    list->items = NULL;
    list->count = 0;
    list->capacity = 0;
    pthread_mutex_unlock(&list->mutex);
    for (size_t i = 0; i < count; ++i) hrx_completion_release(items[i]);
    free(items);
    return true;
  }
}

void hrx_completion_list_wait_entries(hrx_completion_list_t* list) {
  hrx_completion_list_wait_for(list, HRX_WAIT_FOREVER);
}
