/* The holds that keep the other device's buffer of a stream's copies
 * between devices alive (the copies themselves: peer_copy.c,
 * hrx_stream_copy_peer). Internal to the core.
 *
 * A buffer's free waits only for its own device's work (hal/memory.h), so a
 * copy on a stream of another device could outlive it. Each such copy
 * therefore leaves a hold on its stream: the other device's buffer
 * (retained), a native event recorded right after the copy and, for a
 * staged copy, its staging block. A hold is given back once its event is
 * complete: by the stream's next call that enters it (hrx_stream_enter;
 * in non-blocking mode a last buffer release goes to the cleanup thread),
 * or by the stream's release, which waits for it.
 *
 * Thread-safe: one mutex guards the list; it is never held across a native
 * call that can wait or a release. */
#ifndef HRX_CORE_PEER_HOLDS_H_
#define HRX_CORE_PEER_HOLDS_H_

#include <pthread.h>
#include <stdatomic.h>

#include "hal/device.h"
#include "hrx.h"
#include "staging.h"

typedef struct hrx_peer_hold_s {
  hrx_buffer_t* buffer;            /* retained: the other device's */
  hrx_backend_device_t* backend;   /* borrowed: the stream's device's */
  hrx_native_event_t* event;       /* owned: recorded after the copy */
  hrx_staging_pool_t* staging;     /* borrowed: the stream's device's */
  hrx_staging_block_t* block;      /* owned until given back; or NULL */
  struct hrx_peer_hold_s* next;
} hrx_peer_hold_t;

typedef struct hrx_peer_holds_s {
  pthread_mutex_t mutex;
  hrx_peer_hold_t* head;  /* owned, newest first; mutex */
  atomic_int count;       /* entries, read without the mutex */
} hrx_peer_holds_t;

void hrx_peer_holds_initialize(hrx_peer_holds_t* holds);
/* The work of hrx_peer_holds_prune when something looked held. */
void hrx_peer_holds_prune_entries(hrx_peer_holds_t* holds);
/* Gives back the holds whose copies are complete; never waits for one.
 * Nothing held costs one atomic load (read without the mutex), inline:
 * every submission prunes. */
static inline void hrx_peer_holds_prune(hrx_peer_holds_t* holds) {
  if (atomic_load(&holds->count) != 0) hrx_peer_holds_prune_entries(holds);
}
/* Waits for every held copy, then gives everything back (the stream's
 * release; no copy can be added any more). */
void hrx_peer_holds_deinitialize(hrx_peer_holds_t* holds);

/* The hold of a copy on `device`'s queue along `path`: its event and, when
 * staged, a staging block of `length`; its buffer is set (retained) once
 * the copy is queued. */
hrx_status_t hrx_peer_hold_create(hrx_device_t* device, hrx_peer_path_t path,
                                  uint64_t length, hrx_peer_hold_t** out_hold);
/* Gives back what a hold owns; its copy is complete or never ran. */
void hrx_peer_hold_free(hrx_peer_hold_t* hold);
/* Keeps a hold whose copy is queued until it is complete. */
void hrx_peer_holds_add(hrx_peer_holds_t* holds, hrx_peer_hold_t* hold);

#endif /* HRX_CORE_PEER_HOLDS_H_ */
