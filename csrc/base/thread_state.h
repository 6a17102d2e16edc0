/* What the core remembers about the calling thread, in one thread-local
 * block. Internal to the core.
 *
 * Every field belongs to one rule and is written only by that rule's file
 * (the entry check also reads the non-blocking flag); they share a block
 * so that a function reading several of them looks the thread up once. In
 * a shared library each look-up of a thread-local is a call into the
 * dynamic linker (__tls_get_addr), and the compiler repeats it for every
 * access unless it is told the address is already known:
 * hrx_thread_state() is that one look-up. */
#ifndef HRX_BASE_THREAD_STATE_H_
#define HRX_BASE_THREAD_STATE_H_

#include <stdbool.h>
#include <stdint.h>

typedef struct hrx_thread_state_s {
  /* entry.c: the thread is running a host callback. */
  bool in_host_callback;
  /* nonblocking.c: the thread's non-blocking submission mode. */
  bool nonblocking;
  /* batching.c: the thread observed work (a wait of any kind) since its
   * last command. */
  bool observed;
  /* cleanup.c: the cleanup thread this thread is (NULL: none). */
  const struct hrx_cleanup_s* cleanup_thread;
  /* batching.c: when the thread last submitted a small copy or fill, on
   * any stream. */
  uint64_t last_batchable_ns;
  /* publication.c: the thread's last non-blocking submission left its
   * stream's batch full for the caller to publish
   * (hrx_thread_take_full_batch). */
  bool full_batch_left;
  /* hrx_thread_mark_device_thread: the thread is one that a live device's
   * teardown joins (a pacer or flusher thread); live_device.c hands a last
   * release made on it to the device's cleanup thread. */
  bool device_thread;
} hrx_thread_state_t;

/* Defined in thread_state.c; hidden, so that it binds within the core. */
extern _Thread_local hrx_thread_state_t hrx_thread_state_block
    __attribute__((visibility("hidden")));

/* The calling thread's block. Hold the pointer for the accesses of one
 * call; it is valid for the thread's lifetime. */
static inline hrx_thread_state_t* hrx_thread_state(void) {
  hrx_thread_state_t* state = &hrx_thread_state_block;
  /* Keeps the address: without this the compiler looks the thread-local
   * up again at each access through `state`. */
  __asm__("" : "+r"(state));
  return state;
}

/* Marks the calling thread, for its lifetime, as one that a live device's
 * teardown joins (device_thread above); called first thing by such a
 * thread. */
void hrx_thread_mark_device_thread(void);

#endif /* HRX_BASE_THREAD_STATE_H_ */
