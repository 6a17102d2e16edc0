/* Submission batching, in one place: the settings a live device reads from
 * the environment, the policy that decides when a small copy or fill waits
 * in a stream's pending batch, the pending batch itself, publication of a
 * gathered batch through the backend, and the flusher thread that publishes
 * batches nobody else does. A stream's publication (publication.h) applies
 * the policy under its locks. Internal to the core.
 *
 * Policy (small copies and fills, and kernel launches where the device
 * batches them, while the device's switch is on):
 * - the calling thread has observed a stream (synchronize, record_event,
 *   read) since its last command, and nothing is pending on this stream:
 *   the command is published at once, alone; a thread alternating commands
 *   and waits is latency-bound, and holding its command back would only
 *   delay it by the caller's time until its next wait;
 * - the stream's queue is idle, and both the stream and the calling thread
 *   have been quiet for the batch delay: the same (idle latency);
 * - otherwise it joins the pending batch, which is published when it is
 *   full (commands or bytes), at any observation point or other command of
 *   the stream, or by the flusher once its first command has waited the
 *   delay. A thread that keeps submitting is never "quiet", so a thread
 *   that round-robins over many streams accumulates on each of them instead
 *   of publishing one command per launch (each stream alone would look
 *   quiet and idle by the time the thread comes back to it).
 *
 * Lock order: the publication's (publication.h), then the flusher's list
 * mutex (the streams with pending work). The flusher thread never
 * publishes while it holds its list mutex, and only try-locks a
 * publication's publish_lock (a stream busy publishing is retried at the
 * next delay).
 *
 * Environment (read when a live device is created):
 *   HRX_BATCHING             0 turns batching off for new live devices
 *                            (default 1; hrx_device_set_batching changes it
 *                            on a live device)
 *   HRX_BATCH_DELAY_US       the longest a command waits unpublished when
 *                            nothing else publishes it (default 20, 1..10000000)
 *   HRX_BATCH_MAX_COMMANDS   commands per batch (default and maximum
 *                            HRX_BATCH_MAX_COMMANDS; at least 2)
 *   HRX_BATCH_MAX_COPY_BYTES copies and fills above this go to the runtime's
 *                            own copy, one native call each (default 65536,
 *                            at most HRX_BATCH_MAX_COMMAND_BYTES); a batch
 *                            is also published once it holds 2 MiB
 *   HRX_BATCH_LAUNCHES       1 gathers kernel launches too (published with
 *                            the driver's launch_batch, hal/kernel.h), 0
 *                            publishes each launch alone; unset: the
 *                            driver's default (on for host and CUDA, off on
 *                            AMD's HIP). Without launch_batch it is off.
 *   HRX_BATCH_HOLD_US        the longest the flusher holds a stream's
 *                            partial batch past its delay while the
 *                            stream's queue still has two published
 *                            batches to run (batch_window.h); 0, the
 *                            default, never holds (0..10000000)
 *
 * The flusher: one thread per live device that publishes pending batches
 * whose oldest command has waited `delay_ns`, so batched work reaches its
 * queue within a bounded delay even when the program submits nothing more
 * and never synchronizes.
 *
 * Entries (streams) join the list the first time they batch and leave it
 * when they are released. The flusher never publishes while it holds its
 * list mutex: it marks the entries it will publish as held (under the
 * mutex), publishes them without it, then drops the holds;
 * hrx_flusher_remove waits until no hold is left, so an entry is never
 * freed under a publisher. The flusher thread only try-locks an entry
 * (try_publish): a stream whose publication is in progress (perhaps
 * waiting for queue space) is retried at the next delay, so one full queue
 * never delays the other streams' timed flushes.
 *
 * The thread starts with the first entry. While batches keep coming it
 * sleeps until the next deadline, or polls every delay when nothing is
 * pending; after 2 ms without pending work it parks. Producers wake it
 * with hrx_flusher_notify, which costs a futex wake only when it is parked,
 * so a burst never pays for wake-ups. Work is published within the delay
 * after its first command while the thread is sleeping towards a deadline,
 * within two delays while it polls, and within the delay plus the
 * wake-up while it was parked. Thread-safe. Never touches Python. */
#ifndef HRX_CORE_BATCHING_H_
#define HRX_CORE_BATCHING_H_

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "hal/device.h"
#include "hrx.h"
#include "launch_copies.h"

/* ------------------------------------------------------------- batches */

typedef struct hrx_batch_settings_s {
  bool enabled;                /* initial value of the device's switch */
  uint64_t delay_ns;
  uint32_t max_commands;       /* [2, HRX_BATCH_MAX_COMMANDS] */
  uint64_t max_command_bytes;  /* larger commands are never batched */
  uint64_t max_batch_bytes;    /* a batch is published once it holds this */
  int launches;                /* HRX_BATCH_LAUNCHES: 1, 0, or -1 unset */
  uint64_t hold_ns;            /* HRX_BATCH_HOLD_US; 0: never held */
} hrx_batch_settings_t;

/* Reads the variables above (environment.h: a malformed or out-of-range
 * value is INVALID_ARGUMENT naming it, and the device does not open). */
hrx_status_t hrx_batch_settings_from_environment(
    hrx_batch_settings_t* out_settings);

/* The calling thread's side of the policy for one small command (begin
 * notes the command; undo forgets it after a WOULD_BLOCK, so that the
 * retry decides the same). */
typedef struct hrx_batch_thread_s {
  uint64_t now;          /* hrx_now_ns() when the command came */
  bool urgent;           /* the thread observed since its last command */
  bool quiet;            /* urgent, or nothing small from it for the delay */
  uint64_t last_before;
} hrx_batch_thread_t;
hrx_batch_thread_t hrx_batch_thread_begin(const hrx_batch_settings_t* settings);
void hrx_batch_thread_undo(const hrx_batch_thread_t* thread);
/* Tells the policy that the calling thread observed work (a wait of any
 * kind: synchronize, record_event, read): its next small command goes out
 * at once instead of being held for a batch. */
void hrx_batch_thread_observed(void);

/* A stream's pending batch: small commands accepted but not published yet,
 * in storage of two halves (one is filled while the other is published).
 * The stream's batch_mutex (lock 3) guards every field but `since`. */
typedef struct hrx_pending_batch_s {
  hrx_batch_command_t* storage;     /* owned; allocated at the first batch */
  hrx_batch_command_t* commands;    /* the half being filled */
  hrx_batch_command_t* publishing;  /* the other half */
  uint32_t count;
  uint64_t bytes;
  uint64_t first;                   /* command number of commands[0] */
  bool in_flight;                   /* a moved-out batch is publishing */
  atomic_uint_fast64_t since;       /* hrx_now_ns() of commands[0]; 0: none */
  uint64_t last_ns;                 /* the last small command accepted */
  hrx_launch_copies_t launch_copies;  /* blocks of pending launches' copies */
} hrx_pending_batch_t;

void hrx_pending_batch_initialize(hrx_pending_batch_t* batch);
void hrx_pending_batch_deinitialize(hrx_pending_batch_t* batch);
/* Whether accepted commands are not on the queue yet (pending or
 * publishing). */
bool hrx_pending_batch_unpublished_locked(const hrx_pending_batch_t* batch);
/* Whether the batch is full: it must be published before another command
 * joins it. Inline: every submission asks. */
static inline bool hrx_pending_batch_full_locked(
    const hrx_pending_batch_t* batch, const hrx_batch_settings_t* settings) {
  return batch->count >= settings->max_commands ||
         batch->bytes >= settings->max_batch_bytes;
}
/* Appends command number `number`, accepted at `now`; false (nothing done)
 * when the storage cannot be allocated. *out_started: it began the batch
 * (tell the flusher); *out_full: publish the batch now. */
bool hrx_pending_batch_append_locked(hrx_pending_batch_t* batch,
                                     const hrx_batch_settings_t* settings,
                                     const hrx_batch_command_t* command,
                                     uint64_t number, uint64_t now,
                                     bool* out_started, bool* out_full);
/* Moves the pending commands out for publication and returns their count
 * (0: none). The publisher (holding publish_lock, so the half stays
 * valid) clears in_flight when done. */
uint32_t hrx_pending_batch_take_locked(hrx_pending_batch_t* batch,
                                       hrx_batch_command_t** out_commands,
                                       uint64_t* out_first,
                                       uint64_t* out_bytes);
/* Moves the first `count` (1..batch->count) pending commands out, into the
 * other half, which it returns; the rest stay pending, in order. For a
 * publisher that published them from `commands` while holding batch_mutex
 * (no publication is left in flight); it holds publish_lock, so the
 * returned half stays valid. */
hrx_batch_command_t* hrx_pending_batch_take_first_locked(
    hrx_pending_batch_t* batch, uint32_t count, uint64_t* out_first,
    uint64_t* out_bytes);

/* What a command is called in a failure's message: "copy", "fill" or
 * "kernel launch" (the words of its lone submission). */
static inline const char* hrx_batch_command_name(
    const hrx_batch_command_t* command) {
  switch (command->kind) {
    case HRX_BATCH_FILL: return "fill";
    case HRX_BATCH_LAUNCH: return "kernel launch";
    default: return "copy";
  }
}

/* Submits one command with the backend's copy(), fill() or kernel
 * launch(). */
hrx_status_t hrx_batch_submit_one(hrx_backend_device_t* backend,
                                  hrx_native_queue_t* queue,
                                  const hrx_batch_command_t* command);

/* What hrx_batch_publish handed to the backend in gathered runs (runs of
 * two or more commands in one launch_batch or batch_submit call) that
 * published at least one command: the runs, and the commands they
 * published. */
typedef struct hrx_batch_tally_s {
  uint32_t runs;
  uint32_t commands;
} hrx_batch_tally_t;

/* Publishes commands[0..count) in order, cut into runs of launches and
 * runs of copies and fills: a run of one through hrx_batch_submit_one, a
 * longer one through the backend's launch_batch or batch_submit when it
 * has it, else one call each. Stops at the first command that cannot be
 * published: returns its failure with *out_failed_index set to its index;
 * the commands before it were published, the ones from it on were not.
 * *out_tally (zeroed first) counts the gathered runs either way. */
hrx_status_t hrx_batch_publish(hrx_backend_device_t* backend,
                               hrx_native_queue_t* queue,
                               const hrx_batch_command_t* commands,
                               uint32_t count,
                               uint32_t* out_failed_index,
                               hrx_batch_tally_t* out_tally);

/* ------------------------------------------------------------- flusher */

typedef struct hrx_flusher_s hrx_flusher_t;
typedef struct hrx_flush_entry_s hrx_flush_entry_t;

typedef struct hrx_flush_entry_ops_s {
  /* hrx_now_ns() when the entry's oldest unpublished command was accepted;
   * 0 when it has none. Lock-free (an atomic load). */
  uint64_t (*pending_since)(hrx_flush_entry_t* entry);
  /* Publishes the entry's pending work if its publish lock is free;
   * false when it is taken (nothing done). */
  bool (*try_publish)(hrx_flush_entry_t* entry);
  /* Publishes the entry's pending work (waits for its publish lock). */
  void (*publish)(hrx_flush_entry_t* entry);
} hrx_flush_entry_ops_t;

/* Embedded in the entry's owner; all fields belong to the flusher. */
struct hrx_flush_entry_s {
  const hrx_flush_entry_ops_t* ops;  /* static; set by the owner */
  hrx_flush_entry_t* prev;           /* flusher mutex */
  hrx_flush_entry_t* next;           /* flusher mutex */
  int holds;                         /* publishers using it; flusher mutex */
  atomic_bool listed;
};

/* The flusher of a device; its thread is started by the first notify. */
hrx_status_t hrx_flusher_create(uint64_t delay_ns, hrx_flusher_t** out_flusher);
/* Stops and joins the thread. Every entry has been removed. */
void hrx_flusher_destroy(hrx_flusher_t* flusher);

/* Called after `entry` got pending work (without holding the entry's lock):
 * lists it if needed and wakes the thread if it is parked. Fails only when
 * the thread cannot be started; the caller then publishes by itself. */
hrx_status_t hrx_flusher_notify(hrx_flusher_t* flusher,
                                hrx_flush_entry_t* entry);
/* Whether `entry` is listed and the thread awake, so that a batch started
 * now needs no listing (lock-free). A non-blocking producer (nonblocking.h)
 * starts a batch only then: its hrx_flusher_notify then never waits for a
 * holder of the mutex, at most for the thread's own short critical
 * sections while the thread parks. */
bool hrx_flusher_watching(hrx_flusher_t* flusher, hrx_flush_entry_t* entry);
/* Makes the flusher watch `entry` without waiting: true when it already
 * does, or when the mutex was free and the entry is now listed and the
 * thread started and woken; false (nothing changed) when another thread
 * holds the mutex or the thread cannot be started. Called before a
 * non-blocking producer starts a batch. */
bool hrx_flusher_try_watch(hrx_flusher_t* flusher, hrx_flush_entry_t* entry);
/* Unlists the entry and waits until no publisher holds it (no callback
 * runs on it after this returns). */
void hrx_flusher_remove(hrx_flusher_t* flusher, hrx_flush_entry_t* entry);
/* Publishes every listed entry's pending work now, and waits for the
 * publications in progress (device synchronize, buffer release: afterwards
 * every command accepted so far is on a queue). */
void hrx_flusher_publish_all(hrx_flusher_t* flusher);

#endif /* HRX_CORE_BATCHING_H_ */
