/* Copies between devices of one backend (hrx_stream_copy_peer, hrx.h): the
 * command, on a stream of the destination's or the source's device, and
 * the hold that keeps the other device's buffer alive until it is done
 * (peer_holds.h). */
#include "peer_holds.h"

#include <stdlib.h>

#include "buffer.h"
#include "live_device.h"
#include "base/nonblocking.h"
#include "staging.h"
#include "base/status.h"
#include "stream.h"
#include "wait.h"

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
  hrx_command_t command = {.submit = hrx_submit_peer_copy,
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
