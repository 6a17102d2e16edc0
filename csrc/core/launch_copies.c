/* Recycled copies of pending kernel launches (launch_copies.h). */
#include "launch_copies.h"

#include <stdlib.h>
#include <string.h>

enum { HRX_LAUNCH_COPY_ALIGN = 16 };

static size_t hrx_launch_copy_round(size_t bytes) {
  return (bytes + HRX_LAUNCH_COPY_ALIGN - 1) &
         ~(size_t)(HRX_LAUNCH_COPY_ALIGN - 1);
}

/* Where the values start: after the launch, the pointers and the sizes. */
static size_t hrx_launch_copy_head(uint32_t arg_count) {
  return hrx_launch_copy_round(sizeof(hrx_kernel_launch_t) +
                               arg_count * sizeof(void*) +
                               arg_count * sizeof(uint32_t));
}

size_t hrx_launch_copy_bytes(const hrx_kernel_launch_t* launch) {
  size_t values = 0;
  for (uint32_t i = 0; i < launch->arg_count; ++i) {
    values += hrx_launch_copy_round(launch->arg_sizes[i]);
  }
  return hrx_launch_copy_head(launch->arg_count) +
         (values ? values : HRX_LAUNCH_COPY_ALIGN);
}

hrx_kernel_launch_t* hrx_launch_copy_write(void* block,
                                           const hrx_kernel_launch_t* launch) {
  uint32_t n = launch->arg_count;
  unsigned char* bytes = block;
  hrx_kernel_launch_t* copy = block;
  *copy = *launch;
  const void** args = (const void**)(bytes + sizeof(hrx_kernel_launch_t));
  uint32_t* sizes = (uint32_t*)(args + n);
  unsigned char* value = bytes + hrx_launch_copy_head(n);
  for (uint32_t i = 0; i < n; ++i) {
    memcpy(value, launch->args[i], launch->arg_sizes[i]);
    args[i] = value;
    sizes[i] = launch->arg_sizes[i];
    value += hrx_launch_copy_round(launch->arg_sizes[i]);
  }
  copy->args = args;
  copy->arg_sizes = sizes;
  return copy;
}

hrx_kernel_launch_t* hrx_launch_copies_make(hrx_launch_copies_t* copies,
                                            const hrx_kernel_launch_t* launch) {
  size_t bytes = hrx_launch_copy_bytes(launch);
  void* block = NULL;
  if (bytes <= HRX_LAUNCH_COPY_BLOCK_BYTES && copies->free) {
    block = copies->free;
    memcpy(&copies->free, block, sizeof(void*));
    --copies->count;
  } else {
    block = aligned_alloc(HRX_LAUNCH_COPY_ALIGN,
                          bytes <= HRX_LAUNCH_COPY_BLOCK_BYTES
                              ? HRX_LAUNCH_COPY_BLOCK_BYTES
                              : hrx_launch_copy_round(bytes));
    if (!block) return NULL;
  }
  return hrx_launch_copy_write(block, launch);
}

void hrx_launch_copies_give_back(hrx_launch_copies_t* copies,
                                 const hrx_kernel_launch_t* copy) {
  if (!copy) return;
  void* block = (void*)copy;
  if (hrx_launch_copy_bytes(copy) > HRX_LAUNCH_COPY_BLOCK_BYTES ||
      copies->count >= HRX_LAUNCH_COPY_FREE_MAX) {
    free(block);
    return;
  }
  memcpy(block, &copies->free, sizeof(void*));
  copies->free = block;
  ++copies->count;
}

void hrx_launch_copies_clear(hrx_launch_copies_t* copies) {
  while (copies->free) {
    void* block = copies->free;
    memcpy(&copies->free, block, sizeof(void*));
    free(block);
  }
  copies->count = 0;
}
