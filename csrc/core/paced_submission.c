/* Paced transfers on a stream (paced_submission.h). */
#include "paced_submission.h"

#include <stddef.h>

#include "base/nonblocking.h"
#include "base/status.h"
#include "live_device.h"
#include "staged_transfer.h"

#define HRX_PUBLICATION_OF_PACE(e) \
  ((hrx_publication_t*)((char*)(e) - offsetof(hrx_publication_t, pace_entry)))

/* ------------------------------------------------- the pacer's entry ops */

static void hrx_paced_publish(hrx_pace_entry_t* entry) {
  hrx_publication_t* publication = HRX_PUBLICATION_OF_PACE(entry);
  hrx_turn_lock(&publication->publish_lock);
  hrx_pacer_publish_locked(hrx_device_pacer(publication->device), entry);
  hrx_turn_unlock(&publication->publish_lock);
}

static bool hrx_paced_failed(hrx_pace_entry_t* entry) {
  return hrx_failure_held(&HRX_PUBLICATION_OF_PACE(entry)->failure);
}

static void hrx_paced_skip(hrx_pace_entry_t* entry, uint64_t count) {
  if (count) hrx_failure_skip(&HRX_PUBLICATION_OF_PACE(entry)->failure, count);
}

static void hrx_paced_fail(hrx_pace_entry_t* entry, hrx_status_t status,
                           const hrx_paced_transfer_t* transfer,
                           uint64_t skipped) {
  char what[96];
  hrx_failure_describe(transfer->what, transfer->length, what, sizeof(what));
  hrx_failure_record(&HRX_PUBLICATION_OF_PACE(entry)->failure, status,
                     transfer->number, what, skipped);
}

static void hrx_paced_published(hrx_pace_entry_t* entry,
                                const hrx_paced_transfer_t* transfer) {
  hrx_publication_count_published(HRX_PUBLICATION_OF_PACE(entry), 1,
                                  transfer->length);
}

static const hrx_pace_entry_ops_t hrx_paced_entry_ops = {
    .publish = hrx_paced_publish,
    .failed = hrx_paced_failed,
    .skip = hrx_paced_skip,
    .fail = hrx_paced_fail,
    .published = hrx_paced_published,
};

void hrx_paced_entry_initialize(hrx_publication_t* publication) {
  publication->pace_entry.ops = &hrx_paced_entry_ops;
}

/* ------------------------------------------------------------ holding */

bool hrx_paced_applies(hrx_publication_t* publication, uint64_t length,
                       int priority, bool reserved) {
  return hrx_pacer_paces(hrx_device_pacer(publication->device), length,
                         priority, reserved);
}

hrx_status_t hrx_paced_would_block(void) {
  return hrx_nonblocking() ? hrx_would_block("a paced transfer") : NULL;
}

/* Holds the transfer on the publication (takes the caller's reference),
 * numbers and counts it, and publishes what the window allows; returns at
 * once. On a failed stream with nothing held it is not run (an observing
 * one returns the stream's failure, as an unpaced read would). An
 * observing transfer whose first chunk failed here returns that failure; a
 * later chunk's failure stays in transfer->failure. Returns NULL for a
 * transfer that does not observe. */
static hrx_status_t hrx_paced_submit(hrx_publication_t* publication,
                                     hrx_paced_transfer_t* transfer) {
  hrx_pacer_t* pacer = hrx_device_pacer(publication->device);
  /* Callers waiting for the held list to drain go first. */
  hrx_pacer_wait_no_drainers(pacer, &publication->pace_entry);
  transfer->number = hrx_publication_lock_held(publication);
  /* A read also counts its completion event (as unpaced). */
  hrx_device_count_commands(publication->device, transfer->block ? 2 : 1);
  if (hrx_failure_held(&publication->failure) &&
      atomic_load(&publication->pace_entry.held) == 1) {
    /* Nothing of the stream is held before it: as an unpaced command on a
     * failed stream, it is not run, or (an observation point) raises the
     * failure. */
    atomic_fetch_sub(&publication->pace_entry.held, 1);
    atomic_store(&transfer->state, HRX_PACED_DROPPED);
    atomic_store(&transfer->settled, true);  /* nothing was published */
    hrx_status_t failure = NULL;
    if (transfer->observes) {
      failure = hrx_publication_take_failure(publication);
    } else {
      hrx_failure_skip(&publication->failure, 1);
    }
    hrx_publication_unlock(publication);
    hrx_paced_transfer_release(transfer);
    return failure;
  }
  /* The caller's reference goes to the held list, which may drop it while
   * publishing (a failed chunk): only an observation point keeps one of
   * its own to look at the transfer afterwards. */
  const bool observes = transfer->observes;
  if (observes) hrx_paced_transfer_retain(transfer);
  hrx_pacer_hold(pacer, &publication->pace_entry, transfer);
  hrx_pacer_publish_locked(pacer, &publication->pace_entry);
  hrx_publication_unlock(publication);
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

/* ---------------------------------------------------------- transfers */

/* A pipelined upload's fill (staged_transfer.h): the filled prefix may be
 * published. */
typedef struct {
  hrx_publication_t* publication;
  hrx_paced_transfer_t* transfer;  /* the filler's reference */
} hrx_paced_fill_t;

static void hrx_paced_fill_ready(void* user_data, uint64_t ready_bytes) {
  hrx_paced_fill_t* fill = user_data;
  uint_fast64_t staged = atomic_load(&fill->transfer->staged_bytes);
  while (staged < ready_bytes &&
         !atomic_compare_exchange_weak(&fill->transfer->staged_bytes, &staged,
                                       ready_bytes)) {
  }
  if (atomic_load(&fill->transfer->state) == HRX_PACED_HELD) {
    hrx_paced_publish(&fill->publication->pace_entry);
  }
}

hrx_status_t hrx_paced_upload(hrx_publication_t* publication, void* dst,
                              const void* data, uint64_t length) {
  hrx_paced_transfer_t* transfer = hrx_paced_transfer_create();
  if (!transfer) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a paced upload");
  }
  hrx_staging_pool_t* staging = hrx_device_staging(publication->device);
  hrx_status_t status =
      hrx_staging_acquire(staging, length, &transfer->source_block);
  if (status) {
    hrx_paced_transfer_release(transfer);
    return status;
  }
  transfer->staging = staging;
  transfer->direction = HRX_PACE_TO_DEVICE;
  transfer->dst = dst;
  transfer->src = transfer->source_block->memory;
  transfer->length = length;
  transfer->what = "upload";
  hrx_staged_copier_t* copier =
      hrx_device_staged_copier(publication->device);
  if (!hrx_staged_copier_applies(copier, length)) {
    /* The caller's thread alone (around the caches when large). */
    hrx_staged_copy(copier, transfer->source_block->memory, data, length, 0,
                    NULL, NULL);
    return hrx_paced_submit(publication, transfer);
  }
  /* Pipelined: held (in the stream's order) with nothing staged, then
   * filled piece by piece, each chunk published once it is staged. The
   * filler keeps a reference: the held list may drop its own. */
  atomic_store(&transfer->staged_bytes, 0);
  hrx_paced_transfer_retain(transfer);
  status = hrx_paced_submit(publication, transfer);
  if (!status && atomic_load(&transfer->state) == HRX_PACED_HELD) {
    hrx_paced_fill_t fill = {publication, transfer};
    /* Pieces of the copier's choice: a chunk goes once the pieces under
     * it are copied. */
    hrx_staged_copy(copier, transfer->source_block->memory, data, length, 0,
                    hrx_paced_fill_ready, &fill);
  }
  /* Dropped (the stream failed): not run, as unpaced; nothing to fill. */
  hrx_paced_transfer_release(transfer);
  return status;
}

hrx_status_t hrx_paced_upload_pinned(hrx_publication_t* publication,
                                     void* dst, const void* data,
                                     uint64_t length,
                                     void (*on_release)(void*),
                                     void* release_arg) {
  hrx_paced_transfer_t* transfer = hrx_paced_transfer_create();
  if (!transfer) {
    on_release(release_arg);
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a paced upload");
  }
  transfer->direction = HRX_PACE_TO_DEVICE;
  transfer->dst = dst;
  transfer->src = data;
  transfer->length = length;
  transfer->what = "upload";
  transfer->host_pinned = true;
  transfer->on_release = on_release;
  transfer->release_arg = release_arg;
  return hrx_paced_submit(publication, transfer);
}

/* A new read of `length` bytes from `src` into `block` (one reference,
 * the caller's); NULL when out of memory. */
static hrx_paced_transfer_t* hrx_paced_read_create(const void* src,
                                                   uint64_t length,
                                                   hrx_staging_block_t* block) {
  hrx_paced_transfer_t* transfer = hrx_paced_transfer_create();
  if (!transfer) return NULL;
  transfer->direction = HRX_PACE_TO_HOST;
  transfer->dst = block->memory;
  transfer->src = src;
  transfer->length = length;
  transfer->what = "read";
  transfer->observes = true;
  transfer->block = block;
  return transfer;
}

static hrx_status_t hrx_paced_read_no_memory(void) {
  return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                         "cannot allocate a paced read");
}

hrx_status_t hrx_paced_read(hrx_publication_t* publication, const void* src,
                            uint64_t length, hrx_staging_pool_t* staging,
                            hrx_staging_block_t* block,
                            hrx_paced_transfer_t** out_transfer) {
  hrx_paced_transfer_t* transfer = hrx_paced_read_create(src, length, block);
  if (!transfer) {
    hrx_staging_release(staging, block);
    return hrx_paced_read_no_memory();
  }
  transfer->staging = staging;
  hrx_paced_transfer_retain(transfer);
  hrx_status_t status = hrx_paced_submit(publication, transfer);
  if (status) {
    /* Chunks published before the failing one may still write the block:
     * it goes back as pending (its event follows them). */
    hrx_staging_release_pending(staging, block);
    hrx_paced_transfer_release(transfer);
    return status;
  }
  *out_transfer = transfer;
  return NULL;
}

hrx_status_t hrx_paced_read_pinned(hrx_publication_t* publication,
                                   const void* src, uint64_t length,
                                   hrx_staging_block_t* block,
                                   void (*on_recorded)(void*),
                                   void (*on_release)(void*), void* arg,
                                   hrx_paced_transfer_t** out_transfer) {
  hrx_paced_transfer_t* transfer = hrx_paced_read_create(src, length, block);
  if (!transfer) {
    on_release(arg);  /* nothing of it was queued */
    return hrx_paced_read_no_memory();
  }
  transfer->on_recorded = on_recorded;
  transfer->recorded_arg = arg;
  transfer->on_release = on_release;
  transfer->release_arg = arg;
  hrx_paced_transfer_retain(transfer);
  hrx_status_t status = hrx_paced_submit(publication, transfer);
  if (status) {
    /* Its last reference: on_release runs (the chunks published before
     * the failing one are behind the block's event, recorded). */
    hrx_paced_transfer_release(transfer);
    return status;
  }
  *out_transfer = transfer;
  return NULL;
}
