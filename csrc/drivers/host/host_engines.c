#include "host_engines.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/status.h"

/* A turn's quantum: how much an engine runs on one queue before it lets
 * another queue of the same lane with work have a turn, in units of one
 * command or 1 MiB moved (host_queue.c). Long enough that small commands
 * do not pay a run-list round trip each and that a queue's consecutive
 * copies run while their data is still in cache; short enough that queues
 * of one lane interleave (a 32 MiB copy is a turn of its own). */
enum { HRX_HOST_TURN_QUANTUM = 32 };

/* Engines run this many nice levels above the process: a woken engine does
 * not preempt the thread that submitted to it, which often runs the
 * command itself while it waits (host_queue.h). */
enum { HRX_HOST_ENGINE_NICE = 10 };

/* At most this many engines spin at once. */
enum { HRX_HOST_MAX_SPINNERS = 1 };

struct hrx_host_engines_s {
  int count;                       /* engines (threads serving at once) */
  uint64_t spin_ns;
  pthread_mutex_t mutex;
  pthread_cond_t park_cond;        /* parked threads wait here */
  /* Run lists, one FIFO per lane; guarded by mutex. */
  hrx_host_runnable_t* head[HRX_HOST_LANE_COUNT];
  hrx_host_runnable_t* tail[HRX_HOST_LANE_COUNT];
  /* Listed queues, per lane and in all, and the reserved ones among them
   * per lane and in all: written under mutex, read without it by spinning
   * engines and turn checks. */
  atomic_int lane_listed[HRX_HOST_LANE_COUNT];
  atomic_int listed;
  atomic_int lane_reserved_listed[HRX_HOST_LANE_COUNT];
  atomic_int reserved_listed;
  /* Threads serving a queue's turn outside a host function; written under
   * mutex but for the ends of turns and host functions. */
  atomic_int serving;
  /* Engines serving a reserved queue as its own engine (at most count - 1);
   * written under mutex but for the ends of turns. */
  atomic_int dedicated;
  /* Turns being served per lane (host functions included); written under
   * mutex but for the ends of turns. */
  atomic_int lane_serving[HRX_HOST_LANE_COUNT];
  /* Threads spinning or serving, not parked and not inside a host
   * function. Written under mutex but for the callback hand-off's reads. */
  atomic_int active;
  atomic_int spinning;             /* threads in their idle spin */
  /* Offers, one FIFO per lane, and how many are listed: the lists are
   * guarded by mutex, the count is written under it and read without. */
  hrx_host_offer_t* offer_head[HRX_HOST_LANE_COUNT];
  hrx_host_offer_t* offer_tail[HRX_HOST_LANE_COUNT];
  atomic_int offered;
  int parked;                      /* guarded by mutex */
  int wakes;                       /* wake-ups sent, not yet taken; mutex */
  int in_host_call;                /* threads inside a host function; mutex */
  bool stopping;                   /* guarded by mutex */
  int thread_count;                /* guarded by mutex */
  int thread_capacity;
  pthread_t* threads;              /* owned; guarded by mutex */
};

int hrx_host_engines_count(const hrx_host_engines_t* engines) {
  return engines->count;
}

/* Whether a listed reserved queue would get an engine of its own now: an
 * engine is free (fewer than `count` threads serve turns) and taking it
 * would leave an engine for the shared queues (fewer than count - 1
 * engines are dedicated). */
static bool hrx_host_engines_dedication_open(hrx_host_engines_t* engines) {
  return atomic_load_explicit(&engines->dedicated, memory_order_relaxed) <
             engines->count - 1 &&
         atomic_load_explicit(&engines->serving, memory_order_relaxed) <
             engines->count;
}

/* Wakes one parked thread, counting it awake at once so that the next
 * caller sees it. Returns whether a thread was parked. */
static bool hrx_host_engines_wake_locked(hrx_host_engines_t* engines) {
  if (engines->parked <= engines->wakes) return false;
  engines->wakes++;
  atomic_fetch_add(&engines->active, 1);
  pthread_cond_signal(&engines->park_cond);
  return true;
}

/* More queues are listed than engines take: wake another engine unless one
 * is spinning (it will take the work) or every engine is awake. */
static void hrx_host_engines_spread_locked(hrx_host_engines_t* engines) {
  if (atomic_load(&engines->listed) > 0 &&
      atomic_load(&engines->spinning) == 0 &&
      atomic_load(&engines->active) < engines->count) {
    hrx_host_engines_wake_locked(engines);
  }
}

static void hrx_host_engines_append_locked(hrx_host_engines_t* engines,
                                           hrx_host_runnable_t* runnable) {
  hrx_host_lane_t lane = runnable->lane;
  runnable->next = NULL;
  if (engines->tail[lane]) {
    engines->tail[lane]->next = runnable;
  } else {
    engines->head[lane] = runnable;
  }
  engines->tail[lane] = runnable;
  atomic_fetch_add(&engines->lane_listed[lane], 1);
  atomic_fetch_add(&engines->listed, 1);
  if (runnable->reserved) {
    atomic_fetch_add(&engines->lane_reserved_listed[lane], 1);
    atomic_fetch_add(&engines->reserved_listed, 1);
  }
}

/* Whether a more urgent lane than `lane` has work listed or being served:
 * lane precedence would hold a queue of `lane` back. */
static bool hrx_host_engines_held_back(hrx_host_engines_t* engines, int lane) {
  for (int more_urgent = 0; more_urgent < lane; ++more_urgent) {
    if (atomic_load(&engines->lane_listed[more_urgent]) > 0 ||
        atomic_load(&engines->lane_serving[more_urgent]) > 0) {
      return true;
    }
  }
  return false;
}

/* After listing: wakes a parked engine when no engine that serves the
 * shared queues is awake (every awake one is dedicated), or when a
 * reserved queue of `reserved_lane` (-1: none) was listed that lane
 * precedence would hold back, that a free engine would take as its own,
 * and no engine spins to take it. Any other reserved queue wakes nobody:
 * its waiter, or an engine at its next turn, runs it sooner than a woken
 * engine starts (measured: woken engines made a reserved queue's 4 KiB
 * copy behind a backlog take about 2 ms instead of 5-40 us). */
static void hrx_host_engines_wake_for_locked(hrx_host_engines_t* engines,
                                             int reserved_lane) {
  if (atomic_load(&engines->active) <= atomic_load(&engines->dedicated) ||
      (reserved_lane >= 0 && atomic_load(&engines->spinning) == 0 &&
       atomic_load(&engines->active) < engines->count &&
       hrx_host_engines_dedication_open(engines) &&
       hrx_host_engines_held_back(engines, reserved_lane))) {
    hrx_host_engines_wake_locked(engines);
  }
}

void hrx_host_engines_list(hrx_host_engines_t* engines,
                           hrx_host_runnable_t* runnable) {
  pthread_mutex_lock(&engines->mutex);
  hrx_host_engines_append_locked(engines, runnable);
  hrx_host_engines_wake_for_locked(
      engines, runnable->reserved ? (int)runnable->lane : -1);
  pthread_mutex_unlock(&engines->mutex);
}

void hrx_host_engines_list_chain(hrx_host_engines_t* engines,
                                 hrx_host_runnable_t* chain) {
  if (!chain) return;
  pthread_mutex_lock(&engines->mutex);
  int reserved_lane = -1;  /* the most urgent lane of a reserved queue */
  while (chain) {
    hrx_host_runnable_t* next = chain->next;
    if (chain->reserved &&
        (reserved_lane < 0 || (int)chain->lane < reserved_lane)) {
      reserved_lane = (int)chain->lane;
    }
    hrx_host_engines_append_locked(engines, chain);
    chain = next;
  }
  hrx_host_engines_wake_for_locked(engines, reserved_lane);
  pthread_mutex_unlock(&engines->mutex);
}

/* Unlinks `runnable`, which follows `previous` (NULL: the head) in `lane`. */
static void hrx_host_engines_unlink_locked(hrx_host_engines_t* engines,
                                           int lane,
                                           hrx_host_runnable_t* previous,
                                           hrx_host_runnable_t* runnable) {
  if (previous) {
    previous->next = runnable->next;
  } else {
    engines->head[lane] = runnable->next;
  }
  if (engines->tail[lane] == runnable) engines->tail[lane] = previous;
  runnable->next = NULL;
  atomic_fetch_sub(&engines->lane_listed[lane], 1);
  atomic_fetch_sub(&engines->listed, 1);
  if (runnable->reserved) {
    atomic_fetch_sub(&engines->lane_reserved_listed[lane], 1);
    atomic_fetch_sub(&engines->reserved_listed, 1);
  }
}

/* The first listed reserved queue of the most urgent lane, unlinked, or
 * NULL. */
static hrx_host_runnable_t* hrx_host_engines_take_reserved_locked(
    hrx_host_engines_t* engines) {
  for (int lane = 0; lane < HRX_HOST_LANE_COUNT; ++lane) {
    if (atomic_load(&engines->lane_reserved_listed[lane]) == 0) continue;
    hrx_host_runnable_t* previous = NULL;
    for (hrx_host_runnable_t* runnable = engines->head[lane]; runnable;
         previous = runnable, runnable = runnable->next) {
      if (runnable->reserved) {
        hrx_host_engines_unlink_locked(engines, lane, previous, runnable);
        return runnable;
      }
    }
  }
  return NULL;
}

/* Takes a queue to serve, or NULL; the calling engine is free. A listed
 * reserved queue comes first while fewer than count - 1 engines are
 * dedicated: the engine becomes its own (*out_dedicated). Otherwise the
 * first queue of the most urgent lane with work. */
static hrx_host_runnable_t* hrx_host_engines_take(hrx_host_engines_t* engines,
                                                  bool* out_dedicated) {
  *out_dedicated = false;
  if (atomic_load(&engines->listed) == 0) return NULL;
  hrx_host_runnable_t* runnable = NULL;
  pthread_mutex_lock(&engines->mutex);
  if (atomic_load(&engines->reserved_listed) > 0 &&
      atomic_load(&engines->dedicated) < engines->count - 1) {
    runnable = hrx_host_engines_take_reserved_locked(engines);
    if (runnable) {
      atomic_fetch_add(&engines->dedicated, 1);
      *out_dedicated = true;
    }
  }
  for (int lane = 0; lane < HRX_HOST_LANE_COUNT && !runnable; ++lane) {
    runnable = engines->head[lane];
    if (runnable) hrx_host_engines_unlink_locked(engines, lane, NULL, runnable);
  }
  if (runnable) {
    atomic_fetch_add(&engines->serving, 1);
    atomic_fetch_add(&engines->lane_serving[runnable->lane], 1);
    hrx_host_engines_spread_locked(engines);
  }
  pthread_mutex_unlock(&engines->mutex);
  return runnable;
}

/* The end of a turn on a queue of `lane` that hrx_host_engines_take
 * began. */
static void hrx_host_engines_end_turn(hrx_host_engines_t* engines,
                                      hrx_host_lane_t lane, bool dedicated) {
  if (dedicated) atomic_fetch_sub(&engines->dedicated, 1);
  atomic_fetch_sub(&engines->lane_serving[lane], 1);
  atomic_fetch_sub(&engines->serving, 1);
}

/* Listed queues of `lane` that compete for the engines serving shared
 * turns: a reserved queue that a spinning free engine will take as its
 * own does not. */
static int hrx_host_engines_competing(hrx_host_engines_t* engines, int lane,
                                      bool dedication_open) {
  int listed = atomic_load_explicit(&engines->lane_listed[lane],
                                    memory_order_relaxed);
  if (dedication_open) {
    listed -= atomic_load_explicit(&engines->lane_reserved_listed[lane],
                                   memory_order_relaxed);
  }
  return listed;
}

bool hrx_host_engines_should_yield(hrx_host_engines_t* engines,
                                   hrx_host_lane_t lane, uint32_t served) {
  if (atomic_load_explicit(&engines->listed, memory_order_relaxed) == 0) {
    return false;
  }
  /* Only a spinning engine is sure to take a listed reserved queue: a
   * parked one is woken only for a queue that this turn's lane holds back,
   * which never ends the turn anyway. */
  bool open = atomic_load_explicit(&engines->reserved_listed,
                                   memory_order_relaxed) > 0 &&
              atomic_load_explicit(&engines->spinning,
                                   memory_order_relaxed) > 0 &&
              hrx_host_engines_dedication_open(engines);
  for (int more_urgent = 0; more_urgent < (int)lane; ++more_urgent) {
    if (hrx_host_engines_competing(engines, more_urgent, open) > 0) {
      return true;
    }
  }
  return served >= HRX_HOST_TURN_QUANTUM &&
         hrx_host_engines_competing(engines, (int)lane, open) > 0;
}

/* Spins while nothing is listed, within the spinner limit. Returns true if
 * work was listed. */
static bool hrx_host_engines_spin(hrx_host_engines_t* engines) {
  if (atomic_fetch_add(&engines->spinning, 1) >= HRX_HOST_MAX_SPINNERS) {
    atomic_fetch_sub(&engines->spinning, 1);
    return false;
  }
  uint64_t start = hrx_now_ns();
  bool arrived = false;
  for (unsigned i = 1;; ++i) {
    if (atomic_load(&engines->listed) > 0 ||
        atomic_load(&engines->offered) > 0) {
      arrived = true;
      break;
    }
    hrx_host_cpu_relax();
    if ((i & 63) == 0) {
      if (hrx_now_ns() - start >= engines->spin_ns) break;
      /* Leave the core to a runnable submitter or executor. */
      sched_yield();
    }
  }
  atomic_fetch_sub(&engines->spinning, 1);
  return arrived;
}

/* Parks the calling thread (counted active) until a wake-up or stop. On
 * return it is counted active again. */
static void hrx_host_engines_park_locked(hrx_host_engines_t* engines) {
  atomic_fetch_sub(&engines->active, 1);
  engines->parked++;
  while (engines->wakes == 0 && !engines->stopping) {
    pthread_cond_wait(&engines->park_cond, &engines->mutex);
  }
  engines->parked--;
  if (engines->wakes > 0) {
    engines->wakes--;  /* the waker counted us active */
  } else {
    atomic_fetch_add(&engines->active, 1);
  }
}

/* ---------------------------------------------------------------- offers */

void hrx_host_engines_offer(hrx_host_engines_t* engines,
                            hrx_host_offer_t* offer, int helpers) {
  pthread_mutex_lock(&engines->mutex);
  if (!offer->listed) {
    offer->retain(offer);
    offer->listed = true;
    offer->next = NULL;
    int lane = offer->lane;
    if (engines->offer_tail[lane]) {
      engines->offer_tail[lane]->next = offer;
    } else {
      engines->offer_head[lane] = offer;
    }
    engines->offer_tail[lane] = offer;
    atomic_fetch_add(&engines->offered, 1);
    for (int i = 0; i < helpers; ++i) {
      if (!hrx_host_engines_wake_locked(engines)) break;
    }
  }
  pthread_mutex_unlock(&engines->mutex);
}

/* Unlinks a listed offer; the caller releases the list's reference. */
static void hrx_host_engines_unlist_offer_locked(hrx_host_engines_t* engines,
                                                 hrx_host_offer_t* offer) {
  int lane = offer->lane;
  hrx_host_offer_t* previous = NULL;
  for (hrx_host_offer_t* o = engines->offer_head[lane]; o;
       previous = o, o = o->next) {
    if (o != offer) continue;
    if (previous) {
      previous->next = o->next;
    } else {
      engines->offer_head[lane] = o->next;
    }
    if (engines->offer_tail[lane] == o) engines->offer_tail[lane] = previous;
    break;
  }
  offer->next = NULL;
  offer->listed = false;
  atomic_fetch_sub(&engines->offered, 1);
}

void hrx_host_engines_withdraw(hrx_host_engines_t* engines,
                               hrx_host_offer_t* offer) {
  pthread_mutex_lock(&engines->mutex);
  bool listed = offer->listed;
  if (listed) hrx_host_engines_unlist_offer_locked(engines, offer);
  pthread_mutex_unlock(&engines->mutex);
  if (listed) offer->release(offer);
}

/* Whether a helper of an offer of `lane` should go back to serve queues:
 * a queue of that lane or a more urgent one is listed. */
static bool hrx_host_engines_queue_waits(hrx_host_engines_t* engines,
                                         int lane) {
  if (atomic_load_explicit(&engines->listed, memory_order_relaxed) == 0) {
    return false;
  }
  for (int l = 0; l <= lane; ++l) {
    if (atomic_load_explicit(&engines->lane_listed[l],
                             memory_order_relaxed) > 0) {
      return true;
    }
  }
  return false;
}

/* A free engine helps the first offer of the most urgent lane with one
 * while no queue goes first (see the header). Returns whether it ran a
 * unit. */
static bool hrx_host_engines_help(hrx_host_engines_t* engines) {
  if (atomic_load(&engines->offered) == 0) return false;
  pthread_mutex_lock(&engines->mutex);
  hrx_host_offer_t* offer = NULL;
  for (int lane = 0; lane < HRX_HOST_LANE_COUNT && !offer; ++lane) {
    offer = engines->offer_head[lane];
  }
  if (offer) offer->retain(offer);
  pthread_mutex_unlock(&engines->mutex);
  if (!offer) return false;
  bool ran = false;
  while (!hrx_host_engines_queue_waits(engines, offer->lane)) {
    if (!offer->help(offer)) {
      hrx_host_engines_withdraw(engines, offer);
      break;
    }
    ran = true;
  }
  offer->release(offer);
  return ran;
}

static void hrx_host_engines_set_nice(void) {
  /* Failure only costs the nicety. */
  id_t tid = (id_t)syscall(SYS_gettid);
  errno = 0;
  int base = getpriority(PRIO_PROCESS, 0);
  if (errno) base = 0;
  int level = base + HRX_HOST_ENGINE_NICE;
  (void)setpriority(PRIO_PROCESS, tid, level > 19 ? 19 : level);
}

static void* hrx_host_engine_main(void* arg) {
  hrx_host_engines_t* engines = arg;
  hrx_host_engines_set_nice();
  /* A new thread starts as an engine only if one is free and work waits. */
  pthread_mutex_lock(&engines->mutex);
  atomic_fetch_add(&engines->active, 1);
  if ((atomic_load(&engines->listed) == 0 &&
       atomic_load(&engines->offered) == 0) ||
      atomic_load(&engines->active) > engines->count) {
    hrx_host_engines_park_locked(engines);
  }
  pthread_mutex_unlock(&engines->mutex);
  for (;;) {
    if (atomic_load(&engines->active) > engines->count) {
      /* Back from a host function while its stand-in serves: retire. */
      pthread_mutex_lock(&engines->mutex);
      if (atomic_load(&engines->active) > engines->count &&
          !engines->stopping) {
        hrx_host_engines_park_locked(engines);
      }
      pthread_mutex_unlock(&engines->mutex);
    }
    bool dedicated = false;
    hrx_host_runnable_t* runnable = hrx_host_engines_take(engines, &dedicated);
    if (runnable) {
      hrx_host_lane_t lane = runnable->lane;  /* the queue may go in serve */
      hrx_host_runnable_serve(runnable, dedicated);
      hrx_host_engines_end_turn(engines, lane, dedicated);
      continue;
    }
    if (hrx_host_engines_help(engines)) continue;
    if (hrx_host_engines_spin(engines)) continue;
    pthread_mutex_lock(&engines->mutex);
    if (atomic_load(&engines->listed) > 0 ||
        atomic_load(&engines->offered) > 0) {
      pthread_mutex_unlock(&engines->mutex);
      continue;
    }
    if (engines->stopping) {
      atomic_fetch_sub(&engines->active, 1);
      pthread_mutex_unlock(&engines->mutex);
      break;
    }
    hrx_host_engines_park_locked(engines);
    pthread_mutex_unlock(&engines->mutex);
  }
  return NULL;
}

/* Starts one thread; called without the lock. */
static hrx_status_t hrx_host_engines_start_thread(hrx_host_engines_t* engines) {
  pthread_mutex_lock(&engines->mutex);
  if (engines->thread_count == engines->thread_capacity) {
    int capacity = engines->thread_capacity ? engines->thread_capacity * 2 : 4;
    pthread_t* grown =
        realloc(engines->threads, (size_t)capacity * sizeof(*grown));
    if (!grown) {
      pthread_mutex_unlock(&engines->mutex);
      return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                             "cannot grow the host engine thread list");
    }
    engines->threads = grown;
    engines->thread_capacity = capacity;
  }
  int error = pthread_create(&engines->threads[engines->thread_count], NULL,
                             hrx_host_engine_main, engines);
  if (!error) engines->thread_count++;
  pthread_mutex_unlock(&engines->mutex);
  if (error) {
    return hrx_make_status(HRX_STATUS_RESOURCE_EXHAUSTED,
                           "cannot start a host engine thread: %s",
                           strerror(error));
  }
  return NULL;
}

bool hrx_host_engines_reserved(hrx_host_engines_t* engines, int queues) {
  int wanted = queues < engines->count ? queues : engines->count;
  pthread_mutex_lock(&engines->mutex);
  int serving = engines->thread_count - engines->in_host_call;
  pthread_mutex_unlock(&engines->mutex);
  return serving >= wanted;
}

hrx_status_t hrx_host_engines_reserve(hrx_host_engines_t* engines,
                                      int queues) {
  int wanted = queues < engines->count ? queues : engines->count;
  for (;;) {
    pthread_mutex_lock(&engines->mutex);
    int serving = engines->thread_count - engines->in_host_call;
    pthread_mutex_unlock(&engines->mutex);
    if (serving >= wanted) return NULL;
    hrx_status_t status = hrx_host_engines_start_thread(engines);
    if (status) {
      pthread_mutex_lock(&engines->mutex);
      bool any = engines->thread_count > 0;
      pthread_mutex_unlock(&engines->mutex);
      /* With at least one thread every queue is still served. */
      if (any) {
        hrx_status_free(status);
        return NULL;
      }
      return status;
    }
  }
}

void hrx_host_engines_leave(hrx_host_engines_t* engines) {
  pthread_mutex_lock(&engines->mutex);
  atomic_fetch_sub(&engines->active, 1);
  atomic_fetch_sub(&engines->serving, 1);
  engines->in_host_call++;
  bool start = engines->parked <= engines->wakes &&
               engines->thread_count - engines->in_host_call < engines->count;
  if (!start) hrx_host_engines_spread_locked(engines);
  pthread_mutex_unlock(&engines->mutex);
  if (start) {
    /* A stand-in for the queues listed meanwhile. If no thread can be
     * started, those queues wait for this host function to return (or for
     * a thread that waits on them, which runs their copies and fills). */
    hrx_status_free(hrx_host_engines_start_thread(engines));
  }
}

void hrx_host_engines_return(hrx_host_engines_t* engines) {
  pthread_mutex_lock(&engines->mutex);
  engines->in_host_call--;
  atomic_fetch_add(&engines->active, 1);
  atomic_fetch_add(&engines->serving, 1);
  pthread_mutex_unlock(&engines->mutex);
}

hrx_status_t hrx_host_engines_create(int count, uint64_t spin_ns,
                                     hrx_host_engines_t** out_engines) {
  hrx_host_engines_t* engines = calloc(1, sizeof(*engines));
  if (!engines) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate the host engines");
  }
  engines->count = count;
  engines->spin_ns = spin_ns;
  pthread_mutex_init(&engines->mutex, NULL);
  pthread_cond_init(&engines->park_cond, NULL);
  for (int lane = 0; lane < HRX_HOST_LANE_COUNT; ++lane) {
    atomic_init(&engines->lane_listed[lane], 0);
    atomic_init(&engines->lane_reserved_listed[lane], 0);
    atomic_init(&engines->lane_serving[lane], 0);
  }
  atomic_init(&engines->listed, 0);
  atomic_init(&engines->reserved_listed, 0);
  atomic_init(&engines->serving, 0);
  atomic_init(&engines->dedicated, 0);
  atomic_init(&engines->active, 0);
  atomic_init(&engines->spinning, 0);
  atomic_init(&engines->offered, 0);
  *out_engines = engines;
  return NULL;
}

void hrx_host_engines_destroy(hrx_host_engines_t* engines) {
  if (!engines) return;
  pthread_mutex_lock(&engines->mutex);
  engines->stopping = true;
  pthread_cond_broadcast(&engines->park_cond);
  pthread_mutex_unlock(&engines->mutex);
  /* Threads only start while queues exist or host functions run, and none
   * do now: the list no longer grows. */
  for (int i = 0; i < engines->thread_count; ++i) {
    pthread_join(engines->threads[i], NULL);
  }
  free(engines->threads);
  pthread_cond_destroy(&engines->park_cond);
  pthread_mutex_destroy(&engines->mutex);
  free(engines);
}
