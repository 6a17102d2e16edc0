/* Transfer pacing (pacing.h). */
#include "pacing.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/environment.h"
#include "base/nonblocking.h"
#include "base/status.h"
#include "base/thread_state.h"
#include "wait.h"

hrx_status_t hrx_chunk_settings_from_environment(
    hrx_chunk_settings_t* out_settings) {
  hrx_chunk_settings_t settings = {0};
  HRX_RETURN_IF_ERROR(hrx_env_switch("HRX_CHUNKING", true, &settings.enabled));
  int64_t value = 0;
  HRX_RETURN_IF_ERROR(hrx_env_int("HRX_CHUNK_BYTES",
                                  (int64_t)HRX_CHUNK_DEFAULT_BYTES,
                                  (int64_t)HRX_CHUNK_MIN_BYTES,
                                  (int64_t)HRX_CHUNK_MAX_BYTES, &value));
  settings.chunk_bytes = (uint64_t)value;
  /* Checked against the chunk below, so that the message names both. */
  HRX_RETURN_IF_ERROR(hrx_env_int(
      "HRX_CHUNK_WINDOW_BYTES",
      (int64_t)(settings.chunk_bytes * HRX_CHUNK_DEFAULT_WINDOW_CHUNKS), 1,
      (int64_t)(HRX_CHUNK_MAX_BYTES * HRX_CHUNK_MAX_WINDOW_CHUNKS), &value));
  if ((uint64_t)value < settings.chunk_bytes) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "HRX_CHUNK_WINDOW_BYTES must be at least one chunk "
                           "(HRX_CHUNK_BYTES, %llu), got %lld",
                           (unsigned long long)settings.chunk_bytes,
                           (long long)value);
  }
  settings.window_bytes = (uint64_t)value;
  *out_settings = settings;
  return NULL;
}

/* ------------------------------------------------------------ transfers */

hrx_paced_transfer_t* hrx_paced_transfer_create(void) {
  hrx_paced_transfer_t* transfer = calloc(1, sizeof(*transfer));
  if (!transfer) return NULL;
  atomic_init(&transfer->ref_count, 1);
  atomic_init(&transfer->state, HRX_PACED_HELD);
  atomic_init(&transfer->staged_bytes, UINT64_MAX);
  atomic_init(&transfer->landed_bytes, 0);
  atomic_init(&transfer->landing_failed, false);
  atomic_init(&transfer->settled, false);
  return transfer;
}

void hrx_paced_transfer_retain(hrx_paced_transfer_t* transfer) {
  atomic_fetch_add_explicit(&transfer->ref_count, 1, memory_order_relaxed);
}

void hrx_paced_transfer_release(hrx_paced_transfer_t* transfer) {
  if (!transfer ||
      atomic_fetch_sub_explicit(&transfer->ref_count, 1,
                                memory_order_acq_rel) != 1) {
    return;
  }
  /* Every chunk completed or was never published. */
  if (transfer->source_block) {
    hrx_staging_release(transfer->staging, transfer->source_block);
  }
  if (transfer->block_adopted) {
    hrx_staging_release_pending(transfer->staging, transfer->block);
  }
  if (transfer->on_release) transfer->on_release(transfer->release_arg);
  hrx_status_free(transfer->failure);
  free(transfer);
}

/* ---------------------------------------------------------------- pacer */

/* A published chunk whose completion the direction's thread waits for. */
typedef struct hrx_chunk_s {
  hrx_native_event_t* event;       /* owned; recorded after the chunk */
  uint64_t bytes;
  uint64_t end;                    /* its end in its transfer */
  hrx_paced_transfer_t* transfer;  /* retained while in flight */
  struct hrx_chunk_s* next;
} hrx_chunk_t;

typedef struct hrx_pace_lane_s {
  uint64_t in_flight_bytes;        /* mutex */
  uint32_t in_flight_chunks;       /* mutex; counted from admission */
  /* Yielding to an urgent transfer (hrx_pacer_yield): no chunk of this
   * direction is admitted until `yield_chunks`, the chunks in flight when
   * the latest urgent transfer came, have completed and the grace after
   * them has passed (mutex). */
  bool yielding;
  uint32_t yield_chunks;
  hrx_chunk_t* head;               /* chunks in flight, oldest first */
  hrx_chunk_t* tail;
  pthread_cond_t work_cond;        /* a chunk went in flight, or stopping */
  pthread_t thread;
  bool started;
} hrx_pace_lane_t;

struct hrx_pacer_s {
  hrx_backend_device_t* backend;   /* borrowed; outlives the pacer */
  hrx_chunk_settings_t settings;   /* immutable */
  pthread_mutex_t mutex;
  pthread_cond_t progress_cond;    /* held work moved (transfers, entries) */
  hrx_pace_lane_t lanes[HRX_PACE_DIRECTIONS];
  hrx_pace_entry_t* entries;       /* entries holding work, round-robin */
  hrx_chunk_t* free_chunks;        /* with their events, for reuse */
  bool stopping;
};

typedef struct {
  hrx_pacer_t* pacer;
  hrx_pace_direction_t direction;
} hrx_pace_thread_arg_t;

hrx_status_t hrx_pacer_create(hrx_backend_device_t* backend,
                              const hrx_chunk_settings_t* settings,
                              hrx_pacer_t** out_pacer) {
  hrx_pacer_t* pacer = calloc(1, sizeof(*pacer));
  if (!pacer) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate the transfer pacer");
  }
  pacer->backend = backend;
  pacer->settings = *settings;
  pthread_mutex_init(&pacer->mutex, NULL);
  hrx_clock_cond_init(&pacer->progress_cond);
  for (int d = 0; d < HRX_PACE_DIRECTIONS; ++d) {
    pthread_cond_init(&pacer->lanes[d].work_cond, NULL);
  }
  *out_pacer = pacer;
  return NULL;
}

void hrx_pacer_destroy(hrx_pacer_t* pacer) {
  if (!pacer) return;
  pthread_mutex_lock(&pacer->mutex);
  pacer->stopping = true;
  for (int d = 0; d < HRX_PACE_DIRECTIONS; ++d) {
    pthread_cond_broadcast(&pacer->lanes[d].work_cond);
  }
  pthread_mutex_unlock(&pacer->mutex);
  for (int d = 0; d < HRX_PACE_DIRECTIONS; ++d) {
    /* A thread ends once its direction has nothing in flight. */
    if (pacer->lanes[d].started) pthread_join(pacer->lanes[d].thread, NULL);
    pthread_cond_destroy(&pacer->lanes[d].work_cond);
  }
  while (pacer->free_chunks) {
    hrx_chunk_t* chunk = pacer->free_chunks;
    pacer->free_chunks = chunk->next;
    pacer->backend->vtable->event.destroy(pacer->backend, chunk->event);
    free(chunk);
  }
  pthread_cond_destroy(&pacer->progress_cond);
  pthread_mutex_destroy(&pacer->mutex);
  free(pacer);
}

const hrx_chunk_settings_t* hrx_pacer_settings(const hrx_pacer_t* pacer) {
  return &pacer->settings;
}

bool hrx_pacer_paces(const hrx_pacer_t* pacer, uint64_t length, int priority,
                     bool reserved) {
  return pacer->settings.enabled && length >= pacer->settings.chunk_bytes &&
         priority < HRX_STREAM_PRIORITY_HIGH && !reserved;
}

/* ------------------------------------------------------- the held lists */

static void hrx_pacer_list_locked(hrx_pacer_t* pacer, hrx_pace_entry_t* entry) {
  if (entry->listed) return;
  entry->listed = true;
  entry->next = NULL;
  entry->prev = NULL;
  if (!pacer->entries) {
    entry->prev = entry->next = entry;
    pacer->entries = entry;
    return;
  }
  /* Last in the round. */
  hrx_pace_entry_t* first = pacer->entries;
  entry->next = first;
  entry->prev = first->prev;
  first->prev->next = entry;
  first->prev = entry;
}

static void hrx_pacer_unlist_locked(hrx_pacer_t* pacer,
                                    hrx_pace_entry_t* entry) {
  if (!entry->listed) return;
  entry->listed = false;
  if (entry->next == entry) {
    pacer->entries = NULL;
  } else {
    entry->prev->next = entry->next;
    entry->next->prev = entry->prev;
    if (pacer->entries == entry) pacer->entries = entry->next;
  }
  entry->next = entry->prev = NULL;
}

void hrx_pacer_hold(hrx_pacer_t* pacer, hrx_pace_entry_t* entry,
                    hrx_paced_transfer_t* transfer) {
  pthread_mutex_lock(&pacer->mutex);
  transfer->next = NULL;
  if (entry->tail) {
    entry->tail->next = transfer;
  } else {
    entry->head = transfer;
  }
  entry->tail = transfer;
  hrx_pacer_list_locked(pacer, entry);
  pthread_mutex_unlock(&pacer->mutex);
}

/* Takes the head transfer off the entry's held list as `state` (mutex
 * held); the caller then drops the list's reference. */
static hrx_paced_transfer_t* hrx_pacer_pop_locked(hrx_pacer_t* pacer,
                                                  hrx_pace_entry_t* entry,
                                                  hrx_paced_state_t state) {
  hrx_paced_transfer_t* transfer = entry->head;
  entry->head = transfer->next;
  if (!entry->head) {
    entry->tail = NULL;
    hrx_pacer_unlist_locked(pacer, entry);
  }
  transfer->next = NULL;
  atomic_store(&transfer->state, state);
  atomic_fetch_sub(&entry->held, 1);
  pthread_cond_broadcast(&pacer->progress_cond);
  return transfer;
}

static void* hrx_pace_main(void* arg);

/* A chunk admitted to the lane is no longer in flight (completed, or
 * never submitted); counts it off a yield (mutex held). */
static void hrx_pace_lane_chunk_gone_locked(hrx_pace_lane_t* lane) {
  lane->in_flight_chunks--;
  if (lane->yielding && lane->yield_chunks > 0) lane->yield_chunks--;
}

void hrx_pacer_yield(hrx_pacer_t* pacer, hrx_pace_direction_t direction) {
  hrx_pace_lane_t* lane = &pacer->lanes[direction];
  pthread_mutex_lock(&pacer->mutex);
  if (lane->in_flight_chunks > 0) {
    /* Every chunk in flight was admitted before now: none is while the
     * lane yields. */
    lane->yielding = true;
    lane->yield_chunks = lane->in_flight_chunks;
  }
  pthread_mutex_unlock(&pacer->mutex);
}

/* Starts the direction's thread if needed (mutex held); false when it
 * cannot be started. */
static bool hrx_pacer_start_locked(hrx_pacer_t* pacer,
                                   hrx_pace_direction_t direction) {
  hrx_pace_lane_t* lane = &pacer->lanes[direction];
  if (lane->started) return true;
  hrx_pace_thread_arg_t* arg = malloc(sizeof(*arg));
  if (!arg) return false;
  arg->pacer = pacer;
  arg->direction = direction;
  if (pthread_create(&lane->thread, NULL, hrx_pace_main, arg) != 0) {
    free(arg);
    return false;
  }
  lane->started = true;
  return true;
}

/* Submits one chunk and records its event. On failure nothing of it is in
 * flight: a chunk whose event could not be recorded was waited for. */
static hrx_status_t hrx_pacer_submit_chunk(hrx_pace_entry_t* entry,
                                           hrx_paced_transfer_t* transfer,
                                           uint64_t offset, uint64_t bytes,
                                           hrx_chunk_t* chunk) {
  hrx_backend_device_t* backend = entry->backend;
  const hrx_backend_vtable_t* vtable = backend->vtable;
  uint8_t* dst = transfer->dst + offset;
  const uint8_t* src = transfer->src + offset;
  hrx_status_t status = NULL;
  switch (transfer->direction) {
    case HRX_PACE_TO_DEVICE:
      status = (transfer->source_block || transfer->host_pinned) &&
                       vtable->queue.upload_pinned
                   ? vtable->queue.upload_pinned(backend, entry->queue, dst, src,
                                           bytes)
                   : vtable->queue.upload(backend, entry->queue, dst, src, bytes);
      break;
    case HRX_PACE_TO_HOST:
      status = vtable->queue.download(backend, entry->queue, dst, src, bytes);
      break;
    default:
      status = vtable->queue.copy(backend, entry->queue, dst, src, bytes);
      break;
  }
  if (status) return status;
  status = vtable->event.record(backend, entry->queue, chunk->event);
  if (!status && offset + bytes == transfer->length && transfer->block) {
    /* The read's own completion: right after its last chunk. */
    status = vtable->event.record(backend, entry->queue,
                                  transfer->block->event);
  }
  if (status) {
    hrx_status_free(hrx_wait_queue(backend, entry->queue, NULL, NULL));
  }
  return status;
}

/* Drops every held transfer of the entry's failed stream (mutex held by the
 * caller, who then counts and releases them). */
static hrx_paced_transfer_t* hrx_pacer_drop_all_locked(
    hrx_pacer_t* pacer, hrx_pace_entry_t* entry, uint64_t* out_count) {
  hrx_paced_transfer_t* dropped = NULL;
  hrx_paced_transfer_t** tail = &dropped;
  uint64_t count = 0;
  while (entry->head) {
    hrx_paced_transfer_t* transfer =
        hrx_pacer_pop_locked(pacer, entry, HRX_PACED_DROPPED);
    *tail = transfer;
    tail = &transfer->next;
    ++count;
  }
  *out_count = count;
  return dropped;
}

static void hrx_pacer_release_list(hrx_paced_transfer_t* list) {
  while (list) {
    hrx_paced_transfer_t* next = list->next;
    hrx_paced_transfer_release(list);
    list = next;
  }
}

/* The transfer left its held list: no chunk of it will be published.
 * `record`: its block's event is recorded now, behind whatever of it the
 * entry's queue has (a read dropped after chunks that may still run, or a
 * read into pinned memory, whose use must be recorded); otherwise it was
 * recorded after the last chunk already, or is not needed. A failed record
 * waits for the queue instead. Then on_recorded, and the transfer is
 * settled. No lock held. */
static void hrx_pacer_settle(hrx_pacer_t* pacer, hrx_pace_entry_t* entry,
                             hrx_paced_transfer_t* transfer, bool record) {
  bool recorded = transfer->block != NULL;
  if (record && transfer->block) {
    hrx_status_t marker = entry->backend->vtable->event.record(
        entry->backend, entry->queue, transfer->block->event);
    if (marker) {
      hrx_status_free(marker);
      hrx_status_free(hrx_wait_queue(entry->backend, entry->queue, NULL, NULL));
      recorded = false;
    }
  }
  if (recorded && transfer->on_recorded) {
    transfer->on_recorded(transfer->recorded_arg);
  }
  pthread_mutex_lock(&pacer->mutex);
  atomic_store(&transfer->settled, true);
  pthread_cond_broadcast(&pacer->progress_cond);
  pthread_mutex_unlock(&pacer->mutex);
}

/* hrx_pacer_settle for each transfer of a dropped list, before it is
 * released: a read into pinned memory records its block's event. */
static void hrx_pacer_settle_list(hrx_pacer_t* pacer, hrx_pace_entry_t* entry,
                                  hrx_paced_transfer_t* list) {
  for (hrx_paced_transfer_t* t = list; t; t = t->next) {
    hrx_pacer_settle(pacer, entry, t, t->on_recorded != NULL);
  }
}

void hrx_pacer_publish_locked(hrx_pacer_t* pacer, hrx_pace_entry_t* entry) {
  /* Chunks are published in blocking mode: a held list is never refused
   * halfway by a non-blocking caller. */
  bool previous = hrx_thread_set_nonblocking(false);
  const uint64_t chunk_bytes = pacer->settings.chunk_bytes;
  for (;;) {
    pthread_mutex_lock(&pacer->mutex);
    hrx_paced_transfer_t* transfer = entry->head;
    if (!transfer) {
      pthread_mutex_unlock(&pacer->mutex);
      break;
    }
    pthread_mutex_unlock(&pacer->mutex);
    if (entry->ops->failed(entry)) {
      /* Accepted after the failure: not run. An observing one reports it
       * to its reader. */
      pthread_mutex_lock(&pacer->mutex);
      for (hrx_paced_transfer_t* t = entry->head; t; t = t->next) {
        if (t->observes && !t->failure) {
          t->failure = hrx_make_status(
              HRX_STATUS_FAILED_PRECONDITION,
              "the %s was not run: an earlier command of this stream failed "
              "(the stream's next observation point raises it)",
              t->what);
        }
      }
      uint64_t count = 0;
      hrx_paced_transfer_t* dropped =
          hrx_pacer_drop_all_locked(pacer, entry, &count);
      pthread_mutex_unlock(&pacer->mutex);
      hrx_pacer_settle_list(pacer, entry, dropped);
      entry->ops->skip(entry, count);
      hrx_pacer_release_list(dropped);
      break;
    }
    hrx_pace_lane_t* lane = &pacer->lanes[transfer->direction];
    pthread_mutex_lock(&pacer->mutex);
    uint64_t offset = transfer->offset;
    uint64_t bytes = transfer->length - offset;
    if (bytes > chunk_bytes) bytes = chunk_bytes;
    if (offset + bytes > atomic_load(&transfer->staged_bytes)) {
      pthread_mutex_unlock(&pacer->mutex);
      break;  /* its filler publishes it once the chunk is staged */
    }
    if (lane->yielding ||
        (lane->in_flight_bytes &&
         lane->in_flight_bytes + bytes > pacer->settings.window_bytes)) {
      pthread_mutex_unlock(&pacer->mutex);
      break;  /* the direction's thread publishes it when a chunk is done */
    }
    if (!hrx_pacer_start_locked(pacer, transfer->direction)) {
      /* Without the thread no completion would publish the rest: this
       * chunk goes out past the window (still in order). */
      lane->in_flight_bytes = 0;
    }
    hrx_chunk_t* chunk = pacer->free_chunks;
    if (chunk) pacer->free_chunks = chunk->next;
    lane->in_flight_bytes += bytes;  /* reserved */
    lane->in_flight_chunks++;
    pthread_mutex_unlock(&pacer->mutex);
    hrx_status_t status = NULL;
    if (!chunk) {
      chunk = calloc(1, sizeof(*chunk));
      if (!chunk) {
        status = hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                                 "cannot allocate a transfer chunk");
      } else {
        status = pacer->backend->vtable->event.create(pacer->backend,
                                                      &chunk->event);
        if (status) {
          free(chunk);
          chunk = NULL;
        }
      }
    }
    if (!status) {
      status = hrx_pacer_submit_chunk(entry, transfer, offset, bytes, chunk);
    }
    pthread_mutex_lock(&pacer->mutex);
    if (status) {
      lane->in_flight_bytes -= bytes;
      hrx_pace_lane_chunk_gone_locked(lane);
      if (chunk) {
        chunk->next = pacer->free_chunks;
        pacer->free_chunks = chunk;
      }
      /* Reported as the whole command's failure, whatever its chunk, so
       * that it reads alike with chunking on and off. A waiter reads the
       * failure once it sees the state dropped: it is set first. */
      hrx_paced_transfer_t* failed = entry->head;
      if (failed->observes) failed->failure = status;
      hrx_pacer_pop_locked(pacer, entry, HRX_PACED_DROPPED);
      if (failed->observes) {
        pthread_mutex_unlock(&pacer->mutex);
        /* Its earlier chunks may still write the block: its event follows
         * them, so the pool reuses it (or the pinned use ends) only after
         * they ran. */
        hrx_pacer_settle(pacer, entry, failed,
                         offset > 0 || failed->on_recorded != NULL);
        hrx_paced_transfer_release(failed);
        continue;
      }
      /* The stream fails by this command; what it held after it is not
       * run. */
      uint64_t skipped = 0;
      hrx_paced_transfer_t* dropped =
          hrx_pacer_drop_all_locked(pacer, entry, &skipped);
      pthread_mutex_unlock(&pacer->mutex);
      hrx_pacer_settle(pacer, entry, failed, false);
      hrx_pacer_settle_list(pacer, entry, dropped);
      entry->ops->fail(entry, status, failed, skipped);
      hrx_paced_transfer_release(failed);
      hrx_pacer_release_list(dropped);
      break;
    }
    chunk->bytes = bytes;
    chunk->end = offset + bytes;
    chunk->transfer = transfer;
    hrx_paced_transfer_retain(transfer);
    chunk->next = NULL;
    if (lane->tail) {
      lane->tail->next = chunk;
    } else {
      lane->head = chunk;
    }
    lane->tail = chunk;
    pthread_cond_signal(&lane->work_cond);
    transfer->offset = offset + bytes;
    hrx_paced_transfer_t* done = NULL;
    if (transfer->offset == transfer->length) {
      done = hrx_pacer_pop_locked(pacer, entry, HRX_PACED_PUBLISHED);
    } else if (entry->next != entry && entry->listed) {
      /* One chunk per turn: the entry goes to the end of the round. */
      hrx_pacer_unlist_locked(pacer, entry);
      hrx_pacer_list_locked(pacer, entry);
    }
    pthread_mutex_unlock(&pacer->mutex);
    if (done) {
      /* Its block's event followed its last chunk (submit_chunk). */
      hrx_pacer_settle(pacer, entry, done, false);
      entry->ops->published(entry, done);
      hrx_paced_transfer_release(done);
    }
  }
  hrx_thread_set_nonblocking(previous);
}

/* ----------------------------------------------------- direction threads */

/* Publishes what fits, entry after entry in the round (mutex held on entry
 * and exit; let go while publishing). */
static void hrx_pacer_serve_locked(hrx_pacer_t* pacer) {
  enum { capacity = 64 };
  hrx_pace_entry_t* batch[capacity];
  int count = 0;
  hrx_pace_entry_t* first = pacer->entries;
  for (hrx_pace_entry_t* e = first; e && count < capacity;) {
    e->holds++;
    batch[count++] = e;
    e = e->next;
    if (e == first) break;
  }
  pthread_mutex_unlock(&pacer->mutex);
  for (int i = 0; i < count; ++i) batch[i]->ops->publish(batch[i]);
  pthread_mutex_lock(&pacer->mutex);
  for (int i = 0; i < count; ++i) batch[i]->holds--;
  if (count) pthread_cond_broadcast(&pacer->progress_cond);
}

static void* hrx_pace_main(void* arg) {
  hrx_pace_thread_arg_t args = *(hrx_pace_thread_arg_t*)arg;
  free(arg);
  hrx_pacer_t* pacer = args.pacer;
  hrx_pace_lane_t* lane = &pacer->lanes[args.direction];
  /* A transfer's release here (a pinned range's end) may be the device's
   * last reference, whose teardown joins this thread. */
  hrx_thread_mark_device_thread();
  pthread_mutex_lock(&pacer->mutex);
  for (;;) {
    while (!lane->head && !pacer->stopping) {
      pthread_cond_wait(&lane->work_cond, &pacer->mutex);
    }
    if (!lane->head) break;  /* stopping, nothing in flight */
    hrx_chunk_t* chunk = lane->head;
    pthread_mutex_unlock(&pacer->mutex);
    /* A failed wait leaves the chunk's fate to its queue's failure model:
     * the window only needs to know it no longer runs. */
    hrx_status_t waited =
        hrx_wait_native_event(pacer->backend, chunk->event, NULL, NULL);
    pthread_mutex_lock(&pacer->mutex);
    if (chunk->transfer->direction == HRX_PACE_TO_HOST) {
      /* A read's chunks complete in order: its landed prefix grows (a
       * reader may drain it while later chunks run). */
      if (waited) {
        atomic_store(&chunk->transfer->landing_failed, true);
      } else {
        atomic_store(&chunk->transfer->landed_bytes, chunk->end);
      }
      pthread_cond_broadcast(&pacer->progress_cond);
    }
    hrx_status_free(waited);
    lane->head = chunk->next;
    if (!lane->head) lane->tail = NULL;
    lane->in_flight_bytes -= chunk->bytes;
    hrx_pace_lane_chunk_gone_locked(lane);
    hrx_paced_transfer_t* transfer = chunk->transfer;
    chunk->transfer = NULL;
    chunk->next = pacer->free_chunks;
    pacer->free_chunks = chunk;
    if (lane->yielding && lane->yield_chunks == 0) {
      /* The paced work that was ahead of the urgent transfer is done: the
       * engine turns to it while nothing paced of this direction is
       * queued. Then the held chunks go out again. */
      pthread_mutex_unlock(&pacer->mutex);
      hrx_paced_transfer_release(transfer);
      transfer = NULL;
      /* Waited out by polling the clock: a sleep this short would last
       * the kernel's timer slack (50 us) and more. */
      uint64_t until = hrx_now_ns() + HRX_PACE_YIELD_GRACE_NS;
      while (hrx_now_ns() < until) sched_yield();
      pthread_mutex_lock(&pacer->mutex);
      if (lane->yield_chunks == 0) lane->yielding = false;
    }
    if (pacer->entries) hrx_pacer_serve_locked(pacer);
    pthread_mutex_unlock(&pacer->mutex);
    hrx_paced_transfer_release(transfer);
    pthread_mutex_lock(&pacer->mutex);
  }
  pthread_mutex_unlock(&pacer->mutex);
  return NULL;
}

/* --------------------------------------------------------------- waits */

typedef struct {
  hrx_pacer_t* pacer;
  hrx_pace_entry_t* entry;              /* or NULL: the whole device */
  hrx_paced_transfer_t* transfer;       /* or NULL */
  bool landing;                         /* for the transfer's landed bytes */
  uint64_t above;                       /* landing: beyond this */
  bool settling;                        /* for the transfer's settling */
} hrx_pace_wait_t;

static bool hrx_pace_wait_done_locked(const hrx_pace_wait_t* wait) {
  if (wait->settling) return atomic_load(&wait->transfer->settled);
  if (wait->landing) {
    const hrx_paced_transfer_t* t = wait->transfer;
    return atomic_load(&t->landed_bytes) > wait->above ||
           atomic_load(&t->landing_failed) ||
           atomic_load(&t->state) == HRX_PACED_DROPPED;
  }
  if (wait->transfer) {
    return atomic_load(&wait->transfer->state) != HRX_PACED_HELD;
  }
  if (wait->entry) return !wait->entry->head && wait->entry->holds == 0;
  return wait->pacer->entries == NULL;
}

static bool hrx_pace_wait_for(void* arg, uint64_t timeout_ns) {
  hrx_pace_wait_t* wait = arg;
  hrx_pacer_t* pacer = wait->pacer;
  struct timespec deadline = {0};
  if (timeout_ns != HRX_WAIT_FOREVER) {
    deadline = hrx_clock_timespec(hrx_now_ns() + timeout_ns);
  }
  pthread_mutex_lock(&pacer->mutex);
  bool done = hrx_pace_wait_done_locked(wait);
  while (!done) {
    if (timeout_ns == HRX_WAIT_FOREVER) {
      pthread_cond_wait(&pacer->progress_cond, &pacer->mutex);
    } else if (pthread_cond_timedwait(&pacer->progress_cond, &pacer->mutex,
                                      &deadline) == ETIMEDOUT) {
      done = hrx_pace_wait_done_locked(wait);
      break;
    }
    done = hrx_pace_wait_done_locked(wait);
  }
  pthread_mutex_unlock(&pacer->mutex);
  return done;
}

void hrx_pacer_drain_begin(hrx_pacer_t* pacer, hrx_pace_entry_t* entry) {
  pthread_mutex_lock(&pacer->mutex);
  ++entry->drainers;
  pthread_mutex_unlock(&pacer->mutex);
}

void hrx_pacer_drain_end(hrx_pacer_t* pacer, hrx_pace_entry_t* entry) {
  pthread_mutex_lock(&pacer->mutex);
  if (--entry->drainers == 0) pthread_cond_broadcast(&pacer->progress_cond);
  pthread_mutex_unlock(&pacer->mutex);
}

void hrx_pacer_wait_no_drainers(hrx_pacer_t* pacer, hrx_pace_entry_t* entry) {
  pthread_mutex_lock(&pacer->mutex);
  while (entry->drainers > 0) {
    pthread_cond_wait(&pacer->progress_cond, &pacer->mutex);
  }
  pthread_mutex_unlock(&pacer->mutex);
}

bool hrx_pacer_wait_drained(hrx_pacer_t* pacer, hrx_pace_entry_t* entry,
                            const hrx_wait_hook_t* hook,
                            bool* out_interrupted) {
  hrx_pace_wait_t wait = {pacer, entry, NULL, false, 0, false};
  return hrx_wait_sliced(hrx_pace_wait_for, &wait, hook, out_interrupted);
}

bool hrx_pacer_wait_idle(hrx_pacer_t* pacer, const hrx_wait_hook_t* hook,
                         bool* out_interrupted) {
  hrx_pace_wait_t wait = {pacer, NULL, NULL, false, 0, false};
  return hrx_wait_sliced(hrx_pace_wait_for, &wait, hook, out_interrupted);
}

bool hrx_pacer_wait_transfer(hrx_pacer_t* pacer,
                             hrx_paced_transfer_t* transfer,
                             const hrx_wait_hook_t* hook,
                             bool* out_interrupted) {
  if (atomic_load(&transfer->state) != HRX_PACED_HELD) return true;
  hrx_pace_wait_t wait = {pacer, NULL, transfer, false, 0, false};
  return hrx_wait_sliced(hrx_pace_wait_for, &wait, hook, out_interrupted);
}

void hrx_pacer_wait_settled(hrx_pacer_t* pacer,
                            hrx_paced_transfer_t* transfer) {
  hrx_pace_wait_t wait = {pacer, NULL, transfer, false, 0, true};
  (void)hrx_pace_wait_for(&wait, HRX_WAIT_FOREVER);
}

bool hrx_pacer_wait_landed(hrx_pacer_t* pacer, hrx_paced_transfer_t* transfer,
                           uint64_t above, const hrx_wait_hook_t* hook,
                           bool* out_interrupted) {
  hrx_pace_wait_t wait = {pacer, NULL, transfer, true, above, false};
  return hrx_wait_sliced(hrx_pace_wait_for, &wait, hook, out_interrupted);
}

bool hrx_pacer_adopt_block(hrx_pacer_t* pacer,
                           hrx_paced_transfer_t* transfer) {
  pthread_mutex_lock(&pacer->mutex);
  bool adopted = atomic_load(&transfer->state) == HRX_PACED_HELD;
  if (adopted) transfer->block_adopted = true;
  pthread_mutex_unlock(&pacer->mutex);
  return adopted;
}
