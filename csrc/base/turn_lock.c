/* A lock served in ticket order (turn_lock.h). */
#include "turn_lock.h"

#include "nonblocking.h"

void hrx_turn_lock_initialize(hrx_turn_lock_t* lock) {
  atomic_init(&lock->next, 0);
  atomic_init(&lock->serving, 0);
  pthread_mutex_init(&lock->mutex, NULL);
  pthread_cond_init(&lock->turn, NULL);
}

void hrx_turn_lock_deinitialize(hrx_turn_lock_t* lock) {
  pthread_cond_destroy(&lock->turn);
  pthread_mutex_destroy(&lock->mutex);
}

void hrx_turn_lock(hrx_turn_lock_t* lock) {
  uint64_t mine = atomic_fetch_add(&lock->next, 1);
  if (atomic_load(&lock->serving) == mine) return;
  /* The unlocker moves `serving` before it takes the mutex to broadcast,
   * and this thread looks at `serving` with the mutex held before it
   * sleeps: the broadcast cannot fall between the look and the sleep. */
  pthread_mutex_lock(&lock->mutex);
  while (atomic_load(&lock->serving) != mine) {
    pthread_cond_wait(&lock->turn, &lock->mutex);
  }
  pthread_mutex_unlock(&lock->mutex);
}

bool hrx_turn_lock_try(hrx_turn_lock_t* lock) {
  uint64_t serving = atomic_load(&lock->serving);
  uint64_t expected = serving;
  /* Only a ticket equal to `serving` is free with nobody waiting. */
  return atomic_compare_exchange_strong(&lock->next, &expected, serving + 1);
}

bool hrx_turn_lock_nonblocking(hrx_turn_lock_t* lock) {
  if (hrx_nonblocking()) return hrx_turn_lock_try(lock);
  hrx_turn_lock(lock);
  return true;
}

void hrx_turn_unlock(hrx_turn_lock_t* lock) {
  uint64_t serving = atomic_fetch_add(&lock->serving, 1) + 1;
  if (atomic_load(&lock->next) == serving) return;  /* nobody waits */
  pthread_mutex_lock(&lock->mutex);
  pthread_cond_broadcast(&lock->turn);
  pthread_mutex_unlock(&lock->mutex);
}
