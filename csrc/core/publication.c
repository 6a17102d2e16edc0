/* A stream's publication (publication.h). */
#include "publication.h"

#include <stddef.h>

#include "base/clock.h"
#include "base/nonblocking.h"
#include "base/status.h"
#include "base/thread_state.h"
#include "kernel.h"
#include "live_device.h"

#define HRX_PUBLICATION_OF_ENTRY(e) \
  ((hrx_publication_t*)((char*)(e) - offsetof(hrx_publication_t, flush_entry)))

static void hrx_publication_publish_locked(hrx_publication_t* publication);

/* ------------------------------------------------------------- flusher */

static uint64_t hrx_publication_pending_since(hrx_flush_entry_t* entry) {
  return atomic_load(&HRX_PUBLICATION_OF_ENTRY(entry)->batch.since);
}

static bool hrx_publication_try_publish_entry(hrx_flush_entry_t* entry) {
  hrx_publication_t* publication = HRX_PUBLICATION_OF_ENTRY(entry);
  if (!hrx_turn_lock_try(&publication->publish_lock)) return false;
  /* Held while the queue still has two published batches to run, for at
   * most the hold (batch_window.h): the flusher comes back at the next
   * delay. */
  uint64_t hold = hrx_device_batch_settings(publication->device)->hold_ns;
  uint64_t since = atomic_load(&publication->batch.since);
  if (hold && since && hrx_now_ns() - since < hold &&
      hrx_batch_window_full(&publication->window, publication->backend)) {
    hrx_turn_unlock(&publication->publish_lock);
    return false;
  }
  hrx_publication_publish_locked(publication);
  hrx_turn_unlock(&publication->publish_lock);
  return true;
}

static void hrx_publication_publish_entry(hrx_flush_entry_t* entry) {
  hrx_publication_publish(HRX_PUBLICATION_OF_ENTRY(entry));
}

static const hrx_flush_entry_ops_t hrx_publication_flush_ops = {
    .pending_since = hrx_publication_pending_since,
    .try_publish = hrx_publication_try_publish_entry,
    .publish = hrx_publication_publish_entry,
};

/* ----------------------------------------------------------- lifecycle */

void hrx_publication_initialize(hrx_publication_t* publication,
                                hrx_device_t* device,
                                hrx_native_queue_t* queue,
                                hrx_pool_queue_t* pool_queue) {
  publication->device = device;
  publication->backend = hrx_device_backend(device);
  publication->queue = queue;
  publication->pool_queue = pool_queue;
  hrx_turn_lock_initialize(&publication->publish_lock);
  pthread_mutex_init(&publication->batch_mutex, NULL);
  hrx_failure_initialize(&publication->failure, hrx_device_failures(device));
  hrx_pending_batch_initialize(&publication->batch);
  publication->commands = 0;
  publication->flush_entry.ops = &hrx_publication_flush_ops;
  atomic_init(&publication->flush_entry.listed, false);
  publication->window = (hrx_batch_window_t){0};
  publication->pace_entry.backend = publication->backend;
  publication->pace_entry.queue = queue;
  atomic_init(&publication->pace_entry.held, 0);
}

void hrx_publication_finish(hrx_publication_t* publication) {
  hrx_flusher_remove(hrx_device_flusher(publication->device),
                     &publication->flush_entry);
  /* Held transfers go out (or are dropped after a failure) first. */
  hrx_pacer_wait_drained(hrx_device_pacer(publication->device),
                         &publication->pace_entry, NULL, NULL);
  hrx_publication_publish(publication);
}

void hrx_publication_deinitialize(hrx_publication_t* publication) {
  hrx_batch_window_deinitialize(&publication->window, publication->backend);
  hrx_pending_batch_deinitialize(&publication->batch);
  hrx_failure_unlist(&publication->failure);
  hrx_failure_deinitialize(&publication->failure);
  hrx_turn_lock_deinitialize(&publication->publish_lock);
  pthread_mutex_destroy(&publication->batch_mutex);
}

hrx_status_t hrx_publication_take_failure(hrx_publication_t* publication) {
  return hrx_failure_take(&publication->failure, hrx_failure_usable_again);
}

void hrx_publication_count_published(hrx_publication_t* publication,
                                     uint64_t commands, uint64_t bytes) {
  if (publication->pool_queue) {
    hrx_pool_queue_count_published(publication->pool_queue, commands, bytes);
  }
}

/* --------------------------------------------------------------- batches */

/* The launches of a batch that was published or dropped (batch_mutex not
 * held): their argument copies go back to the pending batch's blocks, all
 * under one hold of batch_mutex, then their kernel references go
 * (kernel.h). */
static void hrx_publication_release_launches(hrx_publication_t* publication,
                                             const hrx_batch_command_t* batch,
                                             uint32_t count) {
  bool locked = false;
  for (uint32_t i = 0; i < count; ++i) {
    if (batch[i].kind != HRX_BATCH_LAUNCH) continue;
    if (!locked) pthread_mutex_lock(&publication->batch_mutex);
    locked = true;
    hrx_launch_copies_give_back(&publication->batch.launch_copies,
                                batch[i].launch);
  }
  if (!locked) return;
  pthread_mutex_unlock(&publication->batch_mutex);
  for (uint32_t i = 0; i < count; ++i) {
    if (batch[i].kind == HRX_BATCH_LAUNCH) {
      hrx_kernel_pending_launch_release(&batch[i]);
    }
  }
}

/* What became of a batch moved out of the pending one (publish_lock
 * held, batch_mutex not): `skipped`, it was not run (the stream had
 * failed); otherwise `status` (taken) is NULL when every command was
 * published, or the failure of command `failed`: the ones before it were
 * published, the ones after it are dropped. */
static void hrx_publication_batch_done_locked(
    hrx_publication_t* publication, const hrx_batch_command_t* batch,
    uint32_t count, uint64_t first, uint64_t bytes, bool skipped,
    hrx_status_t status, uint32_t failed, const hrx_batch_tally_t* tally) {
  /* The batch's commands were accepted; the device counts them now, once
   * per batch (hrx_device_count_commands). */
  hrx_device_count_commands(publication->device, count);
  if (skipped) {
    hrx_failure_skip(&publication->failure, count);
    hrx_publication_release_launches(publication, batch, count);
    return;
  }
  uint32_t published = status ? failed : count;
  if (status) {
    bytes = 0;
    for (uint32_t i = 0; i < published; ++i) bytes += batch[i].length;
  }
  hrx_publication_count_published(publication, published, bytes);
  if (publication->pool_queue) {
    hrx_pool_queue_count_batched(publication->pool_queue, tally->runs,
                                 tally->commands);
  }
  if (status) {
    /* The same words as a lone command's, so that a failure reads alike
     * with batching on and off. */
    char what[96];
    hrx_failure_describe(hrx_batch_command_name(&batch[failed]),
                         batch[failed].length, what, sizeof(what));
    hrx_failure_record(&publication->failure, status, first + failed, what,
                       count - failed - 1);
  }
  hrx_publication_release_launches(publication, batch, count);
}

/* After a pending batch went out whole (publish_lock held): its end
 * joins the stream's window while batches may be held. */
static void hrx_publication_note_batch(hrx_publication_t* publication) {
  if (hrx_device_batch_settings(publication->device)->hold_ns) {
    hrx_batch_window_note(&publication->window, publication->backend,
                          publication->queue);
  }
}

/* Publishes the pending batch, if any, waiting for queue space if need be
 * (also when called in non-blocking mode); the caller holds publish_lock.
 * The batch is moved out under batch_mutex (the two halves of the buffer
 * swap), so producers keep appending to a fresh batch during the launch.
 * On a failed stream the batch is dropped (not run); a command that fails
 * fails the stream and drops the rest of its batch. */
static void hrx_publication_publish_locked(hrx_publication_t* publication) {
  hrx_batch_command_t* batch = NULL;
  uint64_t first = 0;
  uint64_t bytes = 0;
  pthread_mutex_lock(&publication->batch_mutex);
  uint32_t count = hrx_pending_batch_take_locked(&publication->batch, &batch,
                                                 &first, &bytes);
  pthread_mutex_unlock(&publication->batch_mutex);
  if (!count) return;
  bool skipped = hrx_failure_held(&publication->failure);
  hrx_status_t status = NULL;
  uint32_t failed = 0;
  hrx_batch_tally_t tally = {0};
  if (!skipped) {
    bool previous = hrx_thread_set_nonblocking(false);
    status = hrx_batch_publish(publication->backend, publication->queue,
                               batch, count, &failed, &tally);
    hrx_thread_set_nonblocking(previous);
  }
  /* Decided before batch_done_locked takes `status`. */
  bool whole = !skipped && !status;
  hrx_publication_batch_done_locked(publication, batch, count, first, bytes,
                                    skipped, status, failed, &tally);
  if (whole) hrx_publication_note_batch(publication);
  pthread_mutex_lock(&publication->batch_mutex);
  publication->batch.in_flight = false;
  pthread_mutex_unlock(&publication->batch_mutex);
}

/* The same in non-blocking mode, for a publication that must not wait
 * (publish_lock held). The driver is called with batch_mutex held (a
 * non-blocking call does not wait, so an appending producer waits no
 * longer than for another append), so that the commands it refuses with
 * WOULD_BLOCK stay pending, in order, as if they had not been offered;
 * that WOULD_BLOCK is returned. Otherwise NULL, as above. */
static hrx_status_t hrx_publication_publish_nonblocking_locked(
    hrx_publication_t* publication) {
  pthread_mutex_lock(&publication->batch_mutex);
  uint32_t count = publication->batch.count;
  bool skipped = hrx_failure_held(&publication->failure);
  hrx_status_t status = NULL;
  uint32_t failed = 0;
  hrx_batch_tally_t tally = {0};
  if (count && !skipped) {
    status = hrx_batch_publish(publication->backend, publication->queue,
                               publication->batch.commands, count, &failed,
                               &tally);
  }
  bool blocked = hrx_status_code(status) == HRX_STATUS_WOULD_BLOCK;
  uint32_t taken = blocked ? failed : count;
  uint64_t first = 0;
  uint64_t bytes = 0;
  hrx_batch_command_t* batch =
      taken ? hrx_pending_batch_take_first_locked(&publication->batch, taken,
                                                  &first, &bytes)
            : NULL;
  pthread_mutex_unlock(&publication->batch_mutex);
  if (taken) {
    /* Decided before batch_done_locked takes a failure's status. */
    bool whole = !skipped && (blocked || !status);
    hrx_publication_batch_done_locked(publication, batch, taken, first, bytes,
                                      skipped, blocked ? NULL : status,
                                      failed, &tally);
    if (whole) hrx_publication_note_batch(publication);
  }
  return blocked ? status : NULL;
}

void hrx_publication_publish(hrx_publication_t* publication) {
  hrx_turn_lock(&publication->publish_lock);
  hrx_publication_publish_locked(publication);
  hrx_turn_unlock(&publication->publish_lock);
}

/* ------------------------------------------------------------ ordering */

bool hrx_publication_wait_held(hrx_publication_t* publication,
                               const hrx_wait_hook_t* hook,
                               bool* out_interrupted) {
  if (!atomic_load(&publication->pace_entry.held)) return true;
  return hrx_pacer_wait_drained(hrx_device_pacer(publication->device),
                                &publication->pace_entry, hook,
                                out_interrupted);
}

bool hrx_publication_has_unpublished(hrx_publication_t* publication) {
  if (atomic_load(&publication->pace_entry.held)) return true;
  pthread_mutex_lock(&publication->batch_mutex);
  bool unpublished =
      hrx_pending_batch_unpublished_locked(&publication->batch);
  pthread_mutex_unlock(&publication->batch_mutex);
  return unpublished;
}

/* Takes publish_lock and publishes the pending batch (for a lone command,
 * which must follow it, or an observation). In non-blocking mode:
 * WOULD_BLOCK (not locked, nothing published) when another publisher holds
 * the lock (a batch moved out may still be on its way), or when the
 * driver would wait for queue space to take the pending batch. */
static hrx_status_t hrx_publication_lock_published(
    hrx_publication_t* publication) {
  hrx_pacer_t* pacer = hrx_device_pacer(publication->device);
  bool draining = false;  /* counted in the entry's drainers */
  for (;;) {
    if (!hrx_turn_lock_nonblocking(&publication->publish_lock)) {
      return hrx_would_block_briefly("the stream's publication lock");
    }
    if (!atomic_load(&publication->pace_entry.held)) break;
    /* Held transfers come first; only publish_lock lets the list grow,
     * and while this caller drains it no new transfer joins it. */
    hrx_turn_unlock(&publication->publish_lock);
    if (hrx_nonblocking()) {
      return hrx_would_block("the stream's held transfers to be published");
    }
    if (!draining) hrx_pacer_drain_begin(pacer, &publication->pace_entry);
    draining = true;
    hrx_publication_wait_held(publication, NULL, NULL);
  }
  if (draining) hrx_pacer_drain_end(pacer, &publication->pace_entry);
  if (!hrx_nonblocking()) {
    hrx_publication_publish_locked(publication);
    return NULL;
  }
  hrx_status_t blocked = hrx_publication_publish_nonblocking_locked(publication);
  if (blocked) {
    hrx_turn_unlock(&publication->publish_lock);
    return hrx_status_annotate(blocked,
                               "publishing the stream's pending batch");
  }
  return NULL;
}

hrx_status_t hrx_publication_publish_pending(hrx_publication_t* publication) {
  if (!hrx_publication_has_unpublished(publication)) return NULL;
  HRX_RETURN_IF_ERROR(hrx_publication_lock_published(publication));
  hrx_turn_unlock(&publication->publish_lock);
  return NULL;
}

uint64_t hrx_publication_lock_held(hrx_publication_t* publication) {
  hrx_turn_lock(&publication->publish_lock);
  /* The pending batch goes out first: nothing accepted earlier may run
   * after the held transfer. */
  for (;;) {
    hrx_publication_publish_locked(publication);
    pthread_mutex_lock(&publication->batch_mutex);
    if (!hrx_pending_batch_unpublished_locked(&publication->batch)) {
      uint64_t number = ++publication->commands;
      atomic_fetch_add(&publication->pace_entry.held, 1);
      pthread_mutex_unlock(&publication->batch_mutex);
      return number;
    }
    pthread_mutex_unlock(&publication->batch_mutex);
  }
}

void hrx_publication_unlock(hrx_publication_t* publication) {
  hrx_turn_unlock(&publication->publish_lock);
}

/* ------------------------------------------------------- lone commands */

/* Numbers and counts one command accepted outside a batch. */
static uint64_t hrx_publication_accept_one(hrx_publication_t* publication) {
  pthread_mutex_lock(&publication->batch_mutex);
  uint64_t number = ++publication->commands;
  pthread_mutex_unlock(&publication->batch_mutex);
  hrx_device_count_commands(publication->device, 1);
  return number;
}

/* Runs one command outside a batch with publish_lock held (the pending
 * batch already published): not run on a failed stream; a failure fails the
 * stream, or is returned when the command is an observation point. A
 * WOULD_BLOCK of the driver (non-blocking mode) is returned as it is, with
 * nothing accepted: such a command is numbered once the driver took it. */
static hrx_status_t hrx_publication_run_locked(hrx_publication_t* publication,
                                               const hrx_command_t* command) {
  if (command->observes) {
    HRX_RETURN_IF_ERROR(hrx_publication_take_failure(publication));
  }
  bool nonblocking = hrx_nonblocking();
  uint64_t number = nonblocking ? 0 : hrx_publication_accept_one(publication);
  if (hrx_failure_held(&publication->failure)) {
    if (nonblocking) hrx_publication_accept_one(publication);
    hrx_failure_skip(&publication->failure, 1);
    return NULL;
  }
  hrx_status_t status = command->submit(publication->backend,
                                        publication->queue, command->user_data);
  if (hrx_status_code(status) == HRX_STATUS_WOULD_BLOCK) return status;
  if (nonblocking) number = hrx_publication_accept_one(publication);
  if (!status) {
    hrx_publication_count_published(publication, 1, command->bytes);
    return NULL;
  }
  if (command->observes) return status;
  char what[96];
  hrx_failure_describe(command->what, command->bytes, what, sizeof(what));
  hrx_failure_record(&publication->failure, status, number, what, 0);
  return NULL;
}

hrx_status_t hrx_publication_submit(hrx_publication_t* publication,
                                    const hrx_command_t* command) {
  /* Every command accepted before this one is published first, so the
   * queue sees them in order. */
  HRX_RETURN_IF_ERROR(hrx_publication_lock_published(publication));
  hrx_status_t status = hrx_publication_run_locked(publication, command);
  hrx_turn_unlock(&publication->publish_lock);
  return status;
}

/* ------------------------------------------------- small copies, fills */

static hrx_status_t hrx_publication_submit_batchable(
    hrx_backend_device_t* backend, hrx_native_queue_t* queue,
    void* user_data) {
  return hrx_batch_submit_one(backend, queue, user_data);
}

/* A small copy or fill, or a launch, as a command of its own. */
static hrx_command_t hrx_publication_batchable_command(
    const hrx_batch_command_t* command) {
  return (hrx_command_t){
      .submit = hrx_publication_submit_batchable,
      .user_data = (void*)command,
      .bytes = command->length,
      .what = hrx_batch_command_name(command),
  };
}

static hrx_status_t hrx_publication_submit_alone(
    hrx_publication_t* publication, const hrx_batch_command_t* command) {
  hrx_command_t lone = hrx_publication_batchable_command(command);
  return hrx_publication_submit(publication, &lone);
}

/* The idle path: with nothing pending on the stream and either `urgent`
 * (the thread just observed) or the stream quiet too and its queue idle,
 * the command goes out alone at once; returns whether it did. Otherwise
 * nothing happens, also when a non-blocking call finds the lock taken or
 * the queue full: then the queue is busy and the command is gathered. */
static bool hrx_publication_publish_if_idle(
    hrx_publication_t* publication, const hrx_batch_command_t* command,
    uint64_t now, bool urgent) {
  const hrx_batch_settings_t* settings =
      hrx_device_batch_settings(publication->device);
  const hrx_backend_vtable_t* vtable = publication->backend->vtable;
  /* In non-blocking mode a publication in progress means the queue is not
   * idle: batch. */
  if (!hrx_turn_lock_nonblocking(&publication->publish_lock)) return false;
  if (atomic_load(&publication->pace_entry.held)) {
    hrx_turn_unlock(&publication->publish_lock);
    return false;  /* the batch path waits for the held transfers */
  }
  pthread_mutex_lock(&publication->batch_mutex);
  bool empty = publication->batch.count == 0;
  bool quiet = now - publication->batch.last_ns > settings->delay_ns;
  pthread_mutex_unlock(&publication->batch_mutex);
  bool published = false;
  uint64_t pending = UINT64_MAX;  /* an error leaves it busy */
  if (empty && !urgent && quiet) {
    hrx_status_free(vtable->queue.query(publication->backend,
                                        publication->queue, &pending));
  }
  if (empty && (urgent || (quiet && pending == 0))) {
    hrx_command_t lone = hrx_publication_batchable_command(command);
    /* Only a WOULD_BLOCK comes back (not observing); nothing was done. */
    hrx_status_t blocked = hrx_publication_run_locked(publication, &lone);
    published = !blocked;
    hrx_status_free(blocked);
    if (published) {
      pthread_mutex_lock(&publication->batch_mutex);
      publication->batch.last_ns = now;
      pthread_mutex_unlock(&publication->batch_mutex);
    }
  }
  hrx_turn_unlock(&publication->publish_lock);
  return published;
}

/* Publishes a full pending batch before a command joins it; returns with
 * batch_mutex held and the batch not full. In non-blocking mode it
 * publishes only what can go without waiting: WOULD_BLOCK (batch_mutex not
 * held, nothing changed) when another publisher holds publish_lock or the
 * queue is full. */
static hrx_status_t hrx_publication_lock_batch_with_room(
    hrx_publication_t* publication, const hrx_batch_settings_t* settings) {
  hrx_pacer_t* pacer = hrx_device_pacer(publication->device);
  bool draining = false;  /* counted in the entry's drainers */
  hrx_status_t status = NULL;
  for (;;) {
    pthread_mutex_lock(&publication->batch_mutex);
    if (atomic_load(&publication->pace_entry.held)) {
      /* Counted under batch_mutex by the held path: nothing joins the
       * batch ahead of a held transfer, and while this caller drains the
       * held list no new transfer joins it. */
      pthread_mutex_unlock(&publication->batch_mutex);
      if (hrx_nonblocking()) {
        status =
            hrx_would_block("the stream's held transfers to be published");
        break;
      }
      if (!draining) hrx_pacer_drain_begin(pacer, &publication->pace_entry);
      draining = true;
      hrx_publication_wait_held(publication, NULL, NULL);
      continue;
    }
    if (!hrx_pending_batch_full_locked(&publication->batch, settings)) break;
    /* Full and not yet published by whoever filled it: publish it here. */
    pthread_mutex_unlock(&publication->batch_mutex);
    status = hrx_publication_lock_published(publication);
    if (status) break;
    hrx_turn_unlock(&publication->publish_lock);
  }
  /* With batch_mutex held (on success), no transfer is counted held before
   * the command joins the batch. */
  if (draining) hrx_pacer_drain_end(pacer, &publication->pace_entry);
  return status;
}

bool hrx_thread_take_full_batch(void) {
  hrx_thread_state_t* state = hrx_thread_state();
  bool left = state->full_batch_left;
  state->full_batch_left = false;
  return left;
}

hrx_status_t hrx_publication_enqueue(hrx_publication_t* publication,
                                     const hrx_batch_command_t* command,
                                     bool nonblocking) {
  const hrx_batch_settings_t* settings =
      hrx_device_batch_settings(publication->device);
  bool launch = command->kind == HRX_BATCH_LAUNCH;
  bool batching = launch ? hrx_device_batches_launches(publication->device)
                         : hrx_device_batching(publication->device);
  if (!batching || command->length > settings->max_command_bytes) {
    return hrx_publication_submit_alone(publication, command);
  }
  hrx_batch_thread_t thread = hrx_batch_thread_begin(settings);
  if (thread.quiet &&
      hrx_publication_publish_if_idle(publication, command, thread.now,
                                      thread.urgent)) {
    return NULL;
  }
  hrx_flusher_t* flusher = hrx_device_flusher(publication->device);
  /* A non-blocking producer starts a batch only while the flusher watches
   * the stream (batching.h, hrx_flusher_try_watch). */
  bool watched = !nonblocking ||
                 hrx_flusher_try_watch(flusher, &publication->flush_entry);
  hrx_status_t blocked =
      hrx_publication_lock_batch_with_room(publication, settings);
  if (!blocked && publication->batch.count == 0 && !watched) {
    pthread_mutex_unlock(&publication->batch_mutex);
    blocked = hrx_would_block_briefly("the batch deadline thread's lock");
  }
  if (blocked) {
    /* Nothing changed: the repeated call takes the same decisions. */
    hrx_batch_thread_undo(&thread);
    return blocked;
  }
  /* A launch that waits in the batch keeps its arguments and kernel with
   * it; the caller's are borrowed. */
  hrx_batch_command_t owned;
  if (launch) {
    if (!hrx_kernel_pending_launch_make(
            command, &publication->batch.launch_copies, &owned)) {
      pthread_mutex_unlock(&publication->batch_mutex);
      return hrx_publication_submit_alone(publication, command);
    }
  }
  bool started = false;
  bool full = false;
  if (!hrx_pending_batch_append_locked(&publication->batch, settings,
                                       launch ? &owned : command,
                                       publication->commands + 1, thread.now,
                                       &started, &full)) {
    if (launch) {
      hrx_launch_copies_give_back(&publication->batch.launch_copies,
                                  owned.launch);
    }
    pthread_mutex_unlock(&publication->batch_mutex);
    hrx_status_t status = hrx_publication_submit_alone(publication, command);
    if (launch) hrx_kernel_pending_launch_release(&owned);
    return status;
  }
  ++publication->commands;
  pthread_mutex_unlock(&publication->batch_mutex);
  if (full && !nonblocking) {
    hrx_publication_publish(publication);
  } else if (full) {
    /* Publishing a full batch is the one long part of a small command (up
     * to HRX_BATCH_MAX_COMMANDS copies, or graph nodes rewritten one by
     * one): a caller in non-blocking mode holds a global lock, so it is
     * left to the caller to do without it (hrx_thread_take_full_batch),
     * else to the flusher or the stream's next command. */
    hrx_thread_state()->full_batch_left = true;
  }
  if (started) {
    hrx_status_t failure =
        hrx_flusher_notify(flusher, &publication->flush_entry);
    if (failure) {
      /* Without the deadline thread nothing bounds the delay: publish now. */
      hrx_status_free(failure);
      hrx_publication_publish(publication);
    }
  }
  return NULL;
}
