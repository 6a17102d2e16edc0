/* Copies between devices (hrx_stream_copy_peer, hrx.h) and the holds that
 * keep their other device's buffer alive. Internal to the core.
 *
 * A buffer's free waits only for its own device's work (backend.h), so a
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
#ifndef HRX_CORE_PEER_COPY_H_
#define HRX_CORE_PEER_COPY_H_

#include <pthread.h>
#include <stdatomic.h>

#include "hal/device.h"
#include "hrx.h"

typedef struct hrx_peer_hold_s hrx_peer_hold_t;

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

#endif /* HRX_CORE_PEER_COPY_H_ */
