/* Streams: ordered submission onto a native queue, either a pool slot or a
 * queue of their own (fabric). Locks, in order: producer_mutex (serialises
 * the stream's producers, may be held across a wait for queue space), then
 * publish_mutex (guards the last-published marker; never held across a wait).
 * Observers (record_event, synchronize) take only publish_mutex, so they never
 * wait behind a producer blocked on a full queue. */
#include "stream.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "device.h"
#include "event.h"
#include "queue_pool.h"
#include "status.h"

struct hrx_stream_s {
  atomic_int ref_count;
  hrx_device_t* device;            /* retained */
  hrx_backend_device_t* backend;   /* borrowed from the device */
  hrx_native_queue_t* queue;       /* pool: borrowed; dedicated: owned */
  int queue_index;                 /* pool slot, or -1 when dedicated */
  pthread_mutex_t producer_mutex;
  pthread_mutex_t publish_mutex;
  hrx_ticket_t last_ticket;        /* last published; publish_mutex */
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
  *out_stream = stream;
  return NULL;
}

static void hrx_stream_free(hrx_stream_t* stream) {
  pthread_mutex_destroy(&stream->producer_mutex);
  pthread_mutex_destroy(&stream->publish_mutex);
  free(stream);
}

hrx_status_t hrx_stream_create(hrx_device_t* device,
                               hrx_stream_t** out_stream) {
  hrx_stream_t* stream = NULL;
  HRX_RETURN_IF_ERROR(hrx_stream_allocate(device, &stream));
  hrx_status_t status = hrx_queue_pool_acquire(
      hrx_device_pool(device), &stream->queue_index, &stream->queue);
  if (status) {
    hrx_stream_free(stream);
    return status;
  }
  hrx_device_retain(device);
  *out_stream = stream;
  return NULL;
}

hrx_status_t hrx_stream_create_dedicated(hrx_device_t* device,
                                         hrx_stream_t** out_stream) {
  hrx_stream_t* stream = NULL;
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
  hrx_queue_pool_t* pool = hrx_device_pool(stream->device);
  if (stream->queue_index < 0) {
    /* Waits for the queue's work, so its buffers are no longer in use. */
    stream->backend->vtable->queue_destroy(stream->backend, stream->queue);
    hrx_queue_pool_fabric_removed(pool);
  } else {
    hrx_queue_pool_stream_released(pool);
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

/* INVALID_ARGUMENT naming both devices when `other` (the device of the
 * argument called `role`) is not the stream's; `rule` says what is allowed. */
static hrx_status_t hrx_stream_check_device(const hrx_stream_t* stream,
                                            hrx_device_t* other,
                                            const char* role,
                                            const char* rule) {
  if (other == stream->device) return NULL;
  const hrx_device_info_t* theirs = hrx_device_info(other);
  const hrx_device_info_t* ours = hrx_device_info(stream->device);
  return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                         "%s belongs to device %s:%d, but the stream runs on "
                         "device %s:%d; %s",
                         role, theirs->backend, theirs->index, ours->backend,
                         ours->index, rule);
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
  uint64_t size = hrx_buffer_size(view.buffer);
  if (view.offset > size || view.length > size - view.offset) {
    return hrx_make_status(
        HRX_STATUS_OUT_OF_RANGE,
        "%s [offset %llu, length %llu] exceeds its buffer's %llu bytes", role,
        (unsigned long long)view.offset, (unsigned long long)view.length,
        (unsigned long long)size);
  }
  if (view.length == 0) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "%s is empty; commands need at least 1 byte", role);
  }
  return NULL;
}

hrx_status_t hrx_stream_submit(hrx_stream_t* stream,
                               hrx_stream_submit_fn_t submit,
                               void* user_data) {
  pthread_mutex_lock(&stream->producer_mutex);
  hrx_ticket_t ticket = 0;
  hrx_status_t status = submit(stream->backend, stream->queue, user_data,
                               &ticket);
  if (!status) {
    pthread_mutex_lock(&stream->publish_mutex);
    if (ticket > stream->last_ticket) stream->last_ticket = ticket;
    pthread_mutex_unlock(&stream->publish_mutex);
  }
  pthread_mutex_unlock(&stream->producer_mutex);
  return status;
}

static uint8_t* hrx_view_pointer(hrx_view_t view) {
  return (uint8_t*)hrx_buffer_native_pointer(view.buffer) + view.offset;
}

typedef struct {
  hrx_view_t dst, src;
} hrx_copy_args_t;

static hrx_status_t hrx_submit_copy(hrx_backend_device_t* backend,
                                    hrx_native_queue_t* queue, void* user_data,
                                    hrx_ticket_t* out_ticket) {
  hrx_copy_args_t* args = user_data;
  return backend->vtable->copy(backend, queue, hrx_view_pointer(args->dst),
                               hrx_view_pointer(args->src), args->dst.length,
                               out_ticket);
}

hrx_status_t hrx_stream_copy(hrx_stream_t* stream, hrx_view_t dst,
                             hrx_view_t src) {
  HRX_RETURN_IF_ERROR(hrx_stream_check_view(stream, dst, "copy destination"));
  HRX_RETURN_IF_ERROR(hrx_stream_check_view(stream, src, "copy source"));
  if (dst.length != src.length) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "copy lengths differ: destination %llu bytes, "
                           "source %llu bytes; they must be equal",
                           (unsigned long long)dst.length,
                           (unsigned long long)src.length);
  }
  if (dst.buffer == src.buffer && dst.offset < src.offset + src.length &&
      src.offset < dst.offset + dst.length) {
    return hrx_make_status(
        HRX_STATUS_INVALID_ARGUMENT,
        "copy ranges overlap in the same buffer: destination [%llu, %llu), "
        "source [%llu, %llu); copies need disjoint ranges",
        (unsigned long long)dst.offset,
        (unsigned long long)(dst.offset + dst.length),
        (unsigned long long)src.offset,
        (unsigned long long)(src.offset + src.length));
  }
  hrx_copy_args_t args = {dst, src};
  return hrx_stream_submit(stream, hrx_submit_copy, &args);
}

typedef struct {
  hrx_view_t dst;
  uint8_t byte;
} hrx_fill_args_t;

static hrx_status_t hrx_submit_fill(hrx_backend_device_t* backend,
                                    hrx_native_queue_t* queue, void* user_data,
                                    hrx_ticket_t* out_ticket) {
  hrx_fill_args_t* args = user_data;
  return backend->vtable->fill(backend, queue, hrx_view_pointer(args->dst),
                               args->byte, args->dst.length, out_ticket);
}

hrx_status_t hrx_stream_fill(hrx_stream_t* stream, hrx_view_t dst,
                             uint8_t byte) {
  HRX_RETURN_IF_ERROR(hrx_stream_check_view(stream, dst, "fill destination"));
  hrx_fill_args_t args = {dst, byte};
  return hrx_stream_submit(stream, hrx_submit_fill, &args);
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
  return hrx_stream_submit(stream, hrx_submit_upload, &args);
}

hrx_status_t hrx_stream_synchronize(hrx_stream_t* stream) {
  /* Everything the stream published is on its queue before this call, so
   * waiting for the queue's current end covers it. */
  return stream->backend->vtable->queue_synchronize(stream->backend,
                                                    stream->queue);
}

hrx_status_t hrx_stream_record_native(hrx_stream_t* stream,
                                      hrx_native_event_t* native_event) {
  pthread_mutex_lock(&stream->publish_mutex);
  hrx_status_t status = stream->backend->vtable->event_record(
      stream->backend, stream->queue, native_event, stream->last_ticket);
  pthread_mutex_unlock(&stream->publish_mutex);
  return status;
}

hrx_status_t hrx_stream_record_event(hrx_stream_t* stream,
                                     hrx_event_t** out_event) {
  hrx_event_t* event = NULL;
  HRX_RETURN_IF_ERROR(hrx_event_create(stream->device, &event));
  hrx_status_t status = hrx_stream_record_native(stream, hrx_event_native(event));
  if (status) {
    hrx_event_release(event);
    return status;
  }
  *out_event = event;
  return NULL;
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
