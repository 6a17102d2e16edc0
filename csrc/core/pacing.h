/* Transfer pacing: bulk transfers of the normal and low lanes are split into
 * chunks, and a chunk is published only while the device's published,
 * unfinished paced work in its direction (host to device, device to host)
 * stays within a window. Copy engines ignore stream
 * priority and nothing overtakes a transfer once it is queued, so holding
 * the rest on the host is what lets a high-priority or reserved stream's
 * transfer reach the engine after at most about one window. Internal to
 * the core.
 *
 * Which transfers are paced: an upload or read of at least one
 * chunk (chunk_bytes), on a stream that is neither high-priority nor
 * reserved, while the device's settings have chunking on. Device copies
 * are not paced: they run on the compute units (hip) or the host engines,
 * whose schedulers already prefer high-priority work, and a chunk of one
 * takes about as long as the pacer's round trip on a GPU (a 4 MiB copy
 * runs in a few microseconds at the H200's device bandwidth), so pacing
 * them would cost their bandwidth and buy nothing. Others are
 * published as before and never counted against the window.
 *
 * Held work: a paced transfer is appended to its stream's held list
 * (hrx_pace_entry_t) and the call returns at once. Whoever finds room in the
 * window publishes: the submitting thread for the first chunks, then the
 * pacer's threads as chunks complete. The window admits a chunk when the
 * direction's paced bytes in flight plus the chunk fit in window_bytes, and
 * always when nothing of that direction is in flight. Streams with held
 * work are served round-robin, one chunk at a time, so a new transfer of
 * another normal stream waits for the next free chunk, not for every
 * backlog.
 *
 * Yielding to urgent transfers: a host transfer published at once on a
 * stream that is exempt by its kind (high-priority or reserved) may still
 * queue behind paced chunks on the engine: a copy engine runs a stream's
 * queued copies back to back and turns to another stream when that one
 * runs dry, so with one queue, whose stream the pacer keeps fed, the
 * urgent transfer would wait for the whole backlog. So such a transfer
 * makes the pacer yield its direction (hrx_pacer_yield): no new chunk of
 * that direction is published until the chunks in flight then have
 * completed and HRX_PACE_YIELD_GRACE_NS more have passed, in which the
 * engine, with nothing paced left, takes the urgent transfer. A yield
 * depends only on chunks already in flight, never on the urgent transfer
 * itself, so it cannot wait for work that waits for the backlog; it
 * costs the backlog the grace and the pacer's turnaround once per urgent
 * transfer that finds chunks in flight.
 *
 * Completion: an event is recorded after every chunk. One thread per
 * direction, started with the direction's first chunk, waits for the
 * direction's oldest chunk in flight, then publishes held chunks that fit
 * (of any direction), so one direction's completions never wait behind
 * another's.
 *
 * A stream's order: only transfers are held. A stream keeps its held list
 * in submission order and publishes it in order, chunk after chunk; the
 * stream's publication (publication.h) makes every other command of a stream with held
 * work wait until its held list is published.
 *
 * Lock order: the stream's publish_lock and batch_mutex (batching.h) come
 * before the pacer's mutex; no pacer lock is held while a stream lock is
 * taken or a backend call is made. The entry ops are called without the
 * pacer's mutex.
 *
 * Lifetimes: a transfer is reference counted; its held list, each chunk in
 * flight and a readback hold references. Its owned host copy (an upload's
 * data) and an adopted staging block are given back when the last
 * reference goes, which is after its last chunk completed or after it was
 * dropped. An upload's copy is made once, at the call, into a staging
 * block from the device's pool (staging.h), and each chunk is an
 * asynchronous copy from that block (the backend's upload_pinned): no
 * second host copy per chunk. A large upload is held before its copy is
 * made and its chunks published as the copy threads fill them
 * (staged_transfer.h, the transfer's staged_bytes). Buffers are not
 * retained: a buffer's release and device synchronize wait until nothing
 * is held (hrx_pacer_wait_idle), and the backend's free then waits for the
 * published chunks like for any work.
 *
 * Environment (read when a live device is created; environment.h):
 *   HRX_CHUNKING            1 on (default), 0 off
 *   HRX_CHUNK_BYTES         chunk size (default HRX_CHUNK_DEFAULT_BYTES,
 *                           HRX_CHUNK_MIN_BYTES .. HRX_CHUNK_MAX_BYTES)
 *   HRX_CHUNK_WINDOW_BYTES  paced bytes in flight per direction (default
 *                           HRX_CHUNK_DEFAULT_WINDOW_CHUNKS chunks; at
 *                           least one chunk, at most HRX_CHUNK_MAX_BYTES *
 *                           HRX_CHUNK_MAX_WINDOW_CHUNKS)
 *
 * Thread-safe. Never touches Python. */
#ifndef HRX_CORE_PACING_H_
#define HRX_CORE_PACING_H_

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "hal/device.h"
#include "hrx.h"
#include "staging.h"

/* Defaults: single constants, chosen from the calibration by pool size
 * (bench/scripts/h200_chunking.py --queues; bench/results/h100/README.md):
 * chunks of 2 MiB, two in flight. A window of two chunks keeps the copy
 * engine fed while the pacer turns from a finished chunk to the next, so
 * backlogs of pinned memory (a 4 MiB chunk lasts about 78 us at PCIe 5
 * rates) keep their unpaced rate; 4 MiB in flight keeps an urgent
 * transfer's wait behind them within its target at every queue count. */
#define HRX_CHUNK_DEFAULT_BYTES (2ull << 20)
#define HRX_CHUNK_DEFAULT_WINDOW_CHUNKS 2ull
#define HRX_CHUNK_MIN_BYTES (64ull << 10)
#define HRX_CHUNK_MAX_BYTES (1ull << 30)
#define HRX_CHUNK_MAX_WINDOW_CHUNKS 64ull
/* After the chunks ahead of an urgent transfer completed, how long the
 * pacer keeps the engine free of paced work of that direction: time for
 * the engine to start the urgent copy, which nothing then overtakes. */
#define HRX_PACE_YIELD_GRACE_NS 20000ull

typedef struct hrx_chunk_settings_s {
  bool enabled;
  uint64_t chunk_bytes;   /* [HRX_CHUNK_MIN_BYTES, HRX_CHUNK_MAX_BYTES] */
  uint64_t window_bytes;  /* at least chunk_bytes */
} hrx_chunk_settings_t;

/* Reads the variables above: a malformed or out-of-range value, or a window
 * below one chunk, is INVALID_ARGUMENT naming it (the device does not
 * open). */
hrx_status_t hrx_chunk_settings_from_environment(
    hrx_chunk_settings_t* out_settings);

typedef enum hrx_pace_direction_e {
  HRX_PACE_TO_DEVICE = 0,  /* upload */
  HRX_PACE_TO_HOST,        /* read */
  HRX_PACE_DIRECTIONS,
} hrx_pace_direction_t;

typedef enum hrx_paced_state_e {
  HRX_PACED_HELD = 0,   /* chunks left to publish */
  HRX_PACED_PUBLISHED,  /* every chunk published */
  HRX_PACED_DROPPED,    /* not (fully) run: a chunk failed, or the stream had
                           failed; `failure` says why for an observing one */
} hrx_paced_state_t;

/* One paced transfer. The creator fills the fields up to `what`; the rest
 * belong to the pacer. */
typedef struct hrx_paced_transfer_s {
  atomic_int ref_count;
  hrx_pace_direction_t direction;
  uint8_t* dst;                  /* device memory, or read staging */
  const uint8_t* src;            /* device memory, or `source_block` */
  uint64_t length;
  uint64_t number;               /* the stream's command number */
  const char* what;              /* "upload", "read" (static) */
  /* An observation point (read): its failure is kept in `failure` for the
   * readback instead of failing the stream. */
  bool observes;
  /* An upload's copy of the caller's data: a staging block (pinned on
   * GPUs), published with upload_pinned and given back to `staging` when
   * the last reference goes (every chunk completed or was never
   * published). */
  hrx_staging_block_t* source_block;  /* owned, or NULL */
  hrx_staging_pool_t* staging;   /* borrowed; with a block */
  hrx_staging_block_t* block;    /* borrowed (read): its event is recorded
                                    after the last chunk; owned once
                                    adopted */
  /* The prefix of `src` that may be published: all of it (UINT64_MAX, as
   * created) except for an upload whose staging is still being filled
   * (staged_transfer.h), which grows it and then publishes its entry.
   * A chunk is published only once it lies inside. */
  atomic_uint_fast64_t staged_bytes;
  /* A read's prefix of `dst` that the device has written: the end of its
   * last chunk seen complete, in order, by the direction's thread; and
   * whether a chunk's completion could not be confirmed (its wait failed:
   * nothing after it lands). Waited for with hrx_pacer_wait_landed. */
  atomic_uint_fast64_t landed_bytes;
  atomic_bool landing_failed;

  /* An upload of pinned host memory in place (pinned.h): chunks copy it
   * with upload_pinned directly, and on_release(release_arg) runs when the
   * last reference goes (every chunk completed or was never published),
   * to let the memory go. */
  bool host_pinned;
  void (*on_release)(void* release_arg);
  void* release_arg;
  /* A read into pinned host memory in place (pinned.h): `block` is the
   * read's own, naming that memory and the pinned use's event, and
   * on_recorded(recorded_arg) runs (once, on the recording thread, no lock
   * held) right after the block's event was recorded behind every chunk
   * the read published: after its last chunk, behind the chunks before a
   * failing one, or on its own when the read is dropped. NULL otherwise. */
  void (*on_recorded)(void* recorded_arg);
  void* recorded_arg;
  /* Set (under the pacer mutex) once no further chunk of the transfer
   * will be published and, for a read with a block, its event is recorded
   * behind those that were: then waiting for the block's event waits for
   * every chunk (hrx_pacer_wait_settled). */
  atomic_bool settled;
  /* The pacer's (its mutex): */
  uint64_t offset;               /* bytes published */
  atomic_int state;              /* hrx_paced_state_t */
  hrx_status_t failure;          /* owned; set before state leaves HELD */
  bool block_adopted;            /* given back when the last ref goes */
  struct hrx_paced_transfer_s* next;  /* the held list */
} hrx_paced_transfer_t;

/* A new transfer with one reference (the caller's); NULL when out of
 * memory. */
hrx_paced_transfer_t* hrx_paced_transfer_create(void);
void hrx_paced_transfer_retain(hrx_paced_transfer_t* transfer);
void hrx_paced_transfer_release(hrx_paced_transfer_t* transfer);

typedef struct hrx_pacer_s hrx_pacer_t;
typedef struct hrx_pace_entry_s hrx_pace_entry_t;

typedef struct hrx_pace_entry_ops_s {
  /* Takes the entry's publish lock (its stream's publish_lock), calls
   * hrx_pacer_publish_locked, and lets go. */
  void (*publish)(hrx_pace_entry_t* entry);
  /* Whether the entry's stream has failed: its held transfers are dropped
   * and counted as not run (skip). */
  bool (*failed)(hrx_pace_entry_t* entry);
  void (*skip)(hrx_pace_entry_t* entry, uint64_t count);
  /* A chunk of a transfer that does not observe failed: fail the stream by
   * the transfer's number and name, `skipped` held transfers after it
   * dropped. Takes `status`. */
  void (*fail)(hrx_pace_entry_t* entry, hrx_status_t status,
               const hrx_paced_transfer_t* transfer, uint64_t skipped);
  /* A transfer was published whole (the queue's statistics). */
  void (*published)(hrx_pace_entry_t* entry,
                    const hrx_paced_transfer_t* transfer);
} hrx_pace_entry_ops_t;

/* Embedded in a stream. `ops`, `backend` and `queue` are set by the owner;
 * the rest belongs to the pacer. */
struct hrx_pace_entry_s {
  const hrx_pace_entry_ops_t* ops;
  hrx_backend_device_t* backend;   /* borrowed */
  hrx_native_queue_t* queue;       /* borrowed */
  /* Held transfers, incremented by the owner under its batch lock before
   * hrx_pacer_hold, decremented when one leaves the held list. Lock-free
   * reads: zero means nothing of the stream is held. */
  atomic_uint held;
  hrx_paced_transfer_t* head;      /* pacer mutex */
  hrx_paced_transfer_t* tail;      /* pacer mutex */
  hrx_pace_entry_t* prev;          /* the pacer's round-robin list */
  hrx_pace_entry_t* next;
  bool listed;                     /* pacer mutex */
  int holds;                       /* pacer threads publishing it */
  /* Callers waiting for the held list to be published so that they can
   * publish a command behind it (pacer mutex). While any waits, a new
   * paced transfer of the stream waits too (hrx_pacer_wait_no_drainers),
   * so a thread that keeps adding transfers cannot keep them waiting. */
  int drainers;
};

hrx_status_t hrx_pacer_create(hrx_backend_device_t* backend,
                              const hrx_chunk_settings_t* settings,
                              hrx_pacer_t** out_pacer);
/* Waits for every chunk in flight, stops the threads and frees the chunk
 * events. Nothing is held (every stream is gone). */
void hrx_pacer_destroy(hrx_pacer_t* pacer);

const hrx_chunk_settings_t* hrx_pacer_settings(const hrx_pacer_t* pacer);

/* Whether a transfer of `length` bytes on a stream of `priority` (reserved
 * or not) is paced. */
bool hrx_pacer_paces(const hrx_pacer_t* pacer, uint64_t length, int priority,
                     bool reserved);

/* An unpaced upload (TO_DEVICE) or read (TO_HOST) was published on a
 * high-priority or reserved stream: the direction yields to it (above).
 * Nothing happens when no paced chunk of the direction is in flight.
 * Takes only the pacer's mutex; never waits. */
void hrx_pacer_yield(hrx_pacer_t* pacer, hrx_pace_direction_t direction);

/* Appends `transfer` (the held list takes the caller's reference) to the
 * entry's held list. The caller holds the entry's publish lock and has
 * counted it in entry->held; it then calls hrx_pacer_publish_locked. */
void hrx_pacer_hold(hrx_pacer_t* pacer, hrx_pace_entry_t* entry,
                    hrx_paced_transfer_t* transfer);

/* Publishes the entry's held chunks, in order, while the window has room
 * (the caller holds the entry's publish lock). Drops held transfers of a
 * failed stream. Fails only by reporting through the entry's ops. */
void hrx_pacer_publish_locked(hrx_pacer_t* pacer, hrx_pace_entry_t* entry);

/* Waits until the entry holds nothing and no pacer thread is publishing
 * it, in the hook's slices (hrx_wait_sliced); false when interrupted. The
 * caller holds none of the entry's locks. */
bool hrx_pacer_wait_drained(hrx_pacer_t* pacer, hrx_pace_entry_t* entry,
                            const hrx_wait_hook_t* hook,
                            bool* out_interrupted);
/* A caller begins and ends waiting for the entry's held list to be
 * published (see `drainers`): it ends once it holds the lock under which
 * the list grows (or gives up), so no transfer joins the list between its
 * wait and its command. */
void hrx_pacer_drain_begin(hrx_pacer_t* pacer, hrx_pace_entry_t* entry);
void hrx_pacer_drain_end(hrx_pacer_t* pacer, hrx_pace_entry_t* entry);
/* Before a paced transfer joins the entry's held list: waits while callers
 * wait for the list to drain. The caller holds none of the entry's locks. */
void hrx_pacer_wait_no_drainers(hrx_pacer_t* pacer, hrx_pace_entry_t* entry);
/* Waits until no entry of the device holds anything (device synchronize,
 * buffer release). */
bool hrx_pacer_wait_idle(hrx_pacer_t* pacer, const hrx_wait_hook_t* hook,
                         bool* out_interrupted);

/* Waits until `transfer` left its held list (published or dropped), in the
 * hook's slices; false when interrupted. */
bool hrx_pacer_wait_transfer(hrx_pacer_t* pacer,
                             hrx_paced_transfer_t* transfer,
                             const hrx_wait_hook_t* hook,
                             bool* out_interrupted);

/* Waits, without a hook, until the transfer is settled (above): for a
 * caller that must not return while a chunk may still write its memory. */
void hrx_pacer_wait_settled(hrx_pacer_t* pacer, hrx_paced_transfer_t* transfer);

/* Waits until the read's landed_bytes exceed `above`, it was dropped, or
 * its landing failed, in the hook's slices; false when interrupted. */
bool hrx_pacer_wait_landed(hrx_pacer_t* pacer, hrx_paced_transfer_t* transfer,
                           uint64_t above, const hrx_wait_hook_t* hook,
                           bool* out_interrupted);

/* For a readback released before its transfer was published: the transfer
 * takes over its staging block (given back, as pending, when the transfer's
 * last reference goes) and true is returned; false when the transfer
 * already left its held list (the caller gives the block back itself). */
bool hrx_pacer_adopt_block(hrx_pacer_t* pacer, hrx_paced_transfer_t* transfer);

#endif /* HRX_CORE_PACING_H_ */
