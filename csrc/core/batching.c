#include "batching.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "base/clock.h"
#include "base/environment.h"
#include "base/nonblocking.h"
#include "base/status.h"
#include "base/thread_state.h"

/* ------------------------------------------------------------- batches */

hrx_status_t hrx_batch_settings_from_environment(
    hrx_batch_settings_t* out_settings) {
  bool enabled = true;
  int64_t delay_us = 0;
  int64_t max_commands = 0;
  int64_t max_command_bytes = 0;
  int64_t launches = -1;
  int64_t hold_us = 0;
  HRX_RETURN_IF_ERROR(hrx_env_switch("HRX_BATCHING", true, &enabled));
  HRX_RETURN_IF_ERROR(
      hrx_env_int("HRX_BATCH_HOLD_US", 0, 0, 10000000, &hold_us));
  HRX_RETURN_IF_ERROR(hrx_env_int("HRX_BATCH_LAUNCHES", -1, 0, 1, &launches));
  HRX_RETURN_IF_ERROR(
      hrx_env_int("HRX_BATCH_DELAY_US", 20, 1, 10000000, &delay_us));
  HRX_RETURN_IF_ERROR(hrx_env_int("HRX_BATCH_MAX_COMMANDS",
                                  HRX_BATCH_MAX_COMMANDS, 2,
                                  HRX_BATCH_MAX_COMMANDS, &max_commands));
  HRX_RETURN_IF_ERROR(hrx_env_int("HRX_BATCH_MAX_COPY_BYTES", 64 << 10, 1,
                                  (int64_t)HRX_BATCH_MAX_COMMAND_BYTES,
                                  &max_command_bytes));
  out_settings->enabled = enabled;
  out_settings->delay_ns = (uint64_t)delay_us * 1000u;
  out_settings->max_commands = (uint32_t)max_commands;
  out_settings->max_command_bytes = (uint64_t)max_command_bytes;
  out_settings->max_batch_bytes = 2u << 20;
  out_settings->launches = (int)launches;
  out_settings->hold_ns = (uint64_t)hold_us * 1000u;
  return NULL;
}

/* The thread's side of the policy: thread_state.h's last_batchable_ns
 * and observed. */
hrx_batch_thread_t hrx_batch_thread_begin(
    const hrx_batch_settings_t* settings) {
  uint64_t now = hrx_now_ns();
  hrx_thread_state_t* state = hrx_thread_state();
  hrx_batch_thread_t thread = {.now = now,
                               .urgent = state->observed,
                               .last_before = state->last_batchable_ns};
  thread.quiet = thread.urgent ||
                 thread.now - thread.last_before > settings->delay_ns;
  state->last_batchable_ns = thread.now;
  state->observed = false;
  return thread;
}

void hrx_batch_thread_undo(const hrx_batch_thread_t* thread) {
  hrx_thread_state_t* state = hrx_thread_state();
  state->last_batchable_ns = thread->last_before;
  state->observed = thread->urgent;
}

void hrx_batch_thread_observed(void) { hrx_thread_state()->observed = true; }

void hrx_pending_batch_initialize(hrx_pending_batch_t* batch) {
  *batch = (hrx_pending_batch_t){0};
  atomic_init(&batch->since, 0);
}

void hrx_pending_batch_deinitialize(hrx_pending_batch_t* batch) {
  hrx_launch_copies_clear(&batch->launch_copies);
  free(batch->storage);
  batch->storage = NULL;
}

bool hrx_pending_batch_unpublished_locked(const hrx_pending_batch_t* batch) {
  return batch->count != 0 || batch->in_flight;
}

bool hrx_pending_batch_append_locked(hrx_pending_batch_t* batch,
                                     const hrx_batch_settings_t* settings,
                                     const hrx_batch_command_t* command,
                                     uint64_t number, uint64_t now,
                                     bool* out_started, bool* out_full) {
  *out_started = batch->count == 0;
  if (*out_started) {
    if (!batch->storage) {
      batch->storage =
          malloc(2 * HRX_BATCH_MAX_COMMANDS * sizeof(*batch->storage));
      if (!batch->storage) return false;
      batch->commands = batch->storage;
      batch->publishing = batch->storage + HRX_BATCH_MAX_COMMANDS;
    }
    batch->first = number;
    atomic_store(&batch->since, now);
  }
  batch->commands[batch->count++] = *command;
  batch->bytes += command->length;
  batch->last_ns = now;
  *out_full = hrx_pending_batch_full_locked(batch, settings);
  return true;
}

uint32_t hrx_pending_batch_take_locked(hrx_pending_batch_t* batch,
                                       hrx_batch_command_t** out_commands,
                                       uint64_t* out_first,
                                       uint64_t* out_bytes) {
  uint32_t count = batch->count;
  if (!count) return 0;
  *out_commands =
      hrx_pending_batch_take_first_locked(batch, count, out_first, out_bytes);
  batch->in_flight = true;
  return count;
}

hrx_batch_command_t* hrx_pending_batch_take_first_locked(
    hrx_pending_batch_t* batch, uint32_t count, uint64_t* out_first,
    uint64_t* out_bytes) {
  uint32_t rest = batch->count - count;
  hrx_batch_command_t* taken = batch->commands;
  batch->commands = batch->publishing;
  batch->publishing = taken;
  uint64_t bytes = batch->bytes;
  if (rest) {
    memcpy(batch->commands, taken + count, rest * sizeof(*taken));
    bytes = 0;
    for (uint32_t i = 0; i < count; ++i) bytes += taken[i].length;
  }
  *out_first = batch->first;
  *out_bytes = bytes;
  batch->first += count;
  batch->count = rest;
  batch->bytes -= bytes;
  if (!rest) atomic_store(&batch->since, 0);
  return taken;
}

hrx_status_t hrx_batch_submit_one(hrx_backend_device_t* backend,
                                  hrx_native_queue_t* queue,
                                  const hrx_batch_command_t* command) {
  const hrx_backend_vtable_t* vtable = backend->vtable;
  switch (command->kind) {
    case HRX_BATCH_FILL:
      return vtable->queue.fill(backend, queue, command->dst, command->byte,
                                command->length);
    case HRX_BATCH_LAUNCH:
      return vtable->kernel.launch(backend, queue, command->kernel,
                                   command->launch);
    default:
      return vtable->queue.copy(backend, queue, command->dst, command->src,
                                command->length);
  }
}

/* The commands from `first` on that one driver call may take: launches
 * (launch_batch) or copies and fills (batch_submit); at least 1. */
static uint32_t hrx_batch_run_length(const hrx_batch_command_t* commands,
                                     uint32_t first, uint32_t count) {
  bool launches = commands[first].kind == HRX_BATCH_LAUNCH;
  uint32_t end = first + 1;
  while (end < count &&
         (commands[end].kind == HRX_BATCH_LAUNCH) == launches) {
    ++end;
  }
  return end - first;
}

hrx_status_t hrx_batch_publish(hrx_backend_device_t* backend,
                               hrx_native_queue_t* queue,
                               const hrx_batch_command_t* commands,
                               uint32_t count,
                               uint32_t* out_failed_index,
                               hrx_batch_tally_t* out_tally) {
  const hrx_backend_vtable_t* vtable = backend->vtable;
  *out_tally = (hrx_batch_tally_t){0};
  uint32_t done = 0;
  while (done < count) {
    uint32_t run = hrx_batch_run_length(commands, done, count);
    bool launches = commands[done].kind == HRX_BATCH_LAUNCH;
    uint32_t published = 0;
    hrx_status_t status;
    bool gathered = false;
    if (run >= 2 && launches && vtable->kernel.launch_batch) {
      status = vtable->kernel.launch_batch(backend, queue, commands + done,
                                           run, &published);
      gathered = true;
    } else if (run >= 2 && !launches && vtable->queue.batch_submit) {
      status = vtable->queue.batch_submit(backend, queue, commands + done,
                                          run, &published);
      gathered = true;
    } else {
      status = hrx_batch_submit_one(backend, queue, &commands[done]);
      published = status ? 0 : 1;
    }
    if (gathered && published) {
      ++out_tally->runs;
      out_tally->commands += published;
    }
    done += published;
    if (status) {
      /* The commands after the failed one must not run: they could read
       * what it should have written. */
      *out_failed_index = done;
      return status;
    }
  }
  return NULL;
}

/* ------------------------------------------------------------- flusher */



/* How long the thread keeps polling after the last pending batch before it
 * parks (then the next batch costs its producer one wake-up). */
#define HRX_FLUSHER_LINGER_NS 2000000ull

struct hrx_flusher_s {
  pthread_mutex_t mutex;
  pthread_cond_t wake_cond;
  pthread_cond_t released_cond;  /* an entry's holds dropped to 0 */
  uint64_t delay_ns;          /* immutable */
  hrx_flush_entry_t* head;    /* mutex */
  bool started;               /* mutex */
  bool stopping;              /* mutex */
  atomic_bool parked;         /* the thread waits on wake_cond */
  pthread_t thread;
};

hrx_status_t hrx_flusher_create(uint64_t delay_ns,
                                hrx_flusher_t** out_flusher) {
  hrx_flusher_t* flusher = calloc(1, sizeof(*flusher));
  if (!flusher) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate the batch flusher");
  }
  pthread_mutex_init(&flusher->mutex, NULL);
  hrx_clock_cond_init(&flusher->wake_cond);
  pthread_cond_init(&flusher->released_cond, NULL);
  flusher->delay_ns = delay_ns;
  atomic_init(&flusher->parked, false);
  *out_flusher = flusher;
  return NULL;
}

void hrx_flusher_destroy(hrx_flusher_t* flusher) {
  if (!flusher) return;
  pthread_mutex_lock(&flusher->mutex);
  flusher->stopping = true;
  bool started = flusher->started;
  pthread_cond_signal(&flusher->wake_cond);
  pthread_mutex_unlock(&flusher->mutex);
  if (started) pthread_join(flusher->thread, NULL);
  pthread_cond_destroy(&flusher->wake_cond);
  pthread_cond_destroy(&flusher->released_cond);
  pthread_mutex_destroy(&flusher->mutex);
  free(flusher);
}

/* Whether any entry's pending work is due at `now`; lowers *out_next_due
 * to the earliest future due time (mutex held). */
static bool hrx_flusher_any_due_locked(hrx_flusher_t* flusher, uint64_t now,
                                       uint64_t* out_next_due) {
  bool any = false;
  for (hrx_flush_entry_t* e = flusher->head; e; e = e->next) {
    uint64_t since = e->ops->pending_since(e);
    if (!since) continue;
    uint64_t due = since + flusher->delay_ns;
    if (due <= now) {
      any = true;
    } else if (!*out_next_due || due < *out_next_due) {
      *out_next_due = due;
    }
  }
  return any;
}

/* With `due_only`, the entries whose pending work is due; otherwise every
 * entry (a publication in progress, e.g. by the flusher thread, has no
 * pending work left but must still be waited for). Each is held; *out_count
 * of them. Called with the mutex held; NULL when
 * none (or when memory runs out: then *out_next_due asks for a retry).
 * A scan that finds nothing due allocates nothing, so the thread's polls
 * while it lingers after a burst never enter the allocator. */
static hrx_flush_entry_t** hrx_flusher_hold_locked(hrx_flusher_t* flusher,
                                                   bool due_only, uint64_t now,
                                                   size_t* out_count,
                                                   uint64_t* out_next_due) {
  size_t n = 0;
  for (hrx_flush_entry_t* e = flusher->head; e; e = e->next) ++n;
  *out_count = 0;
  if (!n) return NULL;
  if (due_only && !hrx_flusher_any_due_locked(flusher, now, out_next_due)) {
    return NULL;
  }
  hrx_flush_entry_t** held = malloc(n * sizeof(*held));
  if (!held) {
    *out_next_due = now + flusher->delay_ns;
    return NULL;
  }
  size_t count = 0;
  for (hrx_flush_entry_t* e = flusher->head; e; e = e->next) {
    if (due_only) {
      uint64_t since = e->ops->pending_since(e);
      if (!since) continue;
      uint64_t due = since + flusher->delay_ns;
      if (due > now) {
        if (!*out_next_due || due < *out_next_due) *out_next_due = due;
        continue;
      }
    }
    e->holds++;
    held[count++] = e;
  }
  *out_count = count;
  return held;
}

/* Drops the holds hrx_flusher_hold_locked took (mutex held). */
static void hrx_flusher_unhold_locked(hrx_flusher_t* flusher,
                                      hrx_flush_entry_t** held, size_t count) {
  bool released = false;
  for (size_t i = 0; i < count; ++i) {
    if (--held[i]->holds == 0) released = true;
  }
  if (released) pthread_cond_broadcast(&flusher->released_cond);
  free(held);
}

/* Publishes the entries that are due, without holding the mutex while
 * publishing (it is released and taken again); returns the earliest future
 * due time, or 0 when no entry has pending work. */
static uint64_t hrx_flusher_scan_locked(hrx_flusher_t* flusher) {
  uint64_t now = hrx_now_ns();
  uint64_t next_due = 0;
  size_t count = 0;
  hrx_flush_entry_t** held =
      hrx_flusher_hold_locked(flusher, true, now, &count, &next_due);
  if (!held) return next_due;
  pthread_mutex_unlock(&flusher->mutex);
  for (size_t i = 0; i < count; ++i) {
    hrx_flush_entry_t* e = held[i];
    /* A stream whose publication is in progress is retried later. */
    bool published = e->ops->try_publish(e);
    /* Work that arrived meanwhile waits for its own deadline. */
    uint64_t since = e->ops->pending_since(e);
    uint64_t due = !since ? 0
                   : published ? since + flusher->delay_ns
                               : now + flusher->delay_ns;
    if (due && (!next_due || due < next_due)) next_due = due;
  }
  pthread_mutex_lock(&flusher->mutex);
  hrx_flusher_unhold_locked(flusher, held, count);
  return next_due;
}

static bool hrx_flusher_any_pending_locked(hrx_flusher_t* flusher) {
  for (hrx_flush_entry_t* e = flusher->head; e; e = e->next) {
    if (e->ops->pending_since(e)) return true;
  }
  return false;
}

/* Sleeps until `until` (hrx_now_ns time), releasing the mutex meanwhile;
 * hrx_flusher_destroy's signal cuts the sleep short. */
static void hrx_flusher_sleep_locked(hrx_flusher_t* flusher, uint64_t until) {
  struct timespec ts = hrx_clock_timespec(until);
  if (!flusher->stopping) {
    pthread_cond_timedwait(&flusher->wake_cond, &flusher->mutex, &ts);
  }
}

static void* hrx_flusher_main(void* arg) {
  hrx_flusher_t* flusher = arg;
  /* A launch's release here (its kernel's reference) may be the device's
   * last, whose teardown joins this thread. */
  hrx_thread_mark_device_thread();
#ifdef __linux__
  /* Deadlines are tens of microseconds; the default 50 us timer slack would
   * double them. */
  prctl(PR_SET_TIMERSLACK, 1000ul, 0, 0, 0);
#endif
  pthread_mutex_lock(&flusher->mutex);
  uint64_t last_active = hrx_now_ns();
  while (!flusher->stopping) {
    uint64_t next_due = hrx_flusher_scan_locked(flusher);
    uint64_t now = hrx_now_ns();
    if (next_due) {
      last_active = now;
      hrx_flusher_sleep_locked(flusher, next_due);
      continue;
    }
    if (now - last_active < HRX_FLUSHER_LINGER_NS) {
      /* Work came recently: poll at the delay instead of parking, so that
       * producers in a burst never pay for a wake-up. A batch started now
       * is published within two delays. */
      hrx_flusher_sleep_locked(flusher, now + flusher->delay_ns);
      continue;
    }
    /* Park. Announce it before the final check, so a producer that adds
     * work after the check sees `parked` and signals (seq_cst on both
     * sides: its store of pending_since, then its load of parked). */
    atomic_store(&flusher->parked, true);
    if (!hrx_flusher_any_pending_locked(flusher) && !flusher->stopping) {
      pthread_cond_wait(&flusher->wake_cond, &flusher->mutex);
    }
    atomic_store(&flusher->parked, false);
    last_active = hrx_now_ns();
  }
  pthread_mutex_unlock(&flusher->mutex);
  return NULL;
}

bool hrx_flusher_watching(hrx_flusher_t* flusher, hrx_flush_entry_t* entry) {
  return atomic_load(&entry->listed) && !atomic_load(&flusher->parked);
}

/* Starts the thread if needed, lists the entry if needed and wakes the
 * thread (mutex held). Fails only when the thread cannot be started. */
static hrx_status_t hrx_flusher_watch_locked(hrx_flusher_t* flusher,
                                             hrx_flush_entry_t* entry) {
  if (!flusher->started && !flusher->stopping) {
    int error = pthread_create(&flusher->thread, NULL, hrx_flusher_main,
                               flusher);
    if (error) {
      return hrx_make_status(HRX_STATUS_RESOURCE_EXHAUSTED,
                             "cannot start the batch flusher thread "
                             "(error %d)",
                             error);
    }
    flusher->started = true;
  }
  if (!atomic_load(&entry->listed)) {
    entry->prev = NULL;
    entry->next = flusher->head;
    if (flusher->head) flusher->head->prev = entry;
    flusher->head = entry;
    atomic_store(&entry->listed, true);
  }
  /* Under the mutex a parked thread is inside its wait, so the signal
   * reaches it: it counts as awake from now on. */
  atomic_store(&flusher->parked, false);
  pthread_cond_signal(&flusher->wake_cond);
  return NULL;
}

bool hrx_flusher_try_watch(hrx_flusher_t* flusher, hrx_flush_entry_t* entry) {
  if (hrx_flusher_watching(flusher, entry)) return true;
  if (pthread_mutex_trylock(&flusher->mutex) != 0) return false;
  hrx_status_t status = hrx_flusher_watch_locked(flusher, entry);
  pthread_mutex_unlock(&flusher->mutex);
  bool watching = status == NULL;
  hrx_status_free(status);  /* the blocking retry's notify reports it */
  return watching;
}

hrx_status_t hrx_flusher_notify(hrx_flusher_t* flusher,
                                hrx_flush_entry_t* entry) {
  if (hrx_flusher_watching(flusher, entry)) return NULL;
  if (hrx_nonblocking() && atomic_load(&entry->listed)) {
    /* The thread parked after the producer saw it awake. Retry until the
     * lock is free (then signal) or the thread is awake again, never
     * sleeping on a holder of the mutex, which might be blocked. */
    while (pthread_mutex_trylock(&flusher->mutex) != 0) {
      if (!atomic_load(&flusher->parked)) return NULL;
      sched_yield();
    }
    pthread_cond_signal(&flusher->wake_cond);
    pthread_mutex_unlock(&flusher->mutex);
    return NULL;
  }
  pthread_mutex_lock(&flusher->mutex);
  hrx_status_t status = hrx_flusher_watch_locked(flusher, entry);
  pthread_mutex_unlock(&flusher->mutex);
  return status;
}

void hrx_flusher_remove(hrx_flusher_t* flusher, hrx_flush_entry_t* entry) {
  if (!atomic_load(&entry->listed)) return;
  pthread_mutex_lock(&flusher->mutex);
  if (entry->prev) {
    entry->prev->next = entry->next;
  } else {
    flusher->head = entry->next;
  }
  if (entry->next) entry->next->prev = entry->prev;
  entry->prev = entry->next = NULL;
  atomic_store(&entry->listed, false);
  while (entry->holds) {
    pthread_cond_wait(&flusher->released_cond, &flusher->mutex);
  }
  pthread_mutex_unlock(&flusher->mutex);
}

void hrx_flusher_publish_all(hrx_flusher_t* flusher) {
  pthread_mutex_lock(&flusher->mutex);
  size_t count = 0;
  uint64_t retry = 0;
  hrx_flush_entry_t** held =
      hrx_flusher_hold_locked(flusher, false, hrx_now_ns(), &count, &retry);
  if (!held) {
    /* Out of memory for the list: publish under the mutex instead. */
    for (hrx_flush_entry_t* e = flusher->head; e && retry; e = e->next) {
      if (e->ops->pending_since(e)) e->ops->publish(e);
    }
    pthread_mutex_unlock(&flusher->mutex);
    return;
  }
  pthread_mutex_unlock(&flusher->mutex);
  for (size_t i = 0; i < count; ++i) held[i]->ops->publish(held[i]);
  pthread_mutex_lock(&flusher->mutex);
  hrx_flusher_unhold_locked(flusher, held, count);
  pthread_mutex_unlock(&flusher->mutex);
}
