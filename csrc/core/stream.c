/* Streams: ordered submission onto a native queue, either a pool slot or a
 * queue of their own (fabric).
 *
 * Locks, in order:
 * - producer_mutex serialises the stream's non-batched producers; it may be
 *   held across a wait for queue space;
 * - publish_mutex serialises publication (handing a batch or a lone command
 *   to the backend, which waits at most for queue space, i.e. device
 *   progress, never for another producer) and guards the last-published
 *   marker and the deferred failure;
 * - batch_mutex guards the pending batch and is held only to append to it
 *   or to move it out, so producers appending small commands never wait
 *   for a launch in progress.
 * Observers (record_event, synchronize) take publish_mutex, never
 * producer_mutex, so they never wait behind a producer blocked on a full
 * queue; they publish the pending batch first. The device's flusher takes
 * its own mutex, then publish_mutex: no code here calls the flusher while
 * holding any of these.
 *
 * Batching policy (small copies and fills while the device's switch is on):
 * - the calling thread has observed a stream (synchronize, record_event,
 *   read) since its last command, and nothing is pending on this stream:
 *   the command is published at once, alone; a thread alternating commands
 *   and waits is latency-bound, and holding its command back would only
 *   delay it by the caller's time until its next wait;
 * - the stream's queue is idle, and both the stream and the calling thread
 *   have been quiet for the batch delay: the same (idle latency);
 * - otherwise it joins the pending batch, which is published when it is
 *   full (commands or bytes), at any observation point or other command of
 *   the stream, or by the flusher once its first command has waited the
 *   delay. A thread that keeps submitting is never "quiet", so a thread
 *   that round-robins over many streams accumulates on each of them instead
 *   of publishing one command per launch (each stream alone would look
 *   quiet and idle by the time the thread comes back to it).
 *
 * Non-blocking mode (nonblocking.h): producer_mutex and publish_mutex are
 * only taken when free; a command that would publish a pending batch
 * first (or fill one), or start a batch while the flusher is not awake and
 * watching the stream, reports WOULD_BLOCK before anything changes; a
 * lone command is submitted under publish_mutex, held from the check that
 * nothing is pending.
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

#include "batch.h"
#include "buffer.h"
#include "completion.h"
#include "device.h"
#include "event.h"
#include "flusher.h"
#include "nonblocking.h"
#include "queue_pool.h"
#include "status.h"
#include "wait.h"

struct hrx_stream_s {
  atomic_int ref_count;
  hrx_device_t* device;            /* retained */
  hrx_backend_device_t* backend;   /* borrowed from the device */
  hrx_native_queue_t* queue;       /* pool: borrowed; dedicated: owned */
  int queue_index;                 /* pool slot, or -1 when dedicated */
  hrx_pool_queue_t* pool_queue;    /* pool: its counters; dedicated: NULL */
  pthread_mutex_t producer_mutex;
  pthread_mutex_t publish_mutex;
  pthread_mutex_t batch_mutex;
  hrx_ticket_t last_ticket;        /* last published; publish_mutex */
  hrx_status_t deferred;           /* owned; first unreported batch failure;
                                      publish_mutex */
  hrx_batch_command_t* batch_storage; /* owned: 2 * HRX_BATCH_MAX_COMMANDS
                                      entries, allocated at the first batch;
                                      pending and publishing are its halves */
  hrx_batch_command_t* publishing; /* the half being published;
                                      publish_mutex */
  hrx_flush_entry_t flush_entry;   /* on the device flusher's list */
  /* The pending batch; batch_mutex guards these except pending_since. */
  hrx_batch_command_t* pending;    /* the half being filled */
  uint32_t pending_count;
  uint64_t pending_bytes;
  uint64_t pending_first;          /* command number of pending[0] */
  atomic_uint_fast64_t pending_since; /* hrx_now_ns() of pending[0]; 0: none */
  uint64_t last_batchable_ns;      /* last small copy or fill accepted */
  uint64_t commands;               /* commands accepted (numbers them) */
  hrx_completion_list_t gate;      /* completions later work waits for */
  hrx_completion_list_t launches;  /* launches in flight with callbacks */
};

#define HRX_STREAM_OF_ENTRY(e) \
  ((hrx_stream_t*)((char*)(e) - offsetof(hrx_stream_t, flush_entry)))

static uint64_t hrx_stream_pending_since(hrx_flush_entry_t* entry) {
  return atomic_load(&HRX_STREAM_OF_ENTRY(entry)->pending_since);
}

static void hrx_stream_publish_locked(hrx_stream_t* stream);

static void hrx_stream_publish_entry(hrx_flush_entry_t* entry) {
  hrx_stream_t* stream = HRX_STREAM_OF_ENTRY(entry);
  pthread_mutex_lock(&stream->publish_mutex);
  hrx_stream_publish_locked(stream);
  pthread_mutex_unlock(&stream->publish_mutex);
}

static const hrx_flush_entry_ops_t hrx_stream_flush_ops = {
    .pending_since = hrx_stream_pending_since,
    .publish = hrx_stream_publish_entry,
};

static hrx_status_t hrx_stream_allocate(hrx_device_t* device,
                                        hrx_stream_t** out_stream) {
  hrx_stream_t* stream = calloc(1, sizeof(*stream));
  if (!stream) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY, "cannot allocate stream");
  }
  atomic_init(&stream->ref_count, 1);
  stream->device = device;
  stream->backend = hrx_device_backend(device);
  pthread_mutex_init(&stream->producer_mutex, NULL);
  pthread_mutex_init(&stream->publish_mutex, NULL);
  pthread_mutex_init(&stream->batch_mutex, NULL);
  stream->flush_entry.ops = &hrx_stream_flush_ops;
  atomic_init(&stream->flush_entry.listed, false);
  atomic_init(&stream->pending_since, 0);
  hrx_completion_list_initialize(&stream->gate);
  hrx_completion_list_initialize(&stream->launches);
  *out_stream = stream;
  return NULL;
}

static void hrx_stream_free(hrx_stream_t* stream) {
  free(stream->batch_storage);
  hrx_status_free(stream->deferred);
  hrx_completion_list_deinitialize(&stream->gate);
  hrx_completion_list_deinitialize(&stream->launches);
  pthread_mutex_destroy(&stream->producer_mutex);
  pthread_mutex_destroy(&stream->publish_mutex);
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
  HRX_RETURN_IF_ERROR(hrx_device_check_process(device));
  HRX_RETURN_IF_ERROR(hrx_stream_allocate(device, &stream));
  hrx_status_t status =
      hrx_queue_pool_acquire(hrx_device_pool(device), options->priority,
                             options->reserve, &stream->pool_queue);
  if (status) {
    hrx_stream_free(stream);
    return status;
  }
  stream->queue = stream->pool_queue->native;
  stream->queue_index = stream->pool_queue->slot;
  hrx_device_retain(device);
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
  HRX_RETURN_IF_ERROR(hrx_device_check_process(device));
  HRX_RETURN_IF_ERROR(hrx_stream_allocate(device, &stream));
  hrx_status_t status =
      stream->backend->vtable->queue_create(stream->backend, &stream->queue);
  if (status) {
    hrx_stream_free(stream);
    return hrx_status_annotate(status, "cannot create a queue outside the pool");
  }
  stream->queue_index = -1;
  hrx_queue_pool_fabric_added(hrx_device_pool(device));
  hrx_device_retain(device);
  *out_stream = stream;
  return NULL;
}

void hrx_stream_retain(hrx_stream_t* stream) {
  if (stream) atomic_fetch_add_explicit(&stream->ref_count, 1,
                                        memory_order_relaxed);
}

void hrx_stream_release(hrx_stream_t* stream) {
  if (!stream) return;
  if (atomic_fetch_sub_explicit(&stream->ref_count, 1, memory_order_acq_rel) !=
      1) {
    return;
  }
  if (hrx_device_is_stale(stream->device)) return; /* fork.h */
  /* Release is an observation point: pending work goes out, then the
   * flusher forgets the stream. */
  hrx_flusher_remove(hrx_device_flusher(stream->device), &stream->flush_entry);
  pthread_mutex_lock(&stream->publish_mutex);
  hrx_stream_publish_locked(stream);
  pthread_mutex_unlock(&stream->publish_mutex);
  /* Callbacks of its launches may still hold graphs: let them finish. */
  hrx_completion_list_wait(&stream->launches);
  hrx_queue_pool_t* pool = hrx_device_pool(stream->device);
  if (!stream->pool_queue) {
    /* Waits for the queue's work, so its buffers are no longer in use. */
    stream->backend->vtable->queue_destroy(stream->backend, stream->queue);
    hrx_queue_pool_fabric_removed(pool);
  } else {
    hrx_queue_pool_stream_released(pool, stream->pool_queue);
  }
  hrx_device_t* device = stream->device;
  hrx_stream_free(stream);
  hrx_device_release(device);
}

hrx_device_t* hrx_stream_device(const hrx_stream_t* stream) {
  return stream->device;
}

int hrx_stream_queue_index(const hrx_stream_t* stream) {
  return stream->queue_index;
}

void* hrx_stream_native_handle(const hrx_stream_t* stream) {
  return stream->backend->vtable->queue_native_handle(stream->queue);
}

static hrx_status_t hrx_stream_check_device(const hrx_stream_t* stream,
                                            hrx_device_t* other,
                                            const char* role,
                                            const char* rule) {
  return hrx_device_check_same(stream->device, other, role,
                               "the stream runs on", rule);
}

hrx_status_t hrx_stream_check_view(const hrx_stream_t* stream,
                                   hrx_view_t view, const char* role) {
  if (!view.buffer) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT, "%s has no buffer",
                           role);
  }
  HRX_RETURN_IF_ERROR(hrx_stream_check_device(
      stream, hrx_buffer_device(view.buffer), role,
      "buffers are usable only on their own device"));
  return hrx_view_check_range(view, role);
}

/* Describes pending[index] for a failure message. */
static void hrx_stream_describe_command(const hrx_batch_command_t* command,
                                        char* buffer, size_t capacity) {
  if (command->kind == HRX_BATCH_FILL) {
    snprintf(buffer, capacity, "fill of %llu bytes with 0x%02x",
             (unsigned long long)command->length, command->byte);
  } else {
    snprintf(buffer, capacity, "copy of %llu bytes",
             (unsigned long long)command->length);
  }
}

/* Counts published commands for the pool's stats (dedicated streams are
 * not counted). */
static void hrx_stream_count_published(hrx_stream_t* stream, uint64_t commands,
                                       uint64_t bytes) {
  if (stream->pool_queue) {
    hrx_pool_queue_count_published(stream->pool_queue, commands, bytes);
  }
}

/* Publishes the pending batch, if any; the caller holds publish_mutex. The
 * batch is moved out under batch_mutex (the two halves of the buffer swap),
 * so producers keep appending to a fresh batch during the launch. A failure
 * is kept (the first one) and reported by the next synchronize or
 * record_event; the stream stays usable. */
static void hrx_stream_publish_locked(hrx_stream_t* stream) {
  pthread_mutex_lock(&stream->batch_mutex);
  uint32_t count = stream->pending_count;
  if (!count) {
    pthread_mutex_unlock(&stream->batch_mutex);
    return;
  }
  hrx_batch_command_t* batch = stream->pending;
  stream->pending = stream->publishing;
  stream->publishing = batch;
  uint64_t first = stream->pending_first;
  uint64_t bytes = stream->pending_bytes;
  stream->pending_count = 0;
  stream->pending_bytes = 0;
  atomic_store(&stream->pending_since, 0);
  pthread_mutex_unlock(&stream->batch_mutex);
  /* The batch's commands were accepted; the device counts them now, once
   * per batch (hrx_device_count_commands). */
  hrx_device_count_commands(stream->device, count);
  uint32_t failed = 0;
  hrx_status_t status = hrx_batch_publish(stream->backend, stream->queue,
                                          batch, count, &stream->last_ticket,
                                          &failed);
  /* Counted: every command, or on failure those before the failed one (a
   * lower bound: later ones may have gone out too). */
  uint32_t published = status ? failed : count;
  if (status) {
    bytes = 0;
    for (uint32_t i = 0; i < published; ++i) bytes += batch[i].length;
  }
  hrx_stream_count_published(stream, published, bytes);
  if (status) {
    char what[96];
    hrx_stream_describe_command(&batch[failed], what, sizeof(what));
    status = hrx_status_annotate(
        status,
        "command %llu of this stream (%s, accepted into a batch of %u) could "
        "not be published; the stream remains usable",
        (unsigned long long)(first + failed), what, count);
    if (stream->deferred) {
      hrx_status_free(status);
    } else {
      stream->deferred = status;
    }
  }
}

/* The first batch failure not yet reported (the caller owns it), or NULL. */
static hrx_status_t hrx_stream_take_deferred_locked(hrx_stream_t* stream) {
  hrx_status_t status = stream->deferred;
  stream->deferred = NULL;
  return status;
}

/* What every command and observation does first: refuse inside a host
 * callback, wait for the completions the stream was told to wait for, and
 * give back finished launches (on this user thread). */
static hrx_status_t hrx_stream_enter(hrx_stream_t* stream, const char* what) {
  HRX_RETURN_IF_ERROR(hrx_host_callback_check(what));
  if (hrx_nonblocking()) {
    if (hrx_host_callbacks_in_flight()) {
      return hrx_would_block("host callbacks in flight");
    }
    if (atomic_load(&stream->gate.count)) {
      return hrx_would_block("a completion named by wait_completion");
    }
    return NULL; /* finished launches are given back by a blocking call */
  }
  hrx_completion_list_wait(&stream->gate);
  hrx_completion_list_prune(&stream->launches);
  return NULL;
}

hrx_status_t hrx_stream_submit(hrx_stream_t* stream,
                               hrx_stream_submit_fn_t submit,
                               void* user_data) {
  return hrx_stream_submit_sized(stream, submit, user_data, 0);
}

/* Whether commands wait in the pending batch. */
static bool hrx_stream_has_pending(hrx_stream_t* stream) {
  return atomic_load(&stream->pending_since) != 0;
}

/* Takes publish_mutex for an observation or a lone command and publishes
 * the pending batch first. In non-blocking mode: WOULD_BLOCK (not locked)
 * when the lock is taken or a batch is pending. */
static hrx_status_t hrx_stream_lock_published(hrx_stream_t* stream) {
  if (!hrx_nonblocking_lock(&stream->publish_mutex)) {
    return hrx_would_block("the stream's publication lock");
  }
  if (hrx_nonblocking() && hrx_stream_has_pending(stream)) {
    pthread_mutex_unlock(&stream->publish_mutex);
    return hrx_would_block("the stream's pending batch to be published");
  }
  hrx_stream_publish_locked(stream);
  return NULL;
}

hrx_status_t hrx_stream_submit_sized(hrx_stream_t* stream,
                                     hrx_stream_submit_fn_t submit,
                                     void* user_data, uint64_t bytes) {
  HRX_RETURN_IF_ERROR(hrx_device_check_process(stream->device));
  HRX_RETURN_IF_ERROR(hrx_stream_enter(stream, "submitting work to a stream"));
  bool nonblocking = hrx_nonblocking();
  if (!hrx_nonblocking_lock(&stream->producer_mutex)) {
    return hrx_would_block("the stream's producer lock");
  }
  /* Every command the stream accepted before this one is published first,
   * so the queue sees them in order. A blocking submission lets observers
   * in while it may wait for queue space; a non-blocking one cannot wait,
   * so it keeps the lock. */
  hrx_status_t status = hrx_stream_lock_published(stream);
  if (status) {
    pthread_mutex_unlock(&stream->producer_mutex);
    return status;
  }
  if (!nonblocking) pthread_mutex_unlock(&stream->publish_mutex);
  hrx_ticket_t ticket = 0;
  status = submit(stream->backend, stream->queue, user_data, &ticket);
  if (status && nonblocking) pthread_mutex_unlock(&stream->publish_mutex);
  if (!status) {
    if (!nonblocking) pthread_mutex_lock(&stream->publish_mutex);
    if (ticket > stream->last_ticket) stream->last_ticket = ticket;
    pthread_mutex_unlock(&stream->publish_mutex);
    pthread_mutex_lock(&stream->batch_mutex);
    ++stream->commands;
    hrx_device_count_commands(stream->device, 1);
    pthread_mutex_unlock(&stream->batch_mutex);
    hrx_stream_count_published(stream, 1, bytes);
  }
  pthread_mutex_unlock(&stream->producer_mutex);
  return status;
}

static hrx_status_t hrx_stream_submit_batchable(hrx_backend_device_t* backend,
                                                hrx_native_queue_t* queue,
                                                void* user_data,
                                                hrx_ticket_t* out_ticket) {
  return hrx_batch_submit_one(backend, queue, user_data, out_ticket);
}

/* When the calling thread last submitted a small copy or fill, on any
 * stream, and whether it has observed a stream since its last command. */
static _Thread_local uint64_t hrx_thread_last_batchable_ns;
static _Thread_local bool hrx_thread_observed;

void hrx_stream_thread_observed(void) { hrx_thread_observed = true; }

/* The idle path: with nothing pending on the stream and either `urgent`
 * (the thread just observed) or the stream quiet too and its queue idle,
 * the command goes out alone at once (*out_published); its failure is the
 * caller's. Otherwise nothing happens. */
static hrx_status_t hrx_stream_publish_if_idle(
    hrx_stream_t* stream, const hrx_batch_command_t* command, uint64_t now,
    bool urgent, bool* out_published) {
  const hrx_batch_settings_t* settings =
      hrx_device_batch_settings(stream->device);
  const hrx_backend_vtable_t* vtable = stream->backend->vtable;
  hrx_status_t status = NULL;
  /* A publication in progress means the queue is not idle: batch. */
  if (!hrx_nonblocking_lock(&stream->publish_mutex)) return NULL;
  pthread_mutex_lock(&stream->batch_mutex);
  bool empty = stream->pending_count == 0;
  bool quiet = now - stream->last_batchable_ns > settings->delay_ns;
  pthread_mutex_unlock(&stream->batch_mutex);
  if (empty && (urgent || (quiet && (!vtable->queue_idle ||
                                     vtable->queue_idle(stream->backend,
                                                        stream->queue))))) {
    hrx_ticket_t ticket = 0;
    status = hrx_batch_submit_one(stream->backend, stream->queue, command,
                                  &ticket);
    if (!status) {
      if (ticket > stream->last_ticket) stream->last_ticket = ticket;
      pthread_mutex_lock(&stream->batch_mutex);
      ++stream->commands;
      hrx_device_count_commands(stream->device, 1);
      stream->last_batchable_ns = now;
      pthread_mutex_unlock(&stream->batch_mutex);
      hrx_stream_count_published(stream, 1, command->length);
    }
    *out_published = true;
  }
  pthread_mutex_unlock(&stream->publish_mutex);
  return status;
}

/* A small copy or fill: published alone at once when the queue is idle and
 * the stream and thread were quiet, otherwise gathered (see the policy
 * above). */
static hrx_status_t hrx_stream_enqueue(hrx_stream_t* stream,
                                       const hrx_batch_command_t* command) {
  HRX_RETURN_IF_ERROR(hrx_device_check_process(stream->device));
  HRX_RETURN_IF_ERROR(hrx_stream_enter(stream, "submitting work to a stream"));
  const hrx_batch_settings_t* settings =
      hrx_device_batch_settings(stream->device);
  if (!hrx_device_batching(stream->device) ||
      command->length > settings->max_command_bytes) {
    return hrx_stream_submit_sized(stream, hrx_stream_submit_batchable,
                                   (void*)command, command->length);
  }
  uint64_t now = hrx_now_ns();
  bool urgent = hrx_thread_observed;
  bool thread_quiet =
      urgent || now - hrx_thread_last_batchable_ns > settings->delay_ns;
  /* Restored when the command reports WOULD_BLOCK, so that the repeated
   * call takes the same decision. */
  uint64_t thread_last_before = hrx_thread_last_batchable_ns;
  hrx_thread_last_batchable_ns = now;
  hrx_thread_observed = false;
  hrx_status_t blocked = NULL;
  if (thread_quiet) {
    bool published = false;
    hrx_status_t status =
        hrx_stream_publish_if_idle(stream, command, now, urgent, &published);
    if (status && hrx_status_code(status) == HRX_STATUS_WOULD_BLOCK) {
      blocked = status;
    } else if (published || status) {
      return status;
    }
  }
  bool nonblocking = hrx_nonblocking();
  bool started = false;
  bool full = false;
  for (;;) {
    if (blocked) break;
    pthread_mutex_lock(&stream->batch_mutex);
    if (stream->pending_count < HRX_BATCH_MAX_COMMANDS) break;
    /* Full and not yet moved out by whoever filled it: publish it here. */
    pthread_mutex_unlock(&stream->batch_mutex);
    if (nonblocking) {
      blocked = hrx_would_block("a full batch to be published");
      break;
    }
    pthread_mutex_lock(&stream->publish_mutex);
    hrx_stream_publish_locked(stream);
    pthread_mutex_unlock(&stream->publish_mutex);
  }
  if (!blocked && nonblocking) {
    /* This command would fill the batch (then it must be published), or
     * start one that the flusher might not see without its mutex. */
    if (stream->pending_count + 1 >= settings->max_commands ||
        stream->pending_bytes + command->length >= settings->max_batch_bytes) {
      blocked = hrx_would_block("a full batch to be published");
    } else if (stream->pending_count == 0 &&
               !hrx_flusher_watching(hrx_device_flusher(stream->device),
                                     &stream->flush_entry)) {
      blocked = hrx_would_block("the batch deadline thread to be woken");
    }
    if (blocked) pthread_mutex_unlock(&stream->batch_mutex);
  }
  if (blocked) {
    hrx_thread_last_batchable_ns = thread_last_before;
    hrx_thread_observed = urgent;
    return blocked;
  }
  if (stream->pending_count == 0) {
    if (!stream->pending) {
      hrx_batch_command_t* both =
          malloc(2 * HRX_BATCH_MAX_COMMANDS * sizeof(*both));
      if (!both) {
        pthread_mutex_unlock(&stream->batch_mutex);
        return hrx_stream_submit_sized(stream, hrx_stream_submit_batchable,
                                   (void*)command, command->length);
      }
      stream->batch_storage = both;
      stream->pending = both;
      stream->publishing = both + HRX_BATCH_MAX_COMMANDS;
    }
    stream->pending_first = stream->commands + 1;
    atomic_store(&stream->pending_since, now);
    started = true;
  }
  ++stream->commands;
  stream->pending[stream->pending_count++] = *command;
  stream->pending_bytes += command->length;
  stream->last_batchable_ns = now;
  full = stream->pending_count >= settings->max_commands ||
         stream->pending_bytes >= settings->max_batch_bytes;
  pthread_mutex_unlock(&stream->batch_mutex);
  if (full) {
    pthread_mutex_lock(&stream->publish_mutex);
    hrx_stream_publish_locked(stream);
    pthread_mutex_unlock(&stream->publish_mutex);
  }
  if (started) {
    hrx_status_t failure = hrx_flusher_notify(
        hrx_device_flusher(stream->device), &stream->flush_entry);
    if (failure) {
      /* Without the deadline thread nothing bounds the delay: publish now. */
      hrx_status_free(failure);
      pthread_mutex_lock(&stream->publish_mutex);
      hrx_stream_publish_locked(stream);
      pthread_mutex_unlock(&stream->publish_mutex);
    }
  }
  return NULL;
}

static uint8_t* hrx_view_pointer(hrx_view_t view) {
  return (uint8_t*)hrx_buffer_native_pointer(view.buffer) + view.offset;
}

hrx_status_t hrx_stream_copy(hrx_stream_t* stream, hrx_view_t dst,
                             hrx_view_t src) {
  HRX_RETURN_IF_ERROR(hrx_stream_check_view(stream, dst, "copy destination"));
  HRX_RETURN_IF_ERROR(hrx_stream_check_view(stream, src, "copy source"));
  HRX_RETURN_IF_ERROR(hrx_view_check_copy(dst, src));
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
                                      void* user_data,
                                      hrx_ticket_t* out_ticket) {
  hrx_upload_args_t* args = user_data;
  return backend->vtable->upload(backend, queue, hrx_view_pointer(args->dst),
                                 args->data, args->dst.length, out_ticket);
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
  hrx_upload_args_t args = {dst, data};
  return hrx_stream_submit_sized(stream, hrx_submit_upload, &args, length);
}

/* Both synchronize entry points: hook NULL waits with the backend's own
 * synchronize, otherwise in the hook's slices. */
static hrx_status_t hrx_stream_synchronize_with(hrx_stream_t* stream,
                                                const hrx_wait_hook_t* hook,
                                                bool* out_interrupted) {
  *out_interrupted = false;
  HRX_RETURN_IF_ERROR(hrx_device_check_process(stream->device));
  HRX_RETURN_IF_ERROR(hrx_stream_enter(stream, "synchronizing a stream"));
  hrx_thread_observed = true;
  /* Once the pending batch is published, everything the stream accepted is
   * on its queue, so waiting for the queue's current end covers it. */
  pthread_mutex_lock(&stream->publish_mutex);
  hrx_stream_publish_locked(stream);
  hrx_status_t deferred = hrx_stream_take_deferred_locked(stream);
  pthread_mutex_unlock(&stream->publish_mutex);
  hrx_status_t status =
      hook ? hrx_wait_queue(stream->backend, stream->queue, stream, hook,
                            out_interrupted)
           : stream->backend->vtable->queue_synchronize(stream->backend,
                                                        stream->queue);
  if (deferred) {
    hrx_status_free(status);
    return deferred;
  }
  return status;
}

hrx_status_t hrx_stream_synchronize(hrx_stream_t* stream) {
  bool interrupted = false;
  return hrx_stream_synchronize_with(stream, NULL, &interrupted);
}

hrx_status_t hrx_stream_synchronize_hooked(hrx_stream_t* stream,
                                           const hrx_wait_hook_t* hook,
                                           bool* out_interrupted) {
  return hrx_stream_synchronize_with(stream, hook, out_interrupted);
}

hrx_status_t hrx_stream_record_native(hrx_stream_t* stream,
                                      hrx_native_event_t* native_event) {
  HRX_RETURN_IF_ERROR(hrx_device_check_process(stream->device));
  HRX_RETURN_IF_ERROR(hrx_stream_enter(stream, "recording an event"));
  HRX_RETURN_IF_ERROR(hrx_stream_lock_published(stream));
  hrx_thread_observed = true;
  hrx_status_t status = hrx_stream_take_deferred_locked(stream);
  if (!status) {
    status = stream->backend->vtable->event_record(
        stream->backend, stream->queue, native_event, stream->last_ticket);
  }
  pthread_mutex_unlock(&stream->publish_mutex);
  if (!status) hrx_device_count_commands(stream->device, 1);
  return status;
}

static hrx_status_t hrx_stream_record_new_event(hrx_stream_t* stream,
                                                bool timing,
                                                hrx_event_t** out_event) {
  hrx_event_t* event = NULL;
  HRX_RETURN_IF_ERROR(timing ? hrx_event_create_timing(stream->device, &event)
                             : hrx_event_create(stream->device, &event));
  hrx_status_t status = hrx_stream_record_native(stream, hrx_event_native(event));
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
  HRX_RETURN_IF_ERROR(hrx_device_check_process(stream->device));
  /* Pending commands, or a publication in progress (which may be waiting
   * for queue space): not done, and nothing here waits for them. */
  if (pthread_mutex_trylock(&stream->publish_mutex) != 0) {
    *out_done = false;
    return NULL;
  }
  if (hrx_stream_has_pending(stream)) {
    pthread_mutex_unlock(&stream->publish_mutex);
    *out_done = false;
    return NULL;
  }
  /* A native event at the last published command: exact where the backend
   * names commands (host tickets), the queue's end otherwise. */
  const hrx_backend_vtable_t* vtable = stream->backend->vtable;
  hrx_native_event_t* probe = NULL;
  hrx_status_t status = vtable->event_create(stream->backend, &probe);
  if (!status) {
    status = vtable->event_record(stream->backend, stream->queue, probe,
                                  stream->last_ticket);
  }
  pthread_mutex_unlock(&stream->publish_mutex);
  bool done = false;
  if (!status) status = vtable->event_query(stream->backend, probe, &done);
  if (probe) vtable->event_destroy(stream->backend, probe);
  if (!status) *out_done = done;
  return status;
}

typedef struct {
  hrx_native_event_t* event;
} hrx_wait_args_t;

static hrx_status_t hrx_submit_wait(hrx_backend_device_t* backend,
                                    hrx_native_queue_t* queue, void* user_data,
                                    hrx_ticket_t* out_ticket) {
  (void)out_ticket;
  hrx_wait_args_t* args = user_data;
  return backend->vtable->queue_wait_event(backend, queue, args->event);
}

hrx_status_t hrx_stream_wait_event(hrx_stream_t* stream, hrx_event_t* event) {
  if (!event) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT, "event is NULL");
  }
  HRX_RETURN_IF_ERROR(hrx_stream_check_device(
      stream, hrx_event_device(event), "event",
      "a stream can wait only on events of its own device"));
  hrx_wait_args_t args = {hrx_event_native(event)};
  return hrx_stream_submit(stream, hrx_submit_wait, &args);
}

hrx_status_t hrx_stream_wait_completion(hrx_stream_t* stream,
                                        hrx_completion_t* completion) {
  if (!completion) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT, "completion is NULL");
  }
  HRX_RETURN_IF_ERROR(
      hrx_host_callback_check("waiting for a completion on a stream"));
  if (hrx_completion_done(completion)) return NULL;
  return hrx_completion_list_add(&stream->gate, completion);
}

hrx_status_t hrx_stream_track_completion(hrx_stream_t* stream,
                                         hrx_completion_t* completion) {
  return hrx_completion_list_add(&stream->launches, completion);
}
