#include "hip_staging.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>

#include "base/nonblocking.h"
#include "base/streaming_copy.h"

typedef enum hrx_hip_use_e {
  HRX_HIP_USE_FREE = 0,
  HRX_HIP_USE_RESERVED,  /* being filled and submitted by one upload */
  HRX_HIP_USE_RECORDED,  /* its fence event follows its copy */
  HRX_HIP_USE_RELEASED,  /* nothing reads it any more; reclaim at once */
} hrx_hip_use_t;

/* One ring slice; fences[seq % HRX_HIP_STAGING_FENCES] for seq in
 * [first_seq, first_seq + count), oldest first. The slice runs from `begin`
 * to the next fence's begin (or the ring's head).
 *
 * Reclaiming by querying each fence's event would cost one native query per
 * upload, so a completed fence also vouches for older ones: `cover_seq` is
 * the newest fence of the same stream such that it and every older fence of
 * that stream were already submitted when this one was reserved; they were
 * therefore ahead of this fence's event on the stream. */
typedef struct hrx_hip_fence_s {
  hrx_hip_event_t event;    /* owned; created on the slot's first use */
  hrx_hip_stream_t stream;  /* borrowed; identity only */
  uint64_t seq;
  uint64_t cover_seq;       /* 0: covers no older fence */
  uint64_t begin;
  hrx_hip_use_t use;
  bool done;                /* known complete */
} hrx_hip_fence_t;

typedef struct hrx_hip_block_s {
  struct hrx_hip_block_s* next;
  uint8_t* memory;        /* owned, pinned */
  uint64_t size;
  hrx_hip_event_t event;  /* owned */
  hrx_hip_use_t use;      /* FREE, RESERVED or RECORDED */
} hrx_hip_block_t;

struct hrx_hip_staging_s {
  bool streaming;  /* immutable: large copies into staging bypass caches */
  pthread_mutex_t mutex;
  /* Everything below is guarded by mutex. */
  uint8_t* ring;  /* owned, pinned, HRX_HIP_STAGING_RING_BYTES; lazily */
  uint64_t head;  /* next free offset */
  hrx_hip_fence_t fences[HRX_HIP_STAGING_FENCES];
  uint64_t first_seq;  /* oldest live fence; sequence numbers start at 1 */
  uint32_t count;
  uint32_t reserved;   /* live fences in use RESERVED */
  hrx_hip_block_t* blocks;  /* owned list */
  uint64_t free_block_bytes;
};

/* True once the event's last record is done. A failed query (a lost device)
 * also counts as done: nothing on the device will read staging again. */
static bool hrx_hip_event_done(hrx_hip_event_t event) {
  return hrx_hip_rt.sym.EventQuery(event) !=
         hrx_hip_rt.platform->error_not_ready;
}

hrx_status_t hrx_hip_staging_create(bool streaming,
                                    hrx_hip_staging_t** out_staging) {
  hrx_hip_staging_t* staging = calloc(1, sizeof(*staging));
  if (!staging) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate upload staging");
  }
  staging->streaming = streaming;
  pthread_mutex_init(&staging->mutex, NULL);
  staging->first_seq = 1;
  *out_staging = staging;
  return NULL;
}

/* Copies an upload's bytes into its staging (outside the mutex). */
static void hrx_hip_staging_fill(const hrx_hip_staging_t* staging,
                                 void* staged, const void* src,
                                 uint64_t length) {
  hrx_host_copy(staged, src, (size_t)length,
                staging->streaming &&
                    length >= HRX_HIP_STAGING_STREAMING_MIN_BYTES);
}

static void hrx_hip_blocks_free(hrx_hip_block_t* list) {
  while (list) {
    hrx_hip_block_t* next = list->next;
    hrx_hip_rt.sym.EventDestroy(list->event);
    hrx_hip_rt.sym.HostFree(list->memory);
    free(list);
    list = next;
  }
}

void hrx_hip_staging_destroy(hrx_hip_staging_t* staging) {
  if (!staging) return;
  for (uint32_t i = 0; i < HRX_HIP_STAGING_FENCES; ++i) {
    if (staging->fences[i].event) {
      hrx_hip_rt.sym.EventDestroy(staging->fences[i].event);
    }
  }
  if (staging->ring) hrx_hip_rt.sym.HostFree(staging->ring);
  hrx_hip_blocks_free(staging->blocks);
  pthread_mutex_destroy(&staging->mutex);
  free(staging);
}

/* ------------------------------------------------------------------ ring */

static hrx_hip_fence_t* hrx_hip_fence_at(hrx_hip_staging_t* staging,
                                         uint64_t seq) {
  return &staging->fences[seq % HRX_HIP_STAGING_FENCES];
}

/* The newest fence in (fence->seq, limit] of fence's stream, RECORDED and
 * covering fence; NULL if none. */
static hrx_hip_fence_t* hrx_hip_fence_witness_locked(
    hrx_hip_staging_t* staging, const hrx_hip_fence_t* fence, uint64_t limit) {
  for (uint64_t seq = limit; seq > fence->seq; --seq) {
    hrx_hip_fence_t* newer = hrx_hip_fence_at(staging, seq);
    if (newer->stream == fence->stream &&
        newer->use == HRX_HIP_USE_RECORDED && newer->cover_seq >= fence->seq) {
      return newer;
    }
  }
  return NULL;
}

/* Settles whether `fence` (RECORDED) is complete. A completed newer fence
 * that covers it settles it and everything else it covers; witnesses are
 * probed from the newest back towards `fence`, halving the distance, so a
 * burst of uploads on one stream costs O(log n) queries, not n. */
static bool hrx_hip_fence_settle_locked(hrx_hip_staging_t* staging,
                                        hrx_hip_fence_t* fence) {
  uint64_t last = staging->first_seq + staging->count - 1;
  uint64_t span = last - fence->seq;
  hrx_hip_fence_t* probed = NULL;
  while (span > 0) {
    hrx_hip_fence_t* witness =
        hrx_hip_fence_witness_locked(staging, fence, fence->seq + span);
    if (!witness) break;
    if (witness != probed) {
      probed = witness;
      if (hrx_hip_event_done(witness->event)) {
        witness->done = true;
        for (uint64_t s = fence->seq; s <= witness->cover_seq; ++s) {
          hrx_hip_fence_t* older = hrx_hip_fence_at(staging, s);
          if (older->stream == fence->stream) older->done = true;
        }
        return true;
      }
    }
    span = (witness->seq - fence->seq) / 2;
  }
  fence->done = hrx_hip_event_done(fence->event);
  return fence->done;
}

/* Pops completed fences from the front. Called only when a reservation
 * fails, so that a burst of uploads costs a few queries, not one each. */
static void hrx_hip_ring_reclaim_locked(hrx_hip_staging_t* staging) {
  while (staging->count > 0) {
    hrx_hip_fence_t* fence = hrx_hip_fence_at(staging, staging->first_seq);
    if (fence->use == HRX_HIP_USE_RESERVED) break;
    if (fence->use == HRX_HIP_USE_RECORDED && !fence->done &&
        !hrx_hip_fence_settle_locked(staging, fence)) {
      break;
    }
    fence->use = HRX_HIP_USE_FREE;
    ++staging->first_seq;
    --staging->count;
  }
  if (staging->count == 0) staging->head = 0;
}

/* Takes `size` bytes (aligned, at most the ring's size) and a fence slot
 * for an upload on `stream`. Live slices occupy [tail, head) modulo the
 * ring; head never reaches tail from behind, so head == tail only when the
 * ring is empty. */
static bool hrx_hip_ring_reserve_locked(hrx_hip_staging_t* staging,
                                        hrx_hip_stream_t stream,
                                        uint64_t size, uint64_t* out_seq,
                                        uint64_t* out_offset) {
  if (staging->count == HRX_HIP_STAGING_FENCES) return false;
  uint64_t begin;
  if (staging->count == 0) {
    begin = 0;
  } else {
    uint64_t tail = hrx_hip_fence_at(staging, staging->first_seq)->begin;
    if (staging->head >= tail) {
      if (staging->head + size <= HRX_HIP_STAGING_RING_BYTES) {
        begin = staging->head;
      } else if (size < tail) {
        begin = 0;
      } else {
        return false;
      }
    } else if (staging->head + size < tail) {
      begin = staging->head;
    } else {
      return false;
    }
  }
  uint64_t seq = staging->first_seq + staging->count;
  uint64_t cover_seq = 0;
  if (staging->reserved == 0) {
    /* Every older fence is submitted: the newest of this stream covers. */
    for (uint64_t s = seq - 1; s >= staging->first_seq && s > 0; --s) {
      if (hrx_hip_fence_at(staging, s)->stream == stream) {
        cover_seq = s;
        break;
      }
    }
  } else {
    for (uint64_t s = staging->first_seq; s < seq; ++s) {
      hrx_hip_fence_t* older = hrx_hip_fence_at(staging, s);
      if (older->stream != stream) continue;
      if (older->use == HRX_HIP_USE_RESERVED) break;
      cover_seq = s;
    }
  }
  hrx_hip_fence_t* fence = hrx_hip_fence_at(staging, seq);
  fence->stream = stream;
  fence->seq = seq;
  fence->cover_seq = cover_seq;
  fence->begin = begin;
  fence->use = HRX_HIP_USE_RESERVED;
  fence->done = false;
  ++staging->count;
  ++staging->reserved;
  staging->head = begin + size;
  *out_seq = seq;
  *out_offset = begin;
  return true;
}

/* Ends fence `seq`'s RESERVED state. */
static void hrx_hip_ring_set_use(hrx_hip_staging_t* staging, uint64_t seq,
                                 hrx_hip_use_t use) {
  pthread_mutex_lock(&staging->mutex);
  hrx_hip_fence_at(staging, seq)->use = use;
  --staging->reserved;
  pthread_mutex_unlock(&staging->mutex);
}

/* Issues the copy from staging and records `event` after it. Returns the
 * use the staging is left in: RECORDED, or RELEASED when nothing reads it.
 * *out_status is set when nothing was submitted, or when the copy could be
 * neither fenced nor waited for (the device has failed). */
static hrx_hip_use_t hrx_hip_staging_submit(hrx_hip_stream_t stream,
                                            void* dst, const void* staged,
                                            uint64_t length,
                                            hrx_hip_event_t event,
                                            hrx_status_t* out_status) {
  const hrx_hip_runtime_t* rt = &hrx_hip_rt;
  hrx_hip_error_t err =
      rt->sym.MemcpyAsync(dst, staged, (size_t)length,
                          rt->platform->memcpy_host_to_device, stream);
  if (!hrx_hip_ok(err)) {
    *out_status = HRX_HIP_ERROR(DEVICE_ERROR, MemcpyAsync, err);
    return HRX_HIP_USE_RELEASED;
  }
  err = rt->sym.EventRecord(event, stream);
  if (hrx_hip_ok(err)) return HRX_HIP_USE_RECORDED;
  /* The copy is published but cannot be fenced: wait for it instead. */
  hrx_hip_error_t sync_err = rt->sym.StreamSynchronize(stream);
  if (!hrx_hip_ok(sync_err)) {
    *out_status = HRX_HIP_ERROR(DEVICE_ERROR, EventRecord, err);
  }
  return HRX_HIP_USE_RELEASED;
}

static hrx_status_t hrx_hip_staging_upload_ring(hrx_hip_staging_t* staging,
                                                hrx_hip_stream_t stream,
                                                void* dst, const void* src,
                                                uint64_t length) {
  const hrx_hip_runtime_t* rt = &hrx_hip_rt;
  uint64_t size = (length + HRX_HIP_STAGING_ALIGNMENT - 1) &
                  ~(uint64_t)(HRX_HIP_STAGING_ALIGNMENT - 1);
  uint64_t seq = 0;
  uint64_t offset = 0;

  pthread_mutex_lock(&staging->mutex);
  if (!staging->ring && hrx_nonblocking()) {
    pthread_mutex_unlock(&staging->mutex);
    return hrx_would_block("upload staging memory to be allocated");
  }
  if (!staging->ring) {
    void* ring = NULL;
    hrx_hip_error_t err = rt->sym.HostAlloc(
        &ring, (size_t)HRX_HIP_STAGING_RING_BYTES,
        rt->platform->host_alloc_default);
    if (!hrx_hip_ok(err)) {
      pthread_mutex_unlock(&staging->mutex);
      return HRX_HIP_ERROR(DEVICE_ERROR, HostAlloc, err);
    }
    staging->ring = ring;
  }
  while (!hrx_hip_ring_reserve_locked(staging, stream, size, &seq, &offset)) {
    hrx_hip_ring_reclaim_locked(staging);
    if (hrx_hip_ring_reserve_locked(staging, stream, size, &seq, &offset)) {
      break;
    }
    if (hrx_nonblocking()) {
      pthread_mutex_unlock(&staging->mutex);
      return hrx_would_block("upload staging held by copies in flight");
    }
    /* Full of copies in flight: wait for the oldest, outside the lock. */
    hrx_hip_fence_t* oldest = hrx_hip_fence_at(staging, staging->first_seq);
    hrx_hip_event_t wait_on =
        oldest->use == HRX_HIP_USE_RECORDED ? oldest->event : NULL;
    pthread_mutex_unlock(&staging->mutex);
    if (wait_on) {
      rt->sym.EventSynchronize(wait_on);
    } else {
      sched_yield();
    }
    pthread_mutex_lock(&staging->mutex);
  }
  hrx_hip_fence_t* fence = hrx_hip_fence_at(staging, seq);
  if (!fence->event) {
    hrx_hip_error_t err = rt->sym.EventCreateWithFlags(
        &fence->event, rt->platform->event_disable_timing);
    if (!hrx_hip_ok(err)) {
      fence->event = NULL;
      fence->use = HRX_HIP_USE_RELEASED;
      --staging->reserved;
      pthread_mutex_unlock(&staging->mutex);
      return HRX_HIP_ERROR(DEVICE_ERROR, EventCreateWithFlags, err);
    }
  }
  hrx_hip_event_t event = fence->event;
  uint8_t* staged = staging->ring + offset;
  pthread_mutex_unlock(&staging->mutex);

  hrx_hip_staging_fill(staging, staged, src, length);
  hrx_status_t status = NULL;
  hrx_hip_use_t use =
      hrx_hip_staging_submit(stream, dst, staged, length, event, &status);
  hrx_hip_ring_set_use(staging, seq, use);
  return status;
}

/* ---------------------------------------------------------------- blocks */

/* Marks completed blocks free, takes the smallest free block of at least
 * `length` bytes (or NULL), and unlinks free blocks beyond the cache budget
 * into *out_surplus for the caller to free outside the lock. */
static hrx_hip_block_t* hrx_hip_blocks_take_locked(
    hrx_hip_staging_t* staging, uint64_t length,
    hrx_hip_block_t** out_surplus) {
  hrx_hip_block_t* best = NULL;
  for (hrx_hip_block_t* block = staging->blocks; block; block = block->next) {
    if (block->use == HRX_HIP_USE_RECORDED && hrx_hip_event_done(block->event)) {
      block->use = HRX_HIP_USE_FREE;
      staging->free_block_bytes += block->size;
    }
    if (block->use == HRX_HIP_USE_FREE && block->size >= length &&
        (!best || block->size < best->size)) {
      best = block;
    }
  }
  if (best) {
    best->use = HRX_HIP_USE_RESERVED;
    staging->free_block_bytes -= best->size;
  }
  hrx_hip_block_t** link = &staging->blocks;
  while (*link &&
         staging->free_block_bytes > HRX_HIP_STAGING_BLOCK_CACHE_BYTES) {
    hrx_hip_block_t* block = *link;
    if (block->use == HRX_HIP_USE_FREE) {
      *link = block->next;
      staging->free_block_bytes -= block->size;
      block->next = *out_surplus;
      *out_surplus = block;
    } else {
      link = &block->next;
    }
  }
  return best;
}

static hrx_status_t hrx_hip_block_create(uint64_t length,
                                         hrx_hip_block_t** out_block) {
  const hrx_hip_runtime_t* rt = &hrx_hip_rt;
  hrx_hip_block_t* block = calloc(1, sizeof(*block));
  if (!block) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate an upload staging block");
  }
  block->size = (length + HRX_HIP_STAGING_BLOCK_GRANULE - 1) &
                ~(uint64_t)(HRX_HIP_STAGING_BLOCK_GRANULE - 1);
  void* memory = NULL;
  hrx_hip_error_t err = rt->sym.HostAlloc(&memory, (size_t)block->size,
                                          rt->platform->host_alloc_default);
  if (!hrx_hip_ok(err)) {
    free(block);
    return HRX_HIP_ERROR(DEVICE_ERROR, HostAlloc, err);
  }
  block->memory = memory;
  err = rt->sym.EventCreateWithFlags(&block->event,
                                     rt->platform->event_disable_timing);
  if (!hrx_hip_ok(err)) {
    rt->sym.HostFree(block->memory);
    free(block);
    return HRX_HIP_ERROR(DEVICE_ERROR, EventCreateWithFlags, err);
  }
  block->use = HRX_HIP_USE_RESERVED;
  *out_block = block;
  return NULL;
}

static hrx_status_t hrx_hip_staging_upload_block(hrx_hip_staging_t* staging,
                                                 hrx_hip_stream_t stream,
                                                 void* dst, const void* src,
                                                 uint64_t length) {
  hrx_hip_block_t* surplus = NULL;
  pthread_mutex_lock(&staging->mutex);
  hrx_hip_block_t* block =
      hrx_hip_blocks_take_locked(staging, length, &surplus);
  pthread_mutex_unlock(&staging->mutex);
  hrx_hip_blocks_free(surplus);
  if (!block) {
    HRX_RETURN_IF_ERROR(hrx_hip_block_create(length, &block));
    pthread_mutex_lock(&staging->mutex);
    block->next = staging->blocks;
    staging->blocks = block;
    pthread_mutex_unlock(&staging->mutex);
  }

  hrx_hip_staging_fill(staging, block->memory, src, length);
  hrx_status_t status = NULL;
  hrx_hip_use_t use = hrx_hip_staging_submit(stream, dst, block->memory,
                                             length, block->event, &status);
  pthread_mutex_lock(&staging->mutex);
  if (use == HRX_HIP_USE_RECORDED) {
    block->use = HRX_HIP_USE_RECORDED;
  } else {
    block->use = HRX_HIP_USE_FREE;
    staging->free_block_bytes += block->size;
  }
  pthread_mutex_unlock(&staging->mutex);
  return status;
}

hrx_status_t hrx_hip_staging_upload(hrx_hip_staging_t* staging,
                                    hrx_hip_stream_t stream, void* dst,
                                    const void* src, uint64_t length) {
  if (length <= HRX_HIP_STAGING_RING_MAX_UPLOAD) {
    return hrx_hip_staging_upload_ring(staging, stream, dst, src, length);
  }
  if (hrx_nonblocking()) {
    return hrx_would_block("a pinned staging block for a large upload");
  }
  return hrx_hip_staging_upload_block(staging, stream, dst, src, length);
}
