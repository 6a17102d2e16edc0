/* The shared parts of the handle types (handle.h). */
#include "handle.h"

static void** hrx_py_handle_field(PyObject* self,
                                  const hrx_py_handle_kind_t* kind) {
  return (void**)((char*)self + kind->field);
}

void* hrx_py_handle_object(PyObject* self, const hrx_py_handle_kind_t* kind) {
  return kind->open ? kind->open(self) : *hrx_py_handle_field(self, kind);
}

void* hrx_py_handle_get(PyObject* self, const hrx_py_handle_kind_t* kind) {
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  if (!state) return NULL;
  void* object = hrx_py_handle_object(self, kind);
  if (!object) hrx_py_raise_closed(state, kind->name);
  return object;
}

void* hrx_py_handle_unwrap(hrx_py_state_t* state, PyObject* object,
                           PyTypeObject* type,
                           const hrx_py_handle_kind_t* kind) {
  if (!PyObject_TypeCheck(object, type)) {
    PyErr_Format(PyExc_TypeError, "expected an %s, not %.100s", type->tp_name,
                 Py_TYPE(object)->tp_name);
    return NULL;
  }
  void* open = hrx_py_handle_object(object, kind);
  if (!open) hrx_py_raise_closed(state, kind->name);
  return open;
}

void hrx_py_release_without_gil(void (*release)(void* object), void* object) {
  if (!object) return;
  Py_BEGIN_ALLOW_THREADS
  release(object);
  Py_END_ALLOW_THREADS
}

void hrx_py_release_held(hrx_stream_t* stream, hrx_buffer_t* first,
                         hrx_buffer_t* second, hrx_event_t* event) {
  hrx_buffer_release(first);
  hrx_buffer_release(second);
  hrx_event_release(event);
  hrx_stream_release(stream);
}

void hrx_py_handle_close(PyObject* self, const hrx_py_handle_kind_t* kind) {
  void** field = hrx_py_handle_field(self, kind);
  void* object = *field;
  *field = NULL;
  if (kind->close) {
    /* Also a handle that is open without its C object (see `close`). */
    if (object || (kind->open && kind->open(self))) kind->close(self, object);
    return;
  }
  if (!object) return;
  Py_BEGIN_ALLOW_THREADS
  kind->release(object);
  Py_END_ALLOW_THREADS
}

void hrx_py_handle_dealloc(PyObject* self, const hrx_py_handle_kind_t* kind) {
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  if (kind->clear) kind->clear(self);
  hrx_py_handle_close(self, kind);
  type->tp_free(self);
  Py_DECREF(type);
}

PyObject* hrx_py_handle_enter(PyObject* self,
                              const hrx_py_handle_kind_t* kind) {
  if (!hrx_py_handle_get(self, kind)) return NULL;
  return Py_NewRef(self);
}
