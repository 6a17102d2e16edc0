/* The holds of a stream's copies between devices (peer_holds.h). */
#include "peer_holds.h"

#include <stdlib.h>

#include "base/status.h"
#include "live_device.h"
#include "wait.h"

void hrx_peer_holds_initialize(hrx_peer_holds_t* holds) {
  pthread_mutex_init(&holds->mutex, NULL);
  holds->head = NULL;
  atomic_init(&holds->count, 0);
}

/* Gives back what a hold owns; its copy is complete or never ran. */
void hrx_peer_hold_free(hrx_peer_hold_t* hold) {
  if (hold->block) hrx_staging_release(hold->staging, hold->block);
  if (hold->event) {
    hold->backend->vtable->event.destroy(hold->backend, hold->event);
  }
  hrx_buffer_release(hold->buffer);
  free(hold);
}

static bool hrx_peer_hold_done(hrx_peer_hold_t* hold) {
  bool done = false;
  hrx_status_t status =
      hold->backend->vtable->event.query(hold->backend, hold->event, &done);
  /* A failed query keeps the hold; the release waits for it. */
  hrx_status_free(status);
  return done;
}

void hrx_peer_holds_prune_entries(hrx_peer_holds_t* holds) {
  pthread_mutex_lock(&holds->mutex);
  hrx_peer_hold_t* list = holds->head;
  holds->head = NULL;
  pthread_mutex_unlock(&holds->mutex);
  hrx_peer_hold_t* kept = NULL;
  int freed = 0;
  for (hrx_peer_hold_t* next; list; list = next) {
    next = list->next;
    if (hrx_peer_hold_done(list)) {
      hrx_peer_hold_free(list);
      ++freed;
    } else {
      list->next = kept;
      kept = list;
    }
  }
  pthread_mutex_lock(&holds->mutex);
  while (kept) {
    hrx_peer_hold_t* next = kept->next;
    kept->next = holds->head;
    holds->head = kept;
    kept = next;
  }
  atomic_fetch_sub(&holds->count, freed);
  pthread_mutex_unlock(&holds->mutex);
}

void hrx_peer_holds_deinitialize(hrx_peer_holds_t* holds) {
  hrx_peer_hold_t* list = holds->head;
  holds->head = NULL;
  while (list) {
    hrx_peer_hold_t* next = list->next;
    hrx_status_free(
        hrx_wait_native_event(list->backend, list->event, NULL, NULL));
    hrx_peer_hold_free(list);
    list = next;
  }
  atomic_store(&holds->count, 0);
  pthread_mutex_destroy(&holds->mutex);
}

void hrx_peer_holds_add(hrx_peer_holds_t* holds, hrx_peer_hold_t* hold) {
  pthread_mutex_lock(&holds->mutex);
  hold->next = holds->head;
  holds->head = hold;
  atomic_fetch_add(&holds->count, 1);
  pthread_mutex_unlock(&holds->mutex);
}


/* The hold of a copy on `path` with the other device's `buffer` (not yet
 * retained): its event and, when staged, a staging block of `length`. */
hrx_status_t hrx_peer_hold_create(hrx_device_t* device,
                                         hrx_peer_path_t path, uint64_t length,
                                         hrx_peer_hold_t** out_hold) {
  hrx_peer_hold_t* hold = calloc(1, sizeof(*hold));
  if (!hold) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a copy between devices");
  }
  hold->backend = hrx_device_backend(device);
  hold->staging = hrx_device_staging(device);
  hrx_status_t status =
      hold->backend->vtable->event.create(hold->backend, &hold->event);
  if (!status && path == HRX_PEER_PATH_STAGED) {
    status = hrx_staging_acquire(hold->staging, length, &hold->block);
  }
  if (status) {
    hrx_peer_hold_free(hold);
    return status;
  }
  *out_hold = hold;
  return NULL;
}
