/* A host native queue: a bounded FIFO ring of commands with tickets, served
 * by its device's engines (host_engines.h). Producers that find the ring
 * full wait, in turn (never drop).
 *
 * One thread at a time runs a queue's commands, in order: an engine, or a
 * waiter. Waiters (synchronize, event waits, free) help: when no engine is
 * running the queue, the waiting thread runs its pending commands itself,
 * so a copy followed by a wait costs no thread wake-up. HOST commands (host
 * functions) run only on engine threads: a helping waiter stops before one
 * and leaves it to an engine. A KERNEL command runs its grid's blocks on
 * the runner and on free engines (host_grid.h); it completes when the last
 * block has returned. An engine whose blocks are all claimed but not all
 * back does not wait: the queue leaves the run lists and the thread that
 * finishes the last block lists it again. Between blocks an engine's turn
 * may end like between commands (a more urgent lane, or its quantum with
 * others of its lane waiting); the kernel then goes on at the queue's
 * next turn.
 *
 * A WAIT command (an event wait) whose event is not complete never holds an
 * engine: the queue leaves the run lists and is listed again by whichever
 * thread completes the awaited command.
 *
 * Thread-safe. Never touches Python. */
#ifndef HRX_DRIVERS_HOST_HOST_QUEUE_H_
#define HRX_DRIVERS_HOST_HOST_QUEUE_H_

#include <pthread.h>
#include <stdatomic.h>

#include "hal/device.h"
#include "host_engines.h"
#include "host_grid.h"

typedef struct hrx_host_queue_s hrx_host_queue_t;

typedef enum hrx_host_command_kind_e {
  HRX_HOST_COMMAND_COPY,
  HRX_HOST_COMMAND_FILL,
  HRX_HOST_COMMAND_WAIT,
  HRX_HOST_COMMAND_BATCH,
  HRX_HOST_COMMAND_HOST,
  HRX_HOST_COMMAND_STAMP,
  HRX_HOST_COMMAND_KERNEL,
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
  hrx_host_grid_t* grid;         /* KERNEL: retained; the launch */
} hrx_host_command_t;

/* Creates a queue of `lane` served by `engines` (borrowed: they outlive the
 * queue's work); a `reserved` one gets an engine of its own when one is
 * free (host_engines.h). capacity is rounded up to a power of two. */
hrx_status_t hrx_host_queue_create(uint32_t capacity,
                                   hrx_host_engines_t* engines,
                                   hrx_host_lane_t lane, bool reserved,
                                   hrx_host_queue_t** out_queue);
/* The lane the queue was created in. */
hrx_host_lane_t hrx_host_queue_lane(const hrx_host_queue_t* queue);
/* Commands accepted but not yet complete. */
uint64_t hrx_host_queue_pending(hrx_host_queue_t* queue);
/* Stops accepting work, waits for the submitted work and drops the
 * creator's reference. */
void hrx_host_queue_shutdown(hrx_host_queue_t* queue);
void hrx_host_queue_retain(hrx_host_queue_t* queue);
void hrx_host_queue_release(hrx_host_queue_t* queue);

/* Appends a command, waiting for space if the ring is full (in the calling
 * thread's non-blocking mode, core/nonblocking.h, a full ring, or earlier
 * producers waiting for space, is WOULD_BLOCK instead). Producers that
 * wait are served in the order they came (a ticket each): one that finds
 * others waiting queues behind them even if a slot is free, so a thread
 * that keeps submitting never refills the ring ahead of an earlier waiter,
 * and no waiter waits for the ring to drain: one slot, after at most about
 * a millisecond in which a lone waiter waits for half the ring, to take its
 * wake-ups in bulk. Takes
 * ownership of command->owned and of the references in command->wait_queue,
 * command->stamp and command->grid (also on failure).
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

#endif /* HRX_DRIVERS_HOST_HOST_QUEUE_H_ */
