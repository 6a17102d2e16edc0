#include "host_queue.h"

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/nonblocking.h"
#include "base/status.h"

struct hrx_host_queue_s {
  hrx_host_runnable_t run;         /* the engines' listing of this queue */
  atomic_int ref_count;            /* creator, listing token, WAIT commands,
                                      events */
  hrx_host_engines_t* engines;     /* borrowed; they outlive the queue */
  hrx_host_command_t* ring;        /* owned; capacity entries */
  uint64_t mask;                   /* capacity - 1 */
  pthread_mutex_t mutex;
  pthread_cond_t progress_cond;    /* waiters and blocked producers park here */
  /* Tickets: `submitted` is written by producers under `mutex`; `completed`
   * only by the thread holding `executing`. Both are read without the lock. */
  atomic_uint_fast64_t submitted;
  atomic_uint_fast64_t completed;
  atomic_int executing;            /* 1 while a thread runs commands */
  atomic_int sleepers;             /* threads parked on progress_cond */
  /* The listing token: true while the queue is listed, taken by an engine,
   * or waiting on another queue's ticket; the token holds one reference.
   * Whoever leaves work behind without holding `executing` lists the queue
   * unless the token is already out. */
  atomic_bool scheduled;
  bool stopping;                   /* guarded by mutex */
  /* Producers that found the ring full take a ticket and are served in
   * ticket order (host_queue.h); guarded by mutex. A producer that finds
   * room and nobody waiting takes a slot without one. */
  uint64_t space_next;             /* the next ticket handed out */
  uint64_t space_turn;             /* the ticket now served */
  /* Queues whose WAIT waits on one of this queue's tickets, each holding
   * its listing token here: guarded by mutex; counted for a lock-free
   * check on every completion. */
  hrx_host_queue_t* dependents;
  atomic_int dependent_count;
  /* While this queue waits on another's ticket: guarded by that queue's
   * mutex. */
  hrx_host_queue_t* dependent_next;
  uint64_t awaited_ticket;
};

static hrx_host_queue_t* hrx_host_queue_of(hrx_host_runnable_t* runnable) {
  return (hrx_host_queue_t*)((char*)runnable -
                             offsetof(hrx_host_queue_t, run));
}

static bool hrx_host_queue_has_pending(hrx_host_queue_t* queue) {
  return atomic_load(&queue->completed) < atomic_load(&queue->submitted);
}

bool hrx_host_queue_is_complete(hrx_host_queue_t* queue, uint64_t ticket) {
  return atomic_load(&queue->completed) >= ticket;
}

hrx_host_lane_t hrx_host_queue_lane(const hrx_host_queue_t* queue) {
  return queue->run.lane;
}

uint64_t hrx_host_queue_pending(hrx_host_queue_t* queue) {
  uint64_t completed = atomic_load(&queue->completed);
  uint64_t submitted = atomic_load(&queue->submitted);
  return submitted > completed ? submitted - completed : 0;
}

uint64_t hrx_host_queue_tail(hrx_host_queue_t* queue) {
  return atomic_load(&queue->submitted);
}

/* Lists the queue with the engines unless its token is already out. */
static void hrx_host_queue_schedule(hrx_host_queue_t* queue) {
  if (atomic_load(&queue->scheduled)) return;
  if (atomic_exchange(&queue->scheduled, true)) return;
  hrx_host_queue_retain(queue);
  hrx_host_engines_list(queue->engines, &queue->run);
}

/* Gives the listing token back; lists the queue again if work arrived
 * meanwhile and nobody runs it (that thread lists it when it stops). */
static void hrx_host_queue_drop_token(hrx_host_queue_t* queue) {
  atomic_store(&queue->scheduled, false);
  if (hrx_host_queue_has_pending(queue) && !atomic_load(&queue->executing)) {
    hrx_host_queue_schedule(queue);
  }
  hrx_host_queue_release(queue);
}

/* Wakes the threads parked on progress; called after `completed` moved or
 * `executing` was released (both seq_cst stores before this load). */
static void hrx_host_queue_notify_progress(hrx_host_queue_t* queue) {
  if (atomic_load(&queue->sleepers) > 0) {
    pthread_mutex_lock(&queue->mutex);
    pthread_cond_broadcast(&queue->progress_cond);
    pthread_mutex_unlock(&queue->mutex);
  }
}

hrx_host_stamp_t* hrx_host_stamp_create(void) {
  hrx_host_stamp_t* stamp = malloc(sizeof(*stamp));
  if (!stamp) return NULL;
  atomic_init(&stamp->ref_count, 1);
  atomic_init(&stamp->ns, 0);
  return stamp;
}

void hrx_host_stamp_retain(hrx_host_stamp_t* stamp) {
  atomic_fetch_add_explicit(&stamp->ref_count, 1, memory_order_relaxed);
}

void hrx_host_stamp_release(hrx_host_stamp_t* stamp) {
  if (stamp && atomic_fetch_sub_explicit(&stamp->ref_count, 1,
                                         memory_order_acq_rel) == 1) {
    free(stamp);
  }
}

/* Drops what a command owns, once run or refused. */
static void hrx_host_command_discard(const hrx_host_command_t* command) {
  free(command->owned);
  hrx_host_queue_release(command->wait_queue);
  hrx_host_stamp_release(command->stamp);
  hrx_host_grid_release(command->grid);
}

/* Lists the queues whose awaited ticket of this queue is now complete, all
 * at once (their listing tokens move to the run lists). */
static void hrx_host_queue_release_dependents(hrx_host_queue_t* queue) {
  if (atomic_load(&queue->dependent_count) == 0) return;
  hrx_host_runnable_t* ready = NULL;
  pthread_mutex_lock(&queue->mutex);
  uint64_t completed = atomic_load(&queue->completed);
  hrx_host_queue_t** link = &queue->dependents;
  while (*link) {
    hrx_host_queue_t* dependent = *link;
    if (dependent->awaited_ticket <= completed) {
      *link = dependent->dependent_next;
      dependent->dependent_next = NULL;
      atomic_fetch_sub(&queue->dependent_count, 1);
      if (dependent->engines != queue->engines) {
        /* A queue of another device waiting for this one (a wait for an
         * event of another device): its own engines run it. */
        hrx_host_engines_list(dependent->engines, &dependent->run);
        continue;
      }
      /* Unlisted while its token is here: `run.next` is free to use. */
      dependent->run.next = ready;
      ready = &dependent->run;
    } else {
      link = &dependent->dependent_next;
    }
  }
  pthread_mutex_unlock(&queue->mutex);
  hrx_host_engines_list_chain(queue->engines, ready);
}

/* Registers `queue` (holding its listing token) to be listed again once
 * `target` completes `ticket`. Returns false, registering nothing, if it
 * already has. */
static bool hrx_host_queue_await(hrx_host_queue_t* queue,
                                 hrx_host_queue_t* target, uint64_t ticket) {
  pthread_mutex_lock(&target->mutex);
  /* Counted before the check: a completer that moves past `ticket` after
   * the check sees the count and lists the queue. */
  atomic_fetch_add(&target->dependent_count, 1);
  if (hrx_host_queue_is_complete(target, ticket)) {
    atomic_fetch_sub(&target->dependent_count, 1);
    pthread_mutex_unlock(&target->mutex);
    return false;
  }
  queue->awaited_ticket = ticket;
  queue->dependent_next = target->dependents;
  target->dependents = queue;
  pthread_mutex_unlock(&target->mutex);
  return true;
}

static void hrx_host_command_run(hrx_host_command_t* command) {
  switch (command->kind) {
    case HRX_HOST_COMMAND_COPY:
      memcpy(command->dst, command->src, command->length);
      break;
    case HRX_HOST_COMMAND_FILL:
      memset(command->dst, command->byte, command->length);
      break;
    case HRX_HOST_COMMAND_WAIT:
      /* Engines only get here once the ticket is complete. */
      hrx_host_queue_wait(command->wait_queue, command->wait_ticket);
      break;
    case HRX_HOST_COMMAND_BATCH:
      for (uint64_t i = 0; i < command->length; ++i) {
        const hrx_batch_command_t* c = &command->batch[i];
        if (c->kind == HRX_BATCH_FILL) {
          memset(c->dst, c->byte, c->length);
        } else {
          memcpy(c->dst, c->src, c->length);
        }
      }
      break;
    case HRX_HOST_COMMAND_HOST:
      command->host_fn(command->host_arg);
      break;
    case HRX_HOST_COMMAND_STAMP:
      atomic_store(&command->stamp->ns, hrx_now_ns());
      break;
    case HRX_HOST_COMMAND_KERNEL:
      /* Its runner ran every block (hrx_host_queue_run_kernel); only what
       * it holds is left to drop. */
      break;
  }
  hrx_host_command_discard(command);
  command->owned = NULL;
  command->wait_queue = NULL;
  command->stamp = NULL;
  command->grid = NULL;
}

/* Publishes the completion of ticket `done` (by the thread holding
 * `executing`). */
static void hrx_host_queue_complete(hrx_host_queue_t* queue, uint64_t done) {
  atomic_store(&queue->completed, done);
  hrx_host_queue_notify_progress(queue);
  hrx_host_queue_release_dependents(queue);
}

/* Releases `executing`; lists the queue if work is left (no-op while the
 * token is out). */
static void hrx_host_queue_stop_executing(hrx_host_queue_t* queue) {
  atomic_store(&queue->executing, 0);
  hrx_host_queue_notify_progress(queue);
  if (hrx_host_queue_has_pending(queue)) hrx_host_queue_schedule(queue);
}

/* A command's share of an engine turn: one unit per command and one per
 * HRX_HOST_TURN_BYTES of memory it moves, so that one large copy is a turn
 * of its own while small commands share one. */
enum { HRX_HOST_TURN_BYTES = 1 << 20 };

static uint32_t hrx_host_command_weight(const hrx_host_command_t* command) {
  uint64_t weight = 0;
  switch (command->kind) {
    case HRX_HOST_COMMAND_COPY:
    case HRX_HOST_COMMAND_FILL:
      weight = 1 + command->length / HRX_HOST_TURN_BYTES;
      break;
    case HRX_HOST_COMMAND_BATCH:
      for (uint64_t i = 0; i < command->length; ++i) {
        weight += 1 + command->batch[i].length / HRX_HOST_TURN_BYTES;
      }
      break;
    case HRX_HOST_COMMAND_WAIT:
    case HRX_HOST_COMMAND_HOST:
    case HRX_HOST_COMMAND_STAMP:
    case HRX_HOST_COMMAND_KERNEL:  /* its blocks count as they run */
      weight = 1;
      break;
  }
  return weight < UINT32_MAX ? (uint32_t)weight : UINT32_MAX;
}

typedef enum hrx_host_turn_e {
  HRX_HOST_TURN_DRAINED,  /* ran everything submitted */
  HRX_HOST_TURN_YIELDED,  /* work left; another queue's turn */
  HRX_HOST_TURN_AWAITING, /* stopped before an incomplete WAIT; registered */
} hrx_host_turn_t;

/* An engine's turn ends between blocks as between commands. */
typedef struct {
  hrx_host_queue_t* queue;
} hrx_host_turn_context_t;

static bool hrx_host_turn_should_end(void* context, uint32_t served) {
  hrx_host_queue_t* queue = ((hrx_host_turn_context_t*)context)->queue;
  return hrx_host_engines_should_yield(queue->engines, queue->run.lane,
                                       served);
}

/* One engine turn on a queue whose `executing` the engine holds; a
 * `dedicated` one never yields. */
static hrx_host_turn_t hrx_host_queue_run_turn(hrx_host_queue_t* queue,
                                               bool dedicated) {
  uint64_t done = atomic_load_explicit(&queue->completed, memory_order_relaxed);
  uint32_t served = 0;
  hrx_host_turn_context_t turn = {queue};
  for (;;) {
    if (done >= atomic_load(&queue->submitted)) return HRX_HOST_TURN_DRAINED;
    hrx_host_command_t* command = &queue->ring[done & queue->mask];
    if (command->kind == HRX_HOST_COMMAND_WAIT &&
        !hrx_host_queue_is_complete(command->wait_queue,
                                    command->wait_ticket) &&
        hrx_host_queue_await(queue, command->wait_queue,
                             command->wait_ticket)) {
      return HRX_HOST_TURN_AWAITING;
    }
    if (command->kind == HRX_HOST_COMMAND_KERNEL) {
      switch (hrx_host_grid_run(command->grid,
                                dedicated ? NULL : hrx_host_turn_should_end,
                                &turn, &served)) {
        case HRX_HOST_GRID_STOPPED:
          return HRX_HOST_TURN_YIELDED;
        case HRX_HOST_GRID_RUNNING:
          /* Blocks still run on other threads: the last one lists the
           * queue again (the token waits with the grid). */
          if (hrx_host_grid_await(command->grid, &queue->run)) {
            return HRX_HOST_TURN_AWAITING;
          }
          break;
        case HRX_HOST_GRID_FINISHED:
          break;
      }
    }
    uint32_t weight = hrx_host_command_weight(command);
    if (command->kind == HRX_HOST_COMMAND_HOST) {
      hrx_host_engines_leave(queue->engines);
      hrx_host_command_run(command);
      hrx_host_engines_return(queue->engines);
    } else {
      hrx_host_command_run(command);
    }
    hrx_host_queue_complete(queue, ++done);
    served = weight < UINT32_MAX - served ? served + weight : UINT32_MAX;
    if (!dedicated &&
        hrx_host_engines_should_yield(queue->engines, queue->run.lane,
                                      served)) {
      return done < atomic_load(&queue->submitted) ? HRX_HOST_TURN_YIELDED
                                                   : HRX_HOST_TURN_DRAINED;
    }
  }
}

void hrx_host_runnable_serve(hrx_host_runnable_t* runnable, bool dedicated) {
  hrx_host_queue_t* queue = hrx_host_queue_of(runnable);
  int expected = 0;
  if (!atomic_compare_exchange_strong(&queue->executing, &expected, 1)) {
    /* A waiter runs it; it lists the queue again if it leaves work. */
    hrx_host_queue_drop_token(queue);
    return;
  }
  /* The turn holds its own reference: after an AWAITING hand-off the token
   * (and its reference) belongs to the awaited queue or grid, which may
   * finish, let a waiter return and the queue's last owner release it
   * before this thread has stopped executing it. */
  hrx_host_queue_retain(queue);
  switch (hrx_host_queue_run_turn(queue, dedicated)) {
    case HRX_HOST_TURN_DRAINED:
      atomic_store(&queue->executing, 0);
      hrx_host_queue_notify_progress(queue);
      hrx_host_queue_drop_token(queue);
      break;
    case HRX_HOST_TURN_YIELDED:
      atomic_store(&queue->executing, 0);
      hrx_host_queue_notify_progress(queue);
      hrx_host_engines_list(queue->engines, &queue->run);
      break;
    case HRX_HOST_TURN_AWAITING:
      /* The token waits with the awaited queue. */
      hrx_host_queue_stop_executing(queue);
      break;
  }
  hrx_host_queue_release(queue);
}

typedef enum hrx_host_help_e {
  HRX_HOST_HELP_RAN,      /* ran what it could up to the target */
  HRX_HOST_HELP_BUSY,     /* another thread is running the queue */
  HRX_HOST_HELP_BLOCKED,  /* stopped before a command it may not run */
} hrx_host_help_t;

/* A waiter's run of a kernel ends between blocks once its deadline has
 * passed. */
static bool hrx_host_help_should_end(void* context, uint32_t served) {
  (void)served;
  return hrx_now_ns() >= *(const uint64_t*)context;
}

/* A waiter runs the blocks of a KERNEL command: returns whether the kernel
 * finished (false: the deadline passed first; what is left goes on at the
 * queue's next run). */
static bool hrx_host_help_kernel(hrx_host_grid_t* grid, uint64_t deadline) {
  uint32_t served = 0;
  hrx_host_grid_state_t state = hrx_host_grid_run(
      grid, deadline == UINT64_MAX ? NULL : hrx_host_help_should_end,
      &deadline, &served);
  if (state == HRX_HOST_GRID_STOPPED) return false;
  /* Other threads run the last blocks, at most one each. */
  return state == HRX_HOST_GRID_FINISHED ||
         hrx_host_grid_wait_until(grid, deadline);
}

/* A waiter runs pending commands up to `target` if no other thread is
 * running this queue's commands. It stops before a HOST command (engines
 * run those; BLOCKED). With a finite `deadline` (hrx_now_ns) it also stops
 * before a WAIT whose ticket is not complete (it could block past the
 * deadline; BLOCKED), and once the deadline has passed (RAN). What it
 * leaves is listed for the engines. */
static hrx_host_help_t hrx_host_queue_help(hrx_host_queue_t* queue,
                                           uint64_t target,
                                           uint64_t deadline) {
  int expected = 0;
  if (!atomic_compare_exchange_strong(&queue->executing, &expected, 1)) {
    return HRX_HOST_HELP_BUSY;
  }
  hrx_host_help_t result = HRX_HOST_HELP_RAN;
  uint64_t done = atomic_load_explicit(&queue->completed, memory_order_relaxed);
  for (;;) {
    uint64_t end = atomic_load(&queue->submitted);
    if (end > target) end = target;
    if (done >= end) break;
    hrx_host_command_t* command = &queue->ring[done & queue->mask];
    if (command->kind == HRX_HOST_COMMAND_HOST) {
      result = HRX_HOST_HELP_BLOCKED;
      break;
    }
    if (deadline != UINT64_MAX) {
      if (command->kind == HRX_HOST_COMMAND_WAIT &&
          !hrx_host_queue_is_complete(command->wait_queue,
                                      command->wait_ticket)) {
        result = HRX_HOST_HELP_BLOCKED;
        break;
      }
      if (hrx_now_ns() >= deadline) break;
    }
    if (command->kind == HRX_HOST_COMMAND_KERNEL &&
        !hrx_host_help_kernel(command->grid, deadline)) {
      break;
    }
    hrx_host_command_run(command);
    hrx_host_queue_complete(queue, ++done);
  }
  hrx_host_queue_stop_executing(queue);
  return result;
}

/* A waiter whose queue is being run by another thread spins this long,
 * then yields the CPU while polling (the executor may need this core: with
 * more threads than cores it can be preempted), then parks. A park costs a
 * wake-up of 70-100 us on small virtual machines. */
enum {
  HRX_HOST_WAIT_SPIN_NS = 5000,
  HRX_HOST_WAIT_YIELD_NS = 200000,
};

/* Waits on progress_cond under the queue's mutex until `deadline`
 * (UINT64_MAX: no limit). Returns false once the deadline has passed. */
static bool hrx_host_queue_park_locked(hrx_host_queue_t* queue,
                                       uint64_t deadline) {
  if (deadline == UINT64_MAX) {
    pthread_cond_wait(&queue->progress_cond, &queue->mutex);
    return true;
  }
  struct timespec until = hrx_clock_timespec(deadline);
  return pthread_cond_timedwait(&queue->progress_cond, &queue->mutex,
                                &until) != ETIMEDOUT;
}

/* Parks until `completed` moves past `seen` (an engine runs a command this
 * thread stopped before) or the deadline passes. */
static void hrx_host_queue_park_past(hrx_host_queue_t* queue, uint64_t seen,
                                     uint64_t deadline) {
  pthread_mutex_lock(&queue->mutex);
  atomic_fetch_add(&queue->sleepers, 1);
  while (atomic_load(&queue->completed) == seen &&
         hrx_host_queue_park_locked(queue, deadline)) {
  }
  atomic_fetch_sub(&queue->sleepers, 1);
  pthread_mutex_unlock(&queue->mutex);
}

bool hrx_host_queue_wait_until(hrx_host_queue_t* queue, uint64_t ticket,
                               uint64_t deadline) {
  while (!hrx_host_queue_is_complete(queue, ticket)) {
    if (deadline != UINT64_MAX && hrx_now_ns() >= deadline) return false;
    hrx_host_help_t outcome = hrx_host_queue_help(queue, ticket, deadline);
    if (outcome == HRX_HOST_HELP_RAN) continue;
    if (outcome == HRX_HOST_HELP_BLOCKED) {
      uint64_t now = atomic_load(&queue->completed);
      if (now < ticket) hrx_host_queue_park_past(queue, now, deadline);
      continue;
    }
    uint64_t start = hrx_now_ns();
    for (unsigned i = 1; !hrx_host_queue_is_complete(queue, ticket) &&
                         atomic_load(&queue->executing);
         ++i) {
      if ((i & 63) != 0) {
        hrx_host_cpu_relax();
        continue;
      }
      uint64_t now = hrx_now_ns();
      uint64_t waited = now - start;
      if (waited > HRX_HOST_WAIT_SPIN_NS + HRX_HOST_WAIT_YIELD_NS ||
          now >= deadline) {
        break;
      }
      if (waited > HRX_HOST_WAIT_SPIN_NS) sched_yield();
    }
    pthread_mutex_lock(&queue->mutex);
    atomic_fetch_add(&queue->sleepers, 1);
    while (!hrx_host_queue_is_complete(queue, ticket) &&
           atomic_load(&queue->executing) &&
           hrx_host_queue_park_locked(queue, deadline)) {
    }
    atomic_fetch_sub(&queue->sleepers, 1);
    pthread_mutex_unlock(&queue->mutex);
  }
  return true;
}

void hrx_host_queue_wait(hrx_host_queue_t* queue, uint64_t ticket) {
  hrx_host_queue_wait_until(queue, ticket, UINT64_MAX);
}

hrx_status_t hrx_host_queue_create(uint32_t capacity,
                                   hrx_host_engines_t* engines,
                                   hrx_host_lane_t lane, bool reserved,
                                   hrx_host_queue_t** out_queue) {
  uint64_t rounded = 2;
  while (rounded < capacity) rounded <<= 1;
  hrx_host_queue_t* queue = calloc(1, sizeof(*queue));
  hrx_host_command_t* ring = calloc(rounded, sizeof(*ring));
  if (!queue || !ring) {
    free(queue);
    free(ring);
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a host queue of %llu commands",
                           (unsigned long long)rounded);
  }
  atomic_init(&queue->ref_count, 1);
  queue->run.lane = lane;
  queue->run.reserved = reserved;
  queue->engines = engines;
  queue->ring = ring;
  queue->mask = rounded - 1;
  pthread_mutex_init(&queue->mutex, NULL);
  /* Timed waits measure deadlines on hrx_now_ns's clock. */
  hrx_clock_cond_init(&queue->progress_cond);
  *out_queue = queue;
  return NULL;
}

void hrx_host_queue_shutdown(hrx_host_queue_t* queue) {
  pthread_mutex_lock(&queue->mutex);
  queue->stopping = true;
  pthread_mutex_unlock(&queue->mutex);
  hrx_host_queue_wait(queue, hrx_host_queue_tail(queue));
  hrx_host_queue_release(queue);
}

void hrx_host_queue_retain(hrx_host_queue_t* queue) {
  atomic_fetch_add_explicit(&queue->ref_count, 1, memory_order_relaxed);
}

void hrx_host_queue_release(hrx_host_queue_t* queue) {
  if (!queue) return;
  if (atomic_fetch_sub_explicit(&queue->ref_count, 1, memory_order_acq_rel) !=
      1) {
    return;
  }
  pthread_mutex_destroy(&queue->mutex);
  pthread_cond_destroy(&queue->progress_cond);
  free(queue->ring);
  free(queue);
}

/* Whether the ring has a free slot (mutex held). */
static bool hrx_host_queue_has_room_locked(hrx_host_queue_t* queue) {
  return atomic_load(&queue->submitted) - atomic_load(&queue->completed) <=
         queue->mask;
}

/* The producer being served waits for half the ring to be free for at
 * most this long (and looks again every HRX_HOST_QUEUE_ROOM_SLICE_NS
 * whether producers queued up behind it); past it, one slot will do. */
#define HRX_HOST_QUEUE_BULK_WAIT_NS 1000000u
#define HRX_HOST_QUEUE_ROOM_SLICE_NS 200000u

/* Waits, in ticket order, until it is this producer's turn and the ring
 * has a slot (host_queue.h); false when the queue stops meanwhile. Called
 * and returns with the mutex held. The producer being served helps to run
 * the queue as any waiter does; the ones behind it park until the turn
 * moves (each take broadcasts progress_cond). With nobody behind it, it
 * first waits for half the ring, for up to HRX_HOST_QUEUE_BULK_WAIT_NS:
 * a thread that keeps the ring full of short commands then pays one
 * wake-up per half ring rather than one per command, while a thread
 * waiting elsewhere for it (e.g. for the stream's publication it makes)
 * waits about that long and one command, never for the ring to drain.
 * With producers behind it, it waits for one slot. */
static bool hrx_host_queue_wait_for_room_locked(hrx_host_queue_t* queue) {
  uint64_t mine = queue->space_next++;
  uint64_t turn_start = 0;
  for (;;) {
    if (queue->stopping) return false;
    if (queue->space_turn == mine) {
      uint64_t now = hrx_now_ns();
      if (!turn_start) turn_start = now;
      uint64_t bulk_end = turn_start + HRX_HOST_QUEUE_BULK_WAIT_NS;
      bool bulk = queue->space_next == mine + 1 && now < bulk_end;
      /* Commands that may stay in the ring when this producer goes on. */
      uint64_t keep = bulk ? (queue->mask + 1) / 2 : queue->mask;
      uint64_t submitted = atomic_load(&queue->submitted);
      uint64_t needed = submitted > keep ? submitted - keep : 0;
      if (hrx_host_queue_is_complete(queue, needed)) return true;
      uint64_t deadline = UINT64_MAX;
      if (bulk) {
        deadline = now + HRX_HOST_QUEUE_ROOM_SLICE_NS;
        if (deadline > bulk_end) deadline = bulk_end;
      }
      pthread_mutex_unlock(&queue->mutex);
      hrx_host_queue_wait_until(queue, needed, deadline);
      pthread_mutex_lock(&queue->mutex);
      continue;
    }
    atomic_fetch_add(&queue->sleepers, 1);
    pthread_cond_wait(&queue->progress_cond, &queue->mutex);
    atomic_fetch_sub(&queue->sleepers, 1);
  }
}

hrx_status_t hrx_host_queue_submit(hrx_host_queue_t* queue,
                                   const hrx_host_command_t* command,
                                   uint64_t* out_ticket) {
  pthread_mutex_lock(&queue->mutex);
  bool waited = false;
  if (!queue->stopping && (queue->space_next != queue->space_turn ||
                           !hrx_host_queue_has_room_locked(queue))) {
    if (hrx_nonblocking()) {
      pthread_mutex_unlock(&queue->mutex);
      hrx_host_command_discard(command);
      return hrx_would_block("space in a full host queue");
    }
    /* Full, or earlier producers wait for space: never drop, never pass
     * them. */
    waited = true;
    if (!hrx_host_queue_wait_for_room_locked(queue)) {
      /* Stopping: the producers behind this one see it too. */
      pthread_cond_broadcast(&queue->progress_cond);
    }
  }
  if (queue->stopping) {
    pthread_mutex_unlock(&queue->mutex);
    hrx_host_command_discard(command);
    return hrx_make_status(HRX_STATUS_FAILED_PRECONDITION,
                           "host queue is shutting down");
  }
  uint64_t ticket = atomic_load(&queue->submitted);
  queue->ring[ticket & queue->mask] = *command;
  atomic_store(&queue->submitted, ticket + 1);
  if (waited) {
    /* The next waiting producer's turn. */
    queue->space_turn++;
    if (queue->space_next != queue->space_turn) {
      pthread_cond_broadcast(&queue->progress_cond);
    }
  }
  pthread_mutex_unlock(&queue->mutex);
  hrx_host_queue_schedule(queue);
  if (out_ticket) *out_ticket = ticket + 1;
  return NULL;
}
