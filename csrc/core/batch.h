/* Adaptive submission batching: the settings a live device reads from the
 * environment, and publication of a gathered batch through the backend.
 * The policy itself (when a stream publishes) lives in stream.c; the
 * deadline thread in flusher.c. Internal to the core.
 *
 * Environment (read when a live device is created):
 *   HRX_BATCHING             0 turns batching off for new live devices
 *                            (default 1; hrx_device_set_batching changes it
 *                            on a live device)
 *   HRX_BATCH_DELAY_US       the longest a command waits unpublished when
 *                            nothing else publishes it (default 20, 1..10000000)
 *   HRX_BATCH_MAX_COMMANDS   commands per batch (default and maximum
 *                            HRX_BATCH_MAX_COMMANDS; at least 2)
 *   HRX_BATCH_MAX_COPY_BYTES copies and fills above this go to the runtime's
 *                            own copy, one native call each (default 65536,
 *                            at most HRX_BATCH_MAX_COMMAND_BYTES); a batch
 *                            is also published once it holds 2 MiB
 */
#ifndef HRX_CORE_BATCH_H_
#define HRX_CORE_BATCH_H_

#include <stdbool.h>
#include <stdint.h>

#include "backends/backend.h"
#include "hrx.h"

typedef struct hrx_batch_settings_s {
  bool enabled;                /* initial value of the device's switch */
  uint64_t delay_ns;
  uint32_t max_commands;       /* [2, HRX_BATCH_MAX_COMMANDS] */
  uint64_t max_command_bytes;  /* larger commands are never batched */
  uint64_t max_batch_bytes;    /* a batch is published once it holds this */
} hrx_batch_settings_t;

void hrx_batch_settings_from_environment(hrx_batch_settings_t* out_settings);

/* Submits one command with the backend's copy() or fill(). */
hrx_status_t hrx_batch_submit_one(hrx_backend_device_t* backend,
                                  hrx_native_queue_t* queue,
                                  const hrx_batch_command_t* command,
                                  hrx_ticket_t* out_ticket);

/* Publishes commands[0..count) in order: one command through copy()/fill(),
 * more through the backend's batch_submit when it has one, else one call
 * each. Stops at the first command that cannot be published: returns its
 * failure with *out_failed_index set to its index; the commands before it
 * were published, the ones from it on were not. *io_ticket is raised to
 * the highest ticket published. */
hrx_status_t hrx_batch_publish(hrx_backend_device_t* backend,
                               hrx_native_queue_t* queue,
                               const hrx_batch_command_t* commands,
                               uint32_t count, hrx_ticket_t* io_ticket,
                               uint32_t* out_failed_index);

#endif /* HRX_CORE_BATCH_H_ */
