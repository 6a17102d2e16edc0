/* Kernel modules and the per-device memory cache (kernel_cache.h). */
#include "kernel_cache.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_disk_cache.h"
#include "base/status.h"

struct hrx_kernel_cache_s {
  pthread_mutex_t mutex;
  hrx_kernel_module_t* modules;  /* one reference each; mutex */
};

/* ------------------------------------------------------------- modules */

void hrx_kernel_module_retain(hrx_kernel_module_t* module) {
  atomic_fetch_add_explicit(&module->ref_count, 1, memory_order_relaxed);
}

void hrx_kernel_module_release(hrx_kernel_module_t* module) {
  if (!module || atomic_fetch_sub_explicit(&module->ref_count, 1,
                                           memory_order_acq_rel) != 1) {
    return;
  }
  if (module->native) {
    module->backend->vtable->kernel.module_unload(module->backend, module->native);
  }
  free(module->name);
  free(module->image);
  free(module->cache_path);
  free(module->cache_note);
  free(module->key);
  free(module);
}

/* Loads `image` (taken: owned by the module on success and on failure)
 * and looks `name` up in it. */
static hrx_status_t hrx_kernel_module_load(hrx_backend_device_t* backend,
                                           void* image, size_t size,
                                           const char* name,
                                           hrx_kernel_module_t** out_module) {
  hrx_kernel_module_t* module = calloc(1, sizeof(*module));
  char* copied_name = module ? strdup(name) : NULL;
  if (!module || !copied_name) {
    free(module);
    free(image);
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a kernel module");
  }
  atomic_init(&module->ref_count, 1);
  module->backend = backend;
  module->name = copied_name;
  module->image = image;
  module->image_size = size;
  const hrx_backend_vtable_t* vtable = backend->vtable;
  hrx_status_t status =
      vtable->kernel.module_load(backend, image, size, &module->native);
  if (!status) {
    status = vtable->kernel.module_get_kernel(backend, module->native, name,
                                       &module->kernel, &module->info);
  }
  if (!status && module->info.param_count > HRX_KERNEL_MAX_ARGS) {
    status = hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                             "kernel '%s' has %d parameters; a launch passes "
                             "at most %d",
                             name, module->info.param_count,
                             HRX_KERNEL_MAX_ARGS);
  }
  if (status) {
    hrx_kernel_module_release(module);
    return status;
  }
  *out_module = module;
  return NULL;
}

hrx_status_t hrx_kernel_module_from_image(hrx_backend_device_t* backend,
                                          const void* image, size_t size,
                                          const char* name,
                                          hrx_kernel_module_t** out_module) {
  void* copy = malloc(size ? size : 1);
  if (!copy) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot copy a kernel image of %zu bytes", size);
  }
  memcpy(copy, image, size);
  return hrx_kernel_module_load(backend, copy, size, name, out_module);
}

/* ---------------------------------------------------------------- keys */

typedef struct {
  unsigned char* bytes;
  size_t size;
  size_t capacity;
  bool failed;
} hrx_key_t;

/* Appends one length-prefixed field, so that no two keys serialise
 * alike. */
static void hrx_key_add(hrx_key_t* key, const char* field, size_t length) {
  if (key->failed) return;
  size_t need = key->size + 8 + length;
  if (need > key->capacity) {
    size_t capacity = key->capacity ? key->capacity : 256;
    while (capacity < need) capacity *= 2;
    unsigned char* grown = realloc(key->bytes, capacity);
    if (!grown) {
      key->failed = true;
      return;
    }
    key->bytes = grown;
    key->capacity = capacity;
  }
  for (int i = 0; i < 8; ++i) {
    key->bytes[key->size++] = (unsigned char)((uint64_t)length >> (8 * i));
  }
  memcpy(key->bytes + key->size, field, length);
  key->size += length;
}

static void hrx_key_add_text(hrx_key_t* key, const char* text) {
  hrx_key_add(key, text, strlen(text));
}

/* (name, options, source): what a module of one device depends on. */
static void hrx_key_add_request(hrx_key_t* key, const char* source,
                                const char* name, const char* const* options,
                                size_t option_count) {
  hrx_key_add_text(key, name);
  char count[32];
  snprintf(count, sizeof(count), "%zu", option_count);
  hrx_key_add_text(key, count);
  for (size_t i = 0; i < option_count; ++i) hrx_key_add_text(key, options[i]);
  hrx_key_add_text(key, source);
}

/* ---------------------------------------------------------------- cache */

hrx_status_t hrx_kernel_cache_create(hrx_kernel_cache_t** out_cache) {
  hrx_kernel_cache_t* cache = calloc(1, sizeof(*cache));
  if (!cache) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate the kernel cache");
  }
  pthread_mutex_init(&cache->mutex, NULL);
  *out_cache = cache;
  return NULL;
}

void hrx_kernel_cache_destroy(hrx_kernel_cache_t* cache) {
  if (!cache) return;
  while (cache->modules) {
    hrx_kernel_module_t* next = cache->modules->next;
    hrx_kernel_module_release(cache->modules);
    cache->modules = next;
  }
  pthread_mutex_destroy(&cache->mutex);
  free(cache);
}

/* The cached module of the key, retained, or NULL. */
static hrx_kernel_module_t* hrx_kernel_cache_find_locked(
    hrx_kernel_cache_t* cache, uint64_t hash, const void* key,
    size_t key_size) {
  for (hrx_kernel_module_t* m = cache->modules; m; m = m->next) {
    if (m->hash == hash && m->key_size == key_size &&
        memcmp(m->key, key, key_size) == 0) {
      hrx_kernel_module_retain(m);
      return m;
    }
  }
  return NULL;
}

/* Joins two notes ("a; b"), taking both; either may be NULL. */
static char* hrx_note_join(char* first, char* second) {
  if (!first) return second;
  if (!second) return first;
  size_t n = strlen(first) + strlen(second) + 3;
  char* joined = malloc(n);
  if (joined) snprintf(joined, n, "%s; %s", first, second);
  free(first);
  free(second);
  return joined;
}

/* A module from the disk cache, or NULL (*inout_note says why when an
 * entry was there but not used). */
static hrx_kernel_module_t* hrx_kernel_cache_read_disk(
    hrx_backend_device_t* backend, const char* dir, const hrx_key_t* key,
    const char* name, char** inout_note) {
  void* image = NULL;
  size_t size = 0;
  char* path = NULL;
  char* note = NULL;
  hrx_kernel_disk_cache_read(dir, key->bytes, key->size, &image, &size,
                             &path, &note);
  if (!image) {
    *inout_note = hrx_note_join(*inout_note, note);
    return NULL;
  }
  hrx_kernel_module_t* module = NULL;
  hrx_status_t status =
      hrx_kernel_module_load(backend, image, size, name, &module);
  if (status) {
    /* A whole entry the runtime refuses (e.g. a runtime that changed under
     * an unchanged compiler): compiled again and rewritten. */
    size_t n = strlen(path) + strlen(hrx_status_message(status)) + 64;
    note = malloc(n);
    if (note) {
      snprintf(note, n, "the cache entry %s could not be loaded (%s); "
               "compiled again", path, hrx_status_message(status));
    }
    hrx_status_free(status);
    free(path);
    *inout_note = hrx_note_join(*inout_note, note);
    return NULL;
  }
  module->cache_path = path;
  return module;
}

/* Compiles and loads; the image is the backend's. */
static hrx_status_t hrx_kernel_cache_compile(hrx_backend_device_t* backend,
                                             const char* source,
                                             const char* name,
                                             const char* const* options,
                                             size_t option_count,
                                             hrx_kernel_module_t** out) {
  void* image = NULL;
  size_t size = 0;
  const char* names[1] = {name};
  HRX_RETURN_IF_ERROR(backend->vtable->kernel.compile(
      backend, source, names, 1, options, option_count, &image, &size));
  hrx_status_t status = hrx_kernel_module_load(backend, image, size, name, out);
  if (status) {
    return hrx_status_annotate(status, "the compiled kernel '%s' did not "
                               "load", name);
  }
  return NULL;
}

hrx_status_t hrx_kernel_cache_get(hrx_kernel_cache_t* cache,
                                  hrx_backend_device_t* backend,
                                  const char* source, const char* name,
                                  const char* const* options,
                                  size_t option_count,
                                  hrx_kernel_module_t** out_module,
                                  hrx_kernel_origin_t* out_origin) {
  hrx_key_t request = {0};
  hrx_key_add_request(&request, source, name, options, option_count);
  if (request.failed) {
    free(request.bytes);
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot build the kernel cache key");
  }
  uint64_t hash = hrx_kernel_hash(request.bytes, request.size, 0);
  pthread_mutex_lock(&cache->mutex);
  hrx_kernel_module_t* module =
      hrx_kernel_cache_find_locked(cache, hash, request.bytes, request.size);
  pthread_mutex_unlock(&cache->mutex);
  if (module) {
    free(request.bytes);
    *out_module = module;
    *out_origin = HRX_KERNEL_ORIGIN_MEMORY_CACHE;
    return NULL;
  }

  hrx_kernel_compiler_t toolchain;
  memset(&toolchain, 0, sizeof(toolchain));
  hrx_status_t status = backend->vtable->kernel.toolchain(backend, &toolchain);
  char* dir = NULL;
  char* note = NULL;
  if (!status) status = hrx_kernel_disk_cache_dir(&dir, &note);
  if (status) {
    free(request.bytes);
    return status;
  }
  /* The disk key: a version tag, the toolchain, then the request. */
  hrx_key_t key = {0};
  hrx_key_add_text(&key, "hrx kernel cache key 1");
  hrx_key_add_text(&key, toolchain.language);
  hrx_key_add_text(&key, toolchain.compiler);
  hrx_key_add_text(&key, toolchain.target);
  hrx_key_add_text(&key, toolchain.image_format);
  hrx_key_add(&key, (const char*)request.bytes, request.size);
  hrx_kernel_origin_t origin = HRX_KERNEL_ORIGIN_DISK_CACHE;
  if (dir && !key.failed) {
    module = hrx_kernel_cache_read_disk(backend, dir, &key, name, &note);
  }
  if (!module) {
    origin = HRX_KERNEL_ORIGIN_COMPILED;
    status = hrx_kernel_cache_compile(backend, source, name, options,
                                      option_count, &module);
    if (!status && dir && !key.failed) {
      char* path = NULL;
      char* written = NULL;
      hrx_kernel_disk_cache_write(dir, key.bytes, key.size, module->image,
                                  module->image_size, &path, &written);
      module->cache_path = path;
      note = hrx_note_join(note, written);
    }
  }
  free(dir);
  free(key.bytes);
  if (status) {
    free(note);
    free(request.bytes);
    return status;
  }
  module->cache_note = note;
  module->hash = hash;
  module->key = request.bytes;
  module->key_size = request.size;

  pthread_mutex_lock(&cache->mutex);
  hrx_kernel_module_t* raced =
      hrx_kernel_cache_find_locked(cache, hash, module->key, module->key_size);
  if (!raced) {
    hrx_kernel_module_retain(module);  /* the cache's reference */
    module->next = cache->modules;
    cache->modules = module;
  }
  pthread_mutex_unlock(&cache->mutex);
  if (raced) {
    /* Another thread finished the same compile first: use its module. */
    hrx_kernel_module_release(module);
    module = raced;
    origin = HRX_KERNEL_ORIGIN_MEMORY_CACHE;
  }
  *out_module = module;
  *out_origin = origin;
  return NULL;
}
