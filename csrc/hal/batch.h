/* A batch of small commands published as one native operation (a queue's
 * batch_submit, queue.h): the copies and fills the core's batching policy
 * gathers (core/batching.h). */
#ifndef HRX_HAL_BATCH_H_
#define HRX_HAL_BATCH_H_

#include "objects.h"

/* One command of a batch: a copy or a fill the core has validated, as it
 * would pass it to the queue's copy() or fill(). */
typedef enum hrx_batch_kind_e {
  HRX_BATCH_COPY = 0,
  HRX_BATCH_FILL = 1,
} hrx_batch_kind_t;

typedef struct hrx_batch_command_s {
  void* dst;
  const void* src;   /* HRX_BATCH_COPY only */
  uint64_t length;   /* > 0 */
  uint8_t kind;      /* hrx_batch_kind_t */
  uint8_t byte;      /* HRX_BATCH_FILL only */
} hrx_batch_command_t;

/* The most commands one batch_submit call receives. It matches the copy
 * kernel's parameter block (drivers/hip/hip_batch_kernel.h), which must fit
 * the 4 KiB kernel-argument limit every HIP and CUDA version accepts. */
#define HRX_BATCH_MAX_COMMANDS 160

/* The most bytes one command of a batch moves. The hip copy kernel gives a
 * command one block per 16 KiB along grid y, whose limit is 65535 on every
 * HIP and CUDA device; larger commands are never batched (the core clamps
 * HRX_BATCH_MAX_COPY_BYTES to this, and a driver sends a larger one
 * natively). */
#define HRX_BATCH_MAX_COMMAND_BYTES (65535ull * 16384ull)

#endif /* HRX_HAL_BATCH_H_ */
