/* Read-only properties of the handle types, one getter for all: a
 * PyGetSetDef entry names the handle's kind (handle.h) and a reader of its
 * open C object; the getter raises FailedPreconditionError("<kind> is
 * closed") on a closed handle, so no reader checks it again. */
#ifndef HRX_PYTHON_PROPERTY_H_
#define HRX_PYTHON_PROPERTY_H_

#include "handle.h"

typedef struct hrx_py_property_s {
  const hrx_py_handle_kind_t* kind;
  /* A new reference, or NULL with an error set; `object` is open. */
  PyObject* (*read)(hrx_py_state_t* state, void* object);
} hrx_py_property_t;

/* The getters (closure: an hrx_py_property_t; for `closed`, the kind), and
 * PyGetSetDef entries that use them. */
PyObject* hrx_py_property_get(PyObject* self, void* property);
PyObject* hrx_py_property_closed(PyObject* self, void* kind);
#define HRX_PY_PROPERTY(name, kind, read, doc)                 \
  {name, hrx_py_property_get, NULL, doc,                       \
   &(hrx_py_property_t){&(kind), (read)}}
#define HRX_PY_CLOSED_PROPERTY(kind)                           \
  {"closed", hrx_py_property_closed, NULL,                     \
   "whether close() was called", (void*)&(kind)}

#endif /* HRX_PYTHON_PROPERTY_H_ */
