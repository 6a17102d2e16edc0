/* The turn lock (base/turn_lock.h): free and held, try and non-blocking
 * takes, service in the order threads asked, and mutual exclusion under
 * contention. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "base/nonblocking.h"
#include "base/turn_lock.h"
#include "check.h"

static void pause_briefly(void) {
  struct timespec t = {0, 1000000};  /* 1 ms */
  nanosleep(&t, NULL);
}

/* Waits until `count` tickets have been handed out: the threads that
 * asked are queued, in that order. */
static void wait_for_tickets(hrx_turn_lock_t* lock, uint64_t count) {
  while (atomic_load(&lock->next) < count) pause_briefly();
}

static void test_try_and_nonblocking(void) {
  hrx_turn_lock_t lock;
  hrx_turn_lock_initialize(&lock);
  CHECK(hrx_turn_lock_try(&lock));
  CHECK(!hrx_turn_lock_try(&lock));
  bool previous = hrx_thread_set_nonblocking(true);
  CHECK(!hrx_turn_lock_nonblocking(&lock));
  hrx_turn_unlock(&lock);
  CHECK(hrx_turn_lock_nonblocking(&lock));
  hrx_thread_set_nonblocking(previous);
  hrx_turn_unlock(&lock);
  /* Blocking mode waits instead of failing. */
  CHECK(hrx_turn_lock_nonblocking(&lock));
  hrx_turn_unlock(&lock);
  hrx_turn_lock(&lock);
  hrx_turn_unlock(&lock);
  CHECK(hrx_turn_lock_try(&lock));
  hrx_turn_unlock(&lock);
  hrx_turn_lock_deinitialize(&lock);
}

typedef struct {
  hrx_turn_lock_t* lock;
  _Atomic int* order;   /* the next place in `served` */
  int served[8];
  int name;
  int* places;          /* shared: served[place] = name */
} waiter_t;

static void* take_in_turn(void* arg) {
  waiter_t* w = arg;
  hrx_turn_lock(w->lock);
  w->places[atomic_fetch_add(w->order, 1)] = w->name;
  hrx_turn_unlock(w->lock);
  return NULL;
}

/* Two threads queue behind the holder; the holder releases and at once
 * asks again: it is served after both, in the order they asked. A try
 * while they wait fails. */
static void test_served_in_the_order_asked(void) {
  hrx_turn_lock_t lock;
  hrx_turn_lock_initialize(&lock);
  _Atomic int order = 0;
  int places[3] = {0, 0, 0};
  waiter_t a = {.lock = &lock, .order = &order, .name = 1, .places = places};
  waiter_t b = {.lock = &lock, .order = &order, .name = 2, .places = places};
  hrx_turn_lock(&lock);
  pthread_t ta, tb;
  CHECK(pthread_create(&ta, NULL, take_in_turn, &a) == 0);
  wait_for_tickets(&lock, 2);
  CHECK(pthread_create(&tb, NULL, take_in_turn, &b) == 0);
  wait_for_tickets(&lock, 3);
  CHECK(!hrx_turn_lock_try(&lock));
  hrx_turn_unlock(&lock);
  hrx_turn_lock(&lock);  /* asks again at once: after a and b all the same */
  places[atomic_fetch_add(&order, 1)] = 3;
  hrx_turn_unlock(&lock);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  CHECK(places[0] == 1);
  CHECK(places[1] == 2);
  CHECK(places[2] == 3);
  CHECK(hrx_turn_lock_try(&lock));
  hrx_turn_unlock(&lock);
  hrx_turn_lock_deinitialize(&lock);
}

enum { CONTENDERS = 4, ROUNDS = 20000 };

typedef struct {
  hrx_turn_lock_t lock;
  long counter;  /* only under the lock */
} shared_t;

static void* count_under_lock(void* arg) {
  shared_t* shared = arg;
  for (int i = 0; i < ROUNDS; ++i) {
    if (i % 3 == 0 && hrx_turn_lock_try(&shared->lock)) {
      shared->counter++;
      hrx_turn_unlock(&shared->lock);
      continue;
    }
    hrx_turn_lock(&shared->lock);
    shared->counter++;
    hrx_turn_unlock(&shared->lock);
  }
  return NULL;
}

/* Plain increments under the lock from several threads lose none (and
 * TSan sees no race). */
static void test_mutual_exclusion(void) {
  shared_t shared = {.counter = 0};
  hrx_turn_lock_initialize(&shared.lock);
  pthread_t threads[CONTENDERS];
  for (int i = 0; i < CONTENDERS; ++i) {
    CHECK(pthread_create(&threads[i], NULL, count_under_lock, &shared) == 0);
  }
  for (int i = 0; i < CONTENDERS; ++i) pthread_join(threads[i], NULL);
  CHECK(shared.counter == (long)CONTENDERS * ROUNDS);
  CHECK(atomic_load(&shared.lock.next) == atomic_load(&shared.lock.serving));
  hrx_turn_lock_deinitialize(&shared.lock);
}

int main(void) {
  test_try_and_nonblocking();
  test_served_in_the_order_asked();
  test_mutual_exclusion();
  printf("%d passed, %d failed\n", hrx_test_passed, hrx_test_failed);
  return hrx_test_failed ? 1 : 0;
}
