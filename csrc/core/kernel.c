/* Kernels: compiled or loaded modules of a device, and what a launch of
 * one needs: its checks against the kernel and the device, and copies of
 * its arguments (hrx.h, "kernel"; launch.c submits launches to streams).
 *
 * Ownership (acyclic): a kernel retains its device and its module
 * (kernel_cache.h); the device's kernel cache holds the modules it
 * compiled until the device goes. A launch published at once holds
 * nothing; one that waits in its stream's pending batch holds a copy of
 * its arguments and a reference to its kernel until it is published
 * (hrx_kernel_pending_launch_make). Freeing a buffer a launch names
 * publishes pending batches first and then waits for the launch
 * (buffer.c), and the backend keeps the module loaded while a launch of
 * it may run (hal/kernel.h, module_unload).
 *
 * Thread-safe: a kernel is immutable once made. */
#include "kernel.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buffer.h"
#include "live_device.h"
#include "entry.h"
#include "kernel_cache.h"
#include "kernel_source_names.h"
#include "launch_copies.h"
#include "base/status.h"

struct hrx_kernel_s {
  atomic_int ref_count;
  hrx_device_t* device;          /* retained */
  hrx_kernel_module_t* module;   /* retained */
  const hrx_kernel_entry_t* entry;  /* borrowed from module */
  hrx_kernel_origin_t origin;
};

/* UNAVAILABLE where the device's backend runs no kernels. */
static hrx_status_t hrx_kernel_check_backend(hrx_device_t* device) {
  const hrx_backend_vtable_t* vtable = hrx_device_backend(device)->vtable;
  if (vtable->kernel.toolchain && vtable->kernel.compile &&
      vtable->kernel.module_load && vtable->kernel.module_unload &&
      vtable->kernel.module_get_kernel && vtable->kernel.launch) {
    return NULL;
  }
  const hrx_device_info_t* info = hrx_device_info(device);
  return hrx_make_status(HRX_STATUS_UNAVAILABLE,
                         "device %s:%d runs no kernels: its backend has no "
                         "kernel compiler or launcher",
                         info->backend, info->index);
}

hrx_status_t hrx_device_query_kernel_compiler(hrx_device_t* device,
                                              hrx_kernel_compiler_t* out) {
  if (!device || !out) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "a device and an output are required");
  }
  HRX_RETURN_IF_ERROR(hrx_entry_check(device, HRX_ENTRY_BLOCKING,
                                      "describing the kernel compiler"));
  HRX_RETURN_IF_ERROR(hrx_kernel_check_backend(device));
  hrx_backend_device_t* backend = hrx_device_backend(device);
  /* The driver fills the public struct itself (hal/kernel.h); zeroed
   * first, so every string is terminated and `out` is unchanged by
   * padding on failure too. */
  hrx_kernel_compiler_t toolchain;
  memset(&toolchain, 0, sizeof(toolchain));
  HRX_RETURN_IF_ERROR(backend->vtable->kernel.toolchain(backend, &toolchain));
  *out = toolchain;
  return NULL;
}

/* A C identifier of at most HRX_KERNEL_MAX_NAME characters. */
static hrx_status_t hrx_kernel_check_name(const char* name) {
  if (!name) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "kernel name is NULL");
  }
  size_t length = strlen(name);
  bool valid = length > 0 && length <= HRX_KERNEL_MAX_NAME &&
               !(name[0] >= '0' && name[0] <= '9');
  for (size_t i = 0; valid && i < length; ++i) {
    valid = hrx_kernel_name_char(name[i]);
  }
  if (valid) return NULL;
  return hrx_make_status(
      HRX_STATUS_INVALID_ARGUMENT,
      "kernel name '%.64s%s' is not a C identifier of 1 to %d characters "
      "(letters, digits and '_', not starting with a digit)",
      name, length > 64 ? "..." : "", HRX_KERNEL_MAX_NAME);
}

/* A kernel of `module` (the caller's reference, taken on success and on
 * failure). */
static hrx_status_t hrx_kernel_wrap(hrx_device_t* device,
                                    hrx_kernel_module_t* module,
                                    const hrx_kernel_entry_t* entry,
                                    hrx_kernel_origin_t origin,
                                    hrx_kernel_t** out_kernel) {
  hrx_kernel_t* kernel = calloc(1, sizeof(*kernel));
  if (!kernel) {
    hrx_kernel_module_release(module);
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a kernel");
  }
  atomic_init(&kernel->ref_count, 1);
  kernel->device = device;
  kernel->module = module;
  kernel->entry = entry;
  kernel->origin = origin;
  hrx_device_retain_holder(device, HRX_DEVICE_HOLDER_KERNEL);
  *out_kernel = kernel;
  return NULL;
}

hrx_status_t hrx_device_compile_kernels(hrx_device_t* device,
                                        const char* source,
                                        const char* const* names,
                                        size_t name_count,
                                        const char* const* options,
                                        size_t option_count,
                                        hrx_kernel_t** out_kernels) {
  if (!device || !out_kernels) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "a device and an output are required");
  }
  if (!source || !*source) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "kernel source is %s; pass the source text",
                           source ? "empty" : "NULL");
  }
  if (name_count == 0 || name_count > HRX_KERNEL_MAX_MODULE_NAMES ||
      !names) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "%zu kernel names%s; a compile takes 1 to %d",
                           name_count, names ? "" : " (no list)",
                           HRX_KERNEL_MAX_MODULE_NAMES);
  }
  for (size_t i = 0; i < name_count; ++i) {
    HRX_RETURN_IF_ERROR(hrx_kernel_check_name(names[i]));
    for (size_t j = 0; j < i; ++j) {
      if (strcmp(names[i], names[j]) == 0) {
        return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                               "kernel name '%s' is given twice (names %zu "
                               "and %zu); name each kernel once",
                               names[i], j, i);
      }
    }
  }
  if (option_count > HRX_KERNEL_MAX_OPTIONS) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "%zu compiler options; at most %d", option_count,
                           HRX_KERNEL_MAX_OPTIONS);
  }
  if (option_count && !options) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "%zu compiler options but no option list",
                           option_count);
  }
  for (size_t i = 0; i < option_count; ++i) {
    if (!options[i] || !*options[i]) {
      return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                             "compiler option %zu is %s; each option is a "
                             "non-empty string",
                             i, options[i] ? "empty" : "NULL");
    }
  }
  HRX_RETURN_IF_ERROR(
      hrx_entry_check(device, HRX_ENTRY_BLOCKING, "compiling a kernel"));
  HRX_RETURN_IF_ERROR(hrx_kernel_check_backend(device));
  hrx_kernel_module_t* module = NULL;
  hrx_kernel_origin_t origin = HRX_KERNEL_ORIGIN_COMPILED;
  HRX_RETURN_IF_ERROR(hrx_kernel_cache_get(
      hrx_device_kernel_cache(device), hrx_device_backend(device), source,
      names, name_count, options, option_count, &module, &origin));
  hrx_status_t status = NULL;
  size_t made = 0;
  for (; made < name_count && !status; ++made) {
    hrx_kernel_module_retain(module);  /* the kernel's */
    status = hrx_kernel_wrap(device, module,
                             hrx_kernel_module_find(module, names[made]),
                             origin, &out_kernels[made]);
  }
  hrx_kernel_module_release(module);  /* the cache_get's */
  if (status) {
    for (size_t i = 0; i + 1 < made; ++i) hrx_kernel_release(out_kernels[i]);
    return status;
  }
  return NULL;
}

hrx_status_t hrx_device_compile_kernel(hrx_device_t* device,
                                       const char* source, const char* name,
                                       const char* const* options,
                                       size_t option_count,
                                       hrx_kernel_t** out_kernel) {
  const char* names[1] = {name};
  return hrx_device_compile_kernels(device, source, names, 1, options,
                                    option_count, out_kernel);
}

hrx_status_t hrx_device_load_kernel(hrx_device_t* device, const void* image,
                                    size_t size, const char* name,
                                    hrx_kernel_t** out_kernel) {
  if (!device || !out_kernel) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "a device and an output are required");
  }
  if (!image || size == 0) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "kernel image is %s; pass the image's bytes",
                           image ? "empty" : "NULL");
  }
  HRX_RETURN_IF_ERROR(hrx_kernel_check_name(name));
  HRX_RETURN_IF_ERROR(
      hrx_entry_check(device, HRX_ENTRY_BLOCKING, "loading a kernel"));
  HRX_RETURN_IF_ERROR(hrx_kernel_check_backend(device));
  hrx_kernel_module_t* module = NULL;
  HRX_RETURN_IF_ERROR(hrx_kernel_module_from_image(
      hrx_device_backend(device), image, size, name, &module));
  return hrx_kernel_wrap(device, module, &module->kernels[0],
                         HRX_KERNEL_ORIGIN_IMAGE, out_kernel);
}

void hrx_kernel_retain(hrx_kernel_t* kernel) {
  if (kernel) atomic_fetch_add_explicit(&kernel->ref_count, 1,
                                        memory_order_relaxed);
}

static void hrx_kernel_release_object(void* kernel) {
  hrx_kernel_release(kernel);
}

void hrx_kernel_release(hrx_kernel_t* kernel) {
  /* Destroying may wait: nothing promises that a backend's module unload
   * returns without waiting for the device's work. */
  if (!kernel ||
      !hrx_entry_release_last(kernel->device, &kernel->ref_count,
                              hrx_kernel_release_object, kernel, true)) {
    return;
  }
  hrx_kernel_module_release(kernel->module);
  hrx_device_t* device = kernel->device;
  free(kernel);
  hrx_device_release_holder(device, HRX_DEVICE_HOLDER_KERNEL);
}

hrx_device_t* hrx_kernel_device(const hrx_kernel_t* kernel) {
  return kernel->device;
}

const char* hrx_kernel_name(const hrx_kernel_t* kernel) {
  return kernel->entry->name;
}

void hrx_kernel_image(const hrx_kernel_t* kernel, const void** out_image,
                      size_t* out_size) {
  *out_image = kernel->module->image;
  *out_size = kernel->module->image_size;
}

void hrx_kernel_query_attributes(const hrx_kernel_t* kernel,
                                 hrx_kernel_attributes_t* out) {
  *out = kernel->entry->info;
}

int hrx_kernel_param_sizes(const hrx_kernel_t* kernel,
                           const uint32_t** out_sizes) {
  const hrx_kernel_attributes_t* info = &kernel->entry->info;
  *out_sizes = info->param_count >= 0 ? info->param_size : NULL;
  return info->param_count;
}

const hrx_kernel_attributes_t* hrx_kernel_attributes(
    const hrx_kernel_t* kernel) {
  return &kernel->entry->info;
}

const char* hrx_kernel_param_type_name(int kind, uint32_t size, char* out,
                                       size_t capacity) {
  unsigned bits = 8u * size;
  switch (kind) {
    case HRX_KERNEL_PARAM_POINTER:
      snprintf(out, capacity, "pointer");
      break;
    case HRX_KERNEL_PARAM_SIGNED:
      snprintf(out, capacity, "int%u", bits);
      break;
    case HRX_KERNEL_PARAM_UNSIGNED:
      snprintf(out, capacity, "uint%u", bits);
      break;
    case HRX_KERNEL_PARAM_INTEGER:
      snprintf(out, capacity, "int%u/uint%u%s", bits, bits,
               size == sizeof(void*) ? "/pointer" : "");
      break;
    case HRX_KERNEL_PARAM_FLOAT:
      snprintf(out, capacity, "float%u", bits);
      break;
    case HRX_KERNEL_PARAM_BOOL:
      snprintf(out, capacity, "bool");
      break;
    default:
      snprintf(out, capacity, "unknown");
      break;
  }
  return out;
}

hrx_kernel_origin_t hrx_kernel_origin(const hrx_kernel_t* kernel) {
  return kernel->origin;
}

const char* hrx_kernel_origin_name(int origin) {
  switch (origin) {
    case HRX_KERNEL_ORIGIN_COMPILED: return "compiled";
    case HRX_KERNEL_ORIGIN_MEMORY_CACHE: return "memory cache";
    case HRX_KERNEL_ORIGIN_DISK_CACHE: return "disk cache";
    case HRX_KERNEL_ORIGIN_IMAGE: return "image";
  }
  return NULL;
}

const char* hrx_kernel_cache_path(const hrx_kernel_t* kernel) {
  return kernel->module->cache_path;
}

const char* hrx_kernel_cache_note(const hrx_kernel_t* kernel) {
  if (kernel->origin == HRX_KERNEL_ORIGIN_IMAGE) {
    return "not cached: loaded from an image";
  }
  return kernel->module->cache_note ? kernel->module->cache_note : "";
}

hrx_native_kernel_t* hrx_kernel_native(const hrx_kernel_t* kernel) {
  return kernel->entry->kernel;
}

/* ---------------------------------------------------------------- launch */

static const char* const hrx_axis[3] = {"x", "y", "z"};

static hrx_status_t hrx_kernel_check_dims(const hrx_kernel_t* kernel,
                                          const hrx_device_info_t* info,
                                          const hrx_launch_config_t* config) {
  for (int i = 0; i < 3; ++i) {
    if (config->grid[i] == 0 || config->block[i] == 0) {
      return hrx_make_status(
          HRX_STATUS_INVALID_ARGUMENT,
          "%s.%s is 0; every grid and block extent must be at least 1",
          config->grid[i] == 0 ? "grid" : "block", hrx_axis[i]);
    }
    if (config->grid[i] > info->max_grid_dim[i]) {
      return hrx_make_status(
          HRX_STATUS_INVALID_ARGUMENT,
          "grid.%s is %u; device %s:%d allows at most %u blocks along %s "
          "(max_grid_dim)",
          hrx_axis[i], config->grid[i], info->backend, info->index,
          info->max_grid_dim[i], hrx_axis[i]);
    }
    if (config->block[i] > info->max_block_dim[i]) {
      return hrx_make_status(
          HRX_STATUS_INVALID_ARGUMENT,
          "block.%s is %u; device %s:%d allows at most %u threads along %s "
          "(max_block_dim)",
          hrx_axis[i], config->block[i], info->backend, info->index,
          info->max_block_dim[i], hrx_axis[i]);
    }
  }
  uint64_t threads = (uint64_t)config->block[0] * config->block[1] *
                     config->block[2];
  const hrx_kernel_attributes_t* kinfo = &kernel->entry->info;
  if (threads > info->max_threads_per_block) {
    return hrx_make_status(
        HRX_STATUS_INVALID_ARGUMENT,
        "a block of %u x %u x %u = %llu threads; device %s:%d allows at most "
        "%u threads per block (max_threads_per_block)",
        config->block[0], config->block[1], config->block[2],
        (unsigned long long)threads, info->backend, info->index,
        info->max_threads_per_block);
  }
  if (threads > kinfo->max_threads_per_block) {
    return hrx_make_status(
        HRX_STATUS_INVALID_ARGUMENT,
        "a block of %u x %u x %u = %llu threads; kernel '%s' allows at most "
        "%u threads per block (its max_threads_per_block)",
        config->block[0], config->block[1], config->block[2],
        (unsigned long long)threads, kernel->entry->name,
        kinfo->max_threads_per_block);
  }
  if (config->shared_bytes > kinfo->max_dynamic_shared_bytes) {
    return hrx_make_status(
        HRX_STATUS_INVALID_ARGUMENT,
        "%llu bytes of dynamic shared memory; kernel '%s' allows at most "
        "%llu (its max_dynamic_shared_bytes)",
        (unsigned long long)config->shared_bytes, kernel->entry->name,
        (unsigned long long)kinfo->max_dynamic_shared_bytes);
  }
  if (config->shared_bytes + kinfo->static_shared_bytes >
      info->max_shared_bytes_per_block) {
    return hrx_make_status(
        HRX_STATUS_INVALID_ARGUMENT,
        "%llu bytes of dynamic shared memory and kernel '%s''s %llu static "
        "bytes; device %s:%d allows at most %llu per block "
        "(max_shared_bytes_per_block)",
        (unsigned long long)config->shared_bytes, kernel->entry->name,
        (unsigned long long)kinfo->static_shared_bytes, info->backend,
        info->index, (unsigned long long)info->max_shared_bytes_per_block);
  }
  return NULL;
}

hrx_status_t hrx_kernel_prepare_launch(hrx_kernel_t* kernel,
                                       hrx_device_t* device,
                                       const char* holder, const char* rule,
                                       const hrx_launch_config_t* config,
                                       const hrx_kernel_arg_t* args,
                                       size_t arg_count,
                                       hrx_kernel_prepared_t* out) {
  if (!kernel) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT, "kernel is NULL");
  }
  if (!config) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "launch configuration is NULL");
  }
  HRX_RETURN_IF_ERROR(hrx_device_check_same(
      device, kernel->device, "the kernel", holder,
      "a kernel launches only on its own device (compile it for each "
      "device)"));
  HRX_RETURN_IF_ERROR(
      hrx_kernel_check_dims(kernel, hrx_device_info(device), config));
  const hrx_kernel_attributes_t* kinfo = &kernel->entry->info;
  const char* name = kernel->entry->name;
  if (arg_count > HRX_KERNEL_MAX_ARGS) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "%zu arguments; a launch passes at most %d",
                           arg_count, HRX_KERNEL_MAX_ARGS);
  }
  if (arg_count && !args) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "%zu arguments but no argument list", arg_count);
  }
  if (kinfo->param_count >= 0 && arg_count != (size_t)kinfo->param_count) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "kernel '%s' takes %d argument%s; got %zu", name,
                           kinfo->param_count,
                           kinfo->param_count == 1 ? "" : "s", arg_count);
  }
  uint64_t total = 0;
  for (size_t i = 0; i < arg_count; ++i) {
    const hrx_kernel_arg_t* arg = &args[i];
    uint32_t size = 0;
    if (arg->kind == HRX_KERNEL_ARG_VIEW) {
      if (!hrx_view_usable(device, arg->view)) {
        char role[48];
        snprintf(role, sizeof(role), "argument %zu", i);
        HRX_RETURN_IF_ERROR(hrx_view_check(device, arg->view, role, holder,
                                           rule));
      }
      int kind = kinfo->param_count >= 0 && i < (size_t)kinfo->param_count
                     ? kinfo->param_kind[i]
                     : HRX_KERNEL_PARAM_UNKNOWN;
      if (kind != HRX_KERNEL_PARAM_UNKNOWN &&
          kind != HRX_KERNEL_PARAM_POINTER &&
          kind != HRX_KERNEL_PARAM_INTEGER) {
        char type[32];
        const char* pname = kinfo->param_name[i];
        return hrx_make_status(
            HRX_STATUS_INVALID_ARGUMENT,
            "argument %zu is a buffer (a pointer); parameter %zu%s%s%s of "
            "kernel '%s' is %s",
            i, i, pname ? " '" : "", pname ? pname : "", pname ? "'" : "",
            name,
            hrx_kernel_param_type_name(kind, kinfo->param_size[i], type,
                                       sizeof(type)));
      }
      out->pointers[i] = hrx_view_pointer(arg->view);
      out->values[i] = &out->pointers[i];
      size = (uint32_t)sizeof(void*);
    } else if (arg->kind == HRX_KERNEL_ARG_VALUE) {
      if (!arg->value || arg->size == 0) {
        return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                               "argument %zu has %s; a value argument is at "
                               "least 1 byte",
                               i, arg->value ? "0 bytes" : "no value");
      }
      out->values[i] = arg->value;
      size = arg->size;
    } else {
      return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                             "argument %zu has kind %d; a kernel argument is "
                             "HRX_KERNEL_ARG_VALUE or HRX_KERNEL_ARG_VIEW",
                             i, (int)arg->kind);
    }
    if (kinfo->param_count >= 0 && size != kinfo->param_size[i]) {
      return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                             "argument %zu is %u bytes; parameter %zu of "
                             "kernel '%s' is %u bytes",
                             i, size, i, name, kinfo->param_size[i]);
    }
    total += size;
    if (total > HRX_KERNEL_MAX_ARG_BYTES) {
      return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                             "the arguments take more than %d bytes (%llu up "
                             "to argument %zu), the most a launch passes",
                             HRX_KERNEL_MAX_ARG_BYTES,
                             (unsigned long long)total, i);
    }
    out->sizes[i] = size;
  }
  hrx_kernel_launch_t* launch = &out->launch;
  memcpy(launch->grid, config->grid, sizeof(launch->grid));
  memcpy(launch->block, config->block, sizeof(launch->block));
  launch->shared_bytes = config->shared_bytes;
  launch->arg_count = (uint32_t)arg_count;
  launch->args = out->values;
  launch->arg_sizes = out->sizes;
  return NULL;
}

hrx_kernel_launch_t* hrx_kernel_launch_copy(
    const hrx_kernel_prepared_t* prepared) {
  void* block = aligned_alloc(16, hrx_launch_copy_bytes(&prepared->launch));
  return block ? hrx_launch_copy_write(block, &prepared->launch) : NULL;
}

bool hrx_kernel_pending_launch_make(const hrx_batch_command_t* command,
                                    hrx_launch_copies_t* copies,
                                    hrx_batch_command_t* out) {
  hrx_kernel_launch_t* launch = hrx_launch_copies_make(copies, command->launch);
  if (!launch) return false;
  *out = *command;
  out->launch = launch;
  hrx_kernel_retain(command->owner);
  return true;
}

void hrx_kernel_pending_launch_release(const hrx_batch_command_t* command) {
  hrx_kernel_t* kernel = command->owner;
  /* The caller publishes under a stream's locks, and the last release of
   * a kernel may wait for the device (module_unload), which may be running
   * a host callback that needs those locks: the last reference goes to
   * the device's cleanup thread instead. */
  int count = atomic_load_explicit(&kernel->ref_count, memory_order_relaxed);
  while (count > 1) {
    if (atomic_compare_exchange_weak_explicit(&kernel->ref_count, &count,
                                              count - 1, memory_order_acq_rel,
                                              memory_order_relaxed)) {
      return;
    }
  }
  hrx_device_defer_release(kernel->device, hrx_kernel_release_object, kernel);
}
