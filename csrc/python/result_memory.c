/* hrx.ResultMemory (result_memory.h). */
#include "result_memory.h"

/* Owns one block of result memory; exports `nbytes` of it as writable
 * bytes. Its last reference goes only once no export (numpy array) is
 * left. */
typedef struct {
  PyObject_HEAD
  void* memory;          /* owned: hrx_result_memory_alloc's */
  uint64_t capacity;     /* the block's size, for the free */
  Py_ssize_t nbytes;     /* what the export shows */
} hrx_py_result_memory_t;

static int hrx_py_result_memory_getbuffer(PyObject* self, Py_buffer* view,
                                          int flags) {
  hrx_py_result_memory_t* memory = (hrx_py_result_memory_t*)self;
  return PyBuffer_FillInfo(view, self, memory->memory, memory->nbytes, 0,
                           flags);
}

/* The block goes back to the process's pool (or is unmapped): no device
 * is involved, nothing is waited for. */
static void hrx_py_result_memory_dealloc(PyObject* self) {
  hrx_py_result_memory_t* memory = (hrx_py_result_memory_t*)self;
  PyTypeObject* type = Py_TYPE(self);
  hrx_result_memory_free(memory->memory, memory->capacity);
  type->tp_free(self);
  Py_DECREF(type);
}

static PyObject* hrx_py_result_memory_nbytes(PyObject* self, void* unused) {
  (void)unused;
  return PyLong_FromSsize_t(((hrx_py_result_memory_t*)self)->nbytes);
}

static PyObject* hrx_py_result_memory_address(PyObject* self, void* unused) {
  (void)unused;
  return PyLong_FromVoidPtr(((hrx_py_result_memory_t*)self)->memory);
}

static PyGetSetDef hrx_py_result_memory_getset[] = {
    {"nbytes", hrx_py_result_memory_nbytes, NULL,
     "the bytes the buffer shows", NULL},
    {"address", hrx_py_result_memory_address, NULL,
     "the host address of the memory", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot hrx_py_result_memory_slots[] = {
    {Py_tp_doc, "Pageable host memory of a large array that Readback.wait() "
                "returned (its base): exports its bytes with the buffer "
                "protocol; once nothing refers to it, it goes back to a "
                "process-wide pool (HRX_RESULT_CACHE_BYTES) that the next "
                "results are copied into. It holds no device."},
    {Py_tp_dealloc, hrx_py_result_memory_dealloc},
    {Py_bf_getbuffer, hrx_py_result_memory_getbuffer},
    {Py_tp_getset, hrx_py_result_memory_getset},
    {0, NULL},
};

PyType_Spec hrx_py_result_memory_spec = {
    .name = "hrx.ResultMemory",
    .basicsize = sizeof(hrx_py_result_memory_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = hrx_py_result_memory_slots,
};

PyObject* hrx_py_result_memory_new(hrx_py_state_t* state, uint64_t length,
                                   void** out_data) {
  if (length > (uint64_t)PY_SSIZE_T_MAX) {
    PyErr_NoMemory();
    return NULL;
  }
  void* data = NULL;
  uint64_t capacity = 0;
  hrx_status_t status = hrx_result_memory_alloc(length, &data, &capacity);
  if (status) return hrx_py_raise(state, status);
  hrx_py_result_memory_t* memory =
      PyObject_New(hrx_py_result_memory_t, state->result_memory_type);
  if (!memory) {
    hrx_result_memory_free(data, capacity);
    return NULL;
  }
  memory->memory = data;
  memory->capacity = capacity;
  memory->nbytes = (Py_ssize_t)length;
  *out_data = data;
  return (PyObject*)memory;
}
