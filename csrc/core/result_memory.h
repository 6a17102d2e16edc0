/* Pageable host memory for the results of reads: what a binding copies a
 * read into when it returns the bytes as a new array
 * (hrx_result_memory_alloc / _free, hrx.h). Internal to the core.
 *
 * Why a pool: a large fresh allocation is fresh pages, which the kernel
 * maps and zeroes one at a time as the copy first touches them, and that,
 * not the copy, bounds a read into a new array. Freed blocks are kept in
 * one process-wide pool, up to $HRX_RESULT_CACHE_BYTES of them, and the
 * next result of a like size is copied into memory that is mapped
 * already. Each block is its own anonymous mapping of a whole number of
 * HRX_RESULT_MEMORY_GRANULE bytes, advised to use transparent huge pages
 * where the system allows them (MADV_HUGEPAGE), so that a fresh block
 * takes far fewer faults too.
 *
 * A request takes the smallest free block of at least its size and at most
 * twice it (or one granule); none: a new mapping. A freed block that would
 * take the pool past its limit pushes the oldest free blocks out first; a
 * block larger than the limit is unmapped at once (and a limit lowered
 * since is applied to the pool then). The pool holds no
 * device: results outlive every device.
 *
 * Thread-safe: one mutex guards the free list and is never held across a
 * mapping call; a fork keeps the pool usable in the child
 * (pthread_atfork). */
#ifndef HRX_CORE_RESULT_MEMORY_H_
#define HRX_CORE_RESULT_MEMORY_H_

#include <stdint.h>

#include "hrx.h"

#define HRX_RESULT_MEMORY_GRANULE (2ull << 20)
#define HRX_RESULT_DEFAULT_CACHE_BYTES (1ull << 30)
#define HRX_RESULT_MAX_CACHE_BYTES (64ull << 30)
/* The most free blocks kept, whatever their bytes. */
#define HRX_RESULT_MAX_FREE_BLOCKS 64

/* $HRX_RESULT_CACHE_BYTES: HRX_RESULT_DEFAULT_CACHE_BYTES when unset,
 * 0 .. HRX_RESULT_MAX_CACHE_BYTES, else INVALID_ARGUMENT naming it (a live
 * device checks it when it opens; the pool reads it at each allocation). */
hrx_status_t hrx_result_cache_bytes_from_environment(uint64_t* out_bytes);

#endif /* HRX_CORE_RESULT_MEMORY_H_ */
