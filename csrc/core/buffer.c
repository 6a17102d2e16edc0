/* Device memory. A buffer retains its device; its memory goes back through
 * the backend's free, which waits until no submitted work can touch it
 * (pending batches are published first). */
#include "buffer.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "completion.h"
#include "live_device.h"
#include "entry.h"
#include "base/status.h"

struct hrx_buffer_s {
  atomic_int ref_count;
  hrx_device_t* device;  /* retained */
  void* ptr;             /* owned, backend memory */
  uint64_t size;
};

hrx_status_t hrx_buffer_allocate(hrx_device_t* device, uint64_t size,
                                 hrx_buffer_t** out_buffer) {
  if (size == 0) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "buffer size must be at least 1 byte; got 0");
  }
  HRX_RETURN_IF_ERROR(
      hrx_entry_check(device, HRX_ENTRY_BLOCKING, "allocating a buffer"));
  hrx_buffer_t* buffer = calloc(1, sizeof(*buffer));
  if (!buffer) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate buffer object");
  }
  hrx_backend_device_t* backend = hrx_device_backend(device);
  hrx_status_t status = backend->vtable->memory.alloc(backend, size, &buffer->ptr);
  if (status) {
    free(buffer);
    return hrx_status_annotate(status, "cannot allocate %llu bytes",
                               (unsigned long long)size);
  }
  atomic_init(&buffer->ref_count, 1);
  buffer->size = size;
  buffer->device = device;
  hrx_device_retain_holder(device, HRX_DEVICE_HOLDER_BUFFER);
  *out_buffer = buffer;
  return NULL;
}

void hrx_buffer_retain(hrx_buffer_t* buffer) {
  if (buffer) atomic_fetch_add_explicit(&buffer->ref_count, 1,
                                        memory_order_relaxed);
}

static void hrx_buffer_release_object(void* buffer) {
  hrx_buffer_release(buffer);
}

void hrx_buffer_release(hrx_buffer_t* buffer) {
  if (!buffer ||
      !hrx_entry_release_last(buffer->device, &buffer->ref_count,
                              hrx_buffer_release_object, buffer, true)) {
    return;
  }
  hrx_backend_device_t* backend = hrx_device_backend(buffer->device);
  /* Batched commands may name this memory without being on a queue yet:
   * publish them, so that free() waits for them like for any other work. */
  hrx_flusher_publish_all(hrx_device_flusher(buffer->device));
  /* Held transfers may name it: they go out first (pacing.h). */
  hrx_pacer_wait_idle(hrx_device_pacer(buffer->device), NULL, NULL);
  backend->vtable->memory.free(backend, buffer->ptr);
  hrx_device_release_holder(buffer->device, HRX_DEVICE_HOLDER_BUFFER);
  free(buffer);
}

uint64_t hrx_buffer_size(const hrx_buffer_t* buffer) { return buffer->size; }

hrx_device_t* hrx_buffer_device(const hrx_buffer_t* buffer) {
  return buffer->device;
}

void* hrx_buffer_native_pointer(const hrx_buffer_t* buffer) {
  return buffer->ptr;
}

hrx_status_t hrx_view_make(hrx_buffer_t* buffer, uint64_t offset,
                           uint64_t length, hrx_view_t* out_view) {
  if (!buffer) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT, "view of no buffer");
  }
  if (offset > buffer->size || length > buffer->size - offset) {
    return hrx_make_status(
        HRX_STATUS_OUT_OF_RANGE,
        "view [offset %llu, length %llu] exceeds the buffer's %llu bytes",
        (unsigned long long)offset, (unsigned long long)length,
        (unsigned long long)buffer->size);
  }
  out_view->buffer = buffer;
  out_view->offset = offset;
  out_view->length = length;
  return NULL;
}

uint8_t* hrx_view_pointer(hrx_view_t view) {
  return (uint8_t*)view.buffer->ptr + view.offset;
}

bool hrx_view_usable(hrx_device_t* device, hrx_view_t view) {
  return view.buffer && view.buffer->device == device && view.length != 0 &&
         view.offset <= view.buffer->size &&
         view.length <= view.buffer->size - view.offset;
}

hrx_status_t hrx_view_check(hrx_device_t* device, hrx_view_t view,
                            const char* role, const char* holder,
                            const char* rule) {
  if (hrx_view_usable(device, view)) return NULL;
  if (!view.buffer) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT, "%s has no buffer",
                           role);
  }
  HRX_RETURN_IF_ERROR(hrx_device_check_same(device, view.buffer->device, role,
                                            holder, rule));
  uint64_t size = view.buffer->size;
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

hrx_status_t hrx_view_check_copy(hrx_view_t dst, hrx_view_t src) {
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
  return NULL;
}
