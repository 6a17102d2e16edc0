/* The kernel cache on disk: one file per compiled kernel module, shared by
 * every process of the user, so fresh processes (a sweep's, a notebook
 * restarted) compile each kernel once.
 *
 * Where: $HRX_KERNEL_CACHE_DIR, else $XDG_CACHE_HOME/hrx/kernels, else
 * $HOME/.cache/hrx/kernels; HRX_KERNEL_CACHE=0 turns it off. Read at each
 * use.
 *
 * An entry is named by a hash of its key and holds:
 *   "HRXKCACH" (8 bytes), format version (u32), 0 (u32), key bytes (u64),
 *   image bytes (u64), the image's checksum (u64), the key, the image
 * (integers little-endian). The key is the whole of what the image depends
 * on (source, options, kernel names, compiler, target, image format), so a
 * file of another key under the same name (a hash collision, a foreign
 * file), of another format version, truncated or extended, or whose image
 * does not match its checksum is never used: the caller compiles again and
 * the entry is rewritten. An entry is written to a temporary file in the
 * same directory and renamed into place, so a reader sees a whole entry or
 * none. A directory that cannot be made or written leaves the kernel
 * uncached; the note says why, nothing is printed.
 *
 * Thread-safe (processes and threads may race on an entry: each writes a
 * whole one). */
#ifndef HRX_CORE_KERNEL_DISK_CACHE_H_
#define HRX_CORE_KERNEL_DISK_CACHE_H_

#include <stddef.h>
#include <stdint.h>

#include "hrx.h"

#define HRX_KERNEL_DISK_CACHE_VERSION 1u

/* The cache directory (malloc'ed) in *out_dir, or NULL with the reason in
 * *out_note (malloc'ed) when the cache is off or no directory is known.
 * INVALID_ARGUMENT for a malformed HRX_KERNEL_CACHE (it takes 0 or 1). */
hrx_status_t hrx_kernel_disk_cache_dir(char** out_dir, char** out_note);

/* Reads the entry of `key` in `dir`. A whole, matching entry: its image
 * (malloc'ed) in *out_image and its path in *out_path. None: *out_image
 * NULL, and *out_note NULL when there was no entry, else why the entry
 * there is not used (it will be rebuilt). Outputs are malloc'ed. */
void hrx_kernel_disk_cache_read(const char* dir, const void* key,
                                size_t key_size, void** out_image,
                                size_t* out_size, char** out_path,
                                char** out_note);

/* Writes the entry of `key`: its path in *out_path, or NULL with why it
 * could not be written in *out_note (both malloc'ed). */
void hrx_kernel_disk_cache_write(const char* dir, const void* key,
                                 size_t key_size, const void* image,
                                 size_t image_size, char** out_path,
                                 char** out_note);

/* FNV-1a, 64 bits: the entry's name and its image's checksum. */
uint64_t hrx_kernel_hash(const void* data, size_t size, uint64_t seed);

#endif /* HRX_CORE_KERNEL_DISK_CACHE_H_ */
