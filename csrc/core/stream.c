/* Streams: ordered submission onto a native queue, either a pool slot or a
 * queue of their own (fabric).
 *
 * Locks: publish_mutex, state_mutex, batch_mutex, in the one order that
 * batching.h documents with what each guards (publishers take
 * publish_mutex; the flusher only try-locks it).
 *
 * Failures (hrx.h, "Failures"; the same with batching on and off): a
 * command whose publication fails marks the stream failed; commands
 * accepted after it are not run (counted); the next observation point
 * (synchronize, record_event, read, read_blocking, flush, graph launch)
 * or the device's synchronize raises the failure, naming the command and
 * how many were not run, and the stream is usable again. Releasing a
 * stream with a failure not raised reports it (hrx_stream_release_checked).
 *
 * Batching (batching.h has the policy): a small copy or fill goes out
 * alone when the policy says so (hrx_stream_publish_if_idle), else joins
 * the stream's pending batch, published by whoever finds it full, by the
 * next publisher of the stream, or by the device's flusher.
 *
 * Non-blocking mode (nonblocking.h): publish_mutex is only taken when free
 * (batch_mutex and state_mutex, never held across a wait, are taken as
 * usual). A pending batch is published without waiting whenever the queue
 * has room (hrx_stream_publish_nonblocking_locked: the backend, in
 * non-blocking mode, is called under batch_mutex, so a refused batch stays
 * pending as it was); a command that fills the batch is accepted even when
 * the batch cannot go at once (it stays pending for the flusher or the
 * next command). A command or record_event that would have to publish a
 * pending batch first while another publisher holds publish_mutex or the
 * queue is full, start a batch the flusher cannot be made to watch without
 * waiting for its lock, or find the queue full for a lone command reports
 * WOULD_BLOCK before it is numbered or counted, so that it never fails the
 * stream and its blocking retry is the only one accepted. A small command
 * that finds the queue full on the idle path joins the batch instead (the
 * queue is busy). A lone command is numbered once the backend took it
 * (hrx_stream_run_locked).
 *
 * Paced transfers (pacing.h): a bulk upload or read of a normal or
 * low stream is held on the stream's held list and published chunk by
 * chunk as the device's window allows. Only transfers are held. A further
 * paced transfer joins the held list (the pending batch is published
 * first); every other command, record_event, flush, synchronize and query
 * of a stream with held work first waits (publish_mutex not held) until the
 * held list is published, in non-blocking mode WOULD_BLOCK instead. The
 * held list only grows under publish_mutex, so a publisher that finds it
 * empty there publishes after everything held before it. The batch path
 * checks the count under batch_mutex, where the held path counts it.
 * While a caller waits for the held list to drain, a new paced transfer of
 * the stream waits for it (pacing.h, drainers): a thread that keeps adding
 * transfers does not keep other callers waiting. In non-blocking mode a
 * paced transfer is WOULD_BLOCK (hrx_stream_paced_would_block).
 *
 * Completions: `gate` lists the completions that wait_completion named; every
 * later command, record_event and synchronize first waits on the host until
 * they are done (no lock is held while waiting, and a completion only
 * depends on work published before it, so this cannot close a cycle).
 * `launches` keeps the completions of graph launches with host callbacks
 * until they are done, so that their last reference is never dropped on the
 * host worker that runs the callbacks; releasing the stream waits for them. */
#include "stream.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batching.h"
#include "buffer.h"
#include "completion.h"
#include "device.h"
#include "entry.h"
#include "event.h"
#include "base/nonblocking.h"
#include "pacing.h"
#include "peer_copy.h"
#include "queue_pool.h"
#include "base/status.h"
#include "wait.h"

struct hrx_stream_s {
  atomic_int ref_count;
  hrx_device_t* device;            /* retained */
  hrx_backend_device_t* backend;   /* borrowed from the device */
  hrx_native_queue_t* queue;       /* pool: borrowed; dedicated: owned */
  int queue_index;                 /* pool slot, or -1 when dedicated */
  hrx_pool_queue_t* pool_queue;    /* pool: its counters; dedicated: NULL */
  pthread_mutex_t publish_mutex;
  pthread_mutex_t state_mutex;
  pthread_mutex_t batch_mutex;
  atomic_bool failed;              /* failure != NULL; written under
                                      state_mutex */
  hrx_status_t failure;            /* owned; the failed command, not yet
                                      raised; state_mutex */
  uint64_t not_run;                /* commands skipped since; state_mutex */
  hrx_failure_link_t failure_link; /* on the device's list while failed */
  hrx_flush_entry_t flush_entry;   /* on the device flusher's list */
  hrx_pending_batch_t batch;       /* batch_mutex (batching.h) */
  uint64_t commands;               /* commands accepted (numbers them);
                                      batch_mutex */
  hrx_completion_list_t gate;      /* completions later work waits for */
  hrx_completion_list_t launches;  /* launches in flight with callbacks */
  hrx_peer_holds_t peer_holds;     /* copies between devices in flight */
  hrx_pace_entry_t pace_entry;     /* held transfers (pacing.h) */
};

#define HRX_STREAM_OF_ENTRY(e) \
  ((hrx_stream_t*)((char*)(e) - offsetof(hrx_stream_t, flush_entry)))
#define HRX_STREAM_OF_LINK(l) \
  ((hrx_stream_t*)((char*)(l) - offsetof(hrx_stream_t, failure_link)))
#define HRX_STREAM_OF_PACE(e) \
  ((hrx_stream_t*)((char*)(e) - offsetof(hrx_stream_t, pace_entry)))

static uint64_t hrx_stream_pending_since(hrx_flush_entry_t* entry) {
  return atomic_load(&HRX_STREAM_OF_ENTRY(entry)->batch.since);
}

static void hrx_stream_publish_locked(hrx_stream_t* stream);

static bool hrx_stream_try_publish_entry(hrx_flush_entry_t* entry) {
  hrx_stream_t* stream = HRX_STREAM_OF_ENTRY(entry);
  if (pthread_mutex_trylock(&stream->publish_mutex) != 0) return false;
  hrx_stream_publish_locked(stream);
  pthread_mutex_unlock(&stream->publish_mutex);
  return true;
}

/* Publishes the pending batch, waiting for publish_mutex. */
static void hrx_stream_publish(hrx_stream_t* stream) {
  pthread_mutex_lock(&stream->publish_mutex);
  hrx_stream_publish_locked(stream);
  pthread_mutex_unlock(&stream->publish_mutex);
}

static void hrx_stream_publish_entry(hrx_flush_entry_t* entry) {
  hrx_stream_publish(HRX_STREAM_OF_ENTRY(entry));
}

static const hrx_flush_entry_ops_t hrx_stream_flush_ops = {
    .pending_since = hrx_stream_pending_since,
    .try_publish = hrx_stream_try_publish_entry,
    .publish = hrx_stream_publish_entry,
};

static const hrx_pace_entry_ops_t hrx_stream_pace_ops;

static hrx_status_t hrx_stream_allocate(hrx_device_t* device,
                                        hrx_stream_t** out_stream) {
  hrx_stream_t* stream = calloc(1, sizeof(*stream));
  if (!stream) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY, "cannot allocate stream");
  }
  atomic_init(&stream->ref_count, 1);
  stream->device = device;
  stream->backend = hrx_device_backend(device);
  pthread_mutex_init(&stream->publish_mutex, NULL);
  pthread_mutex_init(&stream->state_mutex, NULL);
  pthread_mutex_init(&stream->batch_mutex, NULL);
  atomic_init(&stream->failed, false);
  stream->flush_entry.ops = &hrx_stream_flush_ops;
  atomic_init(&stream->flush_entry.listed, false);
  hrx_pending_batch_initialize(&stream->batch);
  hrx_completion_list_initialize(&stream->gate);
  hrx_completion_list_initialize(&stream->launches);
  hrx_peer_holds_initialize(&stream->peer_holds);
  stream->pace_entry.ops = &hrx_stream_pace_ops;
  stream->pace_entry.backend = stream->backend;
  atomic_init(&stream->pace_entry.held, 0);
  *out_stream = stream;
  return NULL;
}

static void hrx_stream_free(hrx_stream_t* stream) {
  hrx_pending_batch_deinitialize(&stream->batch);
  hrx_status_free(stream->failure);
  hrx_completion_list_deinitialize(&stream->gate);
  hrx_completion_list_deinitialize(&stream->launches);
  hrx_peer_holds_deinitialize(&stream->peer_holds);
  pthread_mutex_destroy(&stream->publish_mutex);
  pthread_mutex_destroy(&stream->state_mutex);
  pthread_mutex_destroy(&stream->batch_mutex);
  free(stream);
}

hrx_status_t hrx_stream_create(hrx_device_t* device,
                               hrx_stream_t** out_stream) {
  return hrx_stream_create_with_options(device, NULL, out_stream);
}

void hrx_stream_options_default(hrx_stream_options_t* out_options) {
  out_options->priority = HRX_STREAM_PRIORITY_NORMAL;
  out_options->reserve = false;
}

hrx_status_t hrx_stream_create_with_options(hrx_device_t* device,
                                            const hrx_stream_options_t* options,
                                            hrx_stream_t** out_stream) {
  hrx_stream_options_t defaults;
  hrx_stream_options_default(&defaults);
  if (!options) options = &defaults;
  if (!hrx_stream_priority_name(options->priority)) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "stream priority must be between %d (low) and %d "
                           "(high); got %d",
                           HRX_STREAM_PRIORITY_MIN, HRX_STREAM_PRIORITY_MAX,
                           options->priority);
  }
  hrx_stream_t* stream = NULL;
  HRX_RETURN_IF_ERROR(
      hrx_entry_check(device, HRX_ENTRY_BLOCKING, "creating a stream"));
  HRX_RETURN_IF_ERROR(hrx_stream_allocate(device, &stream));
  hrx_status_t status =
      hrx_queue_pool_acquire(hrx_device_pool(device), options->priority,
                             options->reserve, &stream->pool_queue);
  if (status) {
    hrx_stream_free(stream);
    return status;
  }
  stream->queue = stream->pool_queue->native;
  stream->pace_entry.queue = stream->queue;
  stream->queue_index = stream->pool_queue->slot;
  hrx_device_retain(device);
  hrx_device_stream_created(device);
  *out_stream = stream;
  return NULL;
}

int hrx_stream_priority(const hrx_stream_t* stream) {
  return stream->pool_queue ? stream->pool_queue->priority
                            : HRX_STREAM_PRIORITY_NORMAL;
}

bool hrx_stream_reserved(const hrx_stream_t* stream) {
  return stream->pool_queue && stream->pool_queue->reserved;
}

hrx_status_t hrx_stream_create_dedicated(hrx_device_t* device,
                                         hrx_stream_t** out_stream) {
  hrx_stream_t* stream = NULL;
  HRX_RETURN_IF_ERROR(
      hrx_entry_check(device, HRX_ENTRY_BLOCKING, "creating a stream"));
  HRX_RETURN_IF_ERROR(hrx_stream_allocate(device, &stream));
  int native_priority = 0;
  hrx_status_t status = stream->backend->vtable->queue.create(
      stream->backend, HRX_STREAM_PRIORITY_NORMAL, 0, &stream->queue,
      &native_priority);
  if (status) {
    hrx_stream_free(stream);
    return hrx_status_annotate(status, "cannot create a queue outside the pool");
  }
  stream->pace_entry.queue = stream->queue;
  stream->queue_index = -1;
  hrx_queue_pool_fabric_added(hrx_device_pool(device));
  hrx_device_retain(device);
  hrx_device_stream_created(device);
  *out_stream = stream;
  return NULL;
}

void hrx_stream_retain(hrx_stream_t* stream) {
  if (stream) atomic_fetch_add_explicit(&stream->ref_count, 1,
                                        memory_order_relaxed);
}

static hrx_status_t hrx_stream_take_failure_state(hrx_stream_t* stream,
                                                  const char* how);

static void hrx_stream_release_object(void* stream) {
  hrx_stream_release(stream);
}

void hrx_stream_release_checked(hrx_stream_t* stream,
                                hrx_status_t* out_unobserved) {
  if (out_unobserved) *out_unobserved = NULL;
  if (!stream ||
      !hrx_entry_release_last(stream->device, &stream->ref_count,
                              hrx_stream_release_object, stream, true)) {
    return;
  }
  /* Release is an observation point: pending work goes out, then the
   * flusher forgets the stream. */
  hrx_flusher_remove(hrx_device_flusher(stream->device), &stream->flush_entry);
  /* Held transfers go out (or are dropped after a failure) first. */
  hrx_pacer_wait_drained(hrx_device_pacer(stream->device),
                         &stream->pace_entry, NULL, NULL);
  hrx_stream_publish(stream);
  /* Callbacks of its launches may still hold graphs: let them finish. */
  hrx_completion_list_wait(&stream->launches);
  hrx_device_unlist_failure(stream->device, &stream->failure_link);
  hrx_status_t unobserved = hrx_stream_take_failure_state(stream, "");
  if (unobserved) {
    unobserved = hrx_status_annotate(
        unobserved, "stream released with a failure no observation raised");
    if (out_unobserved) {
      *out_unobserved = unobserved;
    } else {
      fprintf(stderr, "hrx: %s\n", hrx_status_message(unobserved));
      hrx_status_free(unobserved);
    }
  }
  hrx_queue_pool_t* pool = hrx_device_pool(stream->device);
  if (!stream->pool_queue) {
    /* Waits for the queue's work, so its buffers are no longer in use. */
    stream->backend->vtable->queue.destroy(stream->backend, stream->queue);
    hrx_queue_pool_fabric_removed(pool);
  } else {
    hrx_queue_pool_stream_released(pool, stream->pool_queue);
  }
  hrx_device_t* device = stream->device;
  hrx_stream_free(stream);
  hrx_device_release(device);
}

void hrx_stream_release(hrx_stream_t* stream) {
  hrx_stream_release_checked(stream, NULL);
}

hrx_device_t* hrx_stream_device(const hrx_stream_t* stream) {
  return stream->device;
}

hrx_peer_holds_t* hrx_stream_peer_holds(hrx_stream_t* stream) {
  return &stream->peer_holds;
}

int hrx_stream_queue_index(const hrx_stream_t* stream) {
  return stream->queue_index;
}

void* hrx_stream_native_handle(const hrx_stream_t* stream) {
  return stream->backend->vtable->queue.native_handle(stream->queue);
}

hrx_status_t hrx_stream_check_view(const hrx_stream_t* stream,
                                   hrx_view_t view, const char* role) {
  return hrx_view_check(stream->device, view, role, "the stream runs on",
                        "buffers are usable only on their own device (a "
                        "copy between devices is copy_peer)");
}

/* ------------------------------------------------------------- failures */

/* "copy of 16 bytes", for a failure message. */
static void hrx_stream_describe(const char* what, uint64_t bytes,
                                char* buffer, size_t capacity) {
  if (bytes) {
    snprintf(buffer, capacity, "%s of %llu bytes", what,
             (unsigned long long)bytes);
  } else {
    snprintf(buffer, capacity, "%s", what);
  }
}

/* The same words as a lone command's, so that a failure reads alike with
 * batching on and off. */
static void hrx_stream_describe_batched(const hrx_batch_command_t* command,
                                        char* buffer, size_t capacity) {
  hrx_stream_describe(command->kind == HRX_BATCH_FILL ? "fill" : "copy",
                      command->length, buffer, capacity);
}

/* Marks the stream failed by command `number` (`what`); `skipped` commands
 * accepted after it were dropped unpublished. Takes `status`. The caller
 * holds publish_mutex (so no other publisher runs) but not state_mutex. */
static void hrx_stream_fail(hrx_stream_t* stream, hrx_status_t status,
                            uint64_t number, const char* what,
                            uint64_t skipped) {
  status = hrx_status_annotate(status, "command %llu of this stream (%s) "
                                       "failed",
                               (unsigned long long)number, what);
  pthread_mutex_lock(&stream->state_mutex);
  if (stream->failure) {
    hrx_status_free(status);  /* not reached: a failed stream runs nothing */
  } else {
    stream->failure = status;
    atomic_store(&stream->failed, true);
  }
  stream->not_run += skipped;
  pthread_mutex_unlock(&stream->state_mutex);
  hrx_device_list_failure(stream->device, &stream->failure_link);
}

/* Counts commands that were accepted but not run (the stream had failed). */
static void hrx_stream_skip(hrx_stream_t* stream, uint64_t count) {
  pthread_mutex_lock(&stream->state_mutex);
  stream->not_run += count;
  pthread_mutex_unlock(&stream->state_mutex);
}

/* The failure with what was not run, and the stream back to usable; NULL
 * when it has none. `how` ends the message. Leaves the device's list
 * alone. */
static hrx_status_t hrx_stream_take_failure_state(hrx_stream_t* stream,
                                                  const char* how) {
  if (!atomic_load(&stream->failed)) return NULL;
  pthread_mutex_lock(&stream->state_mutex);
  hrx_status_t failure = stream->failure;
  uint64_t not_run = stream->not_run;
  stream->failure = NULL;
  stream->not_run = 0;
  atomic_store(&stream->failed, false);
  pthread_mutex_unlock(&stream->state_mutex);
  if (!failure) return NULL;
  hrx_status_t taken = hrx_make_status(
      hrx_status_code(failure), "%s; %llu later command%s of this stream %s "
      "not run%s",
      hrx_status_message(failure), (unsigned long long)not_run,
      not_run == 1 ? "" : "s", not_run == 1 ? "was" : "were", how);
  hrx_status_free(failure);
  return taken;
}

static const char hrx_stream_usable_again[] = "; the stream is usable again";

static hrx_status_t hrx_stream_take_failure(hrx_stream_t* stream) {
  if (!atomic_load(&stream->failed)) return NULL;
  hrx_device_unlist_failure(stream->device, &stream->failure_link);
  return hrx_stream_take_failure_state(stream, hrx_stream_usable_again);
}

hrx_status_t hrx_stream_take_failure_of_link(hrx_failure_link_t* link) {
  return hrx_stream_take_failure_state(HRX_STREAM_OF_LINK(link),
                                       hrx_stream_usable_again);
}

/* ---------------------------------------------------------- publication */

/* Counts published commands for the pool's stats (dedicated streams are
 * not counted). */
static void hrx_stream_count_published(hrx_stream_t* stream, uint64_t commands,
                                       uint64_t bytes) {
  if (stream->pool_queue) {
    hrx_pool_queue_count_published(stream->pool_queue, commands, bytes);
  }
}

/* What became of a batch moved out of the pending one (publish_mutex
 * held, batch_mutex not): `skipped`, it was not run (the stream had
 * failed); otherwise `status` (taken) is NULL when every command was
 * published, or the failure of command `failed`: the ones before it were
 * published, the ones after it are dropped. */
static void hrx_stream_batch_done_locked(hrx_stream_t* stream,
                                         const hrx_batch_command_t* batch,
                                         uint32_t count, uint64_t first,
                                         uint64_t bytes, bool skipped,
                                         hrx_status_t status,
                                         uint32_t failed) {
  /* The batch's commands were accepted; the device counts them now, once
   * per batch (hrx_device_count_commands). */
  hrx_device_count_commands(stream->device, count);
  if (skipped) {
    hrx_stream_skip(stream, count);
    return;
  }
  uint32_t published = status ? failed : count;
  if (status) {
    bytes = 0;
    for (uint32_t i = 0; i < published; ++i) bytes += batch[i].length;
  }
  hrx_stream_count_published(stream, published, bytes);
  if (status) {
    char what[96];
    hrx_stream_describe_batched(&batch[failed], what, sizeof(what));
    hrx_stream_fail(stream, status, first + failed, what, count - failed - 1);
  }
}

/* Publishes the pending batch, if any, waiting for queue space if need be
 * (also when called in non-blocking mode); the caller holds publish_mutex.
 * The batch is moved out under batch_mutex (the two halves of the buffer
 * swap), so producers keep appending to a fresh batch during the launch.
 * On a failed stream the batch is dropped (not run); a command that fails
 * fails the stream and drops the rest of its batch. */
static void hrx_stream_publish_locked(hrx_stream_t* stream) {
  hrx_batch_command_t* batch = NULL;
  uint64_t first = 0;
  uint64_t bytes = 0;
  pthread_mutex_lock(&stream->batch_mutex);
  uint32_t count =
      hrx_pending_batch_take_locked(&stream->batch, &batch, &first, &bytes);
  pthread_mutex_unlock(&stream->batch_mutex);
  if (!count) return;
  bool skipped = atomic_load(&stream->failed);
  hrx_status_t status = NULL;
  uint32_t failed = 0;
  if (!skipped) {
    bool previous = hrx_thread_set_nonblocking(false);
    status = hrx_batch_publish(stream->backend, stream->queue, batch, count,
                               &failed);
    hrx_thread_set_nonblocking(previous);
  }
  hrx_stream_batch_done_locked(stream, batch, count, first, bytes, skipped,
                               status, failed);
  pthread_mutex_lock(&stream->batch_mutex);
  stream->batch.in_flight = false;
  pthread_mutex_unlock(&stream->batch_mutex);
}

/* The same in non-blocking mode, for a publication that must not wait
 * (publish_mutex held). The backend is called with batch_mutex held (a
 * non-blocking call does not wait, so an appending producer waits no
 * longer than for another append), so that the commands it refuses with
 * WOULD_BLOCK stay pending, in order, as if they had not been offered;
 * that WOULD_BLOCK is returned. Otherwise NULL, as above. */
static hrx_status_t hrx_stream_publish_nonblocking_locked(
    hrx_stream_t* stream) {
  pthread_mutex_lock(&stream->batch_mutex);
  uint32_t count = stream->batch.count;
  bool skipped = atomic_load(&stream->failed);
  hrx_status_t status = NULL;
  uint32_t failed = 0;
  if (count && !skipped) {
    status = hrx_batch_publish(stream->backend, stream->queue,
                               stream->batch.commands, count, &failed);
  }
  bool blocked = hrx_status_code(status) == HRX_STATUS_WOULD_BLOCK;
  uint32_t taken = blocked ? failed : count;
  uint64_t first = 0;
  uint64_t bytes = 0;
  hrx_batch_command_t* batch =
      taken ? hrx_pending_batch_take_first_locked(&stream->batch, taken,
                                                  &first, &bytes)
            : NULL;
  pthread_mutex_unlock(&stream->batch_mutex);
  if (taken) {
    hrx_stream_batch_done_locked(stream, batch, taken, first, bytes, skipped,
                                 blocked ? NULL : status, failed);
  }
  return blocked ? status : NULL;
}

/* Waits until the stream's held transfers are published (none of its locks
 * held); false when the hook interrupted. */
static bool hrx_stream_wait_held(hrx_stream_t* stream,
                                 const hrx_wait_hook_t* hook,
                                 bool* out_interrupted) {
  if (!atomic_load(&stream->pace_entry.held)) return true;
  return hrx_pacer_wait_drained(hrx_device_pacer(stream->device),
                                &stream->pace_entry, hook, out_interrupted);
}

/* Whether commands the stream accepted are not on its queue yet: held
 * transfers, a pending batch, or one moved out whose publication is in
 * progress. */
static bool hrx_stream_has_unpublished(hrx_stream_t* stream) {
  if (atomic_load(&stream->pace_entry.held)) return true;
  pthread_mutex_lock(&stream->batch_mutex);
  bool unpublished = hrx_pending_batch_unpublished_locked(&stream->batch);
  pthread_mutex_unlock(&stream->batch_mutex);
  return unpublished;
}

/* Takes publish_mutex and publishes the pending batch (for a lone command,
 * which must follow it, or an observation). In non-blocking mode:
 * WOULD_BLOCK (not locked, nothing published) when another publisher holds
 * the lock (a batch moved out may still be on its way), or when the
 * backend would wait for queue space to take the pending batch. */
static hrx_status_t hrx_stream_lock_published(hrx_stream_t* stream) {
  hrx_pacer_t* pacer = hrx_device_pacer(stream->device);
  bool draining = false;  /* counted in the entry's drainers */
  for (;;) {
    if (!hrx_nonblocking_lock(&stream->publish_mutex)) {
      return hrx_would_block_briefly("the stream's publication lock");
    }
    if (!atomic_load(&stream->pace_entry.held)) break;
    /* Held transfers come first; only publish_mutex lets the list grow,
     * and while this caller drains it no new transfer joins it. */
    pthread_mutex_unlock(&stream->publish_mutex);
    if (hrx_nonblocking()) {
      return hrx_would_block("the stream's held transfers to be published");
    }
    if (!draining) hrx_pacer_drain_begin(pacer, &stream->pace_entry);
    draining = true;
    hrx_stream_wait_held(stream, NULL, NULL);
  }
  if (draining) hrx_pacer_drain_end(pacer, &stream->pace_entry);
  if (!hrx_nonblocking()) {
    hrx_stream_publish_locked(stream);
    return NULL;
  }
  hrx_status_t blocked = hrx_stream_publish_nonblocking_locked(stream);
  if (blocked) {
    pthread_mutex_unlock(&stream->publish_mutex);
    return hrx_status_annotate(blocked,
                               "publishing the stream's pending batch");
  }
  return NULL;
}

/* Publishes the pending batch, and lets a batch publication in progress
 * (perhaps by another thread that moved this thread's commands out) end:
 * afterwards every command accepted so far is on the queue. Takes no lock
 * a producer of a lone command holds while it waits for queue space: such
 * a command is not accepted before its call returns. In non-blocking mode:
 * WOULD_BLOCK instead when that would wait (hrx_stream_lock_published). */
static hrx_status_t hrx_stream_publish_pending(hrx_stream_t* stream) {
  if (!hrx_stream_has_unpublished(stream)) return NULL;
  HRX_RETURN_IF_ERROR(hrx_stream_lock_published(stream));
  pthread_mutex_unlock(&stream->publish_mutex);
  return NULL;
}

/* Numbers and counts one command accepted outside a batch. */
static uint64_t hrx_stream_accept_one(hrx_stream_t* stream) {
  pthread_mutex_lock(&stream->batch_mutex);
  uint64_t number = ++stream->commands;
  pthread_mutex_unlock(&stream->batch_mutex);
  hrx_device_count_commands(stream->device, 1);
  return number;
}

/* Runs one command outside a batch with publish_mutex held (the pending
 * batch already published): not run on a failed stream; a failure fails the
 * stream, or is returned when the command is an observation point. A
 * WOULD_BLOCK of the backend (non-blocking mode) is returned as it is, with
 * nothing accepted: such a command is numbered once the backend took it. */
static hrx_status_t hrx_stream_run_locked(hrx_stream_t* stream,
                                          const hrx_stream_command_t* command) {
  if (command->observes) {
    HRX_RETURN_IF_ERROR(hrx_stream_take_failure(stream));
  }
  bool nonblocking = hrx_nonblocking();
  uint64_t number = nonblocking ? 0 : hrx_stream_accept_one(stream);
  if (atomic_load(&stream->failed)) {
    if (nonblocking) hrx_stream_accept_one(stream);
    hrx_stream_skip(stream, 1);
    return NULL;
  }
  hrx_status_t status =
      command->submit(stream->backend, stream->queue, command->user_data);
  if (hrx_status_code(status) == HRX_STATUS_WOULD_BLOCK) return status;
  if (nonblocking) number = hrx_stream_accept_one(stream);
  if (!status) {
    hrx_stream_count_published(stream, 1, command->bytes);
    return NULL;
  }
  if (command->observes) return status;
  char what[96];
  hrx_stream_describe(command->what, command->bytes, what, sizeof(what));
  hrx_stream_fail(stream, status, number, what, 0);
  return NULL;
}

/* hrx_stream_enter, also saying whether the thread is in non-blocking
 * mode. */
static hrx_status_t hrx_stream_enter_mode(hrx_stream_t* stream,
                                          const char* what,
                                          bool* out_nonblocking) {
  bool nonblocking;
  HRX_RETURN_IF_ERROR(hrx_entry_check_mode(stream->device, HRX_ENTRY_BLOCKING,
                                           what, &nonblocking));
  *out_nonblocking = nonblocking;
  if (nonblocking && !hrx_completion_list_empty(&stream->gate)) {
    return hrx_would_block("a completion named by wait_completion");
  }
  /* Usually all three are empty, which each checks inline. Finished
   * launches and copies between devices are given back here; in
   * non-blocking mode what that would wait for (freeing a graph's
   * buffers) goes to the device's cleanup thread (entry.h). */
  if (!nonblocking) hrx_completion_list_wait(&stream->gate);
  hrx_completion_list_prune(&stream->launches);
  hrx_peer_holds_prune(&stream->peer_holds);
  return NULL;
}

hrx_status_t hrx_stream_enter(hrx_stream_t* stream, const char* what) {
  bool nonblocking;
  return hrx_stream_enter_mode(stream, what, &nonblocking);
}

hrx_status_t hrx_stream_wait_completions(hrx_stream_t* stream,
                                         const hrx_wait_hook_t* hook,
                                         bool* out_interrupted) {
  if (out_interrupted) *out_interrupted = false;
  bool nonblocking;
  HRX_RETURN_IF_ERROR(hrx_entry_check_mode(
      stream->device, HRX_ENTRY_BLOCKING,
      "waiting for the completions a stream waits for", &nonblocking));
  if (hrx_completion_list_empty(&stream->gate)) return NULL;
  if (nonblocking) {
    return hrx_would_block("a completion named by wait_completion");
  }
  hrx_wait_sliced(hrx_completion_list_wait_for, &stream->gate, hook,
                  out_interrupted);
  return NULL;
}

hrx_status_t hrx_stream_submit(hrx_stream_t* stream,
                               const hrx_stream_command_t* command) {
  /* Every command the stream accepted before this one is published first,
   * so the queue sees them in order. */
  HRX_RETURN_IF_ERROR(hrx_stream_lock_published(stream));
  hrx_status_t status = hrx_stream_run_locked(stream, command);
  pthread_mutex_unlock(&stream->publish_mutex);
  return status;
}

/* ------------------------------------------------------ paced transfers */

static void hrx_stream_pace_publish(hrx_pace_entry_t* entry) {
  hrx_stream_t* stream = HRX_STREAM_OF_PACE(entry);
  pthread_mutex_lock(&stream->publish_mutex);
  hrx_pacer_publish_locked(hrx_device_pacer(stream->device), entry);
  pthread_mutex_unlock(&stream->publish_mutex);
}

static bool hrx_stream_pace_failed(hrx_pace_entry_t* entry) {
  return atomic_load(&HRX_STREAM_OF_PACE(entry)->failed);
}

static void hrx_stream_pace_skip(hrx_pace_entry_t* entry, uint64_t count) {
  if (count) hrx_stream_skip(HRX_STREAM_OF_PACE(entry), count);
}

static void hrx_stream_pace_fail(hrx_pace_entry_t* entry, hrx_status_t status,
                                 const hrx_paced_transfer_t* transfer,
                                 uint64_t skipped) {
  char what[96];
  hrx_stream_describe(transfer->what, transfer->length, what, sizeof(what));
  hrx_stream_fail(HRX_STREAM_OF_PACE(entry), status, transfer->number, what,
                  skipped);
}

static void hrx_stream_pace_published(hrx_pace_entry_t* entry,
                                      const hrx_paced_transfer_t* transfer) {
  hrx_stream_count_published(HRX_STREAM_OF_PACE(entry), 1, transfer->length);
}

static const hrx_pace_entry_ops_t hrx_stream_pace_ops = {
    .publish = hrx_stream_pace_publish,
    .failed = hrx_stream_pace_failed,
    .skip = hrx_stream_pace_skip,
    .fail = hrx_stream_pace_fail,
    .published = hrx_stream_pace_published,
};

bool hrx_stream_paces(hrx_stream_t* stream, uint64_t length) {
  return hrx_pacer_paces(hrx_device_pacer(stream->device), length,
                         hrx_stream_priority(stream),
                         hrx_stream_reserved(stream));
}

hrx_status_t hrx_stream_paced_would_block(void) {
  return hrx_nonblocking() ? hrx_would_block("a paced transfer") : NULL;
}

hrx_status_t hrx_stream_submit_paced(hrx_stream_t* stream,
                                     hrx_paced_transfer_t* transfer) {
  /* Callers waiting for the held list to drain go first. */
  hrx_pacer_wait_no_drainers(hrx_device_pacer(stream->device),
                             &stream->pace_entry);
  pthread_mutex_lock(&stream->publish_mutex);
  /* The pending batch goes out first: nothing accepted earlier may run
   * after the transfer. */
  uint64_t number = 0;
  for (;;) {
    hrx_stream_publish_locked(stream);
    pthread_mutex_lock(&stream->batch_mutex);
    if (!hrx_pending_batch_unpublished_locked(&stream->batch)) {
      number = ++stream->commands;
      atomic_fetch_add(&stream->pace_entry.held, 1);
      pthread_mutex_unlock(&stream->batch_mutex);
      break;
    }
    pthread_mutex_unlock(&stream->batch_mutex);
  }
  transfer->number = number;
  /* A read also counts its completion event (as unpaced). */
  hrx_device_count_commands(stream->device, transfer->block ? 2 : 1);
  hrx_pacer_t* pacer = hrx_device_pacer(stream->device);
  if (atomic_load(&stream->failed) && atomic_load(&stream->pace_entry.held) == 1) {
    /* Nothing of the stream is held before it: as an unpaced command on a
     * failed stream, it is not run, or (an observation point) raises the
     * failure. */
    atomic_fetch_sub(&stream->pace_entry.held, 1);
    atomic_store(&transfer->state, HRX_PACED_DROPPED);
    hrx_status_t failure = NULL;
    if (transfer->observes) {
      failure = hrx_stream_take_failure(stream);
    } else {
      hrx_stream_skip(stream, 1);
    }
    pthread_mutex_unlock(&stream->publish_mutex);
    hrx_paced_transfer_release(transfer);
    return failure;
  }
  /* The caller's reference goes to the held list, which may drop it while
   * publishing (a failed chunk): only an observation point keeps one of
   * its own to look at the transfer afterwards. */
  const bool observes = transfer->observes;
  if (observes) hrx_paced_transfer_retain(transfer);
  hrx_pacer_hold(pacer, &stream->pace_entry, transfer);
  hrx_pacer_publish_locked(pacer, &stream->pace_entry);
  pthread_mutex_unlock(&stream->publish_mutex);
  if (!observes) return NULL;
  /* An observation point's own failure, when its first chunk failed here,
   * is the call's (as unpaced). */
  hrx_status_t failure = NULL;
  if (atomic_load(&transfer->state) == HRX_PACED_DROPPED &&
      transfer->failure) {
    failure = hrx_status_create(hrx_status_code(transfer->failure),
                                hrx_status_message(transfer->failure));
  }
  hrx_paced_transfer_release(transfer);
  return failure;
}

static hrx_status_t hrx_stream_submit_batchable(hrx_backend_device_t* backend,
                                                hrx_native_queue_t* queue,
                                                void* user_data) {
  return hrx_batch_submit_one(backend, queue, user_data);
}

/* A small copy or fill as a command of its own. */
static hrx_stream_command_t hrx_stream_batchable_command(
    const hrx_batch_command_t* command) {
  return (hrx_stream_command_t){
      .submit = hrx_stream_submit_batchable,
      .user_data = (void*)command,
      .bytes = command->length,
      .what = command->kind == HRX_BATCH_FILL ? "fill" : "copy",
  };
}

static hrx_status_t hrx_stream_submit_alone(hrx_stream_t* stream,
                                            const hrx_batch_command_t* command) {
  hrx_stream_command_t lone = hrx_stream_batchable_command(command);
  return hrx_stream_submit(stream, &lone);
}

/* The idle path: with nothing pending on the stream and either `urgent`
 * (the thread just observed) or the stream quiet too and its queue idle,
 * the command goes out alone at once; returns whether it did. Otherwise
 * nothing happens, also when a non-blocking call finds the lock taken or
 * the queue full: then the queue is busy and the command is gathered. */
static bool hrx_stream_publish_if_idle(hrx_stream_t* stream,
                                       const hrx_batch_command_t* command,
                                       uint64_t now, bool urgent) {
  const hrx_batch_settings_t* settings =
      hrx_device_batch_settings(stream->device);
  const hrx_backend_vtable_t* vtable = stream->backend->vtable;
  /* In non-blocking mode a publication in progress means the queue is not
   * idle: batch. */
  if (!hrx_nonblocking_lock(&stream->publish_mutex)) return false;
  if (atomic_load(&stream->pace_entry.held)) {
    pthread_mutex_unlock(&stream->publish_mutex);
    return false;  /* the batch path waits for the held transfers */
  }
  pthread_mutex_lock(&stream->batch_mutex);
  bool empty = stream->batch.count == 0;
  bool quiet = now - stream->batch.last_ns > settings->delay_ns;
  pthread_mutex_unlock(&stream->batch_mutex);
  bool published = false;
  uint64_t pending = UINT64_MAX;  /* an error leaves it busy */
  if (empty && !urgent && quiet) {
    hrx_status_free(vtable->queue.query(stream->backend, stream->queue,
                                        &pending));
  }
  if (empty && (urgent || (quiet && pending == 0))) {
    hrx_stream_command_t lone = hrx_stream_batchable_command(command);
    /* Only a WOULD_BLOCK comes back (not observing); nothing was done. */
    hrx_status_t blocked = hrx_stream_run_locked(stream, &lone);
    published = !blocked;
    hrx_status_free(blocked);
    if (published) {
      pthread_mutex_lock(&stream->batch_mutex);
      stream->batch.last_ns = now;
      pthread_mutex_unlock(&stream->batch_mutex);
    }
  }
  pthread_mutex_unlock(&stream->publish_mutex);
  return published;
}

/* Publishes a full pending batch before a command joins it; returns with
 * batch_mutex held and the batch not full. In non-blocking mode it
 * publishes only what can go without waiting: WOULD_BLOCK (batch_mutex not
 * held, nothing changed) when another publisher holds publish_mutex or the
 * queue is full. */
static hrx_status_t hrx_stream_lock_batch_with_room(
    hrx_stream_t* stream, const hrx_batch_settings_t* settings) {
  hrx_pacer_t* pacer = hrx_device_pacer(stream->device);
  bool draining = false;  /* counted in the entry's drainers */
  hrx_status_t status = NULL;
  for (;;) {
    pthread_mutex_lock(&stream->batch_mutex);
    if (atomic_load(&stream->pace_entry.held)) {
      /* Counted under batch_mutex by the held path: nothing joins the
       * batch ahead of a held transfer, and while this caller drains the
       * held list no new transfer joins it. */
      pthread_mutex_unlock(&stream->batch_mutex);
      if (hrx_nonblocking()) {
        status =
            hrx_would_block("the stream's held transfers to be published");
        break;
      }
      if (!draining) hrx_pacer_drain_begin(pacer, &stream->pace_entry);
      draining = true;
      hrx_stream_wait_held(stream, NULL, NULL);
      continue;
    }
    if (!hrx_pending_batch_full_locked(&stream->batch, settings)) break;
    /* Full and not yet published by whoever filled it: publish it here. */
    pthread_mutex_unlock(&stream->batch_mutex);
    status = hrx_stream_lock_published(stream);
    if (status) break;
    pthread_mutex_unlock(&stream->publish_mutex);
  }
  /* With batch_mutex held (on success), no transfer is counted held before
   * the command joins the batch. */
  if (draining) hrx_pacer_drain_end(pacer, &stream->pace_entry);
  return status;
}

/* A small copy or fill: published alone at once when the queue is idle and
 * the stream and thread were quiet, otherwise gathered (see the policy
 * above). */
static hrx_status_t hrx_stream_enqueue(hrx_stream_t* stream,
                                       const hrx_batch_command_t* command) {
  bool nonblocking;
  HRX_RETURN_IF_ERROR(hrx_stream_enter_mode(
      stream, "submitting work to a stream", &nonblocking));
  const hrx_batch_settings_t* settings =
      hrx_device_batch_settings(stream->device);
  if (!hrx_device_batching(stream->device) ||
      command->length > settings->max_command_bytes) {
    return hrx_stream_submit_alone(stream, command);
  }
  hrx_batch_thread_t thread = hrx_batch_thread_begin(settings);
  if (thread.quiet && hrx_stream_publish_if_idle(stream, command, thread.now,
                                                 thread.urgent)) {
    return NULL;
  }
  hrx_flusher_t* flusher = hrx_device_flusher(stream->device);
  /* A non-blocking producer starts a batch only while the flusher watches
   * the stream (batching.h, hrx_flusher_try_watch). */
  bool watched = !nonblocking ||
                 hrx_flusher_try_watch(flusher, &stream->flush_entry);
  hrx_status_t blocked = hrx_stream_lock_batch_with_room(stream, settings);
  if (!blocked && stream->batch.count == 0 && !watched) {
    pthread_mutex_unlock(&stream->batch_mutex);
    blocked = hrx_would_block_briefly("the batch deadline thread's lock");
  }
  if (blocked) {
    /* Nothing changed: the repeated call takes the same decisions. */
    hrx_batch_thread_undo(&thread);
    return blocked;
  }
  bool started = false;
  bool full = false;
  if (!hrx_pending_batch_append_locked(&stream->batch, settings, command,
                                       stream->commands + 1, thread.now,
                                       &started, &full)) {
    pthread_mutex_unlock(&stream->batch_mutex);
    return hrx_stream_submit_alone(stream, command);
  }
  ++stream->commands;
  pthread_mutex_unlock(&stream->batch_mutex);
  if (full && !nonblocking) {
    hrx_stream_publish(stream);
  } else if (full && pthread_mutex_trylock(&stream->publish_mutex) == 0) {
    /* Published now if that needs no wait; otherwise it stays pending,
     * full, for the flusher or the stream's next command to publish. */
    hrx_status_free(hrx_stream_publish_nonblocking_locked(stream));
    pthread_mutex_unlock(&stream->publish_mutex);
  }
  if (started) {
    hrx_status_t failure = hrx_flusher_notify(flusher, &stream->flush_entry);
    if (failure) {
      /* Without the deadline thread nothing bounds the delay: publish now. */
      hrx_status_free(failure);
      hrx_stream_publish(stream);
    }
  }
  return NULL;
}

hrx_status_t hrx_stream_copy(hrx_stream_t* stream, hrx_view_t dst,
                             hrx_view_t src) {
  HRX_RETURN_IF_ERROR(hrx_stream_check_view(stream, dst, "copy destination"));
  HRX_RETURN_IF_ERROR(hrx_stream_check_view(stream, src, "copy source"));
  HRX_RETURN_IF_ERROR(hrx_view_check_copy(dst, src));
  /* Device copies are never paced (pacing.h): they run on the compute
   * units, where stream priority already orders them. */
  hrx_batch_command_t command = {.dst = hrx_view_pointer(dst),
                                 .src = hrx_view_pointer(src),
                                 .length = dst.length,
                                 .kind = HRX_BATCH_COPY};
  return hrx_stream_enqueue(stream, &command);
}

hrx_status_t hrx_stream_fill(hrx_stream_t* stream, hrx_view_t dst,
                             uint8_t byte) {
  HRX_RETURN_IF_ERROR(hrx_stream_check_view(stream, dst, "fill destination"));
  hrx_batch_command_t command = {.dst = hrx_view_pointer(dst),
                                 .length = dst.length,
                                 .kind = HRX_BATCH_FILL, .byte = byte};
  return hrx_stream_enqueue(stream, &command);
}

typedef struct {
  hrx_view_t dst;
  const void* data;
} hrx_upload_args_t;

static hrx_status_t hrx_submit_upload(hrx_backend_device_t* backend,
                                      hrx_native_queue_t* queue,
                                      void* user_data) {
  hrx_upload_args_t* args = user_data;
  return backend->vtable->queue.upload(backend, queue, hrx_view_pointer(args->dst),
                                 args->data, args->dst.length);
}

hrx_status_t hrx_stream_upload(hrx_stream_t* stream, hrx_view_t dst,
                               const void* data, uint64_t length) {
  HRX_RETURN_IF_ERROR(hrx_stream_check_view(stream, dst, "upload destination"));
  if (length != dst.length) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "upload of %llu bytes into a destination of %llu "
                           "bytes; the lengths must be equal",
                           (unsigned long long)length,
                           (unsigned long long)dst.length);
  }
  if (!data) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT, "upload data is NULL");
  }
  const bool paced = hrx_stream_paces(stream, length);
  if (paced) HRX_RETURN_IF_ERROR(hrx_stream_paced_would_block());
  HRX_RETURN_IF_ERROR(hrx_stream_enter(stream, "submitting work to a stream"));
  if (paced) {
    /* The caller's data is borrowed for the call only: the chunks read a
     * copy of it in pooled staging (pinned on GPUs). */
    hrx_paced_transfer_t* transfer = hrx_paced_transfer_create();
    if (!transfer) {
      return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                             "cannot allocate a paced upload");
    }
    hrx_staging_pool_t* staging = hrx_device_staging(stream->device);
    hrx_status_t status =
        hrx_staging_acquire(staging, length, &transfer->source_block);
    if (status) {
      hrx_paced_transfer_release(transfer);
      return status;
    }
    memcpy(transfer->source_block->memory, data, length);
    transfer->staging = staging;
    transfer->direction = HRX_PACE_TO_DEVICE;
    transfer->dst = hrx_view_pointer(dst);
    transfer->src = transfer->source_block->memory;
    transfer->length = length;
    transfer->what = "upload";
    return hrx_stream_submit_paced(stream, transfer);
  }
  hrx_upload_args_t args = {dst, data};
  hrx_stream_command_t command = {.submit = hrx_submit_upload,
                                  .user_data = &args,
                                  .bytes = length,
                                  .what = "upload"};
  return hrx_stream_submit(stream, &command);
}

/* ---------------------------------------------------------- observation */

hrx_status_t hrx_stream_flush(hrx_stream_t* stream) {
  HRX_RETURN_IF_ERROR(hrx_stream_enter(stream, "flushing a stream"));
  HRX_RETURN_IF_ERROR(hrx_stream_publish_pending(stream));
  return hrx_stream_take_failure(stream);
}

hrx_status_t hrx_stream_synchronize(hrx_stream_t* stream,
                                    const hrx_wait_hook_t* hook,
                                    bool* out_interrupted) {
  bool interrupted = false;
  if (!out_interrupted) out_interrupted = &interrupted;
  *out_interrupted = false;
  /* The gate's wait takes the hook, like every wait of this call. */
  HRX_RETURN_IF_ERROR(
      hrx_stream_wait_completions(stream, hook, out_interrupted));
  if (*out_interrupted) return NULL;
  bool nonblocking;
  HRX_RETURN_IF_ERROR(hrx_stream_enter_mode(stream, "synchronizing a stream",
                                            &nonblocking));
  hrx_batch_thread_observed();
  if (nonblocking) {
    /* Done only when nothing is left to wait for: a binding holding its
     * global lock answers an idle stream without letting the lock go. */
    HRX_RETURN_IF_ERROR(hrx_stream_publish_pending(stream));
    uint64_t pending = UINT64_MAX;
    HRX_RETURN_IF_ERROR(stream->backend->vtable->queue.query(
        stream->backend, stream->queue, &pending));
    /* Idle: the wait itself answers at once (it is the call a blocking
     * synchronize makes, so both make it once). */
    bool done = false;
    if (!pending) {
      HRX_RETURN_IF_ERROR(stream->backend->vtable->queue.wait(
          stream->backend, stream->queue, 0, &done));
    }
    if (!done) return hrx_would_block("the stream's queued work");
    return hrx_stream_take_failure(stream);
  }
  if (!hrx_stream_wait_held(stream, hook, out_interrupted)) return NULL;
  /* Once the pending batch is published (and a publication in progress
   * has ended), everything the stream accepted is on its queue, so waiting
   * for the queue's current end covers it. */
  hrx_stream_publish(stream);
  hrx_status_t status = hrx_wait_queue(stream->backend, stream->queue,
                                       hook, out_interrupted);
  if (*out_interrupted) return status;
  return hrx_status_prefer(hrx_stream_take_failure(stream), status);
}

/* Records a native event at the end of the stream's queue (a plain record
 * never waits for queue space, backend.h). */
static hrx_status_t hrx_stream_record_marker(hrx_stream_t* stream,
                                             hrx_native_event_t* native_event) {
  return stream->backend->vtable->event.record(stream->backend, stream->queue,
                                               native_event);
}

/* A timing record: on the host backend a command of the queue that may wait
 * for queue space (backend.h), so it goes out as a lone command under
 * publish_mutex. */
static hrx_status_t hrx_submit_timing_record(hrx_backend_device_t* backend,
                                             hrx_native_queue_t* queue,
                                             void* user_data) {
  return backend->vtable->event.record(backend, queue, user_data);
}

static hrx_status_t hrx_stream_record_new_event(hrx_stream_t* stream,
                                                bool timing,
                                                hrx_event_t** out_event) {
  HRX_RETURN_IF_ERROR(hrx_stream_enter(stream, "recording an event"));
  HRX_RETURN_IF_ERROR(hrx_stream_publish_pending(stream));
  hrx_batch_thread_observed();
  HRX_RETURN_IF_ERROR(hrx_stream_take_failure(stream));
  hrx_event_t* event = NULL;
  HRX_RETURN_IF_ERROR(timing ? hrx_event_create_timing(stream->device, &event)
                             : hrx_event_create(stream->device, &event));
  hrx_status_t status = NULL;
  if (timing) {
    /* Counted as accepted by hrx_stream_submit; observes, so that its
     * failure is this call's. */
    hrx_stream_command_t command = {.submit = hrx_submit_timing_record,
                                    .user_data = hrx_event_native(event),
                                    .what = "timing event record",
                                    .observes = true};
    status = hrx_stream_submit(stream, &command);
  } else {
    status = hrx_stream_record_marker(stream, hrx_event_native(event));
    if (!status) hrx_device_count_commands(stream->device, 1);
  }
  if (status) {
    hrx_event_release(event);
    return status;
  }
  *out_event = event;
  return NULL;
}

hrx_status_t hrx_stream_record_event(hrx_stream_t* stream,
                                     hrx_event_t** out_event) {
  return hrx_stream_record_new_event(stream, false, out_event);
}

hrx_status_t hrx_stream_record_timing_event(hrx_stream_t* stream,
                                            hrx_event_t** out_event) {
  return hrx_stream_record_new_event(stream, true, out_event);
}

hrx_status_t hrx_stream_query(hrx_stream_t* stream, bool* out_done) {
  HRX_RETURN_IF_ERROR(
      hrx_entry_check(stream->device, HRX_ENTRY_RUNTIME_QUERY,
                      "querying a stream"));
  /* Accepted commands not yet on the queue: not done, and nothing here
   * waits for them. A lone command still being handed over is not accepted
   * before its call returns. */
  if (hrx_stream_has_unpublished(stream)) {
    *out_done = false;
    return NULL;
  }
  /* A native event at the stream's published work. */
  const hrx_backend_vtable_t* vtable = stream->backend->vtable;
  hrx_native_event_t* probe = NULL;
  HRX_RETURN_IF_ERROR(vtable->event.create(stream->backend, &probe));
  hrx_status_t status = hrx_stream_record_marker(stream, probe);
  bool done = false;
  if (!status) status = vtable->event.query(stream->backend, probe, &done);
  vtable->event.destroy(stream->backend, probe);
  if (!status) *out_done = done;
  return status;
}

typedef struct {
  hrx_native_event_t* event;
} hrx_wait_args_t;

static hrx_status_t hrx_submit_wait(hrx_backend_device_t* backend,
                                    hrx_native_queue_t* queue, void* user_data) {
  hrx_wait_args_t* args = user_data;
  return backend->vtable->queue.wait_event(backend, queue, args->event);
}

hrx_status_t hrx_stream_wait_event(hrx_stream_t* stream, hrx_event_t* event) {
  if (!event) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT, "event is NULL");
  }
  HRX_RETURN_IF_ERROR(hrx_device_check_same_backend(
      stream->device, hrx_event_device(event), "event", "the stream runs on",
      "a stream waits for events of its own backend's devices only"));
  HRX_RETURN_IF_ERROR(hrx_stream_enter(stream, "submitting work to a stream"));
  hrx_wait_args_t args = {hrx_event_native(event)};
  hrx_stream_command_t command = {.submit = hrx_submit_wait,
                                  .user_data = &args,
                                  .what = "event wait"};
  return hrx_stream_submit(stream, &command);
}

hrx_status_t hrx_stream_wait_completion(hrx_stream_t* stream,
                                        hrx_completion_t* completion) {
  if (!completion) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT, "completion is NULL");
  }
  HRX_RETURN_IF_ERROR(hrx_entry_check(stream->device, HRX_ENTRY_BLOCKING,
                                      "waiting for a completion on a stream"));
  if (hrx_completion_done(completion)) return NULL;
  return hrx_completion_list_add(&stream->gate, completion);
}

hrx_status_t hrx_stream_track_completion(hrx_stream_t* stream,
                                         hrx_completion_t* completion) {
  return hrx_completion_list_add(&stream->launches, completion);
}
