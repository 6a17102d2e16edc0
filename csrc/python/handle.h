/* What every handle type shares, driven by the type's hrx_py_handle_kind_t:
 * close(), the context manager (__enter__ raises the closed error, __exit__
 * closes), tp_dealloc and the "<kind> is closed" check. A handle holds one
 * reference to its C object in a pointer field; NULL means closed. */
#ifndef HRX_PYTHON_HANDLE_H_
#define HRX_PYTHON_HANDLE_H_

#include <stddef.h>

#include "state.h"

typedef struct hrx_py_handle_kind_s {
  const char* name;  /* "stream", for "stream is closed" */
  size_t field;      /* offsetof the C object pointer in the instance */
  /* Drops the handle's reference; runs without the GIL, since a last
   * release may wait for queued work. */
  void (*release)(void* object);
  /* Optional, instead of `release` where the type has rules of its own:
   * drops the reference already taken off the handle; called with the GIL
   * (it releases the GIL itself around what may block). Called whenever
   * the handle is open: with a NULL object where `open` says it is open
   * without one (a Readback that keeps its result), which close() must
   * close too. */
  void (*close)(PyObject* self, void* object);
  /* Optional: what the closed check sees, borrowed, NULL once closed (the
   * default is the C object). */
  void* (*open)(PyObject* self);
  /* Optional: drops the handle's Python references; tp_dealloc calls it
   * before closing. */
  inquiry clear;
} hrx_py_handle_kind_t;

/* Drops a reference with the GIL released (call with the GIL): a last
 * release may wait for queued work, which may include host callbacks that
 * need the GIL. Every release of a C object the bindings make goes through
 * this, the handle close, or a block that has already released the GIL. */
void hrx_py_release_without_gil(void (*release)(void* object), void* object);

/* Drops references a call held across a GIL release; any may be NULL. Call
 * it without the GIL: a last buffer release waits for queued work. */
void hrx_py_release_held(hrx_stream_t* stream, hrx_buffer_t* first,
                         hrx_buffer_t* second, hrx_event_t* event);

/* The open object (see `open`), or NULL once closed; sets no error. */
void* hrx_py_handle_object(PyObject* self, const hrx_py_handle_kind_t* kind);
/* The open object, or NULL with FailedPreconditionError("<kind> is
 * closed"). */
void* hrx_py_handle_get(PyObject* self, const hrx_py_handle_kind_t* kind);
/* The same for an argument that must be of `type`: TypeError otherwise. */
void* hrx_py_handle_unwrap(hrx_py_state_t* state, PyObject* object,
                           PyTypeObject* type,
                           const hrx_py_handle_kind_t* kind);
/* Takes the C object off the handle and drops it; nothing once closed. */
void hrx_py_handle_close(PyObject* self, const hrx_py_handle_kind_t* kind);
void hrx_py_handle_dealloc(PyObject* self, const hrx_py_handle_kind_t* kind);
PyObject* hrx_py_handle_enter(PyObject* self,
                              const hrx_py_handle_kind_t* kind);

/* Defines <prefix>_dealloc, _close, _enter and _exit for `kind`. */
#define HRX_PY_HANDLE_FUNCTIONS(prefix, kind)                             \
  static void prefix##_dealloc(PyObject* self) {                          \
    hrx_py_handle_dealloc(self, &(kind));                                 \
  }                                                                       \
  static PyObject* prefix##_close(PyObject* self, PyObject* unused) {     \
    (void)unused;                                                         \
    hrx_py_handle_close(self, &(kind));                                   \
    Py_RETURN_NONE;                                                       \
  }                                                                       \
  static PyObject* prefix##_enter(PyObject* self, PyObject* unused) {     \
    (void)unused;                                                         \
    return hrx_py_handle_enter(self, &(kind));                            \
  }                                                                       \
  static PyObject* prefix##_exit(PyObject* self, PyObject* args) {        \
    PyObject *type, *value, *traceback;                                   \
    if (!PyArg_UnpackTuple(args, "__exit__", 3, 3, &type, &value,         \
                           &traceback)) {                                 \
      return NULL;                                                        \
    }                                                                     \
    hrx_py_handle_close(self, &(kind));                                   \
    Py_RETURN_FALSE;                                                      \
  }

/* The PyMethodDef entries of close(), __enter__ and __exit__, with their
 * text signatures; `close_doc` is a string literal: what close() does. */
#define HRX_PY_HANDLE_METHODS(prefix, close_doc)                          \
  {"close", prefix##_close, METH_NOARGS,                                  \
   "close($self, /)\n--\n\n" close_doc},                                  \
      {"__enter__", prefix##_enter, METH_NOARGS,                          \
       "__enter__($self, /)\n--\n\nReturn self (FailedPreconditionError "   \
       "once closed)."},                                                  \
      {"__exit__", prefix##_exit, METH_VARARGS,                           \
       "__exit__($self, exc_type, exc_value, traceback, /)\n--\n\nClose "    \
       "it, as close() does; return False, so an exception propagates."}

#endif /* HRX_PYTHON_HANDLE_H_ */
