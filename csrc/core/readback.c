/* Asynchronous device-to-host reads into pooled staging memory (pinned on
 * GPUs, staging.h), completed through the staging block's event recorded
 * right after the download. A read waits only for its own stream: it
 * neither allocates nor frees pinned memory once the pool is warm.
 *
 * A paced read (pacing.h) is held on its stream and downloaded chunk by
 * chunk into the same block; the block's event is recorded after the last
 * chunk. Until then the readback is not done, and a wait first waits for
 * the last chunk to be published. A readback released before that gives
 * its block to the transfer, which returns it to the pool when the last
 * chunk completed. A paced read into caller memory waited in blocking mode
 * copies its chunks as they land (the transfer's landed_bytes), so the
 * copy overlaps the later chunks; so does hrx_readback_wait_copy, into the
 * memory its caller gives it (a binding's new array).
 *
 * A read into caller memory that is pinned for the device (pinned.h) is
 * direct: the download writes the caller's memory, and the readback's
 * block is a private one that names that memory and the pinned use's
 * event; no staging. The use ends when the readback is freed; the pinned
 * range keeps the memory until the download is done. A paced direct read
 * lands its chunks in the caller's memory: its transfer owns the block and
 * the use, records the use once the block's event follows every chunk it
 * published, and ends the use when its last reference goes; a wait or a
 * release that must not leave a chunk writing the memory waits until the
 * transfer settled (pacing.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "buffer.h"
#include "live_device.h"
#include "entry.h"
#include "base/nonblocking.h"
#include "paced_submission.h"
#include "pacing.h"
#include "staged_transfer.h"
#include "pinned.h"
#include "staging.h"
#include "base/status.h"
#include "stream.h"
#include "wait.h"

/* A non-blocking wait copies at most this many bytes into caller memory:
 * a larger copy is WOULD_BLOCK, so that a binding makes it with its lock
 * released (and a paced read's blocking wait drains it as it lands). */
#define HRX_READBACK_NONBLOCKING_COPY_MAX_BYTES (64u << 10)

struct hrx_readback_s {
  hrx_device_t* device;          /* retained */
  hrx_staging_block_t* block;    /* owned until given back to the pool */
  uint64_t length;
  hrx_paced_transfer_t* transfer; /* retained: a paced read, or NULL */
  /* hrx_stream_read_into: the caller's memory (borrowed), filled once. */
  uint8_t* into;
  pthread_mutex_t into_mutex;     /* with `into` */
  bool into_copied;               /* into_mutex */
  uint64_t drained;               /* into_mutex: the prefix of `into`
                                     already copied (a paced read drains
                                     chunks as they land) */
  /* A direct read into pinned memory: the use (ended when the readback is
   * freed); `block` is then owned by the readback alone and names `into`
   * and the use's event. NULL for a staged read. */
  hrx_pinned_use_t* pinned_use;
  atomic_bool waited;             /* a wait returned the bytes (waits may
                                     run at once) */
};

/* Copies [*drained, upto) of the staging into `out` at the same offsets
 * and moves *drained to `upto`. */
static void hrx_readback_copy_span(const hrx_readback_t* readback,
                                   uint8_t* out, uint64_t* drained,
                                   uint64_t upto) {
  if (upto <= *drained) return;
  hrx_staged_copy(hrx_device_staged_copier(readback->device), out + *drained,
                  (const uint8_t*)readback->block->memory + *drained,
                  upto - *drained, 0, NULL, NULL);
  *drained = upto;
}

/* Copies [drained, upto) of the staging into `into` (into_mutex held). */
static void hrx_readback_copy_into_locked(hrx_readback_t* readback,
                                          uint64_t upto) {
  hrx_readback_copy_span(readback, readback->into, &readback->drained, upto);
}

/* Copies a complete read's bytes into `into`, once (what a paced read's
 * wait drained already is not copied again). */
static void hrx_readback_fill_into(hrx_readback_t* readback) {
  if (readback->pinned_use) return; /* the download wrote `into` */
  pthread_mutex_lock(&readback->into_mutex);
  if (!readback->into_copied) {
    hrx_readback_copy_into_locked(readback, readback->length);
    readback->into_copied = true;
  }
  pthread_mutex_unlock(&readback->into_mutex);
}

/* Copies the prefix of a paced read that landed (`landed` bytes) into a
 * destination, beyond what it copied before; sets *out_drained to the
 * prefix copied and returns whether the destination is complete. */
typedef bool (*hrx_readback_copy_landed_fn_t)(hrx_readback_t* readback,
                                              void* destination,
                                              uint64_t landed,
                                              uint64_t* out_drained);

/* A paced read waited in blocking mode: the chunks that landed are copied
 * into the destination (by the copy threads too, for a large prefix)
 * while later ones run, so the copy overlaps the transfer. Returns once
 * everything landed, or the read was dropped or its landing failed (the
 * wait that follows reports it), or the hook interrupted it
 * (*out_interrupted). No lock is held while waiting. */
static void hrx_readback_drain_landed(hrx_readback_t* readback,
                                      hrx_readback_copy_landed_fn_t copy_landed,
                                      void* destination,
                                      const hrx_wait_hook_t* hook,
                                      bool* out_interrupted) {
  hrx_paced_transfer_t* transfer = readback->transfer;
  hrx_pacer_t* pacer = hrx_device_pacer(readback->device);
  for (;;) {
    uint64_t landed = atomic_load(&transfer->landed_bytes);
    uint64_t drained = 0;
    if (copy_landed(readback, destination, landed, &drained) ||
        atomic_load(&transfer->landing_failed) ||
        atomic_load(&transfer->state) == HRX_PACED_DROPPED) {
      return;
    }
    if (!hrx_pacer_wait_landed(pacer, transfer, drained, hook,
                               out_interrupted)) {
      return;
    }
  }
}

/* The destination of a read_into (`into`, shared with queries that may
 * fill it meanwhile: into_mutex). */
static bool hrx_readback_copy_landed_into(hrx_readback_t* readback,
                                          void* unused, uint64_t landed,
                                          uint64_t* out_drained) {
  (void)unused;
  pthread_mutex_lock(&readback->into_mutex);
  bool finished = readback->into_copied;
  if (!finished) {
    hrx_readback_copy_into_locked(readback, landed);
    finished = readback->drained == readback->length;
  }
  *out_drained = readback->drained;
  pthread_mutex_unlock(&readback->into_mutex);
  return finished;
}

/* A destination of one hrx_readback_wait_copy call: its own. */
typedef struct {
  uint8_t* out;
  uint64_t drained;
} hrx_readback_copy_target_t;

static bool hrx_readback_copy_landed_out(hrx_readback_t* readback,
                                         void* destination, uint64_t landed,
                                         uint64_t* out_drained) {
  hrx_readback_copy_target_t* target = destination;
  hrx_readback_copy_span(readback, target->out, &target->drained, landed);
  *out_drained = target->drained;
  return target->drained == readback->length;
}

/* A paced read's failure (a chunk failed, or it was not run), copied for
 * the caller; NULL while it is held or once it was published. */
static hrx_status_t hrx_readback_paced_failure(const hrx_readback_t* readback) {
  const hrx_paced_transfer_t* transfer = readback->transfer;
  if (!transfer || atomic_load(&transfer->state) != HRX_PACED_DROPPED) {
    return NULL;
  }
  if (!transfer->failure) {
    return hrx_make_status(HRX_STATUS_FAILED_PRECONDITION,
                           "the read was not run");
  }
  return hrx_status_create(hrx_status_code(transfer->failure),
                           hrx_status_message(transfer->failure));
}

typedef struct {
  hrx_view_t src;
  hrx_staging_block_t* block;
  hrx_pinned_t* pinned;          /* with pinned_use */
  hrx_pinned_use_t* pinned_use;  /* a direct read's, or NULL */
} hrx_download_args_t;

/* The download and, right after it on the queue, the block's event. If the
 * event cannot be recorded, the download (already queued) is waited for, so
 * the block is not in use when the read fails. */
static hrx_status_t hrx_submit_download(hrx_backend_device_t* backend,
                                        hrx_native_queue_t* queue,
                                        void* user_data) {
  hrx_download_args_t* args = user_data;
  const uint8_t* src = hrx_view_pointer(args->src);
  HRX_RETURN_IF_ERROR(backend->vtable->queue.download(
      backend, queue, args->block->memory, src, args->src.length));
  hrx_status_t status =
      backend->vtable->event.record(backend, queue, args->block->event);
  if (status) {
    hrx_status_free(hrx_wait_queue(backend, queue, NULL, NULL));
    return status;
  }
  if (args->pinned_use) {
    hrx_pinned_use_recorded(args->pinned, args->pinned_use);
    HRX_PINNED_COUNT_DIRECT(false);
  }
  return NULL;
}

/* An unpaced read: the download of `src` into `block` and the block's
 * event after it (hrx_submit_download), published alone; with `use`, a
 * direct read into pinned memory. Counted as two commands (a paced read is
 * counted when it is held), and on an urgent stream the pacer yields to it
 * (hrx_stream_urgent_transfer). */
static hrx_status_t hrx_stream_submit_read(hrx_stream_t* stream,
                                           hrx_view_t src,
                                           hrx_staging_block_t* block,
                                           hrx_pinned_t* pinned,
                                           hrx_pinned_use_t* use) {
  hrx_download_args_t args = {src, block, pinned, use};
  hrx_command_t command = {.submit = hrx_submit_download,
                           .user_data = &args,
                           .bytes = src.length,
                           .what = "read",
                           .observes = true};
  HRX_RETURN_IF_ERROR(hrx_stream_submit(stream, &command));
  hrx_device_count_commands(hrx_stream_device(stream), 1);
  hrx_stream_urgent_transfer(stream, false);
  return NULL;
}

/* What a paced direct read's transfer owns (hrx_paced_read_pinned). */
typedef struct {
  hrx_pinned_t* pinned;
  hrx_pinned_use_t* use;
  hrx_staging_block_t* block;   /* names the caller's memory */
} hrx_pinned_read_t;

static void hrx_pinned_read_recorded(void* arg) {
  hrx_pinned_read_t* read = arg;
  hrx_pinned_use_recorded(read->pinned, read->use);
}

static void hrx_pinned_read_release(void* arg) {
  hrx_pinned_read_t* read = arg;
  hrx_pinned_end_use(read->pinned, read->use);
  free(read->block);
  free(read);
}

/* A direct read into pinned memory (`use` of it, ended here on failure). */
static hrx_status_t hrx_stream_read_direct(hrx_stream_t* stream,
                                           hrx_view_t src, void* into,
                                           hrx_pinned_use_t* use,
                                           hrx_readback_t** out_readback) {
  hrx_device_t* device = hrx_stream_device(stream);
  hrx_pinned_t* pinned = hrx_device_pinned(device);
  const bool paced = hrx_stream_paces(stream, src.length);
  hrx_readback_t* readback = calloc(1, sizeof(*readback));
  hrx_staging_block_t* block = calloc(1, sizeof(*block));
  hrx_pinned_read_t* owned = paced ? calloc(1, sizeof(*owned)) : NULL;
  hrx_status_t status = paced ? hrx_paced_would_block() : NULL;
  if (!status && (!readback || !block || (paced && !owned))) {
    status = hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                             "cannot allocate readback");
  }
  if (!status) status = hrx_stream_enter(stream, "reading from a stream");
  hrx_paced_transfer_t* transfer = NULL;
  if (!status) {
    hrx_batch_thread_observed();
    block->memory = into;
    block->capacity = src.length;
    block->event = use->event;
  }
  if (!status && paced) {
    *owned = (hrx_pinned_read_t){pinned, use, block};
    /* From here the transfer owns the use and the block (also on
     * failure). */
    status = hrx_paced_read_pinned(
        hrx_stream_publication(stream), hrx_view_pointer(src), src.length,
        block, hrx_pinned_read_recorded, hrx_pinned_read_release, owned,
        &transfer);
    if (status) {
      free(readback);
      return status;
    }
    HRX_PINNED_COUNT_DIRECT(false);
  } else if (!status) {
    status = hrx_stream_submit_read(stream, src, block, pinned, use);
  }
  if (status) {
    hrx_pinned_end_use(pinned, use);
    free(owned);
    free(block);
    free(readback);
    return status;
  }
  readback->length = src.length;
  readback->into = into;
  readback->block = block;
  readback->pinned_use = use;
  readback->transfer = transfer;
  readback->device = device;
  hrx_device_retain(device);
  *out_readback = readback;
  return NULL;
}

static hrx_status_t hrx_stream_read_to(hrx_stream_t* stream, hrx_view_t src,
                                       void* into,
                                       hrx_readback_t** out_readback) {
  if (into) {
    hrx_pinned_use_t* use = NULL;
    HRX_RETURN_IF_ERROR(hrx_pinned_begin_use(
        hrx_device_pinned(hrx_stream_device(stream)), into, src.length, &use));
    if (use) return hrx_stream_read_direct(stream, src, into, use, out_readback);
  }
  const bool paced = hrx_stream_paces(stream, src.length);
  if (paced) HRX_RETURN_IF_ERROR(hrx_paced_would_block());
  HRX_RETURN_IF_ERROR(hrx_stream_enter(stream, "reading from a stream"));
  hrx_batch_thread_observed();
  hrx_device_t* device = hrx_stream_device(stream);
  hrx_readback_t* readback = calloc(1, sizeof(*readback));
  if (!readback) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate readback");
  }
  readback->length = src.length;
  readback->into = into;
  if (into) pthread_mutex_init(&readback->into_mutex, NULL);
  hrx_staging_pool_t* staging = hrx_device_staging(device);
  hrx_status_t status =
      hrx_staging_acquire(staging, src.length, &readback->block);
  if (!status && paced) {
    /* On failure the paced read gave the block back itself. */
    status = hrx_paced_read(hrx_stream_publication(stream),
                            hrx_view_pointer(src), src.length, staging,
                            readback->block, &readback->transfer);
    if (status) {
      if (into) pthread_mutex_destroy(&readback->into_mutex);
      free(readback);
      return status;
    }
  } else if (!status) {
    status = hrx_stream_submit_read(stream, src, readback->block, NULL, NULL);
  }
  if (status) {
    /* Nothing of the read runs (a failed submission waited for its
     * download): the block is free. */
    hrx_staging_release(staging, readback->block);
    if (into) pthread_mutex_destroy(&readback->into_mutex);
    free(readback);
    return status;
  }
  readback->device = device;
  hrx_device_retain_holder(device, HRX_DEVICE_HOLDER_READBACK);
  *out_readback = readback;
  return NULL;
}

hrx_status_t hrx_stream_read(hrx_stream_t* stream, hrx_view_t src,
                             hrx_readback_t** out_readback) {
  HRX_RETURN_IF_ERROR(hrx_stream_check_view(stream, src, "read source"));
  return hrx_stream_read_to(stream, src, NULL, out_readback);
}

hrx_status_t hrx_stream_read_into(hrx_stream_t* stream, hrx_view_t src,
                                  void* out, uint64_t capacity,
                                  hrx_readback_t** out_readback) {
  HRX_RETURN_IF_ERROR(hrx_stream_check_view(stream, src, "read source"));
  if (!out) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "read output is NULL");
  }
  if (capacity != src.length) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "read output holds %llu bytes but the source has "
                           "%llu; they must be equal",
                           (unsigned long long)capacity,
                           (unsigned long long)src.length);
  }
  return hrx_stream_read_to(stream, src, out, out_readback);
}

/* Frees the readback; its block goes back to the pool, as free when the
 * read is known complete, else as pending. */
/* Whether a paced read was dropped after chunks that may still run. */
static bool hrx_readback_paced_failure_pending(const hrx_readback_t* readback) {
  return readback->transfer &&
         atomic_load(&readback->transfer->state) == HRX_PACED_DROPPED;
}

static void hrx_readback_free(hrx_readback_t* readback, bool complete) {
  hrx_device_t* device = readback->device;
  if (!readback->block) {
    /* Its bytes were taken (hrx_readback_take): nothing else to give. */
    hrx_paced_transfer_release(readback->transfer);
    free(readback);
    hrx_device_release(device);
    return;
  }
  if (readback->pinned_use) {
    /* The pinned range keeps the memory until the download is done; a
     * paced read's transfer ends the use (and frees the block) after its
     * chunks. */
    (void)complete;
    if (readback->transfer) {
      hrx_paced_transfer_release(readback->transfer);
    } else {
      hrx_pinned_end_use(hrx_device_pinned(device), readback->pinned_use);
      free(readback->block);
    }
    free(readback);
    hrx_device_release(device);
    return;
  }
  hrx_staging_pool_t* staging = hrx_device_staging(device);
  if (readback->transfer &&
      hrx_pacer_adopt_block(hrx_device_pacer(device), readback->transfer)) {
    /* Still held: the transfer gives the block back after its chunks. */
  } else if (complete && !hrx_readback_paced_failure_pending(readback)) {
    hrx_staging_release(staging, readback->block);
  } else {
    hrx_staging_release_pending(staging, readback->block);
  }
  hrx_paced_transfer_release(readback->transfer);
  if (readback->into) pthread_mutex_destroy(&readback->into_mutex);
  free(readback);
  hrx_device_release_holder(device, HRX_DEVICE_HOLDER_READBACK);
}

static void hrx_readback_release_object(void* readback) {
  hrx_readback_release(readback);
}

void hrx_readback_release(hrx_readback_t* readback) {
  if (!readback) return;
  if (hrx_entry_release(readback->device, hrx_readback_release_object,
                        readback)) {
    return;
  }
  if (!readback->block) {
    hrx_readback_free(readback, true); /* its bytes were taken */
    return;
  }
  /* In non-blocking mode a release never waits for its read. */
  if (hrx_nonblocking()) {
    hrx_readback_release_deferred(readback);
    return;
  }
  if (readback->pinned_use && readback->transfer) {
    /* No chunk writes the caller's memory once this returns. */
    hrx_pacer_wait_settled(hrx_device_pacer(readback->device),
                           readback->transfer);
  } else if (readback->transfer &&
      atomic_load(&readback->transfer->state) != HRX_PACED_PUBLISHED) {
    /* Held (the transfer adopts the block) or dropped: nothing to wait
     * for here. */
    hrx_readback_free(readback, false);
    return;
  }
  hrx_backend_device_t* backend = hrx_device_backend(readback->device);
  hrx_status_t status =
      hrx_wait_native_event(backend, readback->block->event, NULL, NULL);
  hrx_readback_free(readback, status == NULL);
  hrx_status_free(status);
}

uint64_t hrx_readback_length(const hrx_readback_t* readback) {
  return readback->length;
}

void hrx_readback_copy_out(const hrx_readback_t* readback,
                           const uint8_t* bytes, void* out) {
  hrx_staged_copy(hrx_device_staged_copier(readback->device), out, bytes,
                  readback->length, 0, NULL,
                  NULL);
}

hrx_status_t hrx_readback_query(hrx_readback_t* readback, bool* out_done) {
  HRX_RETURN_IF_ERROR(hrx_entry_check(readback->device, HRX_ENTRY_RUNTIME_QUERY,
                                      "querying a read"));
  if (!readback->block) {
    *out_done = true; /* its bytes were taken: it was complete */
    return NULL;
  }
  if (readback->transfer) {
    int state = atomic_load(&readback->transfer->state);
    if (state != HRX_PACED_PUBLISHED) {
      /* Held: not done; dropped: done, and the wait raises why. */
      *out_done = state == HRX_PACED_DROPPED;
      return NULL;
    }
  }
  hrx_backend_device_t* backend = hrx_device_backend(readback->device);
  HRX_RETURN_IF_ERROR(backend->vtable->event.query(
      backend, readback->block->event, out_done));
  if (*out_done && readback->into) hrx_readback_fill_into(readback);
  return NULL;
}

hrx_status_t hrx_readback_wait(hrx_readback_t* readback,
                               const hrx_wait_hook_t* hook,
                               const uint8_t** out_bytes,
                               bool* out_interrupted) {
  bool interrupted = false;
  if (!out_interrupted) out_interrupted = &interrupted;
  *out_interrupted = false;
  bool nonblocking;
  HRX_RETURN_IF_ERROR(hrx_entry_check_mode(readback->device,
                                           HRX_ENTRY_BLOCKING,
                                           "waiting for a read", &nonblocking));
  if (!readback->block) {
    return hrx_make_status(HRX_STATUS_FAILED_PRECONDITION,
                           "the read's bytes were taken");
  }
  hrx_batch_thread_observed();
  hrx_backend_device_t* backend = hrx_device_backend(readback->device);
  if (readback->transfer && readback->into && !readback->pinned_use &&
      !nonblocking) {
    hrx_readback_drain_landed(readback, hrx_readback_copy_landed_into, NULL,
                              hook, out_interrupted);
    if (*out_interrupted) return NULL;
  }
  if (readback->transfer) {
    if (atomic_load(&readback->transfer->state) == HRX_PACED_HELD) {
      if (nonblocking) return hrx_would_block("the read's held chunks");
      if (!hrx_pacer_wait_transfer(hrx_device_pacer(readback->device),
                                   readback->transfer, hook,
                                   out_interrupted)) {
        return NULL;
      }
    }
    hrx_status_t failure = hrx_readback_paced_failure(readback);
    if (failure && readback->pinned_use) {
      /* Chunks before the failing one may still write the caller's
       * memory: the failure is raised once they are done. */
      if (nonblocking) {
        bool done = atomic_load(&readback->transfer->settled);
        if (done) {
          hrx_status_free(backend->vtable->event.query(
              backend, readback->block->event, &done));
        }
        if (!done) {
          hrx_status_free(failure);
          return hrx_would_block("a failed read's earlier chunks");
        }
      } else {
        hrx_pacer_wait_settled(hrx_device_pacer(readback->device),
                               readback->transfer);
        hrx_status_free(hrx_wait_native_event(
            backend, readback->block->event, NULL, NULL));
      }
    }
    if (failure) return failure;
  }
  if (nonblocking) {
    /* Done: the wait itself answers at once (as in a blocking call). */
    bool done = false;
    HRX_RETURN_IF_ERROR(backend->vtable->event.query(
        backend, readback->block->event, &done));
    if (done) {
      HRX_RETURN_IF_ERROR(backend->vtable->event.wait(
          backend, readback->block->event, 0, &done));
    }
    if (!done) return hrx_would_block("the read");
    if (readback->into &&
        readback->length > HRX_READBACK_NONBLOCKING_COPY_MAX_BYTES) {
      pthread_mutex_lock(&readback->into_mutex);
      bool copied = readback->into_copied;
      pthread_mutex_unlock(&readback->into_mutex);
      if (!copied) return hrx_would_block("a large read's copy into out");
    }
  } else {
    HRX_RETURN_IF_ERROR(hrx_wait_native_event(
        backend, readback->block->event, hook, out_interrupted));
    if (*out_interrupted) return NULL;
  }
  if (readback->into) {
    hrx_readback_fill_into(readback);
    *out_bytes = readback->into;
  } else {
    *out_bytes = readback->block->memory;
    atomic_store(&readback->waited, true);
  }
  return NULL;
}

hrx_status_t hrx_readback_wait_copy(hrx_readback_t* readback, void* out,
                                    const hrx_wait_hook_t* hook,
                                    bool* out_interrupted) {
  bool interrupted = false;
  if (!out_interrupted) out_interrupted = &interrupted;
  *out_interrupted = false;
  if (readback->into) {
    return hrx_make_status(HRX_STATUS_FAILED_PRECONDITION,
                           "a read into caller memory (read_into) lands "
                           "there: wait for it with hrx_readback_wait");
  }
  bool nonblocking;
  HRX_RETURN_IF_ERROR(hrx_entry_check_mode(readback->device,
                                           HRX_ENTRY_BLOCKING,
                                           "waiting for a read", &nonblocking));
  if (nonblocking) {
    return hrx_make_status(HRX_STATUS_FAILED_PRECONDITION,
                           "a read's wait and copy blocks: make it outside "
                           "non-blocking mode");
  }
  hrx_readback_copy_target_t target = {out, 0};
  if (readback->transfer && readback->block) {
    hrx_readback_drain_landed(readback, hrx_readback_copy_landed_out, &target,
                              hook, out_interrupted);
    if (*out_interrupted) return NULL;
  }
  const uint8_t* bytes = NULL;
  HRX_RETURN_IF_ERROR(
      hrx_readback_wait(readback, hook, &bytes, out_interrupted));
  if (*out_interrupted) return NULL;
  /* What landed after the drain (all of an unpaced read). */
  hrx_readback_copy_span(readback, target.out, &target.drained,
                         readback->length);
  return NULL;
}

hrx_status_t hrx_readback_take(hrx_readback_t* readback, void** out_ptr,
                               hrx_device_t** out_device) {
  if (readback->into || !readback->block || !atomic_load(&readback->waited)) {
    return hrx_make_status(HRX_STATUS_FAILED_PRECONDITION,
                           "only a complete read's bytes (Stream.read, "
                           "after its wait) can be taken, once");
  }
  hrx_device_t* device = readback->device;
  HRX_RETURN_IF_ERROR(hrx_pinned_adopt(hrx_device_pinned(device),
                                       readback->block,
                                       hrx_device_staging(device),
                                       readback->length));
  *out_ptr = readback->block->memory;
  readback->block = NULL;
  hrx_device_retain(device);
  *out_device = device;
  return NULL;
}

static void hrx_readback_release_deferred_object(void* readback) {
  hrx_readback_release_deferred(readback);
}

void hrx_readback_release_deferred(hrx_readback_t* readback) {
  if (!readback) return;
  if (hrx_entry_release(readback->device,
                        hrx_readback_release_deferred_object, readback)) {
    return;
  }
  if (!readback->block) {
    hrx_readback_free(readback, true); /* its bytes were taken */
    return;
  }
  if (readback->transfer &&
      atomic_load(&readback->transfer->state) != HRX_PACED_PUBLISHED) {
    hrx_readback_free(readback, false);
    return;
  }
  bool done = false;
  hrx_backend_device_t* backend = hrx_device_backend(readback->device);
  hrx_status_t status =
      backend->vtable->event.query(backend, readback->block->event, &done);
  hrx_readback_free(readback, !status && done);
  hrx_status_free(status);
}

hrx_status_t hrx_stream_read_blocking(hrx_stream_t* stream, hrx_view_t src,
                                      void* out, uint64_t capacity,
                                      const hrx_wait_hook_t* hook,
                                      bool* out_interrupted) {
  bool interrupted = false;
  if (!out_interrupted) out_interrupted = &interrupted;
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
  /* The gate's wait takes the hook, like every wait of this call. */
  HRX_RETURN_IF_ERROR(
      hrx_stream_wait_completions(stream, hook, out_interrupted));
  if (*out_interrupted) return NULL;
  /* Straight into `out`: a paced read's chunks are copied there as they
   * land (hrx_readback_wait). */
  hrx_readback_t* readback = NULL;
  HRX_RETURN_IF_ERROR(hrx_stream_read_to(stream, src, out, &readback));
  const uint8_t* bytes = NULL;
  hrx_status_t status =
      hrx_readback_wait(readback, hook, &bytes, out_interrupted);
  if (!status && *out_interrupted) {
    /* A direct read still writes `out`: wait for it, so that nothing does
     * after the call returns. */
    if (readback->pinned_use) {
      hrx_readback_release(readback);
    } else {
      hrx_readback_release_deferred(readback);
    }
    return NULL;
  }
  hrx_readback_free(readback, status == NULL);
  return status;
}
