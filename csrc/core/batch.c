#include "batch.h"

#include <errno.h>
#include <stdlib.h>

#include "status.h"

static uint64_t hrx_batch_env(const char* name, uint64_t fallback,
                              uint64_t min, uint64_t max) {
  const char* text = getenv(name);
  if (!text || !*text) return fallback;
  char* end = NULL;
  errno = 0;
  unsigned long long value = strtoull(text, &end, 10);
  if (errno || *end || value < min || value > max) return fallback;
  return value;
}

void hrx_batch_settings_from_environment(hrx_batch_settings_t* out_settings) {
  out_settings->enabled = hrx_batch_env("HRX_BATCHING", 1, 0, 1) != 0;
  out_settings->delay_ns =
      hrx_batch_env("HRX_BATCH_DELAY_US", 20, 1, 10000000) * 1000u;
  out_settings->max_commands = (uint32_t)hrx_batch_env(
      "HRX_BATCH_MAX_COMMANDS", HRX_BATCH_MAX_COMMANDS, 2,
      HRX_BATCH_MAX_COMMANDS);
  out_settings->max_command_bytes = hrx_batch_env(
      "HRX_BATCH_MAX_COPY_BYTES", 64u << 10, 1, HRX_BATCH_MAX_COMMAND_BYTES);
  out_settings->max_batch_bytes = 2u << 20;
}

hrx_status_t hrx_batch_submit_one(hrx_backend_device_t* backend,
                                  hrx_native_queue_t* queue,
                                  const hrx_batch_command_t* command,
                                  hrx_ticket_t* out_ticket) {
  if (command->kind == HRX_BATCH_FILL) {
    return backend->vtable->fill(backend, queue, command->dst, command->byte,
                                 command->length, out_ticket);
  }
  return backend->vtable->copy(backend, queue, command->dst, command->src,
                               command->length, out_ticket);
}

hrx_status_t hrx_batch_publish(hrx_backend_device_t* backend,
                               hrx_native_queue_t* queue,
                               const hrx_batch_command_t* commands,
                               uint32_t count, hrx_ticket_t* io_ticket,
                               uint32_t* out_failed_index) {
  uint32_t done = 0;
  while (done < count) {
    uint32_t rest = count - done;
    uint32_t published = 0;
    hrx_ticket_t ticket = 0;
    hrx_status_t status;
    if (rest >= 2 && backend->vtable->batch_submit) {
      status = backend->vtable->batch_submit(backend, queue, commands + done,
                                             rest, &ticket, &published);
    } else {
      status = hrx_batch_submit_one(backend, queue, &commands[done], &ticket);
      published = status ? 0 : 1;
    }
    if (ticket > *io_ticket) *io_ticket = ticket;
    done += published;
    if (status) {
      /* The commands after the failed one must not run: they could read
       * what it should have written. */
      *out_failed_index = done;
      return status;
    }
  }
  return NULL;
}
