/* Host memory that a stream call reads or writes in place (host_memory.c):
 * Stream.upload's data, read_into's and read_blocking's out. */
#ifndef HRX_PYTHON_HOST_MEMORY_H_
#define HRX_PYTHON_HOST_MEMORY_H_

#include "dlpack.h"
#include "state.h"

/* A C-contiguous buffer (buffer protocol, preferred) or a host-resident
 * DLPack tensor, held for the length of one call. */
typedef struct {
  Py_buffer view;
  bool has_view;
  hrx_py_dlpack_host_t dlpack;
  void* data;
  uint64_t length;
} hrx_py_host_memory_t;

/* Fills `out` from `object` (writable when `writable`), or -1 with an error
 * naming `role`. Runs Python code, so call it before taking references to
 * hrx objects. Release with hrx_py_host_memory_release. */
int hrx_py_host_memory_get(hrx_py_state_t* state, PyObject* object,
                           bool writable, const char* role,
                           hrx_py_host_memory_t* out);
/* Call with the GIL. */
void hrx_py_host_memory_release(hrx_py_host_memory_t* memory);

/* 0 when `memory` holds at least `src`'s bytes, else -1 with the core's
 * error (the stream's read_blocking refuses before submitting). */
int hrx_py_host_memory_fits(hrx_py_state_t* state,
                            const hrx_py_host_memory_t* memory,
                            hrx_stream_t* stream, hrx_view_t src);

/* A writable C-contiguous buffer protocol export of `object` (read_into's
 * out), or -1 with an error naming `role`. Release with
 * PyBuffer_Release. Runs Python code. */
int hrx_py_host_buffer_writable(hrx_py_state_t* state, PyObject* object,
                                const char* role, Py_buffer* out);

#endif /* HRX_PYTHON_HOST_MEMORY_H_ */
