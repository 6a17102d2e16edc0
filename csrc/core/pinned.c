/* Pinned host memory of a live device (pinned.h). */
#include "pinned.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "base/environment.h"
#include "base/status.h"
#include "staging.h"
#include "wait.h"

#ifdef HRX_TESTING_BUILD
#include "testing/hrx_testing.h"

static atomic_uint_fast64_t hrx_pinned_direct_uploads;
static atomic_uint_fast64_t hrx_pinned_direct_reads;

void hrx_pinned_query_direct(uint64_t* out_uploads, uint64_t* out_reads) {
  *out_uploads = atomic_load(&hrx_pinned_direct_uploads);
  *out_reads = atomic_load(&hrx_pinned_direct_reads);
}

void hrx_pinned_count_direct(bool upload) {
  atomic_fetch_add(upload ? &hrx_pinned_direct_uploads
                          : &hrx_pinned_direct_reads,
                   1);
}
#endif

struct hrx_pinned_range_s {
  uint8_t* base;
  uint64_t size;
  hrx_staging_block_t* block;  /* owned until released: an allocated range;
                                  NULL for a registered one */
  hrx_staging_pool_t* home;    /* where `block` goes back (borrowed): the
                                  registry's pool, or the read staging a
                                  read's block came from */
  bool ready;                  /* found by transfers: registered (or
                                  allocated); mutex */
  bool registered;             /* host_register pinned it: unregister at
                                  the end (immutable once ready) */
  bool closing;                /* let go: no longer found; mutex */
  bool released;               /* memory given back; mutex */
  hrx_pinned_use_t* uses;      /* owned; mutex */
  int waiters;                 /* waits for its copies (an unregister, a
                                  cleanup task) that keep it; mutex */
  struct hrx_pinned_range_s* next;  /* mutex */
};

struct hrx_pinned_s {
  hrx_device_t* device;            /* borrowed: the registry lives in it */
  hrx_backend_device_t* backend;   /* borrowed */
  hrx_staging_pool_t* pool;        /* owned: free allocated blocks */
  hrx_cleanup_t* cleanup;          /* borrowed; NULL once detached (mutex) */
  pthread_mutex_t mutex;
  pthread_cond_t changed;          /* a use was recorded or ended */
  hrx_pinned_range_t* ranges;      /* owned; mutex */
  atomic_int live;                 /* ranges in the list, read without the
                                      mutex (the fast path) */
  hrx_native_event_t** events;     /* owned: free events; mutex */
  size_t event_count, event_capacity;  /* mutex */
};

hrx_status_t hrx_pinned_cache_bytes_from_environment(uint64_t* out_bytes) {
  int64_t value = 0;
  HRX_RETURN_IF_ERROR(hrx_env_int(
      "HRX_PINNED_CACHE_BYTES", (int64_t)HRX_PINNED_DEFAULT_CACHE_BYTES, 0,
      (int64_t)HRX_PINNED_MAX_CACHE_BYTES, &value));
  *out_bytes = (uint64_t)value;
  return NULL;
}

hrx_status_t hrx_pinned_create(hrx_device_t* device,
                               hrx_backend_device_t* backend,
                               uint64_t cache_bytes, hrx_cleanup_t* cleanup,
                               hrx_pinned_t** out_pinned) {
  hrx_pinned_t* pinned = calloc(1, sizeof(*pinned));
  if (!pinned) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate the pinned memory registry");
  }
  hrx_status_t status =
      hrx_staging_pool_create(backend, cache_bytes, cleanup, &pinned->pool);
  if (status) {
    free(pinned);
    return status;
  }
  pinned->device = device;
  pinned->backend = backend;
  pinned->cleanup = cleanup;
  pthread_mutex_init(&pinned->mutex, NULL);
  pthread_cond_init(&pinned->changed, NULL);
  atomic_init(&pinned->live, 0);
  *out_pinned = pinned;
  return NULL;
}

void hrx_pinned_detach_cleanup(hrx_pinned_t* pinned) {
  hrx_staging_pool_detach_cleanup(pinned->pool);
  pthread_mutex_lock(&pinned->mutex);
  pinned->cleanup = NULL;
  pthread_mutex_unlock(&pinned->mutex);
}

void hrx_pinned_destroy(hrx_pinned_t* pinned) {
  if (!pinned) return;
  for (size_t i = 0; i < pinned->event_count; ++i) {
    pinned->backend->vtable->event.destroy(pinned->backend, pinned->events[i]);
  }
  free(pinned->events);
  hrx_staging_pool_destroy(pinned->pool);
  pthread_cond_destroy(&pinned->changed);
  pthread_mutex_destroy(&pinned->mutex);
  free(pinned);
}

/* ------------------------------------------------------------- ranges */

/* Adds a range unless it overlaps one (INVALID_ARGUMENT). */
static hrx_status_t hrx_pinned_insert(hrx_pinned_t* pinned,
                                      hrx_pinned_range_t* range) {
  pthread_mutex_lock(&pinned->mutex);
  for (hrx_pinned_range_t* r = pinned->ranges; r; r = r->next) {
    if (r->released) continue;
    if (range->base < r->base + r->size && r->base < range->base + range->size) {
      pthread_mutex_unlock(&pinned->mutex);
      return hrx_make_status(
          HRX_STATUS_INVALID_ARGUMENT,
          "host memory at %p (%llu bytes) overlaps memory that is already "
          "pinned for this device (%p, %llu bytes%s); pin each memory once",
          (void*)range->base, (unsigned long long)range->size, (void*)r->base,
          (unsigned long long)r->size,
          r->block ? ", a pinned allocation" : "");
    }
  }
  range->next = pinned->ranges;
  pinned->ranges = range;
  atomic_fetch_add(&pinned->live, 1);
  pthread_mutex_unlock(&pinned->mutex);
  return NULL;
}

/* Whether a use's copy is known complete (or was never queued). */
static bool hrx_pinned_use_complete_locked(hrx_pinned_t* pinned,
                                           hrx_pinned_use_t* use) {
  if (!use->recorded) return use->ended;
  bool done = false;
  hrx_status_t status =
      pinned->backend->vtable->event.query(pinned->backend, use->event, &done);
  /* A failed query counts as pending; a wait settles it. */
  hrx_status_free(status);
  return done;
}

static void hrx_pinned_recycle_event_locked(hrx_pinned_t* pinned,
                                            hrx_native_event_t* event) {
  if (pinned->event_count == pinned->event_capacity) {
    size_t capacity = pinned->event_capacity ? pinned->event_capacity * 2 : 16;
    hrx_native_event_t** events =
        realloc(pinned->events, capacity * sizeof(*events));
    if (!events) {
      /* Out of memory: the event is lost rather than destroyed, since a
       * wait for a let-go range may still name it (wait_settled). */
      return;
    }
    pinned->events = events;
    pinned->event_capacity = capacity;
  }
  pinned->events[pinned->event_count++] = event;
}

/* Frees the ended uses whose copies are complete; returns whether every
 * remaining use's copy is complete too. */
static bool hrx_pinned_prune_locked(hrx_pinned_t* pinned,
                                    hrx_pinned_range_t* range) {
  bool all_complete = true;
  for (hrx_pinned_use_t **link = &range->uses, *use; (use = *link);) {
    bool complete = hrx_pinned_use_complete_locked(pinned, use);
    if (complete && use->ended) {
      *link = use->next;
      hrx_pinned_recycle_event_locked(pinned, use->event);
      free(use);
      continue;
    }
    all_complete = all_complete && complete;
    link = &use->next;
  }
  return all_complete;
}

/* What settling a range leaves to do outside the mutex. */
typedef struct {
  hrx_staging_block_t* block;   /* back to its home pool */
  hrx_staging_pool_t* home;
  void* unregister;             /* host_unregister */
  bool released;                /* the memory was given back just now */
  bool release_device;          /* the range was freed */
} hrx_pinned_settled_t;

/* Gives a let-go range's memory back once its copies are complete, and
 * frees the range once its uses have ended too. */
static void hrx_pinned_settle_locked(hrx_pinned_t* pinned,
                                     hrx_pinned_range_t* range,
                                     hrx_pinned_settled_t* out) {
  if (!range->closing) return;
  bool complete = hrx_pinned_prune_locked(pinned, range);
  if (!range->released && complete) {
    range->released = true;
    out->released = true;
    if (range->block) {
      out->block = range->block;
      out->home = range->home;
      range->block = NULL;
    } else if (range->registered) {
      out->unregister = range->base;
    }
  }
  if (range->released && !range->uses && range->waiters == 0) {
    for (hrx_pinned_range_t** link = &pinned->ranges; *link;
         link = &(*link)->next) {
      if (*link == range) {
        *link = range->next;
        break;
      }
    }
    atomic_fetch_sub(&pinned->live, 1);
    free(range);
    out->release_device = true;
  }
}

static void hrx_pinned_finish_settled(hrx_pinned_t* pinned,
                                      const hrx_pinned_settled_t* settled) {
  if (settled->block) hrx_staging_release(settled->home, settled->block);
  if (settled->unregister && pinned->backend->vtable->memory.host_unregister) {
    pinned->backend->vtable->memory.host_unregister(pinned->backend,
                                                    settled->unregister);
  }
  if (settled->release_device) hrx_device_release(pinned->device);
}

/* Waits until every copy of a let-go range is complete (in the hook's
 * slices), then settles it. The caller counted itself in the range's
 * waiters; this drops that count. False when interrupted. */
static bool hrx_pinned_wait_settled(hrx_pinned_t* pinned,
                                    hrx_pinned_range_t* range,
                                    const hrx_wait_hook_t* hook,
                                    bool* out_interrupted) {
  hrx_pinned_settled_t settled = {0};
  pthread_mutex_lock(&pinned->mutex);
  for (;;) {
    if (hrx_pinned_prune_locked(pinned, range)) break;
    hrx_pinned_use_t* pending = NULL;
    for (hrx_pinned_use_t* use = range->uses; use; use = use->next) {
      if (use->recorded) {
        pending = use;
        break;
      }
    }
    if (!pending) {
      /* A copy is being queued right now: wait for its record. */
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_nsec += 1000000;
      if (until.tv_nsec >= 1000000000) {
        until.tv_sec += 1;
        until.tv_nsec -= 1000000000;
      }
      pthread_cond_timedwait(&pinned->changed, &pinned->mutex, &until);
      continue;
    }
    /* Events are only recycled, never destroyed while the registry lives:
     * a recycled event at worst makes this wait for a later copy. */
    hrx_native_event_t* event = pending->event;
    pthread_mutex_unlock(&pinned->mutex);
    bool interrupted = false;
    hrx_status_free(
        hrx_wait_native_event(pinned->backend, event, hook, &interrupted));
    pthread_mutex_lock(&pinned->mutex);
    if (interrupted) {
      if (out_interrupted) *out_interrupted = true;
      break;
    }
  }
  range->waiters--;
  bool settled_now = range->released;
  hrx_pinned_settle_locked(pinned, range, &settled);
  settled_now = settled_now || settled.released;
  pthread_mutex_unlock(&pinned->mutex);
  hrx_pinned_finish_settled(pinned, &settled);
  return settled_now;
}

hrx_status_t hrx_pinned_alloc(hrx_pinned_t* pinned, uint64_t size,
                              void** out_ptr) {
  if (size == 0) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "a pinned allocation needs at least one byte");
  }
  hrx_pinned_range_t* range = calloc(1, sizeof(*range));
  if (!range) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a pinned range");
  }
  hrx_status_t status = hrx_staging_acquire(pinned->pool, size, &range->block);
  if (status) {
    free(range);
    return status;
  }
  range->base = range->block->memory;
  range->size = size;
  range->home = pinned->pool;
  range->ready = true;
  status = hrx_pinned_insert(pinned, range);
  if (status) {
    /* Cannot overlap (the pool's memory is never registered): kept for
     * safety. */
    hrx_staging_release(pinned->pool, range->block);
    free(range);
    return status;
  }
  hrx_device_retain(pinned->device);
  *out_ptr = range->base;
  return NULL;
}

hrx_status_t hrx_pinned_adopt(hrx_pinned_t* pinned, hrx_staging_block_t* block,
                              hrx_staging_pool_t* home, uint64_t length) {
  hrx_pinned_range_t* range = calloc(1, sizeof(*range));
  if (!range) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a pinned range");
  }
  range->block = block;
  range->base = block->memory;
  range->size = length ? length : 1;
  range->home = home;
  range->ready = true;
  hrx_status_t status = hrx_pinned_insert(pinned, range);
  if (status) {
    free(range);
    return status;
  }
  hrx_device_retain(pinned->device);
  return NULL;
}

/* Finds the range starting at `ptr`, of the kind asked for, not let go. */
static hrx_pinned_range_t* hrx_pinned_find_start_locked(hrx_pinned_t* pinned,
                                                        const void* ptr,
                                                        bool allocated) {
  for (hrx_pinned_range_t* r = pinned->ranges; r; r = r->next) {
    if (r->base == ptr && r->ready && !r->released &&
        (r->block != NULL) == allocated) {
      return r;
    }
  }
  return NULL;
}

/* Cleanup task: waits for a let-go allocated range's copies, then gives
 * its block back. */
typedef struct {
  hrx_pinned_t* pinned;
  hrx_pinned_range_t* range;
} hrx_pinned_settle_args_t;

static void hrx_pinned_settle_run(void* arg) {
  hrx_pinned_settle_args_t* args = arg;
  hrx_pinned_wait_settled(args->pinned, args->range, NULL, NULL);
  free(args);
}

hrx_status_t hrx_pinned_free(hrx_pinned_t* pinned, void* ptr) {
  hrx_pinned_settled_t settled = {0};
  pthread_mutex_lock(&pinned->mutex);
  hrx_pinned_range_t* range = hrx_pinned_find_start_locked(pinned, ptr, true);
  if (!range || range->closing) {
    pthread_mutex_unlock(&pinned->mutex);
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "%p is not a pinned allocation of this device (or "
                           "it was freed already)",
                           ptr);
  }
  range->closing = true;
  hrx_pinned_settle_locked(pinned, range, &settled);
  hrx_pinned_settle_args_t* args = NULL;
  if (!settled.released) {
    /* Copies still run: the cleanup thread waits for them. Without one
     * (or out of memory), the range stays let go and the end of its last
     * use settles it. */
    args = pinned->cleanup ? malloc(sizeof(*args)) : NULL;
    if (args) {
      args->pinned = pinned;
      args->range = range;
      range->waiters++;
      if (!hrx_cleanup_queue(pinned->cleanup, hrx_pinned_settle_run, args)) {
        range->waiters--;
        free(args);
      }
    }
  }
  pthread_mutex_unlock(&pinned->mutex);
  hrx_pinned_finish_settled(pinned, &settled);
  return NULL;
}

hrx_status_t hrx_pinned_register(hrx_pinned_t* pinned, void* ptr,
                                 uint64_t size) {
  if (!ptr || size == 0) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "pinning needs non-empty host memory");
  }
  hrx_pinned_range_t* range = calloc(1, sizeof(*range));
  if (!range) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a pinned range");
  }
  range->base = ptr;
  range->size = size;
  /* In the list first, so that two registrations of the same memory
   * conflict here rather than in the runtime. */
  hrx_status_t status = hrx_pinned_insert(pinned, range);
  if (status) {
    free(range);
    return status;
  }
  const hrx_hal_memory_vtable_t* memory = &pinned->backend->vtable->memory;
  if (memory->host_register) {
    status = memory->host_register(pinned->backend, ptr, size,
                                   &range->registered);
  }
  if (status) {
    /* No use can have begun: a range is found only once ready. */
    pthread_mutex_lock(&pinned->mutex);
    for (hrx_pinned_range_t** link = &pinned->ranges; *link;
         link = &(*link)->next) {
      if (*link == range) {
        *link = range->next;
        break;
      }
    }
    atomic_fetch_sub(&pinned->live, 1);
    pthread_mutex_unlock(&pinned->mutex);
    free(range);
    return status;
  }
  pthread_mutex_lock(&pinned->mutex);
  range->ready = true;
  pthread_mutex_unlock(&pinned->mutex);
  hrx_device_retain(pinned->device);
  return NULL;
}

hrx_status_t hrx_pinned_unregister(hrx_pinned_t* pinned, void* ptr,
                                   const hrx_wait_hook_t* hook,
                                   bool* out_interrupted) {
  if (out_interrupted) *out_interrupted = false;
  pthread_mutex_lock(&pinned->mutex);
  hrx_pinned_range_t* range = hrx_pinned_find_start_locked(pinned, ptr, false);
  if (!range) {
    pthread_mutex_unlock(&pinned->mutex);
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "%p is not the start of host memory pinned for "
                           "this device",
                           ptr);
  }
  range->closing = true;
  range->waiters++;
  pthread_mutex_unlock(&pinned->mutex);
  hrx_pinned_wait_settled(pinned, range, hook, out_interrupted);
  return NULL;
}

/* The live range holding [ptr, ptr + length), or NULL. */
static hrx_pinned_range_t* hrx_pinned_find_locked(hrx_pinned_t* pinned,
                                                  const void* ptr,
                                                  uint64_t length) {
  const uint8_t* p = ptr;
  for (hrx_pinned_range_t* r = pinned->ranges; r; r = r->next) {
    if (!r->ready || r->closing || r->released) continue;
    if (p >= r->base && length <= r->size &&
        (uint64_t)(p - r->base) <= r->size - length) {
      return r;
    }
  }
  return NULL;
}

bool hrx_pinned_contains(hrx_pinned_t* pinned, const void* ptr,
                         uint64_t length) {
  if (atomic_load(&pinned->live) == 0) return false;
  pthread_mutex_lock(&pinned->mutex);
  bool found = hrx_pinned_find_locked(pinned, ptr, length) != NULL;
  pthread_mutex_unlock(&pinned->mutex);
  return found;
}

hrx_status_t hrx_pinned_begin_use(hrx_pinned_t* pinned, const void* ptr,
                                  uint64_t length,
                                  hrx_pinned_use_t** out_use) {
  *out_use = NULL;
  if (atomic_load_explicit(&pinned->live, memory_order_relaxed) == 0) {
    return NULL;
  }
  hrx_pinned_use_t* use = calloc(1, sizeof(*use));
  if (!use) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a pinned memory use");
  }
  pthread_mutex_lock(&pinned->mutex);
  hrx_pinned_range_t* range = hrx_pinned_find_locked(pinned, ptr, length);
  if (!range) {
    pthread_mutex_unlock(&pinned->mutex);
    free(use);
    return NULL;
  }
  if (pinned->event_count) use->event = pinned->events[--pinned->event_count];
  use->pinned = pinned;
  use->range = range;
  use->next = range->uses;
  range->uses = use;
  pthread_mutex_unlock(&pinned->mutex);
  if (!use->event) {
    hrx_status_t status =
        pinned->backend->vtable->event.create(pinned->backend, &use->event);
    if (status) {
      use->event = NULL;
      pthread_mutex_lock(&pinned->mutex);
      for (hrx_pinned_use_t** link = &range->uses; *link;
           link = &(*link)->next) {
        if (*link == use) {
          *link = use->next;
          break;
        }
      }
      pthread_cond_broadcast(&pinned->changed);
      pthread_mutex_unlock(&pinned->mutex);
      free(use);
      return status;
    }
  }
  *out_use = use;
  return NULL;
}

void hrx_pinned_use_recorded(hrx_pinned_t* pinned, hrx_pinned_use_t* use) {
  pthread_mutex_lock(&pinned->mutex);
  use->recorded = true;
  pthread_cond_broadcast(&pinned->changed);
  pthread_mutex_unlock(&pinned->mutex);
}

void hrx_pinned_end_use(hrx_pinned_t* pinned, hrx_pinned_use_t* use) {
  if (!use) return;
  hrx_pinned_settled_t settled = {0};
  pthread_mutex_lock(&pinned->mutex);
  hrx_pinned_range_t* range = use->range;
  use->ended = true;
  pthread_cond_broadcast(&pinned->changed);
  if (range->closing) {
    hrx_pinned_settle_locked(pinned, range, &settled);
  } else {
    hrx_pinned_prune_locked(pinned, range);
  }
  pthread_mutex_unlock(&pinned->mutex);
  hrx_pinned_finish_settled(pinned, &settled);
}

void hrx_pinned_end_use_hook(void* use) {
  hrx_pinned_use_t* pinned_use = use;
  hrx_pinned_end_use(pinned_use->pinned, pinned_use);
}
