/* DLPack export of hrx buffers (for Buffer.__dlpack__) and import of
 * DLPack tensors (for host memory and kernel arguments); see dlpack.c. It
 * knows C buffers only, no binding type. */
#ifndef HRX_PYTHON_DLPACK_H_
#define HRX_PYTHON_DLPACK_H_

#include <stdbool.h>

#include "state.h"

/* Buffer.__dlpack__'s arguments (buffer.c parses them), converted. */
typedef struct {
  PyObject* stream;        /* borrowed; converted at the export, which
                              knows the device it applies to */
  bool versioned;          /* max_version asks for DLPack 1.x */
  bool has_device;         /* dl_device was given: */
  int64_t device[2];       /* (device_type, device_id) */
  bool copy;               /* copy=True */
} hrx_py_dlpack_request_t;

/* Converts __dlpack__'s stream, max_version, dl_device and copy (None when
 * not given): -1 with an error for a wrong one. May run Python code: call
 * it before the buffer handle is checked. */
int hrx_py_dlpack_request(hrx_py_state_t* state, PyObject* stream,
                          PyObject* max_version, PyObject* dl_device,
                          PyObject* copy, hrx_py_dlpack_request_t* out);
/* What an export describes: the element type as DLPack's (code, bits)
 * and the C-contiguous shape (borrowed; ndim extents). */
typedef struct {
  uint8_t code;
  uint8_t bits;
  int32_t ndim;
  const int64_t* shape;
} hrx_py_dlpack_layout_t;

/* The view [offset, offset + length) of `buffer` (borrowed from an open
 * handle) as a DLPack capsule of `layout` (NULL: 1-D uint8 of `length`),
 * after ordering the consumer's stream as `request` says; or NULL with an
 * error set. The capsule retains the buffer. */
PyObject* hrx_py_dlpack_export(hrx_py_state_t* state, hrx_buffer_t* buffer,
                               uint64_t offset, uint64_t length,
                               const hrx_py_dlpack_layout_t* layout,
                               const hrx_py_dlpack_request_t* request);
/* Buffer.__dlpack_device__ of `buffer` (borrowed): (device_type, id). */
PyObject* hrx_py_dlpack_device(hrx_py_state_t* state, hrx_buffer_t* buffer);

/* Host memory borrowed from a DLPack producer for the length of one call. */
typedef struct {
  void* data;        /* first byte */
  uint64_t length;   /* bytes, C-contiguous */
  void* managed;     /* the consumed managed tensor; owned */
  bool versioned;
  uint8_t dtype_code;   /* its element type: DLPack's DLDataType */
  uint8_t dtype_bits;
  uint16_t dtype_lanes;
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
