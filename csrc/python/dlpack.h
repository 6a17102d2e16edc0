/* DLPack export of hrx buffers and import of host-resident DLPack tensors
 * (see dlpack.c). */
#ifndef HRX_PYTHON_DLPACK_H_
#define HRX_PYTHON_DLPACK_H_

#include <stdbool.h>

#include "module.h"

/* Buffer.__dlpack__(*, stream=None, max_version=None, dl_device=None,
 * copy=None) and Buffer.__dlpack_device__(). */
PyObject* hrx_py_buffer_dlpack(PyObject* self, PyObject* args,
                               PyObject* kwargs);
PyObject* hrx_py_buffer_dlpack_device(PyObject* self, PyObject* unused);

/* Host memory borrowed from a DLPack producer for the length of one call. */
typedef struct {
  void* data;        /* first byte */
  uint64_t length;   /* bytes, C-contiguous */
  void* managed;     /* the consumed managed tensor; owned */
  bool versioned;
} hrx_py_dlpack_host_t;

/* Consumes `object`'s DLPack export when it lives in host memory (CPU, CUDA
 * host or ROCm host) and is C-contiguous (and not read-only if `writable`).
 * Returns -1 with an error naming `role` otherwise. Runs Python code; call
 * with the GIL, before taking references to hrx objects. */
int hrx_py_dlpack_host_acquire(hrx_py_state_t* state, PyObject* object,
                               bool writable, const char* role,
                               hrx_py_dlpack_host_t* out);
/* Returns the tensor to its producer (calls its deleter), keeping any
 * pending Python error. Call with the GIL; a no-op when nothing is held. */
void hrx_py_dlpack_host_release(hrx_py_dlpack_host_t* memory);

/* The address of the first byte of a DLPack producer's data, for a
 * kernel argument on the device `info` describes: the producer must be in
 * memory that device's kernels address (host backend: host memory; NVIDIA:
 * CUDA memory of that device, managed or pinned host memory; AMD: ROCm
 * memory of that device or pinned host memory), else -1 with
 * InvalidArgumentError naming `role`. A GPU producer is asked with
 * stream=-1 (no synchronization: the caller orders the producer's work).
 * Nothing is held: the caller keeps the producer alive until the kernel
 * has run. Runs Python code. */
int hrx_py_dlpack_device_address(hrx_py_state_t* state, PyObject* object,
                                 const hrx_device_info_t* info,
                                 const char* role, void** out_address);

#endif /* HRX_PYTHON_DLPACK_H_ */
