/* DLPack, both directions.
 *
 * Export: Buffer.__dlpack__ / __dlpack_device__ hand a view of hrx memory to
 * another library (numpy, torch, cupy) without copying it: a C-contiguous
 * tensor of a typed view's element type and shape, or a 1-D uint8 tensor
 * of an untyped view's bytes, whose data pointer is the view's first byte.
 * The capsule's manager context holds one reference to the hrx buffer, so
 * the memory outlives the Buffer handle for as long as the consumer keeps
 * the tensor; the deleter drops that reference.
 *
 * Import: Stream.upload and Stream.read_blocking take a host-resident
 * DLPack producer (e.g. a torch CPU tensor) where it has no buffer protocol,
 * reading or writing its memory in place; a kernel argument takes a
 * producer's data address on the launch's device.
 *
 * The structures below are the ABI of dlpack.h (v1.0; the unversioned
 * DLManagedTensor of v0.x is produced when the consumer asks for no
 * version). They are spelled out here because the header is not a build
 * dependency. */
#include <stdlib.h>
#include <string.h>

#include "dlpack.h"

#include "args.h"
#include "handle.h"

enum {
  HRX_DL_CPU = 1,
  HRX_DL_CUDA = 2,
  HRX_DL_CUDA_HOST = 3,
  HRX_DL_ROCM = 10,
  HRX_DL_ROCM_HOST = 11,
  HRX_DL_CUDA_MANAGED = 13,
};
enum { HRX_DL_UINT = 1 };
#define HRX_DL_FLAG_READ_ONLY ((uint64_t)1)
#define HRX_DL_MAJOR 1
#define HRX_DL_MINOR 0

typedef struct {
  int32_t device_type;
  int32_t device_id;
} hrx_dl_device_t;

typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} hrx_dl_dtype_t;

typedef struct {
  void* data;
  hrx_dl_device_t device;
  int32_t ndim;
  hrx_dl_dtype_t dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} hrx_dl_tensor_t;

typedef struct hrx_dl_managed_s {
  hrx_dl_tensor_t dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct hrx_dl_managed_s* self);
} hrx_dl_managed_t;

typedef struct hrx_dl_versioned_s {
  struct {
    uint32_t major;
    uint32_t minor;
  } version;
  void* manager_ctx;
  void (*deleter)(struct hrx_dl_versioned_s* self);
  uint64_t flags;
  hrx_dl_tensor_t dl_tensor;
} hrx_dl_versioned_t;

/* One exported tensor: the managed struct the consumer sees (one of the two
 * layouts), the retained hrx buffer, and its shape and strides (in
 * elements, C-contiguous) in `dims`: ndim extents, then ndim strides.
 * Owned by the consumer once the capsule is consumed, else by the
 * capsule. */
typedef struct {
  union {
    hrx_dl_managed_t legacy;
    hrx_dl_versioned_t versioned;
  } managed;
  hrx_buffer_t* buffer; /* retained */
  int64_t dims[];
} hrx_dl_export_t;

static const char kCapsule[] = "dltensor";
static const char kCapsuleUsed[] = "used_dltensor";
static const char kCapsuleVersioned[] = "dltensor_versioned";
static const char kCapsuleVersionedUsed[] = "used_dltensor_versioned";

/* Drops the buffer reference. May run on any thread, with or without the
 * GIL: a last release waits for queued work, so the GIL is let go first. */
static void hrx_dl_export_free(hrx_dl_export_t* export) {
  hrx_buffer_t* buffer = export->buffer;
  free(export);
  if (PyGILState_Check()) {
    Py_BEGIN_ALLOW_THREADS
    hrx_buffer_release(buffer);
    Py_END_ALLOW_THREADS
  } else {
    hrx_buffer_release(buffer);
  }
}

/* The export's reference when no export was made; with the GIL. */
static void hrx_dl_buffer_release(void* buffer) { hrx_buffer_release(buffer); }

static void hrx_dl_legacy_deleter(hrx_dl_managed_t* self) {
  hrx_dl_export_free((hrx_dl_export_t*)self->manager_ctx);
}

static void hrx_dl_versioned_deleter(hrx_dl_versioned_t* self) {
  hrx_dl_export_free((hrx_dl_export_t*)self->manager_ctx);
}

/* A capsule nobody consumed still owns its tensor. */
static void hrx_dl_capsule_destructor(PyObject* capsule) {
  bool versioned = PyCapsule_IsValid(capsule, kCapsuleVersioned);
  if (!versioned && !PyCapsule_IsValid(capsule, kCapsule)) return; /* used */
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  void* pointer =
      PyCapsule_GetPointer(capsule, versioned ? kCapsuleVersioned : kCapsule);
  if (!pointer) {
    PyErr_WriteUnraisable(capsule);
  } else if (versioned) {
    hrx_dl_versioned_t* managed = pointer;
    managed->deleter(managed);
  } else {
    hrx_dl_managed_t* managed = pointer;
    managed->deleter(managed);
  }
  PyErr_Restore(type, value, traceback);
}

/* The DLPack device of a buffer's device: (type, ordinal). */
static int hrx_dl_device_of(hrx_py_state_t* state, hrx_device_t* device,
                            hrx_dl_device_t* out) {
  hrx_device_info_t info;
  hrx_status_t status = hrx_device_query_info(device, &info);
  if (status) return hrx_py_raise_int(state, status);
  if (strcmp(info.platform, "cpu") == 0) {
    out->device_type = HRX_DL_CPU;
  } else if (strcmp(info.platform, "nvidia") == 0) {
    out->device_type = HRX_DL_CUDA;
  } else if (strcmp(info.platform, "amd") == 0) {
    out->device_type = HRX_DL_ROCM;
  } else {
    PyErr_Format(PyExc_BufferError,
                 "hrx cannot describe memory of platform '%s' to DLPack",
                 info.platform);
    return -1;
  }
  out->device_id = out->device_type == HRX_DL_CPU ? 0 : info.index;
  return 0;
}

PyObject* hrx_py_dlpack_device(hrx_py_state_t* state, hrx_buffer_t* buffer) {
  hrx_dl_device_t device;
  if (hrx_dl_device_of(state, hrx_buffer_device(buffer), &device) < 0) {
    return NULL;
  }
  return Py_BuildValue("(ii)", device.device_type, device.device_id);
}

/* A pair of ints (e.g. max_version, dl_device) or -1 with an error. */
static int hrx_dl_int_pair(hrx_py_state_t* state, PyObject* object,
                           const char* what, int64_t out[2]) {
  if (!PyTuple_Check(object) || PyTuple_GET_SIZE(object) != 2) {
    PyErr_Format(PyExc_TypeError, "%s must be a tuple of two ints, not %.100s",
                 what, Py_TYPE(object)->tp_name);
    return -1;
  }
  for (int i = 0; i < 2; ++i) {
    if (hrx_py_arg_int64(state, PyTuple_GET_ITEM(object, i), what, &out[i]) <
        0) {
      return -1;
    }
  }
  return 0;
}

/* The array API's stream argument: the consumer's stream, which is made to
 * wait for the device's submitted work (*out_order) on the device, through
 * native events (*out_stream is its handle; NULL is the runtime's default
 * stream). CUDA: None (default stream), 1 (legacy default), 2 (per-thread
 * default), a stream handle > 2, or -1 (no ordering: the caller orders);
 * 0 is ambiguous and refused. ROCm: None or 0 (default stream), a handle
 * > 2, or -1; 1 and 2 have no meaning there. Host memory (CPU) accepts
 * every value either accepts, and orders by waiting on the host. */
static int hrx_dl_consumer_stream(hrx_py_state_t* state, PyObject* object,
                                  int32_t device_type, bool* out_order,
                                  void** out_stream) {
  *out_order = true;
  *out_stream = NULL;
  if (object == Py_None) return 0;
  int64_t stream = 0;
  if (hrx_py_arg_int64(state, object, "stream", &stream) < 0) return -1;
  const char* problem = NULL;
  if (stream < -1) {
    problem = "a stream must be -1, a documented default or a stream handle";
  } else if (device_type == HRX_DL_CUDA && stream == 0) {
    problem = "stream=0 is ambiguous for CUDA: pass 1 (legacy default "
              "stream), 2 (per-thread default) or a stream handle";
  } else if (device_type == HRX_DL_ROCM && (stream == 1 || stream == 2)) {
    problem = "streams 1 and 2 have no meaning for ROCm: pass None or 0 "
              "(default stream) or a stream handle";
  }
  if (problem) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "__dlpack__ stream %lld: %s", (long long)stream, problem);
    return -1;
  }
  *out_order = stream != -1;
  if (stream > 0) *out_stream = (void*)(uintptr_t)stream;
  return 0;
}

int hrx_py_dlpack_request(hrx_py_state_t* state, PyObject* stream,
                          PyObject* max_version, PyObject* dl_device,
                          PyObject* copy, hrx_py_dlpack_request_t* out) {
  int64_t version[2] = {0, 0};
  out->stream = stream;
  out->has_device = dl_device != Py_None;
  out->device[0] = out->device[1] = 0;
  if (max_version != Py_None &&
      hrx_dl_int_pair(state, max_version, "max_version", version) < 0) {
    return -1;
  }
  if (out->has_device &&
      hrx_dl_int_pair(state, dl_device, "dl_device", out->device) < 0) {
    return -1;
  }
  if (copy != Py_None && !PyBool_Check(copy)) {
    PyErr_Format(PyExc_TypeError, "copy must be True, False or None, not %.100s",
                 Py_TYPE(copy)->tp_name);
    return -1;
  }
  out->copy = copy == Py_True;
  out->versioned = max_version != Py_None && version[0] >= HRX_DL_MAJOR;
  return 0;
}

/* The checks of an export that need the device. The stream's conversion
 * may run Python code that closes the handle: the caller holds `buffer`. */
static int hrx_dl_export_check(hrx_py_state_t* state, hrx_device_t* device,
                               const hrx_py_dlpack_request_t* request,
                               hrx_dl_device_t* out_device, bool* out_order,
                               void** out_consumer) {
  if (hrx_dl_device_of(state, device, out_device) < 0) return -1;
  if (hrx_dl_consumer_stream(state, request->stream, out_device->device_type,
                             out_order, out_consumer) < 0) {
    return -1;
  }
  if (request->has_device &&
      (request->device[0] != out_device->device_type ||
       request->device[1] != out_device->device_id)) {
    PyErr_Format(PyExc_BufferError,
                 "this buffer lives on DLPack device (%d, %d); hrx exports "
                 "it only there, not to (%lld, %lld)",
                 out_device->device_type, out_device->device_id,
                 (long long)request->device[0], (long long)request->device[1]);
    return -1;
  }
  if (request->copy) {
    PyErr_SetString(PyExc_BufferError,
                    "hrx exports its memory without copying; copy=True is not "
                    "supported (pass copy=None or False)");
    return -1;
  }
  return 0;
}

PyObject* hrx_py_dlpack_export(hrx_py_state_t* state, hrx_buffer_t* buffer,
                               uint64_t offset, uint64_t length,
                               const hrx_py_dlpack_layout_t* layout,
                               const hrx_py_dlpack_request_t* request) {
  int64_t bytes_shape = (int64_t)length;
  hrx_py_dlpack_layout_t bytes = {.code = HRX_DL_UINT, .bits = 8, .ndim = 1,
                                  .shape = &bytes_shape};
  if (!layout) layout = &bytes;
  /* The export's reference, taken first: the checks may run Python code. */
  hrx_buffer_retain(buffer);
  hrx_device_t* device = hrx_buffer_device(buffer);
  hrx_dl_device_t dl_device;
  bool order = true;
  void* consumer = NULL;
  if (hrx_dl_export_check(state, device, request, &dl_device, &order,
                          &consumer) < 0) {
    hrx_py_release_without_gil(hrx_dl_buffer_release, buffer);
    return NULL;
  }
  bool versioned = request->versioned;
  size_t ndim = (size_t)layout->ndim;
  hrx_dl_export_t* export = calloc(
      1, sizeof(*export) + 2 * (ndim ? ndim : 1) * sizeof(int64_t));
  if (!export) {
    hrx_py_release_without_gil(hrx_dl_buffer_release, buffer);
    return PyErr_NoMemory();
  }
  export->buffer = buffer;
  int64_t* shape = export->dims;
  int64_t* strides = export->dims + ndim;
  int64_t stride = 1;
  for (size_t axis = ndim; axis-- > 0;) {
    shape[axis] = layout->shape[axis];
    strides[axis] = stride;
    stride *= layout->shape[axis];
  }
  hrx_dl_tensor_t tensor = {
      .data = (uint8_t*)hrx_buffer_native_pointer(buffer) + offset,
      .device = dl_device,
      .ndim = layout->ndim,
      .dtype = {.code = layout->code, .bits = layout->bits, .lanes = 1},
      .shape = shape,
      .strides = strides,
      .byte_offset = 0,
  };
  void* pointer;
  if (versioned) {
    hrx_dl_versioned_t* managed = &export->managed.versioned;
    managed->version.major = HRX_DL_MAJOR;
    managed->version.minor = HRX_DL_MINOR;
    managed->manager_ctx = export;
    managed->deleter = hrx_dl_versioned_deleter;
    managed->flags = 0;
    managed->dl_tensor = tensor;
    pointer = managed;
  } else {
    hrx_dl_managed_t* managed = &export->managed.legacy;
    managed->dl_tensor = tensor;
    managed->manager_ctx = export;
    managed->deleter = hrx_dl_legacy_deleter;
    pointer = managed;
  }
  /* The consumer's work on its stream must start after the work already
   * submitted that may touch the memory: its stream waits for the pool
   * queues on the device (host memory: the host waits); stream -1: the
   * caller orders it. */
  if (order) {
    hrx_status_t status;
    Py_BEGIN_ALLOW_THREADS
    status = hrx_device_order_foreign_stream(device, consumer);
    Py_END_ALLOW_THREADS
    if (status) {
      hrx_dl_export_free(export);
      return hrx_py_raise(state, status);
    }
  }
  PyObject* capsule =
      PyCapsule_New(pointer, versioned ? kCapsuleVersioned : kCapsule,
                    hrx_dl_capsule_destructor);
  if (!capsule) hrx_dl_export_free(export);
  return capsule;
}

/* ------------------------------------------------------------ import */

static bool hrx_dl_host_resident(int32_t device_type) {
  return device_type == HRX_DL_CPU || device_type == HRX_DL_CUDA_HOST ||
         device_type == HRX_DL_ROCM_HOST || device_type == HRX_DL_CUDA_MANAGED;
}

/* Calls obj.__dlpack__(max_version=(1, 0)), falling back to the
 * unversioned call for producers that predate the keyword. */
static PyObject* hrx_dl_call_producer(PyObject* object) {
  PyObject* method = PyObject_GetAttrString(object, "__dlpack__");
  if (!method) return NULL;
  PyObject* kwargs = Py_BuildValue("{s:(ii)}", "max_version", HRX_DL_MAJOR,
                                   HRX_DL_MINOR);
  PyObject* empty = PyTuple_New(0);
  PyObject* capsule = NULL;
  if (kwargs && empty) {
    capsule = PyObject_Call(method, empty, kwargs);
    if (!capsule && PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      capsule = PyObject_CallNoArgs(method);
    }
  }
  Py_XDECREF(kwargs);
  Py_XDECREF(empty);
  Py_DECREF(method);
  return capsule;
}

/* The DLPack device a producer reports, or -1 with an error. */
static int hrx_dl_producer_device(hrx_py_state_t* state, PyObject* object,
                                  const char* role, int64_t out[2]) {
  PyObject* device = PyObject_CallMethod(object, "__dlpack_device__", NULL);
  if (!device) return -1;
  int result = hrx_dl_int_pair(state, device, "__dlpack_device__()", out);
  Py_DECREF(device);
  if (result < 0) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError,
                 "%s: __dlpack_device__() must return (device_type, id)", role);
  }
  return result;
}

/* The managed tensor of an unused capsule `__dlpack__` returned (owned by
 * the capsule still) and whether it is versioned; NULL with an error set
 * (the capsule is released then). */
static void* hrx_dl_capsule_tensor(PyObject* capsule, const char* role,
                                   bool* out_versioned) {
  bool versioned = PyCapsule_IsValid(capsule, kCapsuleVersioned);
  if (!versioned && !PyCapsule_IsValid(capsule, kCapsule)) {
    Py_DECREF(capsule);
    PyErr_Format(PyExc_TypeError,
                 "%s: __dlpack__() returned no unused DLPack capsule", role);
    return NULL;
  }
  void* pointer =
      PyCapsule_GetPointer(capsule, versioned ? kCapsuleVersioned : kCapsule);
  if (!pointer) Py_DECREF(capsule);
  *out_versioned = versioned;
  return pointer;
}

int hrx_py_dlpack_host_acquire(hrx_py_state_t* state, PyObject* object,
                               bool writable, const char* role,
                               hrx_py_dlpack_host_t* out) {
  memset(out, 0, sizeof(*out));
  int64_t device[2] = {0, 0};
  if (hrx_dl_producer_device(state, object, role, device) < 0) return -1;
  if (!hrx_dl_host_resident((int32_t)device[0])) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "%s is a DLPack tensor on device type %lld, not in host "
                 "memory; pass host memory (DLPack CPU, CUDA host or ROCm "
                 "host tensors, or the buffer protocol)",
                 role, (long long)device[0]);
    return -1;
  }
  PyObject* capsule = hrx_dl_call_producer(object);
  if (!capsule) return -1;
  bool versioned = false;
  void* pointer = hrx_dl_capsule_tensor(capsule, role, &versioned);
  if (!pointer) return -1;
  const hrx_dl_tensor_t* tensor;
  uint64_t flags = 0;
  if (versioned) {
    hrx_dl_versioned_t* managed = pointer;
    if (managed->version.major != HRX_DL_MAJOR) {
      Py_DECREF(capsule); /* still unused: its destructor frees the tensor */
      PyErr_Format(PyExc_BufferError,
                   "%s: DLPack version %u.%u is not supported (need 1.x)",
                   role, managed->version.major, managed->version.minor);
      return -1;
    }
    tensor = &managed->dl_tensor;
    flags = managed->flags;
  } else {
    tensor = &((hrx_dl_managed_t*)pointer)->dl_tensor;
  }
  /* From here the consumer (this call) owns the tensor. */
  PyCapsule_SetName(capsule, versioned ? kCapsuleVersionedUsed : kCapsuleUsed);
  Py_DECREF(capsule);
  out->managed = pointer;
  out->versioned = versioned;

  const char* problem = NULL;
  uint64_t elements = 1;
  int64_t expected_stride = 1;
  unsigned item_bits = (unsigned)tensor->dtype.bits * tensor->dtype.lanes;
  if (item_bits == 0 || item_bits % 8 != 0) {
    problem = "its element type is not a whole number of bytes";
  } else if (writable && (flags & HRX_DL_FLAG_READ_ONLY)) {
    problem = "it is read-only; pass a writable tensor";
  } else if (tensor->ndim < 0) {
    problem = "it has a negative number of dimensions";
  }
  for (int32_t axis = tensor->ndim - 1; !problem && axis >= 0; --axis) {
    int64_t extent = tensor->shape[axis];
    if (extent < 0) {
      problem = "it has a negative extent";
    } else if (tensor->strides && extent > 1 &&
               tensor->strides[axis] != expected_stride) {
      problem = "it must be C-contiguous; pass a contiguous copy";
    }
    elements *= (uint64_t)extent;
    expected_stride *= extent;
  }
  if (problem) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT], "%s: %s", role,
                 problem);
    hrx_py_dlpack_host_release(out);
    return -1;
  }
  out->data = (uint8_t*)tensor->data + tensor->byte_offset;
  out->length = elements * (item_bits / 8);
  out->dtype_code = tensor->dtype.code;
  out->dtype_bits = tensor->dtype.bits;
  out->dtype_lanes = tensor->dtype.lanes;
  return 0;
}

void hrx_py_dlpack_host_release(hrx_py_dlpack_host_t* memory) {
  void* pointer = memory->managed;
  memory->managed = NULL;
  if (!pointer) return;
  /* The producer's deleter may run Python code: not with our error set. */
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  if (memory->versioned) {
    hrx_dl_versioned_t* managed = pointer;
    if (managed->deleter) managed->deleter(managed);
  } else {
    hrx_dl_managed_t* managed = pointer;
    if (managed->deleter) managed->deleter(managed);
  }
  PyErr_Restore(type, value, traceback);
}

/* Whether kernels of the device `info` describes address memory of this
 * DLPack device. */
static bool hrx_dl_kernel_addressable(const hrx_device_info_t* info,
                                      const int64_t device[2]) {
  bool same_index = device[1] == info->index;
  if (strcmp(info->platform, "cpu") == 0) {
    return hrx_dl_host_resident((int32_t)device[0]);
  }
  if (strcmp(info->platform, "nvidia") == 0) {
    return (device[0] == HRX_DL_CUDA && same_index) ||
           device[0] == HRX_DL_CUDA_HOST || device[0] == HRX_DL_CUDA_MANAGED;
  }
  if (strcmp(info->platform, "amd") == 0) {
    return (device[0] == HRX_DL_ROCM && same_index) ||
           device[0] == HRX_DL_ROCM_HOST;
  }
  return false;
}

int hrx_py_dlpack_device_address(hrx_py_state_t* state, PyObject* object,
                                 const hrx_device_info_t* info,
                                 const char* role, void** out_address) {
  int64_t device[2] = {0, 0};
  if (hrx_dl_producer_device(state, object, role, device) < 0) return -1;
  if (!hrx_dl_kernel_addressable(info, device)) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "%s is a DLPack tensor on DLPack device (%lld, %lld), which "
                 "kernels of device %s:%d (%s) do not address; pass memory "
                 "of the launch's device",
                 role, (long long)device[0], (long long)device[1],
                 info->backend, info->index, info->platform);
    return -1;
  }
  PyObject* capsule = NULL;
  if (hrx_dl_host_resident((int32_t)device[0]) &&
      strcmp(info->platform, "cpu") == 0) {
    capsule = hrx_dl_call_producer(object);
  } else {
    /* On a GPU the consumer names its stream; -1 asks for no
     * synchronization (the caller orders the producer's work). */
    PyObject* method = PyObject_GetAttrString(object, "__dlpack__");
    PyObject* empty = method ? PyTuple_New(0) : NULL;
    PyObject* kwargs = empty ? Py_BuildValue("{s:i,s:(ii)}", "stream", -1,
                                             "max_version", HRX_DL_MAJOR,
                                             HRX_DL_MINOR)
                             : NULL;
    if (kwargs) capsule = PyObject_Call(method, empty, kwargs);
    if (!capsule && kwargs && PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      Py_DECREF(kwargs);
      kwargs = Py_BuildValue("{s:i}", "stream", -1);
      if (kwargs) capsule = PyObject_Call(method, empty, kwargs);
    }
    Py_XDECREF(kwargs);
    Py_XDECREF(empty);
    Py_XDECREF(method);
  }
  if (!capsule) return -1;
  bool versioned = false;
  void* pointer = hrx_dl_capsule_tensor(capsule, role, &versioned);
  if (!pointer) return -1;
  const hrx_dl_tensor_t* tensor =
      versioned ? &((hrx_dl_versioned_t*)pointer)->dl_tensor
                : &((hrx_dl_managed_t*)pointer)->dl_tensor;
  *out_address = (uint8_t*)tensor->data + tensor->byte_offset;
  /* Not consumed: the capsule's destructor hands the tensor back. */
  Py_DECREF(capsule);
  return 0;
}
