/* Internal side of completions (host-side latches of graph launches), the
 * host-callback guard, and the lists of completions a stream keeps. */
#ifndef HRX_CORE_COMPLETION_H_
#define HRX_CORE_COMPLETION_H_

#include <pthread.h>
#include <stdatomic.h>

#include "hrx.h"

/* A pending completion (one reference, the caller's). It keeps `held` alive:
 * held_release(held) runs when the completion is freed (may be NULL), and
 * held_visit(held, visit, arg) answers hrx_completion_visit_host_data (may
 * be NULL). `device` (borrowed; `held` keeps it alive) is where a release
 * made in a host callback is deferred to (entry.h). */
typedef int (*hrx_completion_visit_fn_t)(void* held,
                                         int (*visit)(void* user_data,
                                                      void* arg),
                                         void* arg);
hrx_status_t hrx_completion_create(hrx_device_t* device, void* held,
                                   void (*held_release)(void*),
                                   hrx_completion_visit_fn_t held_visit,
                                   hrx_completion_t** out_completion);

/* Runs one host callback of the launch on the calling (host worker) thread,
 * with the guard set, and keeps its first failure. Callbacks of one
 * completion run one at a time (they are on one queue, in order). */
void hrx_completion_run(hrx_completion_t* completion, hrx_host_fn_t fn,
                        void* user_data);

/* Sets the latch and wakes every waiter. Never frees the completion: the
 * stream that launched it holds a reference until it is done. */
void hrx_completion_finish(hrx_completion_t* completion);

/* A set of retained completions, guarded by its own lock (never held while
 * waiting or releasing). */
typedef struct hrx_completion_list_s {
  pthread_mutex_t mutex;
  hrx_completion_t** items;  /* retained */
  atomic_size_t count;       /* written under mutex; read unlocked as a hint */
  size_t capacity;
} hrx_completion_list_t;

void hrx_completion_list_initialize(hrx_completion_list_t* list);
/* Releases what is left (the caller has waited for it or gives it up). */
void hrx_completion_list_deinitialize(hrx_completion_list_t* list);
/* Retains and adds; also drops the entries that are done. */
hrx_status_t hrx_completion_list_add(hrx_completion_list_t* list,
                                     hrx_completion_t* completion);
/* True when the list holds nothing (read without the lock: a hint that a
 * caller acting on it re-checks under the lock). */
static inline bool hrx_completion_list_empty(hrx_completion_list_t* list) {
  return atomic_load_explicit(&list->count, memory_order_acquire) == 0;
}
/* The work of prune and wait below when the list looked non-empty. */
void hrx_completion_list_prune_entries(hrx_completion_list_t* list);
void hrx_completion_list_wait_entries(hrx_completion_list_t* list);
/* Drops the entries that are done (never blocks on them). An empty list
 * costs one atomic load, inline: every submission prunes. */
static inline void hrx_completion_list_prune(hrx_completion_list_t* list) {
  if (!hrx_completion_list_empty(list)) hrx_completion_list_prune_entries(list);
}
/* Blocks until every entry is done, then drops them. Entries stay listed
 * until done, so concurrent callers all wait. An empty list costs one
 * atomic load, inline: every submission waits on its stream's gate. */
static inline void hrx_completion_list_wait(hrx_completion_list_t* list) {
  if (!hrx_completion_list_empty(list)) hrx_completion_list_wait_entries(list);
}
/* The same for at most timeout_ns (HRX_WAIT_FOREVER: no limit); returns
 * whether every entry is done. Takes a hrx_completion_list_t* as `arg`,
 * for hrx_wait_sliced (wait.h), so that the wait takes a wait hook like
 * every other. */
bool hrx_completion_list_wait_for(void* list, uint64_t timeout_ns);

#endif /* HRX_CORE_COMPLETION_H_ */
