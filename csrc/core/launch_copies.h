/* Copies of kernel launches that wait in a stream's pending batch, in
 * recycled blocks. A launch that joins a batch carries a copy of its
 * arguments (the caller's are borrowed for the call only); a copy that
 * fits a block (HRX_LAUNCH_COPY_BLOCK_BYTES: a launch of a few scalar and
 * pointer arguments) lives in one, and a block whose launch was published
 * or dropped goes back to the free list, so that a stream launching at a
 * steady rate reuses the same few blocks instead of calling malloc on the
 * launching thread and free on the publishing one for every launch. Larger
 * copies get a block of their own, freed at once. Internal to the core.
 *
 * Not thread-safe: the owner guards it (a stream's pending batch: its
 * batch_mutex). */
#ifndef HRX_CORE_LAUNCH_COPIES_H_
#define HRX_CORE_LAUNCH_COPIES_H_

#include <stddef.h>
#include <stdint.h>

#include "hal/kernel.h"

/* The size of a recycled block. */
#define HRX_LAUNCH_COPY_BLOCK_BYTES 512u
/* The most free blocks kept: two batches' worth. */
#define HRX_LAUNCH_COPY_FREE_MAX (2u * HRX_BATCH_MAX_COMMANDS)

typedef struct hrx_launch_copies_s {
  void* free;      /* a list of free blocks, linked through their first
                      bytes */
  uint32_t count;  /* of `free` */
} hrx_launch_copies_t;

/* The layout of a copy: [launch][argument pointers][sizes][values, each
 * 16-byte aligned], in one block of hrx_launch_copy_bytes bytes (16-byte
 * aligned) that hrx_launch_copy_write fills. */
size_t hrx_launch_copy_bytes(const hrx_kernel_launch_t* launch);
hrx_kernel_launch_t* hrx_launch_copy_write(void* block,
                                           const hrx_kernel_launch_t* launch);

/* A copy of `launch` that lives on its own (argument values included),
 * in a free block where it fits one; NULL when out of memory. */
hrx_kernel_launch_t* hrx_launch_copies_make(hrx_launch_copies_t* copies,
                                            const hrx_kernel_launch_t* launch);
/* Takes back a copy hrx_launch_copies_make made (NULL: nothing). */
void hrx_launch_copies_give_back(hrx_launch_copies_t* copies,
                                 const hrx_kernel_launch_t* copy);
/* Frees every free block. */
void hrx_launch_copies_clear(hrx_launch_copies_t* copies);

#endif /* HRX_CORE_LAUNCH_COPIES_H_ */
