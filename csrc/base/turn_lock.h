/* A lock that serves waiting threads in the order they asked for it.
 *
 * A plain mutex lets the thread that just unlocked it take it again before
 * a woken waiter runs. A thread that locks in a tight loop (one that keeps
 * a stream's queue full, re-locking as soon as each submission returns)
 * can then keep another thread waiting for as long as it goes on. A turn
 * lock hands out tickets: a blocking lock waits for every earlier ticket,
 * so a waiter is passed by no one that asked after it.
 *
 * Taking a free lock costs one atomic increment and one load; releasing it
 * with nobody waiting, one increment and one load. Waiters sleep on a
 * condition variable. Not recursive. Never touches Python. */
#ifndef HRX_BASE_TURN_LOCK_H_
#define HRX_BASE_TURN_LOCK_H_

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct hrx_turn_lock_t {
  _Atomic uint64_t next;     /* the next ticket handed out */
  _Atomic uint64_t serving;  /* the ticket that holds the lock */
  pthread_mutex_t mutex;     /* guards the sleep on `turn` only */
  pthread_cond_t turn;       /* broadcast when `serving` moves on */
} hrx_turn_lock_t;

void hrx_turn_lock_initialize(hrx_turn_lock_t* lock);
/* The lock must be free, with no waiters. */
void hrx_turn_lock_deinitialize(hrx_turn_lock_t* lock);

/* Waits for every thread that asked earlier, then holds the lock. */
void hrx_turn_lock(hrx_turn_lock_t* lock);
/* Takes the lock only when it is free and nobody waits for it; returns
 * whether it did. */
bool hrx_turn_lock_try(hrx_turn_lock_t* lock);
/* Takes it as hrx_turn_lock does, or in non-blocking mode
 * (base/nonblocking.h) only as hrx_turn_lock_try does. */
bool hrx_turn_lock_nonblocking(hrx_turn_lock_t* lock);
/* Releases it to the next ticket. */
void hrx_turn_unlock(hrx_turn_lock_t* lock);

#endif  /* HRX_BASE_TURN_LOCK_H_ */
