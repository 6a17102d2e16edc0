/* The engines of a host device: a fixed number of threads that serve all of
 * the device's queues, as a GPU's engines and hardware connections serve its
 * streams.
 *
 * A queue with work is listed in the run list of its lane. An engine takes
 * the first queue of the most urgent non-empty lane (strict precedence:
 * high, then normal, then low), serves it for one turn and lists it again at
 * the back of its lane if it still has work, so queues of one lane take
 * turns. A turn ends early as soon as a more urgent lane has work. Any queue
 * with work gets a free engine: an engine that takes a queue while others
 * are still listed wakes a parked engine when none is spinning, so up to
 * `count` queues run at once.
 *
 * A reserved queue (one reserved stream's, never shared) gets an engine of
 * its own when one is free. An engine is free when it serves no queue's
 * turn (it is parked, spinning, or between two turns); a thread inside a
 * host function is no engine. A free engine takes a listed reserved queue
 * before any other, whatever their lanes, as long as fewer than count - 1
 * engines are dedicated to reserved queues, so that one engine always
 * serves the shared queues (with one engine there is no dedication). The
 * dedicated engine serves that queue until it has no work left (or waits
 * on an event), without ending its turn for other queues. Listing a
 * reserved queue that lane precedence holds back (a more urgent lane has
 * work listed or served) wakes a parked engine for it when none is
 * spinning; other reserved queues wake nobody (their waiters run them
 * sooner than a woken engine would). When
 * no engine is free, or count - 1 are dedicated already, a reserved queue
 * takes turns in its lane like any other queue. Turns on shared queues do
 * not end for a reserved queue that a spinning free engine will take.
 *
 * Idle engines spin briefly (at most one at a time, so that spinning never
 * takes every core from the submitting threads), then park. Listing a queue
 * wakes a parked engine only when no engine is awake.
 *
 * Offers (kernel grids, host_grid.h): work that several threads may share,
 * one unit (a block) at a time. A free engine that finds no queue to serve
 * helps the listed offer of the most urgent lane, a unit at a time, and
 * stops as soon as a queue of that lane or a more urgent one is listed
 * (queue work goes first, at unit granularity, as a GPU schedules the
 * blocks of other streams' kernels as blocks finish). Listing an offer
 * wakes up to as many parked engines as it has units for helpers.
 *
 * A host function may block its thread for as long as it likes. The thread
 * that runs one gives up its engine first (another thread, started when
 * none is parked, serves in its place), so blocked host functions never
 * leave the other queues without an engine, whatever they wait for. When the
 * function returns, its thread serves on and parks as soon as more than
 * `count` threads are awake.
 *
 * Thread-safe. Never touches Python. */
#ifndef HRX_DRIVERS_HOST_HOST_ENGINES_H_
#define HRX_DRIVERS_HOST_HOST_ENGINES_H_

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "hrx.h"

typedef struct hrx_host_engines_s hrx_host_engines_t;

/* Lanes in order of precedence. */
typedef enum hrx_host_lane_e {
  HRX_HOST_LANE_HIGH = 0,
  HRX_HOST_LANE_NORMAL = 1,
  HRX_HOST_LANE_LOW = 2,
  HRX_HOST_LANE_COUNT = 3,
} hrx_host_lane_t;

/* What the engines list: embedded in each queue. `next` is guarded by the
 * engines' lock; `lane` and `reserved` are fixed at creation. */
typedef struct hrx_host_runnable_s {
  struct hrx_host_runnable_s* next;
  hrx_host_lane_t lane;
  bool reserved;                 /* gets an engine of its own when free */
} hrx_host_runnable_t;

/* A spinning thread's pause between polls. */
static inline void hrx_host_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Work that free engines share a unit at a time (see above). The owner
 * embeds it; the engines hold a reference (retain/release) while it is
 * listed and while a thread helps it. `next` and `listed` are guarded by
 * the engines' lock; `lane` and the functions are fixed. */
typedef struct hrx_host_offer_s {
  struct hrx_host_offer_s* next;
  hrx_host_lane_t lane;
  bool listed;
  /* Runs one unit; false (having run nothing) when no unit is left. */
  bool (*help)(struct hrx_host_offer_s* offer);
  void (*retain)(struct hrx_host_offer_s* offer);
  void (*release)(struct hrx_host_offer_s* offer);
} hrx_host_offer_t;

/* Lists the offer for free engines (retaining it) unless it is listed, and
 * wakes up to `helpers` parked engines for it. */
void hrx_host_engines_offer(hrx_host_engines_t* engines,
                            hrx_host_offer_t* offer, int helpers);
/* Takes the offer off the list (releasing the list's reference) if it is
 * listed; threads helping it finish their unit. */
void hrx_host_engines_withdraw(hrx_host_engines_t* engines,
                               hrx_host_offer_t* offer);

/* Serves one turn of a listed queue; called by an engine with the queue
 * taken off its run list (host_queue.c). A `dedicated` turn (a reserved
 * queue's own engine) lasts while the queue has work it can run. */
void hrx_host_runnable_serve(hrx_host_runnable_t* runnable, bool dedicated);

/* Creates the engines of a device: `count` engines (>= 1), each spinning up
 * to spin_ns when idle before it parks. Threads start as queues appear
 * (hrx_host_engines_reserve). */
hrx_status_t hrx_host_engines_create(int count, uint64_t spin_ns,
                                     hrx_host_engines_t** out_engines);
/* Stops and joins every thread. Every queue has been shut down. */
void hrx_host_engines_destroy(hrx_host_engines_t* engines);

int hrx_host_engines_count(const hrx_host_engines_t* engines);

/* Makes sure min(count, queues) engine threads exist, for a device with
 * `queues` live queues. Fails only when no thread could be started. */
hrx_status_t hrx_host_engines_reserve(hrx_host_engines_t* engines, int queues);
/* Whether hrx_host_engines_reserve(engines, queues) would start no thread
 * (never waits). */
bool hrx_host_engines_reserved(hrx_host_engines_t* engines, int queues);

/* Lists a runnable at the back of its lane. The caller hands over its
 * listing (the queue's "scheduled" token). */
void hrx_host_engines_list(hrx_host_engines_t* engines,
                           hrx_host_runnable_t* runnable);

/* Lists every runnable of a chain linked through `next` (NULL-terminated)
 * at once: no engine takes one of them before all are listed, so lane
 * precedence decides among them. The caller hands over their listings. */
void hrx_host_engines_list_chain(hrx_host_engines_t* engines,
                                 hrx_host_runnable_t* chain);

/* Whether an engine serving a shared turn on a queue of `lane` that has
 * run `served` commands in it should end the turn: at once when a more
 * urgent lane has work, after a turn's quantum when its own lane has
 * (reserved queues that a free engine will take do not count). */
bool hrx_host_engines_should_yield(hrx_host_engines_t* engines,
                                   hrx_host_lane_t lane, uint32_t served);

/* Around a host function on an engine thread: the thread gives up its
 * engine before and takes one back after (see above). */
void hrx_host_engines_leave(hrx_host_engines_t* engines);
void hrx_host_engines_return(hrx_host_engines_t* engines);

#endif /* HRX_DRIVERS_HOST_HOST_ENGINES_H_ */
