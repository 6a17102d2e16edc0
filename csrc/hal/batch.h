/* A batch of small commands published as few native operations: the
 * copies and fills the core's batching policy gathers (a queue's
 * batch_submit, queue.h) and the kernel launches it gathers (a driver's
 * launch_batch, kernel.h). */
#ifndef HRX_HAL_BATCH_H_
#define HRX_HAL_BATCH_H_

#include "objects.h"

struct hrx_kernel_launch_s;

/* One command of a batch: a copy, a fill or a kernel launch the core has
 * validated, as it would pass it to the queue's copy() or fill() or the
 * driver's kernel launch(). A queue's batch_submit receives copies and
 * fills only; a driver's launch_batch receives launches only. */
typedef enum hrx_batch_kind_e {
  HRX_BATCH_COPY = 0,
  HRX_BATCH_FILL = 1,
  HRX_BATCH_LAUNCH = 2,
} hrx_batch_kind_t;

typedef struct hrx_batch_command_s {
  void* dst;         /* COPY, FILL */
  const void* src;   /* COPY */
  uint64_t length;   /* COPY, FILL: > 0; LAUNCH: 0 */
  uint8_t kind;      /* hrx_batch_kind_t */
  uint8_t byte;      /* FILL */
  /* LAUNCH: the kernel and its launch, argument values included; the core
   * owns both until the command is published or dropped (a driver copies
   * what it keeps, as for launch()). */
  hrx_native_kernel_t* kernel;
  const struct hrx_kernel_launch_s* launch;
  /* The core's own (what it releases once the command is published or
   * dropped); drivers ignore it. */
  void* owner;
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
