/* Streams: ordered submission onto a native queue, either a pool slot or a
 * queue of their own (fabric). A stream is its queue, its publication (the
 * ordered path of its commands onto the queue, publication.h: batching,
 * held transfers, its failure state) and what it waits for or keeps:
 *
 * - Failures (failure.h; hrx.h, "Failures"): the next observation point
 *   (synchronize, record_event, read, read_blocking, flush, graph launch)
 *   or the device's synchronize raises a failure; releasing a stream with
 *   a failure not raised reports it (hrx_stream_release_checked).
 * - Completions: `gate` lists the completions that wait_completion named;
 *   every later command, record_event and synchronize first waits on the
 *   host until they are done (no lock is held while waiting, and a
 *   completion only depends on work published before it, so this cannot
 *   close a cycle). `launches` keeps the completions of graph launches with
 *   host callbacks until they are done, so that their last reference is
 *   never dropped on the host worker that runs the callbacks; releasing the
 *   stream waits for them.
 * - Copies between devices keep holds (peer_holds.h) until they are done.
 *
 * Thread-safe: a stream may be used from several threads. */
#include "stream.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/nonblocking.h"
#include "base/status.h"
#include "batching.h"
#include "buffer.h"
#include "completion.h"
#include "entry.h"
#include "event.h"
#include "live_device.h"
#include "paced_submission.h"
#include "peer_holds.h"
#include "pinned.h"
#include "publication.h"
#include "queue_pool.h"
#include "staged_transfer.h"
#include "wait.h"

struct hrx_stream_s {
  atomic_int ref_count;
  hrx_device_t* device;            /* retained */
  hrx_backend_device_t* backend;   /* borrowed from the device */
  hrx_native_queue_t* queue;       /* pool: borrowed; dedicated: owned */
  int queue_index;                 /* pool slot, or -1 when dedicated */
  hrx_pool_queue_t* pool_queue;    /* pool: its counters; dedicated: NULL */
  hrx_publication_t publication;   /* set up once the queue exists */
  hrx_completion_list_t gate;      /* completions later work waits for */
  hrx_completion_list_t launches;  /* launches in flight with callbacks */
  hrx_peer_holds_t peer_holds;     /* copies between devices in flight */
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
  hrx_completion_list_initialize(&stream->gate);
  hrx_completion_list_initialize(&stream->launches);
  hrx_peer_holds_initialize(&stream->peer_holds);
  *out_stream = stream;
  return NULL;
}

/* The stream got its queue: its publication starts. */
static void hrx_stream_start(hrx_stream_t* stream) {
  hrx_publication_initialize(&stream->publication, stream->device,
                             stream->queue, stream->pool_queue);
  hrx_paced_entry_initialize(&stream->publication);
}

/* Frees a stream that never started (no queue) or whose publication was
 * finished. */
static void hrx_stream_free(hrx_stream_t* stream, bool started) {
  if (started) hrx_publication_deinitialize(&stream->publication);
  hrx_completion_list_deinitialize(&stream->gate);
  hrx_completion_list_deinitialize(&stream->launches);
  hrx_peer_holds_deinitialize(&stream->peer_holds);
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
    hrx_stream_free(stream, false);
    return status;
  }
  stream->queue = stream->pool_queue->native;
  stream->queue_index = stream->pool_queue->slot;
  hrx_stream_start(stream);
  hrx_device_retain_holder(device, HRX_DEVICE_HOLDER_STREAM);
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
    hrx_stream_free(stream, false);
    return hrx_status_annotate(status, "cannot create a queue outside the pool");
  }
  stream->queue_index = -1;
  hrx_stream_start(stream);
  hrx_queue_pool_fabric_added(hrx_device_pool(device));
  hrx_device_retain_holder(device, HRX_DEVICE_HOLDER_STREAM);
  hrx_device_stream_created(device);
  *out_stream = stream;
  return NULL;
}

void hrx_stream_retain(hrx_stream_t* stream) {
  if (stream) atomic_fetch_add_explicit(&stream->ref_count, 1,
                                        memory_order_relaxed);
}

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
  /* Release is an observation point: held and pending work goes out. */
  hrx_publication_finish(&stream->publication);
  /* Callbacks of its launches may still hold graphs: let them finish. */
  hrx_completion_list_wait(&stream->launches);
  hrx_failure_unlist(&stream->publication.failure);
  hrx_status_t unobserved = hrx_failure_take(&stream->publication.failure, "");
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
  hrx_stream_free(stream, true);
  hrx_device_release_holder(device, HRX_DEVICE_HOLDER_STREAM);
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

hrx_publication_t* hrx_stream_publication(hrx_stream_t* stream) {
  return &stream->publication;
}

bool hrx_stream_paces(hrx_stream_t* stream, uint64_t length) {
  return hrx_paced_applies(&stream->publication, length,
                           hrx_stream_priority(stream),
                           hrx_stream_reserved(stream));
}

void hrx_stream_urgent_transfer(hrx_stream_t* stream, bool upload) {
  if (hrx_stream_priority(stream) < HRX_STREAM_PRIORITY_HIGH &&
      !hrx_stream_reserved(stream)) {
    return;
  }
  hrx_pacer_yield(hrx_device_pacer(stream->device),
                  upload ? HRX_PACE_TO_DEVICE : HRX_PACE_TO_HOST);
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
                               const hrx_command_t* command) {
  return hrx_publication_submit(&stream->publication, command);
}

hrx_status_t hrx_stream_enqueue(hrx_stream_t* stream,
                                const hrx_batch_command_t* command,
                                const char* what) {
  bool nonblocking;
  HRX_RETURN_IF_ERROR(hrx_stream_enter_mode(stream, what, &nonblocking));
  return hrx_publication_enqueue(&stream->publication, command, nonblocking);
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
  return hrx_stream_enqueue(stream, &command, "submitting work to a stream");
}

hrx_status_t hrx_stream_fill(hrx_stream_t* stream, hrx_view_t dst,
                             uint8_t byte) {
  HRX_RETURN_IF_ERROR(hrx_stream_check_view(stream, dst, "fill destination"));
  hrx_batch_command_t command = {.dst = hrx_view_pointer(dst),
                                 .length = dst.length,
                                 .kind = HRX_BATCH_FILL, .byte = byte};
  return hrx_stream_enqueue(stream, &command, "submitting work to a stream");
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

/* A large upload that is not paced (a high-priority or reserved stream,
 * chunking off), staged by the device's copy threads (staged_transfer.h)
 * rather than by the driver's upload: a staging block of the device's pool
 * filled by the caller and the copy threads, then published as one
 * upload_pinned command followed by the block's event; the block goes back
 * to the pool once that event completed. It applies where the copier does
 * and the driver has upload_pinned. In non-blocking mode it is WOULD_BLOCK
 * before anything is done (it copies for a while). Failures are the
 * stream's, as the driver's upload's. */
static bool hrx_staged_upload_applies(hrx_device_t* device, uint64_t length) {
  return hrx_staged_copier_applies(hrx_device_staged_copier(device), length) &&
         hrx_device_backend(device)->vtable->queue.upload_pinned;
}

static hrx_status_t hrx_staged_upload_would_block(void) {
  return hrx_nonblocking() ? hrx_would_block("a staged upload") : NULL;
}

typedef struct {
  void* dst;
  hrx_staging_block_t* block;
  uint64_t length;
} hrx_staged_upload_args_t;

/* The upload from the block and, right after it, the block's event. If the
 * event cannot be recorded, the upload (already queued) is waited for, so
 * the block is no longer read when the command fails. */
static hrx_status_t hrx_submit_staged_upload(hrx_backend_device_t* backend,
                                             hrx_native_queue_t* queue,
                                             void* user_data) {
  hrx_staged_upload_args_t* args = user_data;
  HRX_RETURN_IF_ERROR(backend->vtable->queue.upload_pinned(
      backend, queue, args->dst, args->block->memory, args->length));
  hrx_status_t status =
      backend->vtable->event.record(backend, queue, args->block->event);
  if (status) {
    hrx_status_free(hrx_wait_queue(backend, queue, NULL, NULL));
    return status;
  }
  return NULL;
}

static hrx_status_t hrx_staged_upload(hrx_stream_t* stream, void* dst,
                               const void* data, uint64_t length) {
  hrx_device_t* device = hrx_stream_device(stream);
  hrx_staging_pool_t* staging = hrx_device_staging(device);
  hrx_staging_block_t* block = NULL;
  HRX_RETURN_IF_ERROR(hrx_staging_acquire(staging, length, &block));
  hrx_staged_copy(hrx_device_staged_copier(device), block->memory, data,
                  length, 0, NULL, NULL);
  hrx_staged_upload_args_t args = {dst, block, length};
  hrx_command_t command = {.submit = hrx_submit_staged_upload,
                           .user_data = &args,
                           .bytes = length,
                           .what = "upload"};
  hrx_status_t status = hrx_stream_submit(stream, &command);
  if (status) {
    /* Nothing of it runs (a failed submission waited for its upload). */
    hrx_staging_release(staging, block);
    return status;
  }
  /* The block's event: a command of its own (as a read's). */
  hrx_device_count_commands(device, 1);
  /* Reused once its event completed (at once when it was not run: a
   * failed stream skips it, and a free block's event is complete). */
  hrx_staging_release_pending(staging, block);
  return NULL;
}

typedef struct {
  hrx_view_t dst;
  const void* data;
  hrx_pinned_t* pinned;
  hrx_pinned_use_t* use;
} hrx_upload_direct_args_t;

/* An upload from pinned memory (pinned.h): the asynchronous copy itself
 * and, right after it, the use's event. If the event cannot be recorded,
 * the copy (already queued) is waited for, so the memory is not in use
 * when the upload fails. */
static hrx_status_t hrx_submit_upload_direct(hrx_backend_device_t* backend,
                                             hrx_native_queue_t* queue,
                                             void* user_data) {
  hrx_upload_direct_args_t* args = user_data;
  const hrx_hal_queue_vtable_t* vt = &backend->vtable->queue;
  void* dst = hrx_view_pointer(args->dst);
  HRX_RETURN_IF_ERROR(
      vt->upload_pinned
          ? vt->upload_pinned(backend, queue, dst, args->data, args->dst.length)
          : vt->upload(backend, queue, dst, args->data, args->dst.length));
  hrx_status_t status =
      backend->vtable->event.record(backend, queue, args->use->event);
  if (status) {
    hrx_status_free(hrx_wait_queue(backend, queue, NULL, NULL));
    return status;
  }
  hrx_pinned_use_recorded(args->pinned, args->use);
  HRX_PINNED_COUNT_DIRECT(true);
  return NULL;
}

/* hrx_stream_upload from pinned memory, with no staging: one copy, or
 * chunks of a paced upload that read the memory in place; the use keeps
 * the memory until the copy (the last chunk) is done. */
static hrx_status_t hrx_stream_upload_direct(hrx_stream_t* stream,
                                             hrx_view_t dst, const void* data,
                                             hrx_pinned_use_t* use) {
  hrx_pinned_t* pinned = hrx_device_pinned(stream->device);
  const bool paced = hrx_stream_paces(stream, dst.length);
  hrx_status_t status = paced ? hrx_paced_would_block() : NULL;
  if (!status) {
    status = hrx_stream_enter(stream, "submitting work to a stream");
  }
  if (!status && paced) {
    /* The transfer ends the use when its last chunk is done. */
    HRX_PINNED_COUNT_DIRECT(true);
    return hrx_paced_upload_pinned(&stream->publication,
                                   hrx_view_pointer(dst), data, dst.length,
                                   hrx_pinned_end_use_hook, use);
  }
  if (!status) {
    hrx_upload_direct_args_t args = {dst, data, pinned, use};
    hrx_command_t command = {.submit = hrx_submit_upload_direct,
                             .user_data = &args,
                             .bytes = dst.length,
                             .what = "upload"};
    status = hrx_stream_submit(stream, &command);
    /* The copy and its use's event: two commands. */
    if (!status) {
      hrx_device_count_commands(stream->device, 1);
      hrx_stream_urgent_transfer(stream, true);
    }
  }
  hrx_pinned_end_use(pinned, use);
  return status;
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
  hrx_pinned_use_t* use = NULL;
  HRX_RETURN_IF_ERROR(hrx_pinned_begin_use(hrx_device_pinned(stream->device),
                                           data, length, &use));
  if (use) return hrx_stream_upload_direct(stream, dst, data, use);
  const bool paced = hrx_stream_paces(stream, length);
  if (paced) HRX_RETURN_IF_ERROR(hrx_paced_would_block());
  /* A large one that is not paced is still staged by the copy threads. */
  const bool staged =
      !paced && hrx_staged_upload_applies(hrx_stream_device(stream), length);
  if (staged) HRX_RETURN_IF_ERROR(hrx_staged_upload_would_block());
  HRX_RETURN_IF_ERROR(hrx_stream_enter(stream, "submitting work to a stream"));
  if (paced) {
    return hrx_paced_upload(&stream->publication, hrx_view_pointer(dst), data,
                            length);
  }
  hrx_status_t status = NULL;
  if (staged) {
    status = hrx_staged_upload(stream, hrx_view_pointer(dst), data, length);
  } else {
    hrx_upload_args_t args = {dst, data};
    hrx_command_t command = {.submit = hrx_submit_upload,
                             .user_data = &args,
                             .bytes = length,
                             .what = "upload"};
    status = hrx_stream_submit(stream, &command);
  }
  if (!status) hrx_stream_urgent_transfer(stream, true);
  return status;
}

/* ---------------------------------------------------------- observation */

hrx_status_t hrx_stream_publish_batch(hrx_stream_t* stream) {
  HRX_RETURN_IF_ERROR(
      hrx_stream_enter(stream, "publishing a stream's pending batch"));
  return hrx_publication_publish_pending(&stream->publication);
}

hrx_status_t hrx_stream_flush(hrx_stream_t* stream) {
  HRX_RETURN_IF_ERROR(hrx_stream_enter(stream, "flushing a stream"));
  HRX_RETURN_IF_ERROR(hrx_publication_publish_pending(&stream->publication));
  return hrx_publication_take_failure(&stream->publication);
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
    HRX_RETURN_IF_ERROR(hrx_publication_publish_pending(&stream->publication));
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
    return hrx_publication_take_failure(&stream->publication);
  }
  if (!hrx_publication_wait_held(&stream->publication, hook,
                                 out_interrupted)) {
    return NULL;
  }
  /* Once the pending batch is published (and a publication in progress
   * has ended), everything the stream accepted is on its queue, so waiting
   * for the queue's current end covers it. */
  hrx_publication_publish(&stream->publication);
  hrx_status_t status = hrx_wait_queue(stream->backend, stream->queue,
                                       hook, out_interrupted);
  if (*out_interrupted) return status;
  return hrx_status_prefer(
      hrx_publication_take_failure(&stream->publication), status);
}

/* Records a native event at the end of the stream's queue (a plain record
 * never waits for queue space, hal/event.h). */
static hrx_status_t hrx_stream_record_marker(hrx_stream_t* stream,
                                             hrx_native_event_t* native_event) {
  return stream->backend->vtable->event.record(stream->backend, stream->queue,
                                               native_event);
}

/* A timing record: on the host backend a command of the queue that may wait
 * for queue space (hal/event.h), so it goes out as a lone command of the
 * publication. */
static hrx_status_t hrx_submit_timing_record(hrx_backend_device_t* backend,
                                             hrx_native_queue_t* queue,
                                             void* user_data) {
  return backend->vtable->event.record(backend, queue, user_data);
}

static hrx_status_t hrx_stream_record_new_event(hrx_stream_t* stream,
                                                bool timing,
                                                hrx_event_t** out_event) {
  HRX_RETURN_IF_ERROR(hrx_stream_enter(stream, "recording an event"));
  HRX_RETURN_IF_ERROR(hrx_publication_publish_pending(&stream->publication));
  hrx_batch_thread_observed();
  HRX_RETURN_IF_ERROR(hrx_publication_take_failure(&stream->publication));
  hrx_event_t* event = NULL;
  HRX_RETURN_IF_ERROR(timing ? hrx_event_create_timing(stream->device, &event)
                             : hrx_event_create(stream->device, &event));
  hrx_status_t status = NULL;
  if (timing) {
    /* Counted as accepted by hrx_stream_submit; observes, so that its
     * failure is this call's. */
    hrx_command_t command = {.submit = hrx_submit_timing_record,
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
  if (hrx_publication_has_unpublished(&stream->publication)) {
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
  hrx_command_t command = {.submit = hrx_submit_wait,
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
