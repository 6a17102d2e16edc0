#include "host_queue.h"

#include <errno.h>
#include <sched.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "core/nonblocking.h"
#include "core/status.h"

struct hrx_host_queue_s {
  atomic_int ref_count;            /* creator + retained WAIT commands/events */
  hrx_host_spin_budget_t* budget;  /* borrowed; the device outlives workers */
  hrx_host_command_t* ring;        /* owned; capacity entries */
  uint64_t mask;                   /* capacity - 1 */
  pthread_mutex_t mutex;
  pthread_cond_t work_cond;        /* the worker parks here */
  pthread_cond_t progress_cond;    /* waiters and blocked producers park here */
  /* Tickets: `submitted` is written by producers under `mutex`; `completed`
   * only by the thread holding `executing`. Both are read without the lock. */
  atomic_uint_fast64_t submitted;
  atomic_uint_fast64_t completed;
  atomic_int executing;            /* 1 while a thread runs commands */
  atomic_int sleepers;             /* threads parked on progress_cond */
  bool worker_parked;              /* guarded by mutex */
  bool stopping;                   /* guarded by mutex */
  pthread_t thread;
  int nice;                        /* requested offset; read by the worker */
  int nice_set;                    /* the level it got; guarded by mutex */
  bool nice_known;                 /* guarded by mutex */
};

static inline void hrx_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static bool hrx_host_queue_has_pending(hrx_host_queue_t* queue) {
  return atomic_load(&queue->completed) < atomic_load(&queue->submitted);
}

bool hrx_host_queue_is_complete(hrx_host_queue_t* queue, uint64_t ticket) {
  return atomic_load(&queue->completed) >= ticket;
}

uint64_t hrx_host_queue_pending(hrx_host_queue_t* queue) {
  uint64_t completed = atomic_load(&queue->completed);
  uint64_t submitted = atomic_load(&queue->submitted);
  return submitted > completed ? submitted - completed : 0;
}

uint64_t hrx_host_queue_tail(hrx_host_queue_t* queue) {
  return atomic_load(&queue->submitted);
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
  }
  hrx_host_command_discard(command);
  command->owned = NULL;
  command->wait_queue = NULL;
  command->stamp = NULL;
}

typedef enum hrx_host_execute_e {
  HRX_HOST_EXECUTE_RAN,      /* ran what it could up to the target */
  HRX_HOST_EXECUTE_BUSY,     /* another thread is running the queue */
  HRX_HOST_EXECUTE_BLOCKED,  /* stopped before a HOST command (worker only) */
} hrx_host_execute_t;

/* Runs pending commands up to `target` if no other thread is running this
 * queue's commands. Only the worker runs HOST commands; any other thread
 * stops before one and leaves it to the worker. A helper with a finite
 * `deadline` (hrx_now_ns) also stops before a WAIT whose target is not
 * complete (it could block past the deadline; BLOCKED), and once the
 * deadline has passed (RAN): the worker runs what is left. */
static hrx_host_execute_t hrx_host_queue_try_execute(hrx_host_queue_t* queue,
                                                     uint64_t target,
                                                     bool is_worker,
                                                     uint64_t deadline) {
  int expected = 0;
  if (!atomic_compare_exchange_strong(&queue->executing, &expected, 1)) {
    return HRX_HOST_EXECUTE_BUSY;
  }
  hrx_host_execute_t result = HRX_HOST_EXECUTE_RAN;
  uint64_t done = atomic_load_explicit(&queue->completed, memory_order_relaxed);
  for (;;) {
    uint64_t end = atomic_load(&queue->submitted);
    if (end > target) end = target;
    if (done >= end) break;
    hrx_host_command_t* command = &queue->ring[done & queue->mask];
    if (command->kind == HRX_HOST_COMMAND_HOST && !is_worker) {
      result = HRX_HOST_EXECUTE_BLOCKED;
      break;
    }
    if (deadline != UINT64_MAX) {
      if (command->kind == HRX_HOST_COMMAND_WAIT &&
          !hrx_host_queue_is_complete(command->wait_queue,
                                      command->wait_ticket)) {
        result = HRX_HOST_EXECUTE_BLOCKED;
        break;
      }
      if (hrx_now_ns() >= deadline) break;
    }
    hrx_host_command_run(command);
    atomic_store(&queue->completed, ++done);
    hrx_host_queue_notify_progress(queue);
  }
  atomic_store(&queue->executing, 0);
  hrx_host_queue_notify_progress(queue);
  if (hrx_host_queue_has_pending(queue)) {
    /* Work beyond our target: make sure the worker is running. */
    pthread_mutex_lock(&queue->mutex);
    if (queue->worker_parked) {
      queue->worker_parked = false;
      pthread_cond_signal(&queue->work_cond);
    }
    pthread_mutex_unlock(&queue->mutex);
  }
  return result;
}

/* A waiter whose queue is being run by another thread spins this long,
 * then yields the CPU while polling (the executor may need this core: with
 * more workers than cores it can be preempted), then parks. A park costs a
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
  struct timespec until = {.tv_sec = (time_t)(deadline / 1000000000u),
                           .tv_nsec = (long)(deadline % 1000000000u)};
  return pthread_cond_timedwait(&queue->progress_cond, &queue->mutex,
                                &until) != ETIMEDOUT;
}

/* Parks until `completed` moves past `seen` (the worker runs a command
 * this thread stopped before) or the deadline passes. */
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
    hrx_host_execute_t outcome =
        hrx_host_queue_try_execute(queue, ticket, false, deadline);
    if (outcome == HRX_HOST_EXECUTE_RAN) continue;
    if (outcome == HRX_HOST_EXECUTE_BLOCKED) {
      uint64_t now = atomic_load(&queue->completed);
      if (now < ticket) hrx_host_queue_park_past(queue, now, deadline);
      continue;
    }
    uint64_t start = hrx_now_ns();
    for (unsigned i = 1; !hrx_host_queue_is_complete(queue, ticket) &&
                         atomic_load(&queue->executing);
         ++i) {
      if ((i & 63) != 0) {
        hrx_cpu_relax();
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

/* Spins while idle, within the device's spinner budget. Returns true if work
 * arrived. */
static bool hrx_host_worker_spin(hrx_host_queue_t* queue) {
  hrx_host_spin_budget_t* budget = queue->budget;
  if (atomic_fetch_add(&budget->spinners, 1) >= budget->max_spinners) {
    atomic_fetch_sub(&budget->spinners, 1);
    return false;
  }
  uint64_t start = hrx_now_ns();
  bool arrived = false;
  for (unsigned i = 1;; ++i) {
    if (hrx_host_queue_has_pending(queue)) {
      arrived = true;
      break;
    }
    hrx_cpu_relax();
    if ((i & 63) == 0) {
      if (hrx_now_ns() - start > budget->spin_ns) break;
      /* Leave the core to a runnable executor (workers share a nice
       * level, so a yield lets the other run at once). */
      sched_yield();
    }
  }
  atomic_fetch_sub(&budget->spinners, 1);
  return arrived;
}

static void* hrx_host_worker_main(void* arg) {
  hrx_host_queue_t* queue = arg;
  /* A lower priority than the process keeps a worker woken by a submission
   * from preempting the submitting thread, which usually helps run the
   * command itself when it waits; the lane's offset (queue->nice) weights
   * the lanes against each other. Failure only costs that nicety. */
  id_t tid = (id_t)syscall(SYS_gettid);
  errno = 0;
  int base = getpriority(PRIO_PROCESS, 0);
  if (errno) base = 0;
  int level = base + queue->nice;
  if (level > 19) level = 19;
  (void)setpriority(PRIO_PROCESS, tid, level);
  errno = 0;
  int got = getpriority(PRIO_PROCESS, tid);
  pthread_mutex_lock(&queue->mutex);
  queue->nice_set = errno ? base : got;
  queue->nice_known = true;
  pthread_cond_broadcast(&queue->progress_cond);
  pthread_mutex_unlock(&queue->mutex);
  for (;;) {
    hrx_host_queue_try_execute(queue, UINT64_MAX, true, UINT64_MAX);
    if (hrx_host_queue_has_pending(queue) && !atomic_load(&queue->executing)) {
      continue;
    }
    if (!hrx_host_queue_has_pending(queue) && hrx_host_worker_spin(queue)) {
      continue;
    }
    pthread_mutex_lock(&queue->mutex);
    bool runnable =
        hrx_host_queue_has_pending(queue) && !atomic_load(&queue->executing);
    if (!runnable) {
      if (queue->stopping && !hrx_host_queue_has_pending(queue)) {
        pthread_mutex_unlock(&queue->mutex);
        break;
      }
      queue->worker_parked = true;
      while (queue->worker_parked && !queue->stopping) {
        pthread_cond_wait(&queue->work_cond, &queue->mutex);
      }
      queue->worker_parked = false;
    }
    pthread_mutex_unlock(&queue->mutex);
  }
  return NULL;
}

hrx_status_t hrx_host_queue_create(uint32_t capacity,
                                   hrx_host_spin_budget_t* budget, int nice,
                                   hrx_host_queue_t** out_queue,
                                   int* out_nice) {
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
  queue->budget = budget;
  queue->ring = ring;
  queue->mask = rounded - 1;
  queue->nice = nice;
  pthread_mutex_init(&queue->mutex, NULL);
  pthread_cond_init(&queue->work_cond, NULL);
  /* Timed waits measure deadlines on hrx_now_ns's clock. */
  pthread_condattr_t progress_attr;
  pthread_condattr_init(&progress_attr);
  pthread_condattr_setclock(&progress_attr, CLOCK_MONOTONIC);
  pthread_cond_init(&queue->progress_cond, &progress_attr);
  pthread_condattr_destroy(&progress_attr);
  int error = pthread_create(&queue->thread, NULL, hrx_host_worker_main, queue);
  if (error) {
    pthread_mutex_destroy(&queue->mutex);
    pthread_cond_destroy(&queue->work_cond);
    pthread_cond_destroy(&queue->progress_cond);
    free(ring);
    free(queue);
    return hrx_make_status(HRX_STATUS_RESOURCE_EXHAUSTED,
                           "cannot start a host queue worker thread: %s",
                           strerror(error));
  }
  if (out_nice) {
    pthread_mutex_lock(&queue->mutex);
    while (!queue->nice_known) {
      pthread_cond_wait(&queue->progress_cond, &queue->mutex);
    }
    *out_nice = queue->nice_set;
    pthread_mutex_unlock(&queue->mutex);
  }
  *out_queue = queue;
  return NULL;
}

void hrx_host_queue_shutdown(hrx_host_queue_t* queue) {
  pthread_mutex_lock(&queue->mutex);
  queue->stopping = true;
  pthread_cond_signal(&queue->work_cond);
  pthread_mutex_unlock(&queue->mutex);
  pthread_join(queue->thread, NULL);
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
  pthread_cond_destroy(&queue->work_cond);
  pthread_cond_destroy(&queue->progress_cond);
  free(queue->ring);
  free(queue);
}

hrx_status_t hrx_host_queue_submit(hrx_host_queue_t* queue,
                                   const hrx_host_command_t* command,
                                   uint64_t* out_ticket) {
  pthread_mutex_lock(&queue->mutex);
  uint64_t ticket;
  for (;;) {
    if (queue->stopping) {
      pthread_mutex_unlock(&queue->mutex);
      hrx_host_command_discard(command);
      return hrx_make_status(HRX_STATUS_FAILED_PRECONDITION,
                             "host queue is shutting down");
    }
    ticket = atomic_load(&queue->submitted);
    if (ticket - atomic_load(&queue->completed) <= queue->mask) break;
    if (hrx_nonblocking()) {
      pthread_mutex_unlock(&queue->mutex);
      hrx_host_command_discard(command);
      return hrx_would_block("space in a full host queue");
    }
    /* Full: never drop. Wait (helping to run the queue, as any waiter does)
     * until half the ring is free, so a producer that outruns the executor
     * does not trade one wake-up per command with it. Other producers may
     * take slots meanwhile: the tail is read again. */
    pthread_mutex_unlock(&queue->mutex);
    hrx_host_queue_wait(queue, ticket - (queue->mask + 1) / 2);
    pthread_mutex_lock(&queue->mutex);
  }
  queue->ring[ticket & queue->mask] = *command;
  atomic_store(&queue->submitted, ticket + 1);
  if (queue->worker_parked) {
    queue->worker_parked = false;
    pthread_cond_signal(&queue->work_cond);
  }
  pthread_mutex_unlock(&queue->mutex);
  if (out_ticket) *out_ticket = ticket + 1;
  return NULL;
}
