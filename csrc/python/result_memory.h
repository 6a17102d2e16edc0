/* hrx.ResultMemory (result_memory.c): the owner of the memory of a large
 * array that Readback.wait() returns, pooled pageable host memory of the
 * core (hrx_result_memory_alloc, hrx.h). */
#ifndef HRX_PYTHON_RESULT_MEMORY_H_
#define HRX_PYTHON_RESULT_MEMORY_H_

#include "state.h"

/* Results of at least this many bytes are copied into result memory;
 * smaller ones into a bytearray, which the allocator serves from memory it
 * has mapped already. */
#define HRX_PY_RESULT_MEMORY_MIN_BYTES (1u << 20)

/* The type's spec; module.c creates the type (state->result_memory_type). */
extern PyType_Spec hrx_py_result_memory_spec;

/* A new hrx.ResultMemory showing `length` (> 0) writable bytes, with
 * *out_data their address; NULL with an error set when the memory cannot
 * be had. Call with the GIL. */
PyObject* hrx_py_result_memory_new(hrx_py_state_t* state, uint64_t length,
                                   void** out_data);

#endif /* HRX_PYTHON_RESULT_MEMORY_H_ */
