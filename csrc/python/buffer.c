/* hrx.Buffer: device memory, or a view (byte range) of it, untyped bytes
 * or typed (an element type and shape kept here: dtype.h). Views
 * share the allocation; its memory is freed when the last open view and
 * the last command using it are gone. */
#include "buffer.h"

#include "args.h"
#include "device_handle.h"
#include "dlpack.h"
#include "property.h"
#include "special.h"

/* A handle: one view. Views taken from it (buf[a:b], slice, view) are its
 * children in a tree of borrowed links kept with the GIL: close() closes
 * the handle and every view taken from it, directly or through other
 * views; a handle that is collected without close() leaves its children
 * open (they become roots). */
typedef struct hrx_py_buffer_s {
  PyObject_HEAD
  hrx_buffer_t* buffer;      /* retained; NULL once closed */
  uint64_t offset;           /* this view's range within the allocation */
  uint64_t length;
  hrx_py_dtype_t dtype;      /* kind 0: untyped bytes */
  PyObject* shape;           /* typed: a tuple of ints (owned); else NULL */
  struct hrx_py_buffer_s* parent;       /* borrowed; NULL for a root */
  struct hrx_py_buffer_s* first_child;  /* borrowed */
  struct hrx_py_buffer_s* next_sibling; /* borrowed */
  struct hrx_py_buffer_s* prev_sibling; /* borrowed */
} hrx_py_buffer_t;

static void hrx_py_buffer_release(void* buffer) {
  /* Freeing waits until no submitted work can touch the memory. */
  hrx_buffer_release(buffer);
}

/* A handle of `buffer`'s [offset, offset + length), taking over one
 * reference to it (released on failure), a child of `parent` (may be
 * NULL), of `dtype` and `shape` (retained; NULL when untyped). */
static PyObject* hrx_py_buffer_wrap_view(hrx_py_state_t* state,
                                         hrx_buffer_t* buffer, uint64_t offset,
                                         uint64_t length,
                                         hrx_py_buffer_t* parent,
                                         hrx_py_dtype_t dtype,
                                         PyObject* shape) {
  hrx_py_buffer_t* self = PyObject_GC_New(hrx_py_buffer_t, state->buffer_type);
  if (!self) {
    hrx_py_release_without_gil(hrx_py_buffer_release, buffer);
    return NULL;
  }
  self->buffer = buffer;
  self->offset = offset;
  self->length = length;
  self->dtype = dtype;
  self->shape = dtype.kind ? Py_XNewRef(shape) : NULL;
  self->parent = parent;
  self->first_child = NULL;
  self->prev_sibling = NULL;
  self->next_sibling = parent ? parent->first_child : NULL;
  if (parent) {
    if (parent->first_child) parent->first_child->prev_sibling = self;
    parent->first_child = self;
  }
  PyObject_GC_Track(self);
  return (PyObject*)self;
}

PyObject* hrx_py_buffer_wrap(hrx_py_state_t* state, hrx_buffer_t* buffer,
                             uint64_t offset, uint64_t length) {
  return hrx_py_buffer_wrap_view(state, buffer, offset, length, NULL,
                                 HRX_PY_DTYPE_UNTYPED, NULL);
}

/* Takes `node` out of its parent's children. */
static void hrx_py_buffer_unlink(hrx_py_buffer_t* node) {
  if (node->prev_sibling) {
    node->prev_sibling->next_sibling = node->next_sibling;
  } else if (node->parent) {
    node->parent->first_child = node->next_sibling;
  }
  if (node->next_sibling) node->next_sibling->prev_sibling = node->prev_sibling;
  node->parent = node->prev_sibling = node->next_sibling = NULL;
}

/* Collected without close(): its children stay open, as roots. */
static int hrx_py_buffer_detach(PyObject* self) {
  hrx_py_buffer_t* node = (hrx_py_buffer_t*)self;
  while (node->first_child) hrx_py_buffer_unlink(node->first_child);
  hrx_py_buffer_unlink(node);
  Py_CLEAR(node->shape);
  return 0;
}

/* close(): `buffer` is the reference already taken off `self`. Closes the
 * views taken from it too: their references are taken off them with the
 * GIL, a batch at a time, then dropped without it (a last release waits
 * for queued work). The walk restarts from `self` after each batch, since
 * other threads may change the tree while the GIL is released. */
static void hrx_py_buffer_close_tree(PyObject* self, void* buffer) {
  enum { batch_size = 32 };
  hrx_py_buffer_t* root = (hrx_py_buffer_t*)self;
  hrx_buffer_t* batch[batch_size];
  size_t count = 0;
  batch[count++] = buffer;
  for (;;) {
    hrx_py_buffer_t* node = root;
    while (count < batch_size) {
      if (node->first_child) {
        node = node->first_child;
        continue;
      }
      if (node == root) break;
      /* A leaf below the root: closed and taken out of the tree. */
      hrx_py_buffer_t* parent = node->parent;
      if (node->buffer) batch[count++] = node->buffer;
      node->buffer = NULL;
      hrx_py_buffer_unlink(node);
      node = parent;
    }
    bool done = !root->first_child;
    if (done) hrx_py_buffer_unlink(root);
    Py_BEGIN_ALLOW_THREADS
    for (size_t i = 0; i < count; ++i) hrx_buffer_release(batch[i]);
    Py_END_ALLOW_THREADS
    count = 0;
    if (done) return;
  }
}

bool hrx_py_buffer_type(hrx_py_state_t* state, PyObject* object,
                        hrx_py_buffer_type_t* out) {
  out->dtype = HRX_PY_DTYPE_UNTYPED;
  out->shape = NULL;
  out->nbytes = 0;
  if (!PyObject_TypeCheck(object, state->buffer_type)) return false;
  hrx_py_buffer_t* self = (hrx_py_buffer_t*)object;
  out->dtype = self->dtype;
  out->shape = self->shape;
  out->nbytes = self->length;
  return true;
}

void hrx_py_buffer_set_type(PyObject* buffer, hrx_py_dtype_t dtype,
                            PyObject* shape) {
  hrx_py_buffer_t* self = (hrx_py_buffer_t*)buffer;
  self->dtype = dtype;
  Py_XSETREF(self->shape, Py_NewRef(shape));
}

static int hrx_py_buffer_traverse(PyObject* self, visitproc visit,
                                  void* arg) {
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(((hrx_py_buffer_t*)self)->shape);
  return 0;
}

int hrx_py_buffer_view_borrowed(hrx_py_state_t* state, PyObject* object,
                                const char* role, hrx_view_t* out_view) {
  if (!PyObject_TypeCheck(object, state->buffer_type)) {
    PyErr_Format(PyExc_TypeError, "%s must be an hrx.Buffer, not %.100s", role,
                 Py_TYPE(object)->tp_name);
    return -1;
  }
  hrx_py_buffer_t* self = (hrx_py_buffer_t*)object;
  if (!self->buffer) {
    PyErr_Format(state->errors[HRX_STATUS_FAILED_PRECONDITION],
                 "%s is a closed buffer", role);
    return -1;
  }
  out_view->buffer = self->buffer;
  out_view->offset = self->offset;
  out_view->length = self->length;
  return 0;
}

bool hrx_py_buffer_open_view(PyObject* object, hrx_view_t* out_view) {
  hrx_py_buffer_t* self = (hrx_py_buffer_t*)object;
  if (!self->buffer) return false;
  *out_view = (hrx_view_t){self->buffer, self->offset, self->length};
  return true;
}

int hrx_py_buffer_view(hrx_py_state_t* state, PyObject* object,
                       const char* role, hrx_view_t* out_view) {
  if (hrx_py_buffer_view_borrowed(state, object, role, out_view) < 0) {
    return -1;
  }
  hrx_buffer_retain(out_view->buffer);
  return 0;
}

PyObject* hrx_py_allocate(hrx_py_state_t* state, hrx_device_t* device,
                          uint64_t size) {
  hrx_buffer_t* buffer = NULL;
  hrx_status_t status;
  Py_BEGIN_ALLOW_THREADS
  status = hrx_buffer_allocate(device, size, &buffer);
  hrx_device_release(device);
  Py_END_ALLOW_THREADS
  if (status) return hrx_py_raise(state, status);
  return hrx_py_buffer_wrap(state, buffer, 0, size);
}

/* The open view (the handle itself), or NULL once closed. */
static void* hrx_py_buffer_object(PyObject* self) {
  return ((hrx_py_buffer_t*)self)->buffer ? self : NULL;
}

static const hrx_py_handle_kind_t hrx_py_buffer_kind = {
    .name = "buffer",
    .field = offsetof(hrx_py_buffer_t, buffer),
    .release = hrx_py_buffer_release,
    .close = hrx_py_buffer_close_tree,
    .open = hrx_py_buffer_object,
    .clear = hrx_py_buffer_detach};

HRX_PY_HANDLE_FUNCTIONS(hrx_py_buffer, hrx_py_buffer_kind)

static hrx_py_buffer_t* hrx_py_buffer_get(PyObject* self) {
  return hrx_py_handle_get(self, &hrx_py_buffer_kind);
}

/* A view bound: an integer beyond int64 is out of range like any other too
 * large bound (it becomes INT64_MAX); wrong types stay TypeError. */
static int hrx_py_arg_bound(hrx_py_state_t* state, PyObject* object,
                            const char* what, int64_t* out) {
  if (hrx_py_arg_int64(state, object, what, out) == 0) return 0;
  if (!PyErr_ExceptionMatches(PyExc_ValueError)) return -1;
  PyErr_Clear();
  *out = INT64_MAX;
  return 0;
}

/* A sub-view [offset, offset + length) of this view, bounds-checked, of
 * `dtype` and `shape` (NULL when untyped), a child of this view. */
static PyObject* hrx_py_buffer_subview(hrx_py_buffer_t* self, uint64_t offset,
                                       uint64_t length, hrx_py_dtype_t dtype,
                                       PyObject* shape) {
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  if (offset > self->length || length > self->length - offset) {
    PyErr_Format(state->errors[HRX_STATUS_OUT_OF_RANGE],
                 "view [offset %llu, length %llu] exceeds the %llu-byte "
                 "buffer it is taken from",
                 (unsigned long long)offset, (unsigned long long)length,
                 (unsigned long long)self->length);
    return NULL;
  }
  hrx_buffer_retain(self->buffer);
  return hrx_py_buffer_wrap_view(state, self->buffer, self->offset + offset,
                                 length, self, dtype, shape);
}

static PyObject* hrx_py_buffer_slice(PyObject* self, PyObject* const* args,
                                     Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const names[] = {"offset", "length"};
  PyObject* offset_object = NULL;
  PyObject* length_object = NULL;
  PyObject* parsed[2];
  if (hrx_py_arg_parse("slice", args, nargs, kwnames, names, 2, 2, 2, parsed) <
      0) {
    return NULL;
  }
  offset_object = parsed[0];
  length_object = parsed[1];
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  int64_t offset = 0, length = 0;
  /* Conversions may run Python code: check the handle only afterwards. */
  if (hrx_py_arg_bound(state, offset_object, "offset", &offset) < 0 ||
      hrx_py_arg_bound(state, length_object, "length", &length) < 0) {
    return NULL;
  }
  hrx_py_buffer_t* buffer = hrx_py_buffer_get(self);
  if (!buffer) return NULL;
  if (buffer->dtype.kind) {
    PyErr_Format(PyExc_TypeError,
                 "slice(offset, length) counts bytes and takes untyped "
                 "views; this view is %s: slice elements with v[a:b], or "
                 "bytes of v.view(None)",
                 hrx_py_dtype_name(buffer->dtype));
    return NULL;
  }
  if (offset < 0 || length < 0) {
    PyErr_Format(state->errors[HRX_STATUS_OUT_OF_RANGE],
                 "offset and length must be >= 0; got offset %lld, length "
                 "%lld",
                 (long long)offset, (long long)length);
    return NULL;
  }
  return hrx_py_buffer_subview(buffer, (uint64_t)offset, (uint64_t)length,
                               HRX_PY_DTYPE_UNTYPED, NULL);
}

/* The extent of a typed view's first axis and the bytes of one of its
 * rows (one element for 1-D). The view has at least one axis. */
static int64_t hrx_py_buffer_rows(hrx_py_buffer_t* self,
                                  uint64_t* out_row_bytes) {
  Py_ssize_t ndim = PyTuple_GET_SIZE(self->shape);
  int64_t rows = PyLong_AsLongLong(PyTuple_GET_ITEM(self->shape, 0));
  uint64_t row = self->dtype.itemsize;
  for (Py_ssize_t i = 1; i < ndim; ++i) {
    row *= (uint64_t)PyLong_AsLongLong(PyTuple_GET_ITEM(self->shape, i));
  }
  *out_row_bytes = row;
  return rows;
}

/* buf[a:b]: Python's negative indices count from the end; a range that does
 * not fit is an error, not clamped; steps other than 1 are refused. An
 * untyped view counts bytes; a typed view counts elements (1-D) or rows of
 * its first axis, and the result keeps its type. */
static PyObject* hrx_py_buffer_subscript(PyObject* self, PyObject* key) {
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  if (!PySlice_Check(key)) {
    PyErr_Format(PyExc_TypeError,
                 "buffers are indexed with a slice (buf[a:b]), not %.100s",
                 Py_TYPE(key)->tp_name);
    return NULL;
  }
  PySliceObject* slice = (PySliceObject*)key;
  int64_t raw[2] = {0, 0};
  bool given[2] = {false, false};
  PyObject* parts[2] = {slice->start, slice->stop};
  /* Conversions may run Python code: check the handle only afterwards. */
  for (int i = 0; i < 2; ++i) {
    if (parts[i] == Py_None) continue;
    if (hrx_py_arg_bound(state, parts[i], "slice bound", &raw[i]) < 0) {
      return NULL;
    }
    given[i] = true;
  }
  int64_t step = 1;
  if (slice->step != Py_None &&
      hrx_py_arg_int64(state, slice->step, "slice step", &step) < 0) {
    return NULL;
  }
  hrx_py_buffer_t* buffer = hrx_py_buffer_get(self);
  if (!buffer) return NULL;
  if (step != 1) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "buffer views are contiguous: slice step must be 1; got "
                 "%lld",
                 (long long)step);
    return NULL;
  }
  bool typed = buffer->dtype.kind != 0;
  if (typed && PyTuple_GET_SIZE(buffer->shape) == 0) {
    PyErr_SetString(PyExc_TypeError,
                    "a 0-d view (shape ()) has no axis to slice");
    return NULL;
  }
  uint64_t unit = 1;
  int64_t length = typed ? hrx_py_buffer_rows(buffer, &unit)
                         : (int64_t)buffer->length;
  int64_t bounds[2] = {given[0] ? raw[0] : 0, given[1] ? raw[1] : length};
  for (int i = 0; i < 2; ++i) {
    if (given[i] && bounds[i] < 0) bounds[i] += length;
  }
  if (bounds[0] < 0 || bounds[1] > length || bounds[0] > bounds[1]) {
    PyErr_Format(state->errors[HRX_STATUS_OUT_OF_RANGE],
                 "slice [%lld:%lld] is outside the %lld-%s %s (valid: "
                 "0 <= start <= stop <= %lld)",
                 (long long)bounds[0], (long long)bounds[1], (long long)length,
                 !typed                                  ? "byte"
                 : PyTuple_GET_SIZE(buffer->shape) == 1 ? "element"
                                                         : "row",
                 typed ? "view" : "buffer", (long long)length);
    return NULL;
  }
  int64_t rows = bounds[1] - bounds[0];
  if (!typed) {
    return hrx_py_buffer_subview(buffer, (uint64_t)bounds[0], (uint64_t)rows,
                                 HRX_PY_DTYPE_UNTYPED, NULL);
  }
  PyObject* shape = PyTuple_New(PyTuple_GET_SIZE(buffer->shape));
  if (!shape) return NULL;
  PyTuple_SET_ITEM(shape, 0, PyLong_FromLongLong(rows));
  if (!PyTuple_GET_ITEM(shape, 0)) {
    Py_DECREF(shape);
    return NULL;
  }
  for (Py_ssize_t i = 1; i < PyTuple_GET_SIZE(buffer->shape); ++i) {
    PyTuple_SET_ITEM(shape, i,
                     Py_NewRef(PyTuple_GET_ITEM(buffer->shape, i)));
  }
  PyObject* view = hrx_py_buffer_subview(
      buffer, (uint64_t)bounds[0] * unit, (uint64_t)rows * unit,
      buffer->dtype, shape);
  Py_DECREF(shape);
  return view;
}

/* view(dtype, shape=None): the same bytes as another element type (or
 * untyped, dtype None). */
static PyObject* hrx_py_buffer_view_as(PyObject* self, PyObject* const* args,
                                       Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const names[] = {"dtype", "shape"};
  PyObject* parsed[2];
  if (hrx_py_arg_parse("view", args, nargs, kwnames, names, 2, 2, 1, parsed) <
      0) {
    return NULL;
  }
  PyObject* dtype_object = parsed[0];
  PyObject* shape_object = parsed[1] ? parsed[1] : Py_None;
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  /* Conversions may run Python code: check the handle only afterwards. */
  hrx_py_buffer_t* peek = (hrx_py_buffer_t*)self;
  uint64_t nbytes = peek->length;
  if (dtype_object == Py_None) {
    if (shape_object != Py_None) {
      PyErr_SetString(PyExc_TypeError,
                      "an untyped view (dtype None) is bytes and takes no "
                      "shape");
      return NULL;
    }
    hrx_py_buffer_t* buffer = hrx_py_buffer_get(self);
    if (!buffer) return NULL;
    return hrx_py_buffer_subview(buffer, 0, buffer->length,
                                 HRX_PY_DTYPE_UNTYPED, NULL);
  }
  hrx_py_dtype_t dtype;
  if (hrx_py_dtype_convert(state, dtype_object, "dtype", &dtype) < 0) {
    return NULL;
  }
  PyObject* shape = NULL;
  uint64_t covered = 0;
  if (shape_object == Py_None) {
    if (nbytes % dtype.itemsize) {
      PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                   "a %llu-byte view is not a whole number of %s elements "
                   "(%u bytes each); slice it to a multiple first",
                   (unsigned long long)nbytes, hrx_py_dtype_name(dtype),
                   (unsigned)dtype.itemsize);
      return NULL;
    }
    shape = Py_BuildValue("(K)", (unsigned long long)(nbytes / dtype.itemsize));
    if (!shape) return NULL;
  } else if (hrx_py_shape_convert(state, shape_object, dtype.itemsize, true,
                                  nbytes, &shape, &covered) < 0) {
    return NULL;
  }
  PyObject* view = NULL;
  hrx_py_buffer_t* buffer = hrx_py_buffer_get(self);
  if (buffer && buffer->offset % dtype.itemsize) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "a %s view must start at a multiple of %u bytes in its "
                 "allocation; this view starts at byte %llu",
                 hrx_py_dtype_name(dtype), (unsigned)dtype.itemsize,
                 (unsigned long long)buffer->offset);
  } else if (buffer) {
    view = hrx_py_buffer_subview(buffer, 0, buffer->length, dtype, shape);
  }
  Py_DECREF(shape);
  return view;
}

static Py_ssize_t hrx_py_buffer_length(PyObject* self) {
  hrx_py_buffer_t* buffer = hrx_py_buffer_get(self);
  if (!buffer) return -1;
  if (!buffer->dtype.kind) return (Py_ssize_t)buffer->length;
  if (PyTuple_GET_SIZE(buffer->shape) == 0) {
    PyErr_SetString(PyExc_TypeError, "len() of a 0-d view (shape ())");
    return -1;
  }
  uint64_t row = 0;
  return (Py_ssize_t)hrx_py_buffer_rows(buffer, &row);
}

static PyObject* hrx_py_buffer_nbytes(hrx_py_state_t* state, void* view) {
  (void)state;
  return PyLong_FromUnsignedLongLong(((hrx_py_buffer_t*)view)->length);
}

static PyObject* hrx_py_buffer_dtype(hrx_py_state_t* state, void* view) {
  (void)state;
  hrx_py_buffer_t* self = view;
  if (!self->dtype.kind) Py_RETURN_NONE;
  return hrx_py_dtype_numpy(self->dtype);
}

static PyObject* hrx_py_buffer_shape(hrx_py_state_t* state, void* view) {
  (void)state;
  hrx_py_buffer_t* self = view;
  if (self->dtype.kind) return Py_NewRef(self->shape);
  return Py_BuildValue("(K)", (unsigned long long)self->length);
}

static PyObject* hrx_py_buffer_size(hrx_py_state_t* state, void* view) {
  (void)state;
  hrx_py_buffer_t* self = view;
  return PyLong_FromUnsignedLongLong(self->length / self->dtype.itemsize);
}

static PyObject* hrx_py_buffer_itemsize(hrx_py_state_t* state, void* view) {
  (void)state;
  return PyLong_FromLong(((hrx_py_buffer_t*)view)->dtype.itemsize);
}

static PyObject* hrx_py_buffer_offset(hrx_py_state_t* state, void* view) {
  (void)state;
  return PyLong_FromUnsignedLongLong(((hrx_py_buffer_t*)view)->offset);
}

static PyObject* hrx_py_buffer_allocation_size(hrx_py_state_t* state,
                                               void* view) {
  (void)state;
  return PyLong_FromUnsignedLongLong(
      hrx_buffer_size(((hrx_py_buffer_t*)view)->buffer));
}

static PyObject* hrx_py_buffer_device_of(hrx_py_state_t* state, void* view) {
  return hrx_py_device_ref(state,
                           hrx_buffer_device(((hrx_py_buffer_t*)view)->buffer));
}

/* The CUDA Array Interface, version 3: a typed view as a C-contiguous
 * array of its type and shape, an untyped one as a 1-D uint8 array.
 * Its stream is the legacy default stream (1), made to wait first, on the
 * device, for the work already submitted to the pool queues: a consumer
 * that orders its stream after `stream` (as the interface asks) then runs
 * after that work. */
static PyObject* hrx_py_buffer_get_cuda_array_interface(PyObject* self,
                                                        void* closure) {
  (void)closure;
  hrx_py_buffer_t* buffer = hrx_py_buffer_get(self);
  if (!buffer) return NULL;
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  hrx_device_t* device = hrx_buffer_device(buffer->buffer);
  if (hrx_py_require_cuda(device, "__cuda_array_interface__") < 0) return NULL;
  enum { legacy_default_stream = 1 };
  hrx_status_t status;
  hrx_buffer_t* held = buffer->buffer;
  hrx_buffer_retain(held);
  Py_BEGIN_ALLOW_THREADS
  status = hrx_device_order_foreign_stream(
      device, (void*)(uintptr_t)legacy_default_stream);
  hrx_buffer_release(held);
  Py_END_ALLOW_THREADS
  if (status) return hrx_py_raise(state, status);
  void* data = (uint8_t*)hrx_buffer_native_pointer(buffer->buffer) +
               buffer->offset;
  PyObject* shape = buffer->dtype.kind
                        ? Py_NewRef(buffer->shape)
                        : Py_BuildValue("(K)",
                                        (unsigned long long)buffer->length);
  if (!shape) return NULL;
  return Py_BuildValue(
      "{s:N,s:s,s:(NO),s:i,s:O,s:i}", "shape", shape, "typestr",
      hrx_py_dtype_typestr(buffer->dtype), "data", PyLong_FromVoidPtr(data),
      Py_False, "version", 3, "strides", Py_None, "stream",
      legacy_default_stream);
}

/* __dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None):
 * the arguments are converted before the handle is checked (they may run
 * Python code); dlpack.c makes the capsule. */
static PyObject* hrx_py_buffer_dlpack(PyObject* self, PyObject* const* args,
                                      Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const names[] = {"stream", "max_version", "dl_device",
                                      "copy"};
  PyObject* stream_object = Py_None;
  PyObject* version_object = Py_None;
  PyObject* device_object = Py_None;
  PyObject* copy_object = Py_None;
  PyObject* parsed[4];
  if (hrx_py_arg_parse("__dlpack__", args, nargs, kwnames, names, 4, 0, 0,
                       parsed) < 0) {
    return NULL;
  }
  if (parsed[0]) stream_object = parsed[0];
  if (parsed[1]) version_object = parsed[1];
  if (parsed[2]) device_object = parsed[2];
  if (parsed[3]) copy_object = parsed[3];
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  hrx_py_dlpack_request_t request;
  if (hrx_py_dlpack_request(state, stream_object, version_object,
                            device_object, copy_object, &request) < 0) {
    return NULL;
  }
  hrx_py_buffer_t* buffer = hrx_py_buffer_get(self);
  if (!buffer) return NULL;
  if (!buffer->dtype.kind) {
    return hrx_py_dlpack_export(state, buffer->buffer, buffer->offset,
                                buffer->length, NULL, &request);
  }
  /* The shape as int64s, read before the export (which may run Python
   * code); the handle's tuple is immutable. */
  Py_ssize_t ndim = PyTuple_GET_SIZE(buffer->shape);
  int64_t* extents = PyMem_Malloc((size_t)(ndim ? ndim : 1) * sizeof(int64_t));
  if (!extents) return PyErr_NoMemory();
  for (Py_ssize_t i = 0; i < ndim; ++i) {
    extents[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(buffer->shape, i));
  }
  hrx_py_dlpack_layout_t layout = {.ndim = (int32_t)ndim, .shape = extents};
  hrx_py_dtype_to_dlpack(buffer->dtype, &layout.code, &layout.bits);
  PyObject* capsule = hrx_py_dlpack_export(state, buffer->buffer,
                                           buffer->offset, buffer->length,
                                           &layout, &request);
  PyMem_Free(extents);
  return capsule;
}

static PyObject* hrx_py_buffer_dlpack_device(PyObject* self, PyObject* unused) {
  (void)unused;
  hrx_py_buffer_t* buffer = hrx_py_buffer_get(self);
  if (!buffer) return NULL;
  return hrx_py_dlpack_device(hrx_py_state_from_type(Py_TYPE(self)),
                              buffer->buffer);
}

/* numpy.asarray(buffer) would otherwise make a 0-d object array. */
static PyObject* hrx_py_buffer_array(PyObject* self, PyObject* const* args,
                                     Py_ssize_t nargs, PyObject* kwnames) {
  (void)self;
  (void)args;
  (void)nargs;
  (void)kwnames;
  PyErr_SetString(PyExc_TypeError,
                  "an hrx.Buffer is device memory that numpy cannot view; "
                  "copy it to host memory with stream.read(buffer).wait() "
                  "or stream.read_blocking(buffer, out)");
  return NULL;
}

static PyObject* hrx_py_buffer_new(PyTypeObject* type, PyObject* args,
                                   PyObject* kwargs) {
  (void)type;
  (void)args;
  (void)kwargs;
  PyErr_SetString(PyExc_TypeError,
                  "hrx.Buffer cannot be created directly; allocate one with "
                  "device.allocate(nbytes) or stream.allocate(nbytes)");
  return NULL;
}

static PyObject* hrx_py_buffer_repr(PyObject* self) {
  hrx_py_buffer_t* buffer = (hrx_py_buffer_t*)self;
  if (!buffer->buffer) return PyUnicode_FromString("<hrx.Buffer (closed)>");
  if (buffer->dtype.kind) {
    return PyUnicode_FromFormat(
        "<hrx.Buffer %s %R at [%llu:%llu] of %llu bytes>",
        hrx_py_dtype_name(buffer->dtype), buffer->shape,
        (unsigned long long)buffer->offset,
        (unsigned long long)(buffer->offset + buffer->length),
        (unsigned long long)hrx_buffer_size(buffer->buffer));
  }
  return PyUnicode_FromFormat("<hrx.Buffer [%llu:%llu] of %llu bytes>",
                              (unsigned long long)buffer->offset,
                              (unsigned long long)(buffer->offset +
                                                   buffer->length),
                              (unsigned long long)hrx_buffer_size(
                                  buffer->buffer));
}

HRX_PY_NEW_FUNCTION(hrx_py_buffer, buffer_type)

static PyMethodDef hrx_py_buffer_methods[] = {
    HRX_PY_NEW_METHOD(
        hrx_py_buffer,
        "__new__($type, *args, **kwargs)\n--\n\n"
        "Refuse with a TypeError: buffers come from device.allocate(nbytes) "
        "or stream.allocate(nbytes)."),
    {"slice", (PyCFunction)(void (*)(void))hrx_py_buffer_slice,
     METH_FASTCALL | METH_KEYWORDS,
     "slice($self, offset, length)\n--\n\n"
     "Return the untyped view [offset, offset + length) of this untyped "
     "view, in bytes, bounds-checked (a typed view is sliced in elements "
     "with v[a:b])."},
    {"view", (PyCFunction)(void (*)(void))hrx_py_buffer_view_as,
     METH_FASTCALL | METH_KEYWORDS,
     "view($self, dtype, shape=None)\n--\n\n"
     "Return this view's bytes as a typed view of dtype (a numeric numpy "
     "dtype) and shape (None: 1-D, as many elements as the bytes hold; "
     "else exactly the view's bytes, one extent may be -1), without a "
     "copy; dtype None gives an untyped byte view."},
    HRX_PY_HANDLE_METHODS(hrx_py_buffer,
                          "Drop this view and every view taken from it "
                          "(buf[a:b], slice, view); memory is freed once no "
                          "open view, queued command or DLPack consumer "
                          "uses it."),
    {"__dlpack__", (PyCFunction)(void (*)(void))hrx_py_buffer_dlpack,
     METH_FASTCALL | METH_KEYWORDS,
     "__dlpack__($self, /, *, stream=None, max_version=None, dl_device=None, "
     "copy=None)\n--\n\n"
     "Return this view as a DLPack tensor (a capsule) of its dtype and "
     "shape (untyped: 1-D uint8), without a copy; the consumer keeps the "
     "memory alive. Unless stream is -1, the "
     "consumer's stream (None: the default stream) is made to wait on the "
     "device, through events, for the work already submitted to the "
     "device's pool queues; for host memory the host waits for it."},
    {"__array__", (PyCFunction)(void (*)(void))hrx_py_buffer_array,
     METH_FASTCALL | METH_KEYWORDS,
     "__array__($self, /, *args, **kwargs)\n--\n\n"
     "Refuse with a TypeError: numpy cannot view device memory; read it "
     "with stream.read(buffer).wait() or stream.read_blocking(buffer, "
     "out)."},
    {"__dlpack_device__", hrx_py_buffer_dlpack_device, METH_NOARGS,
     "__dlpack_device__($self, /)\n--\n\n"
     "Return (device_type, device_id): (1, 0) on the host backend, "
     "(2, ordinal) for CUDA and (10, ordinal) for ROCm memory."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef hrx_py_buffer_getset[] = {
    HRX_PY_PROPERTY("nbytes", hrx_py_buffer_kind, hrx_py_buffer_nbytes,
                    "length of this view in bytes"),
    HRX_PY_PROPERTY("dtype", hrx_py_buffer_kind, hrx_py_buffer_dtype,
                    "the element type (a numpy.dtype), or None for an "
                    "untyped byte view"),
    HRX_PY_PROPERTY("shape", hrx_py_buffer_kind, hrx_py_buffer_shape,
                    "the shape (a tuple); (nbytes,) when untyped"),
    HRX_PY_PROPERTY("size", hrx_py_buffer_kind, hrx_py_buffer_size,
                    "the number of elements; nbytes when untyped"),
    HRX_PY_PROPERTY("itemsize", hrx_py_buffer_kind, hrx_py_buffer_itemsize,
                    "bytes per element; 1 when untyped"),
    HRX_PY_PROPERTY("offset", hrx_py_buffer_kind, hrx_py_buffer_offset,
                    "offset of this view in its allocation"),
    HRX_PY_PROPERTY("allocation_size", hrx_py_buffer_kind,
                    hrx_py_buffer_allocation_size,
                    "size of the whole allocation"),
    HRX_PY_PROPERTY("device", hrx_py_buffer_kind, hrx_py_buffer_device_of,
                    "the buffer's device"),
    HRX_PY_CLOSED_PROPERTY(hrx_py_buffer_kind),
    {"__cuda_array_interface__", hrx_py_buffer_get_cuda_array_interface, NULL,
     "the CUDA Array Interface (version 3) of this view, of its dtype and "
     "shape (untyped: 1-D uint8), for Numba and CuPy. Its stream is the legacy default stream, made to wait "
     "for the work already submitted to the device's pool queues. Only on "
     "NVIDIA GPUs; elsewhere the attribute is absent (AttributeError says "
     "why).",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot hrx_py_buffer_slots[] = {
    {Py_tp_doc, "Device memory (or a view of it: buf[a:b], buf.slice(offset, "
                "length), buf.view(dtype, shape)), untyped bytes or typed "
                "elements, usable by every stream of its device. Not created "
                "directly: use Device.allocate, Device.empty, Device.zeros, "
                "Device.asarray or Stream.allocate."},
    {Py_tp_new, hrx_py_buffer_new},
    {Py_tp_dealloc, hrx_py_buffer_dealloc},
    {Py_tp_traverse, hrx_py_buffer_traverse},
    {Py_tp_methods, hrx_py_buffer_methods},
    {Py_tp_getset, hrx_py_buffer_getset},
    {Py_tp_repr, hrx_py_buffer_repr},
    {Py_mp_subscript, hrx_py_buffer_subscript},
    {Py_mp_length, hrx_py_buffer_length},
    {0, NULL},
};

PyType_Spec hrx_py_buffer_spec = {
    .name = "hrx.Buffer",
    .basicsize = sizeof(hrx_py_buffer_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = hrx_py_buffer_slots,
};
