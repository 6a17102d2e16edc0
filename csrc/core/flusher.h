/* The flusher: one thread per live device that publishes pending batches
 * whose oldest command has waited `delay_ns`, so batched work reaches its
 * queue within a bounded delay even when the program submits nothing more
 * and never synchronizes. Internal to the core.
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
#ifndef HRX_CORE_FLUSHER_H_
#define HRX_CORE_FLUSHER_H_

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "hrx.h"

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
/* Unlists the entry and waits until no publisher holds it (no callback
 * runs on it after this returns). */
void hrx_flusher_remove(hrx_flusher_t* flusher, hrx_flush_entry_t* entry);
/* Publishes every listed entry's pending work now, and waits for the
 * publications in progress (device synchronize, buffer release: afterwards
 * every command accepted so far is on a queue). */
void hrx_flusher_publish_all(hrx_flusher_t* flusher);

#endif /* HRX_CORE_FLUSHER_H_ */
