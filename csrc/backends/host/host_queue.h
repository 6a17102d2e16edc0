/* A host native queue: one worker thread draining a bounded FIFO ring of
 * commands. Producers that find the ring full wait (never drop). Waiters
 * (synchronize, event waits, free) help: when the worker is not executing,
 * the waiting thread runs the queue's pending commands itself, so a copy
 * followed by a wait costs no thread wake-up. Workers spin briefly before
 * parking, within a device-wide budget of spinners so that many queues on
 * few cores do not starve the producers. HOST commands (host functions) run
 * only on the queue's worker: a helping waiter stops before one and waits.
 *
 * Thread-safe. Never touches Python. */
#ifndef HRX_BACKENDS_HOST_HOST_QUEUE_H_
#define HRX_BACKENDS_HOST_HOST_QUEUE_H_

#include <pthread.h>
#include <stdatomic.h>

#include "backends/backend.h"

typedef struct hrx_host_queue_s hrx_host_queue_t;

/* Spinning policy shared by a device's queues. */
typedef struct hrx_host_spin_budget_s {
  atomic_int spinners;    /* workers spinning now */
  int max_spinners;       /* at most this many spin at once */
  uint64_t spin_ns;       /* how long one idle spell spins before parking */
} hrx_host_spin_budget_t;

typedef enum hrx_host_command_kind_e {
  HRX_HOST_COMMAND_COPY,
  HRX_HOST_COMMAND_FILL,
  HRX_HOST_COMMAND_WAIT,
  HRX_HOST_COMMAND_BATCH,
  HRX_HOST_COMMAND_HOST,
  HRX_HOST_COMMAND_STAMP,
} hrx_host_command_kind_t;

/* The clock reading of a timing event's record: written once by whichever
 * thread runs the STAMP command (after every earlier command of the queue),
 * read by the event. Shared by the event and the queued command. */
typedef struct hrx_host_stamp_s {
  atomic_int ref_count;
  atomic_uint_fast64_t ns;       /* hrx_now_ns() when run; 0 before */
} hrx_host_stamp_t;

/* A new stamp with one reference, or NULL when out of memory. */
hrx_host_stamp_t* hrx_host_stamp_create(void);
void hrx_host_stamp_retain(hrx_host_stamp_t* stamp);
void hrx_host_stamp_release(hrx_host_stamp_t* stamp);

typedef struct hrx_host_command_s {
  hrx_host_command_kind_t kind;
  uint8_t byte;
  void* dst;
  const void* src;
  uint64_t length;
  void* owned;                 /* freed once executed (upload staging) */
  const hrx_batch_command_t* batch;  /* BATCH: `length` commands; owned */
  hrx_host_queue_t* wait_queue;  /* retained; WAIT: the queue to wait on */
  uint64_t wait_ticket;          /* WAIT: until it completes this ticket */
  void (*host_fn)(void*);        /* HOST: runs host_fn(host_arg) */
  void* host_arg;                /* HOST: borrowed */
  hrx_host_stamp_t* stamp;       /* STAMP: retained; set to the time run */
} hrx_host_command_t;

/* Creates a queue and starts its worker. capacity is rounded up to a power
 * of two. The worker runs at nice level `nice` above the process's (its
 * lane's scheduling weight; raising one's nice level needs no privilege);
 * *out_nice (may be NULL) receives the level the worker got, once it has
 * set it. */
hrx_status_t hrx_host_queue_create(uint32_t capacity,
                                   hrx_host_spin_budget_t* budget, int nice,
                                   hrx_host_queue_t** out_queue,
                                   int* out_nice);
/* Commands accepted but not yet complete. */
uint64_t hrx_host_queue_pending(hrx_host_queue_t* queue);
/* Stops accepting work, waits for the submitted work, joins the worker and
 * drops the creator's reference. */
void hrx_host_queue_shutdown(hrx_host_queue_t* queue);
void hrx_host_queue_retain(hrx_host_queue_t* queue);
void hrx_host_queue_release(hrx_host_queue_t* queue);

/* Appends a command, waiting for space if the ring is full (in the calling
 * thread's non-blocking mode, core/nonblocking.h, a full ring is
 * WOULD_BLOCK instead). Takes ownership of command->owned and of the
 * references in command->wait_queue and command->stamp (also on failure).
 * Returns the command's ticket (1, 2, ...) in out_ticket. */
hrx_status_t hrx_host_queue_submit(hrx_host_queue_t* queue,
                                   const hrx_host_command_t* command,
                                   uint64_t* out_ticket);

/* The ticket of the last accepted command (0 when none). */
uint64_t hrx_host_queue_tail(hrx_host_queue_t* queue);
bool hrx_host_queue_is_complete(hrx_host_queue_t* queue, uint64_t ticket);
/* Blocks until the queue has completed `ticket`, helping if it can. */
void hrx_host_queue_wait(hrx_host_queue_t* queue, uint64_t ticket);
/* The same, giving up once hrx_now_ns() reaches `deadline` (UINT64_MAX:
 * never): returns whether `ticket` completed. Helps run the queue only up to
 * the deadline, so a large backlog does not hold the caller past it. */
bool hrx_host_queue_wait_until(hrx_host_queue_t* queue, uint64_t ticket,
                               uint64_t deadline);

#endif /* HRX_BACKENDS_HOST_HOST_QUEUE_H_ */
