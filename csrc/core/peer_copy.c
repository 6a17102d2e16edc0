/* Copies between devices of one backend (peer_copy.h). */
#include "peer_copy.h"

#include <stdlib.h>

#include "buffer.h"
#include "device.h"
#include "base/nonblocking.h"
#include "staging.h"
#include "base/status.h"
#include "stream.h"
#include "wait.h"

struct hrx_peer_hold_s {
  hrx_buffer_t* buffer;            /* retained: the other device's */
  hrx_backend_device_t* backend;   /* borrowed: the stream's device's */
  hrx_native_event_t* event;       /* owned: recorded after the copy */
  hrx_staging_pool_t* staging;     /* borrowed: the stream's device's */
  hrx_staging_block_t* block;      /* owned until given back; or NULL */
  struct hrx_peer_hold_s* next;
};

void hrx_peer_holds_initialize(hrx_peer_holds_t* holds) {
  pthread_mutex_init(&holds->mutex, NULL);
  holds->head = NULL;
  atomic_init(&holds->count, 0);
}

/* Gives back what a hold owns; its copy is complete or never ran. */
static void hrx_peer_hold_free(hrx_peer_hold_t* hold) {
  if (hold->block) hrx_staging_release(hold->staging, hold->block);
  if (hold->event) {
    hold->backend->vtable->event.destroy(hold->backend, hold->event);
  }
  hrx_buffer_release(hold->buffer);
  free(hold);
}

static bool hrx_peer_hold_done(hrx_peer_hold_t* hold) {
  bool done = false;
  hrx_status_t status =
      hold->backend->vtable->event.query(hold->backend, hold->event, &done);
  /* A failed query keeps the hold; the release waits for it. */
  hrx_status_free(status);
  return done;
}

void hrx_peer_holds_prune_entries(hrx_peer_holds_t* holds) {
  pthread_mutex_lock(&holds->mutex);
  hrx_peer_hold_t* list = holds->head;
  holds->head = NULL;
  pthread_mutex_unlock(&holds->mutex);
  hrx_peer_hold_t* kept = NULL;
  int freed = 0;
  for (hrx_peer_hold_t* next; list; list = next) {
    next = list->next;
    if (hrx_peer_hold_done(list)) {
      hrx_peer_hold_free(list);
      ++freed;
    } else {
      list->next = kept;
      kept = list;
    }
  }
  pthread_mutex_lock(&holds->mutex);
  while (kept) {
    hrx_peer_hold_t* next = kept->next;
    kept->next = holds->head;
    holds->head = kept;
    kept = next;
  }
  atomic_fetch_sub(&holds->count, freed);
  pthread_mutex_unlock(&holds->mutex);
}

void hrx_peer_holds_deinitialize(hrx_peer_holds_t* holds) {
  hrx_peer_hold_t* list = holds->head;
  holds->head = NULL;
  while (list) {
    hrx_peer_hold_t* next = list->next;
    hrx_status_free(
        hrx_wait_native_event(list->backend, list->event, NULL, NULL));
    hrx_peer_hold_free(list);
    list = next;
  }
  atomic_store(&holds->count, 0);
  pthread_mutex_destroy(&holds->mutex);
}

static void hrx_peer_holds_add(hrx_peer_holds_t* holds, hrx_peer_hold_t* hold) {
  pthread_mutex_lock(&holds->mutex);
  hold->next = holds->head;
  holds->head = hold;
  atomic_fetch_add(&holds->count, 1);
  pthread_mutex_unlock(&holds->mutex);
}

/* ----------------------------------------------------------------- copy */

/* A view of a copy between devices: of a buffer, in bounds, non-empty, and
 * of the stream's backend (its device may be any of the backend's). */
static hrx_status_t hrx_peer_check_view(hrx_device_t* device, hrx_view_t view,
                                        const char* role) {
  hrx_device_t* owner = view.buffer ? hrx_buffer_device(view.buffer) : device;
  HRX_RETURN_IF_ERROR(hrx_view_check(owner, view, role, "", ""));
  return hrx_device_check_same_backend(
      device, owner, role, "the stream runs on",
      "a copy between devices stays within one backend");
}

typedef struct {
  hrx_view_t dst;
  int dst_index;
  hrx_view_t src;
  int src_index;
  hrx_peer_hold_t* hold;
  bool recorded;  /* the copy and its hold's event are on the queue */
} hrx_peer_copy_args_t;

/* The copy and, right after it, the hold's event. If the event cannot be
 * recorded, the copy (already queued) is waited for, so that nothing the
 * hold owns is in use when the command fails. */
static hrx_status_t hrx_submit_peer_copy(hrx_backend_device_t* backend,
                                         hrx_native_queue_t* queue,
                                         void* user_data) {
  hrx_peer_copy_args_t* args = user_data;
  hrx_peer_hold_t* hold = args->hold;
  HRX_RETURN_IF_ERROR(backend->vtable->queue.peer_copy(
      backend, queue, hrx_view_pointer(args->dst), args->dst_index,
      hrx_view_pointer(args->src), args->src_index, args->dst.length,
      hold->block ? hold->block->memory : NULL));
  hrx_status_t status = backend->vtable->event.record(backend, queue,
                                                      hold->event);
  if (status) {
    hrx_status_free(hrx_wait_queue(backend, queue, NULL, NULL));
    return status;
  }
  args->recorded = true;
  return NULL;
}

/* The hold of a copy on `path` with the other device's `buffer` (not yet
 * retained): its event and, when staged, a staging block of `length`. */
static hrx_status_t hrx_peer_hold_create(hrx_device_t* device,
                                         hrx_peer_path_t path, uint64_t length,
                                         hrx_peer_hold_t** out_hold) {
  hrx_peer_hold_t* hold = calloc(1, sizeof(*hold));
  if (!hold) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a copy between devices");
  }
  hold->backend = hrx_device_backend(device);
  hold->staging = hrx_device_staging(device);
  hrx_status_t status =
      hold->backend->vtable->event.create(hold->backend, &hold->event);
  if (!status && path == HRX_PEER_PATH_STAGED) {
    status = hrx_staging_acquire(hold->staging, length, &hold->block);
  }
  if (status) {
    hrx_peer_hold_free(hold);
    return status;
  }
  *out_hold = hold;
  return NULL;
}

hrx_status_t hrx_stream_copy_peer(hrx_stream_t* stream, hrx_view_t dst,
                                  hrx_view_t src) {
  hrx_device_t* device = hrx_stream_device(stream);
  HRX_RETURN_IF_ERROR(hrx_peer_check_view(device, dst, "copy destination"));
  HRX_RETURN_IF_ERROR(hrx_peer_check_view(device, src, "copy source"));
  hrx_device_t* dst_device = hrx_buffer_device(dst.buffer);
  hrx_device_t* src_device = hrx_buffer_device(src.buffer);
  if (dst_device == device && src_device == device) {
    return hrx_stream_copy(stream, dst, src);
  }
  const hrx_device_info_t* here = hrx_device_info(device);
  const hrx_device_info_t* dst_info = hrx_device_info(dst_device);
  const hrx_device_info_t* src_info = hrx_device_info(src_device);
  if (dst_device != device && src_device != device) {
    return hrx_make_status(
        HRX_STATUS_INVALID_ARGUMENT,
        "the copy destination is on device %s:%d and its source on device "
        "%s:%d, but the stream runs on device %s:%d; a copy between devices "
        "runs on a stream of its destination's or its source's device",
        dst_info->backend, dst_info->index, src_info->backend, src_info->index,
        here->backend, here->index);
  }
  HRX_RETURN_IF_ERROR(hrx_view_check_copy(dst, src));
  bool dst_here = dst_device == device;
  hrx_buffer_t* other = dst_here ? src.buffer : dst.buffer;
  hrx_peer_path_t path = HRX_PEER_PATH_DIRECT;
  HRX_RETURN_IF_ERROR(hrx_device_query_peer_path(
      device, dst_here ? src_info->index : dst_info->index, &path));
  /* Preparing it may allocate (staging, an event): never in non-blocking
   * mode, whose callers repeat the call blocking. */
  if (hrx_nonblocking()) return hrx_would_block("a copy between devices");
  HRX_RETURN_IF_ERROR(hrx_stream_enter(stream, "copying between devices"));
  hrx_peer_copy_args_t args = {.dst = dst, .dst_index = dst_info->index,
                               .src = src, .src_index = src_info->index};
  HRX_RETURN_IF_ERROR(
      hrx_peer_hold_create(device, path, dst.length, &args.hold));
  hrx_stream_command_t command = {.submit = hrx_submit_peer_copy,
                                  .user_data = &args,
                                  .bytes = dst.length,
                                  .what = "copy between devices"};
  hrx_status_t status = hrx_stream_submit(stream, &command);
  if (!args.recorded) {
    /* Refused, not run (a failed stream) or waited for: nothing in use. */
    hrx_peer_hold_free(args.hold);
    return status;
  }
  hrx_buffer_retain(other);
  args.hold->buffer = other;
  hrx_peer_holds_add(hrx_stream_peer_holds(stream), args.hold);
  return status;
}
