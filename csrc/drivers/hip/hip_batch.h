/* The batch kernel: one launch executes up to HRX_BATCH_MAX_COMMANDS small
 * copies and fills, whose descriptors travel in the kernel's parameter
 * block (so nothing has to be staged or reclaimed). Its source is compiled
 * at run time by the runtime compiler (hip_rtc.h) for the device's
 * architecture and loaded through the runtime: NVIDIA as PTX with
 * cudaLibraryLoadData (CUDA 12.0+), AMD as a code object with
 * hipModuleLoadData. Where that is impossible the backend publishes each
 * command with its own native call; `description` says which and why.
 * Private to csrc/drivers/hip.
 *
 * Thread-safe: prepare runs once per device under a mutex; launch may be
 * called concurrently on any streams. */
#ifndef HRX_DRIVERS_HIP_HIP_BATCH_H_
#define HRX_DRIVERS_HIP_HIP_BATCH_H_

#include <stdbool.h>

#include "hal/device.h"
#include "hip_types.h"
#include "base/status.h"

typedef struct hrx_hip_batch_s hrx_hip_batch_t;

/* `target` is the device's architecture ("sm_90", "gfx1151"). */
hrx_status_t hrx_hip_batch_create(int device_index, const char* target,
                                  hrx_hip_batch_t** out_batch);
/* The device is current; no launch is in flight or will follow. */
void hrx_hip_batch_destroy(hrx_hip_batch_t* batch);

/* Compiles and loads the kernel the first time (blocks for the compiler,
 * about a hundred milliseconds); later calls return at once. Returns
 * whether the kernel can be launched. Never fails otherwise: the reason is
 * kept in the description. */
bool hrx_hip_batch_prepare(hrx_hip_batch_t* batch);
/* Whether prepare has run to its end (lock-free): until then a call of
 * prepare may wait for the compiler. */
bool hrx_hip_batch_prepared(hrx_hip_batch_t* batch);

/* Writes "PTX from libnvrtc.so.13 for compute_90", or "unavailable: <why>;
 * one native call per command", followed by how many launches failed (and
 * the latest failure) when any did. */
void hrx_hip_batch_describe(hrx_hip_batch_t* batch, char* out,
                            size_t capacity);

/* Whether every command is small enough for the kernel's grid
 * (HRX_BATCH_MAX_COMMAND_BYTES); a batch that is not goes out natively. */
bool hrx_hip_batch_fits(const hrx_batch_command_t* commands, uint32_t count);

/* Compiles the kernel's source for `target` on `platform` ("nvidia",
 * "amd") with the runtime compiler (runtime_library: the HIP runtime in
 * use, where ROCm 5 keeps hiprtc; may be NULL). The image (PTX or code
 * object, malloc'ed) goes to the caller; out_description names the
 * compiler and architecture. Needs no device. */
hrx_status_t hrx_hip_batch_compile(const char* platform,
                                   const char* runtime_library,
                                   const char* target, char** out_image,
                                   size_t* out_size, char* out_description,
                                   size_t description_capacity);

/* Plans a launch: out_words[i] is command i's kernel word (length, byte,
 * kind, barrier bit) and *out_sequential whether any two commands touch
 * overlapping bytes (then one block runs them in order, with a barrier
 * before each command that depends on an earlier one). Exposed for tests. */
void hrx_hip_batch_plan(const hrx_batch_command_t* commands, uint32_t count,
                        uint64_t* out_words, bool* out_sequential);

/* Launches the kernel on `stream` for commands[0..count), count in
 * [1, HRX_BATCH_MAX_COMMANDS], each command at most
 * HRX_BATCH_MAX_COMMAND_BYTES. The device is current. A failed launch is
 * counted and described (hrx_hip_batch_describe) and returns the launch's
 * error; nothing was submitted, and the caller publishes that batch
 * another way. The kernel stays on for later batches. */
hrx_status_t hrx_hip_batch_launch(hrx_hip_batch_t* batch,
                                  hrx_hip_stream_t stream,
                                  const hrx_batch_command_t* commands,
                                  uint32_t count);

#endif /* HRX_DRIVERS_HIP_HIP_BATCH_H_ */
