/* Stream failures and a device's list of them (failure.h). */
#include "failure.h"

#include <stdio.h>
#include <string.h>

#include "base/status.h"

const char hrx_failure_usable_again[] = "; the stream is usable again";

void hrx_failure_list_initialize(hrx_failure_list_t* list) {
  pthread_mutex_init(&list->mutex, NULL);
  list->head = NULL;
}

void hrx_failure_list_deinitialize(hrx_failure_list_t* list) {
  pthread_mutex_destroy(&list->mutex);
}

void hrx_failure_initialize(hrx_failure_t* failure, hrx_failure_list_t* list) {
  pthread_mutex_init(&failure->mutex, NULL);
  atomic_init(&failure->failed, false);
  failure->status = NULL;
  failure->not_run = 0;
  failure->list = list;
  failure->prev = failure->next = NULL;
  failure->listed = false;
}

void hrx_failure_deinitialize(hrx_failure_t* failure) {
  hrx_status_free(failure->status);
  pthread_mutex_destroy(&failure->mutex);
}

static void hrx_failure_list_add(hrx_failure_t* failure) {
  hrx_failure_list_t* list = failure->list;
  pthread_mutex_lock(&list->mutex);
  if (!failure->listed) {
    failure->listed = true;
    failure->prev = NULL;
    failure->next = list->head;
    if (list->head) list->head->prev = failure;
    list->head = failure;
  }
  pthread_mutex_unlock(&list->mutex);
}

static void hrx_failure_list_remove_locked(hrx_failure_t* failure) {
  if (!failure->listed) return;
  if (failure->prev) {
    failure->prev->next = failure->next;
  } else {
    failure->list->head = failure->next;
  }
  if (failure->next) failure->next->prev = failure->prev;
  failure->prev = failure->next = NULL;
  failure->listed = false;
}

void hrx_failure_record(hrx_failure_t* failure, hrx_status_t status,
                        uint64_t number, const char* what, uint64_t skipped) {
  status = hrx_status_annotate(status, "command %llu of this stream (%s) "
                                       "failed",
                               (unsigned long long)number, what);
  pthread_mutex_lock(&failure->mutex);
  if (failure->status) {
    hrx_status_free(status);  /* not reached: a failed stream runs nothing */
  } else {
    failure->status = status;
    atomic_store(&failure->failed, true);
  }
  failure->not_run += skipped;
  pthread_mutex_unlock(&failure->mutex);
  hrx_failure_list_add(failure);
}

void hrx_failure_skip(hrx_failure_t* failure, uint64_t count) {
  pthread_mutex_lock(&failure->mutex);
  failure->not_run += count;
  pthread_mutex_unlock(&failure->mutex);
}

/* The failure with what was not run, and the stream back to usable; NULL
 * when it has none. Leaves the list alone. */
static hrx_status_t hrx_failure_take_state(hrx_failure_t* failure,
                                           const char* how) {
  if (!atomic_load(&failure->failed)) return NULL;
  pthread_mutex_lock(&failure->mutex);
  hrx_status_t status = failure->status;
  uint64_t not_run = failure->not_run;
  failure->status = NULL;
  failure->not_run = 0;
  atomic_store(&failure->failed, false);
  pthread_mutex_unlock(&failure->mutex);
  if (!status) return NULL;
  hrx_status_t taken = hrx_make_status(
      hrx_status_code(status), "%s; %llu later command%s of this stream %s "
      "not run%s",
      hrx_status_message(status), (unsigned long long)not_run,
      not_run == 1 ? "" : "s", not_run == 1 ? "was" : "were", how);
  hrx_status_free(status);
  return taken;
}

void hrx_failure_unlist(hrx_failure_t* failure) {
  pthread_mutex_lock(&failure->list->mutex);
  hrx_failure_list_remove_locked(failure);
  pthread_mutex_unlock(&failure->list->mutex);
}

hrx_status_t hrx_failure_take(hrx_failure_t* failure, const char* how) {
  if (!atomic_load(&failure->failed)) return NULL;
  hrx_failure_unlist(failure);
  return hrx_failure_take_state(failure, how);
}

hrx_status_t hrx_failure_list_take_all(hrx_failure_list_t* list) {
  hrx_status_t first = NULL;
  int others = 0;
  char more[512] = "";
  pthread_mutex_lock(&list->mutex);
  while (list->head) {
    hrx_failure_t* failure = list->head;
    hrx_failure_list_remove_locked(failure);
    hrx_status_t status =
        hrx_failure_take_state(failure, hrx_failure_usable_again);
    if (!status) continue;
    if (!first) {
      first = status;
      continue;
    }
    size_t used = strlen(more);
    snprintf(more + used, sizeof(more) - used, "%s%.160s", others ? "; " : "",
             hrx_status_message(status));
    ++others;
    hrx_status_free(status);
  }
  pthread_mutex_unlock(&list->mutex);
  if (first && others) {
    first = hrx_status_annotate(first, "%d other stream%s of the device "
                                       "failed too (%s); first",
                                others, others == 1 ? "" : "s", more);
  }
  return first;
}

void hrx_failure_describe(const char* what, uint64_t bytes, char* buffer,
                          size_t capacity) {
  if (bytes) {
    snprintf(buffer, capacity, "%s of %llu bytes", what,
             (unsigned long long)bytes);
  } else {
    snprintf(buffer, capacity, "%s", what);
  }
}
