/* Asynchronous device-to-host reads into backend host memory (pinned on
 * GPUs), completed through an event recorded after the download. */
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "status.h"
#include "stream.h"
#include "wait.h"

struct hrx_readback_s {
  hrx_device_t* device;          /* retained */
  hrx_native_event_t* event;     /* owned */
  uint8_t* host;                 /* owned, backend host memory */
  uint64_t length;
};

typedef struct {
  hrx_view_t src;
  void* host;
} hrx_download_args_t;

static hrx_status_t hrx_submit_download(hrx_backend_device_t* backend,
                                        hrx_native_queue_t* queue,
                                        void* user_data,
                                        hrx_ticket_t* out_ticket) {
  hrx_download_args_t* args = user_data;
  const uint8_t* src =
      (const uint8_t*)hrx_buffer_native_pointer(args->src.buffer) +
      args->src.offset;
  return backend->vtable->download(backend, queue, args->host, src,
                                   args->src.length, out_ticket);
}

static void hrx_readback_free(hrx_readback_t* readback,
                              hrx_backend_device_t* backend) {
  if (readback->event) backend->vtable->event_destroy(backend, readback->event);
  if (readback->host) backend->vtable->host_free(backend, readback->host);
  free(readback);
}

hrx_status_t hrx_stream_read(hrx_stream_t* stream, hrx_view_t src,
                             hrx_readback_t** out_readback) {
  HRX_RETURN_IF_ERROR(hrx_stream_check_view(stream, src, "read source"));
  hrx_device_t* device = hrx_stream_device(stream);
  HRX_RETURN_IF_ERROR(hrx_device_check_process(device));
  hrx_backend_device_t* backend = hrx_device_backend(device);
  hrx_readback_t* readback = calloc(1, sizeof(*readback));
  if (!readback) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate readback");
  }
  readback->length = src.length;
  hrx_status_t status = backend->vtable->host_alloc(
      backend, src.length, (void**)&readback->host);
  if (!status) status = backend->vtable->event_create(backend, &readback->event);
  if (!status) {
    hrx_download_args_t args = {src, readback->host};
    status = hrx_stream_submit_sized(stream, hrx_submit_download, &args,
                                     src.length);
  }
  if (!status) status = hrx_stream_record_native(stream, readback->event);
  if (status) {
    /* A published download still completes before host_free returns. */
    hrx_readback_free(readback, backend);
    return status;
  }
  readback->device = device;
  hrx_device_retain(device);
  *out_readback = readback;
  return NULL;
}

void hrx_readback_release(hrx_readback_t* readback) {
  if (!readback) return;
  hrx_device_t* device = readback->device;
  if (hrx_device_is_stale(device)) return; /* fork.h */
  hrx_readback_free(readback, hrx_device_backend(device));
  hrx_device_release(device);
}

uint64_t hrx_readback_length(const hrx_readback_t* readback) {
  return readback->length;
}

hrx_status_t hrx_readback_query(hrx_readback_t* readback, bool* out_done) {
  HRX_RETURN_IF_ERROR(hrx_device_check_process(readback->device));
  hrx_backend_device_t* backend = hrx_device_backend(readback->device);
  return backend->vtable->event_query(backend, readback->event, out_done);
}

hrx_status_t hrx_readback_wait(hrx_readback_t* readback,
                               const uint8_t** out_bytes) {
  HRX_RETURN_IF_ERROR(hrx_device_check_process(readback->device));
  hrx_backend_device_t* backend = hrx_device_backend(readback->device);
  HRX_RETURN_IF_ERROR(backend->vtable->event_synchronize(backend,
                                                         readback->event));
  *out_bytes = readback->host;
  return NULL;
}

hrx_status_t hrx_readback_wait_hooked(hrx_readback_t* readback,
                                      const hrx_wait_hook_t* hook,
                                      const uint8_t** out_bytes,
                                      bool* out_interrupted) {
  *out_interrupted = false;
  if (!hook) return hrx_readback_wait(readback, out_bytes);
  HRX_RETURN_IF_ERROR(hrx_device_check_process(readback->device));
  HRX_RETURN_IF_ERROR(hrx_wait_native_event(
      hrx_device_backend(readback->device), readback->event, hook,
      out_interrupted));
  if (!*out_interrupted) *out_bytes = readback->host;
  return NULL;
}

static void hrx_readback_deferred_free(hrx_backend_device_t* backend,
                                       void* readback) {
  hrx_readback_free(readback, backend);
}

void hrx_readback_release_deferred(hrx_readback_t* readback) {
  if (!readback) return;
  hrx_device_t* device = readback->device;
  if (hrx_device_is_stale(device)) return; /* fork.h */
  bool done = false;
  hrx_status_t status = hrx_readback_query(readback, &done);
  bool failed = status != NULL;
  hrx_status_free(status);
  if (failed || done ||
      !hrx_device_defer_cleanup(device, hrx_readback_deferred_free,
                                readback)) {
    hrx_readback_release(readback);
    return;
  }
  hrx_device_release(device);
}

hrx_status_t hrx_stream_read_blocking(hrx_stream_t* stream, hrx_view_t src,
                                      void* out, uint64_t capacity) {
  bool interrupted = false;
  return hrx_stream_read_blocking_hooked(stream, src, out, capacity, NULL,
                                         &interrupted);
}

hrx_status_t hrx_stream_read_blocking_hooked(hrx_stream_t* stream,
                                             hrx_view_t src, void* out,
                                             uint64_t capacity,
                                             const hrx_wait_hook_t* hook,
                                             bool* out_interrupted) {
  *out_interrupted = false;
  HRX_RETURN_IF_ERROR(hrx_stream_check_view(stream, src, "read source"));
  if (!out) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "read output is NULL");
  }
  if (capacity < src.length) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "read output holds %llu bytes but the source has "
                           "%llu; it must hold at least the source's length",
                           (unsigned long long)capacity,
                           (unsigned long long)src.length);
  }
  hrx_readback_t* readback = NULL;
  HRX_RETURN_IF_ERROR(hrx_stream_read(stream, src, &readback));
  const uint8_t* bytes = NULL;
  hrx_status_t status =
      hrx_readback_wait_hooked(readback, hook, &bytes, out_interrupted);
  if (!status && *out_interrupted) {
    hrx_readback_release_deferred(readback);
    return NULL;
  }
  if (!status) memcpy(out, bytes, src.length);
  hrx_readback_release(readback);
  return status;
}
