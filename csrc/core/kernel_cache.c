/* Kernel modules and the per-device memory cache (kernel_cache.h). */
#include "kernel_cache.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_disk_cache.h"
#include "kernel_source_names.h"
#include "base/status.h"

/* The most sources a cache remembers as compiled name by name. */
#define HRX_KERNEL_CACHE_NARROW 64

struct hrx_kernel_cache_s {
  pthread_mutex_t mutex;
  hrx_kernel_module_t* modules;  /* one reference each; mutex */
  /* Build-key hashes of sources whose declared kernels the compiler
   * refused together, newest last (a ring); mutex. */
  uint64_t narrow[HRX_KERNEL_CACHE_NARROW];
  size_t narrow_count;
  size_t narrow_next;
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
  for (size_t i = 0; module->kernels && i < module->kernel_count; ++i) {
    free(module->kernels[i].name);
  }
  free(module->kernels);
  free(module->image);
  free(module->cache_path);
  free(module->cache_note);
  free(module->key);
  free(module);
}

const hrx_kernel_entry_t* hrx_kernel_module_find(
    const hrx_kernel_module_t* module, const char* name) {
  for (size_t i = 0; i < module->kernel_count; ++i) {
    if (strcmp(module->kernels[i].name, name) == 0) return &module->kernels[i];
  }
  return NULL;
}

/* Loads `image` (taken: owned by the module on success and on failure)
 * and looks up each of names[0..name_count) in it. */
static hrx_status_t hrx_kernel_module_load(hrx_backend_device_t* backend,
                                           void* image, size_t size,
                                           const char* const* names,
                                           size_t name_count,
                                           hrx_kernel_module_t** out_module) {
  hrx_kernel_module_t* module = calloc(1, sizeof(*module));
  hrx_kernel_entry_t* kernels =
      module ? calloc(name_count ? name_count : 1, sizeof(*kernels)) : NULL;
  if (!module || !kernels) {
    free(module);
    free(kernels);
    free(image);
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a kernel module");
  }
  atomic_init(&module->ref_count, 1);
  module->backend = backend;
  module->kernels = kernels;
  module->image = image;
  module->image_size = size;
  const hrx_backend_vtable_t* vtable = backend->vtable;
  hrx_status_t status =
      vtable->kernel.module_load(backend, image, size, &module->native);
  for (size_t i = 0; !status && i < name_count; ++i) {
    hrx_kernel_entry_t* entry = &kernels[i];
    entry->name = strdup(names[i]);
    if (!entry->name) {
      status = hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                               "cannot allocate a kernel module");
      break;
    }
    module->kernel_count = i + 1;
    status = vtable->kernel.module_get_kernel(backend, module->native,
                                              names[i], &entry->kernel,
                                              &entry->info);
    if (!status && entry->info.param_count > HRX_KERNEL_MAX_ARGS) {
      status = hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                               "kernel '%s' has %d parameters; a launch "
                               "passes at most %d",
                               names[i], entry->info.param_count,
                               HRX_KERNEL_MAX_ARGS);
    }
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
  const char* names[1] = {name};
  HRX_RETURN_IF_ERROR(
      hrx_kernel_module_load(backend, copy, size, names, 1, out_module));
  if (backend->vtable->kernel.describe_image) {
    hrx_kernel_param_record_t record;
    record.count = -1;
    backend->vtable->kernel.describe_image(backend, image, size, names, 1,
                                           &record);
    hrx_kernel_attributes_apply_record(&(*out_module)->kernels[0].info,
                                       &record);
  }
  return NULL;
}

void hrx_kernel_attributes_apply_record(
    hrx_kernel_attributes_t* info, const hrx_kernel_param_record_t* record) {
  if (record->count < 0 || record->count > HRX_KERNEL_MAX_ARGS) return;
  for (int i = 0; i < info->param_count; ++i) {
    if (info->param_kind[i] != HRX_KERNEL_PARAM_UNKNOWN) return;
  }
  if (info->param_count < 0) {
    info->param_count = record->count;
    for (int i = 0; i < record->count; ++i) {
      info->param_size[i] = record->size[i];
      info->param_offset[i] = record->offset[i];
    }
  } else if (info->param_count != record->count) {
    return;
  }
  for (int i = 0; i < record->count; ++i) {
    if (info->param_size[i] != record->size[i]) return;
  }
  for (int i = 0; i < record->count; ++i) {
    info->param_kind[i] = record->kind[i] <= HRX_KERNEL_PARAM_BOOL
                              ? record->kind[i]
                              : HRX_KERNEL_PARAM_UNKNOWN;
  }
}

/* ------------------------------------------------------------- payload */

/* A disk entry holds the compile's parameter records, then the image:
 *   "HRXPREC1", the record count (u32), per record its parameter count
 *   (i32, -1 for none) and per parameter kind (u8), size and offset (u32);
 *   then the image's bytes to the end (integers little-endian). */
static const char hrx_payload_tag[8] = {'H', 'R', 'X', 'P', 'R', 'E', 'C', '1'};

static void hrx_payload_put32(unsigned char** at, uint32_t value) {
  for (int i = 0; i < 4; ++i) *(*at)++ = (unsigned char)(value >> (8 * i));
}

static uint32_t hrx_payload_get32(const unsigned char* at) {
  return (uint32_t)at[0] | (uint32_t)at[1] << 8 | (uint32_t)at[2] << 16 |
         (uint32_t)at[3] << 24;
}

bool hrx_kernel_payload_make(const hrx_kernel_param_record_t* records,
                             size_t record_count, const void* image,
                             size_t image_size, void** out_payload,
                             size_t* out_size) {
  size_t size = sizeof(hrx_payload_tag) + 4 + image_size;
  for (size_t r = 0; r < record_count; ++r) {
    int count = records[r].count > 0 ? records[r].count : 0;
    size += 4 + (size_t)count * 9;
  }
  unsigned char* payload = malloc(size ? size : 1);
  if (!payload) return false;
  unsigned char* at = payload;
  memcpy(at, hrx_payload_tag, sizeof(hrx_payload_tag));
  at += sizeof(hrx_payload_tag);
  hrx_payload_put32(&at, (uint32_t)record_count);
  for (size_t r = 0; r < record_count; ++r) {
    const hrx_kernel_param_record_t* record = &records[r];
    int count = record->count >= 0 && record->count <= HRX_KERNEL_MAX_ARGS
                    ? record->count
                    : -1;
    hrx_payload_put32(&at, (uint32_t)count);
    for (int i = 0; i < count; ++i) {
      *at++ = record->kind[i];
      hrx_payload_put32(&at, record->size[i]);
      hrx_payload_put32(&at, record->offset[i]);
    }
  }
  memcpy(at, image, image_size);
  *out_payload = payload;
  *out_size = (size_t)(at - payload) + image_size;
  return true;
}

bool hrx_kernel_payload_split(const void* payload, size_t size,
                              size_t record_count,
                              hrx_kernel_param_record_t* records,
                              size_t* out_image_offset) {
  const unsigned char* bytes = payload;
  size_t at = sizeof(hrx_payload_tag) + 4;
  if (size < at || memcmp(bytes, hrx_payload_tag, sizeof(hrx_payload_tag)) ||
      hrx_payload_get32(bytes + sizeof(hrx_payload_tag)) != record_count) {
    return false;
  }
  for (size_t r = 0; r < record_count; ++r) {
    if (size - at < 4) return false;
    int32_t count = (int32_t)hrx_payload_get32(bytes + at);
    at += 4;
    if (count < -1 || count > HRX_KERNEL_MAX_ARGS ||
        (count > 0 && (size - at) / 9 < (size_t)count)) {
      return false;
    }
    records[r].count = count;
    for (int i = 0; i < count; ++i) {
      records[r].kind[i] = bytes[at];
      records[r].size[i] = hrx_payload_get32(bytes + at + 1);
      records[r].offset[i] = hrx_payload_get32(bytes + at + 5);
      at += 9;
    }
  }
  if (at >= size) return false;  /* no image */
  *out_image_offset = at;
  return true;
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

/* (options, source): what a module of one device depends on besides the
 * names it was compiled for (the memory cache's key). */
static void hrx_key_add_build(hrx_key_t* key, const char* source,
                              const char* const* options,
                              size_t option_count) {
  char count[32];
  snprintf(count, sizeof(count), "%zu", option_count);
  hrx_key_add_text(key, count);
  for (size_t i = 0; i < option_count; ++i) hrx_key_add_text(key, options[i]);
  hrx_key_add_text(key, source);
}

/* The names the module is compiled for (the disk key adds them). */
static void hrx_key_add_names(hrx_key_t* key, const char* const* names,
                              size_t name_count) {
  char count[32];
  snprintf(count, sizeof(count), "%zu", name_count);
  hrx_key_add_text(key, count);
  for (size_t i = 0; i < name_count; ++i) hrx_key_add_text(key, names[i]);
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

/* A cached module of the key that has every name, retained, or NULL. */
static hrx_kernel_module_t* hrx_kernel_cache_find_locked(
    hrx_kernel_cache_t* cache, uint64_t hash, const void* key,
    size_t key_size, const char* const* names, size_t name_count) {
  for (hrx_kernel_module_t* m = cache->modules; m; m = m->next) {
    if (m->hash != hash || m->key_size != key_size ||
        memcmp(m->key, key, key_size) != 0) {
      continue;
    }
    bool all = true;
    for (size_t i = 0; all && i < name_count; ++i) {
      all = hrx_kernel_module_find(m, names[i]) != NULL;
    }
    if (all) {
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
    const char* const* names, size_t name_count, char** inout_note) {
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
  hrx_kernel_param_record_t* records =
      calloc(name_count ? name_count : 1, sizeof(*records));
  size_t offset = 0;
  void* bare = NULL;
  if (records && hrx_kernel_payload_split(image, size, name_count, records,
                                          &offset)) {
    bare = malloc(size - offset);
    if (bare) memcpy(bare, (unsigned char*)image + offset, size - offset);
  }
  free(image);
  if (!bare) {
    /* A whole entry (its checksum matched) whose records do not read: one
     * of another layout; compiled again and rewritten. */
    size_t n = strlen(path) + 96;
    note = malloc(n);
    if (note) {
      snprintf(note, n, "the cache entry %s has no parameter records hrx "
               "can read; compiled again", path);
    }
    free(path);
    free(records);
    *inout_note = hrx_note_join(*inout_note, note);
    return NULL;
  }
  image = bare;
  size -= offset;
  hrx_kernel_module_t* module = NULL;
  hrx_status_t status = hrx_kernel_module_load(backend, image, size, names,
                                               name_count, &module);
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
    free(records);
    *inout_note = hrx_note_join(*inout_note, note);
    return NULL;
  }
  for (size_t i = 0; i < name_count; ++i) {
    hrx_kernel_attributes_apply_record(&module->kernels[i].info, &records[i]);
  }
  free(records);
  module->cache_path = path;
  return module;
}

/* Compiles once for every name and loads; the image is the backend's, and
 * what the compiler recorded of the parameters goes into `records`
 * (name_count entries) and the kernels' attributes. */
static hrx_status_t hrx_kernel_cache_compile(
    hrx_backend_device_t* backend, const char* source,
    const char* const* names, size_t name_count, const char* const* options,
    size_t option_count, hrx_kernel_param_record_t* records,
    hrx_kernel_module_t** out) {
  void* image = NULL;
  size_t size = 0;
  for (size_t i = 0; i < name_count; ++i) records[i].count = -1;
  HRX_RETURN_IF_ERROR(backend->vtable->kernel.compile(
      backend, source, names, name_count, options, option_count, &image,
      &size, records));
  hrx_status_t status =
      hrx_kernel_module_load(backend, image, size, names, name_count, out);
  if (status) {
    return hrx_status_annotate(status, "the compiled kernel '%s'%s did not "
                               "load", names[0],
                               name_count > 1 ? " and the others" : "");
  }
  for (size_t i = 0; i < name_count; ++i) {
    hrx_kernel_attributes_apply_record(&(*out)->kernels[i].info, &records[i]);
  }
  return NULL;
}

/* The module of (source, options) with names[0..name_count), from the
 * disk cache or compiled (`build` is the memory key, `hash` its hash; the
 * module gets a copy), then kept in the memory cache (or the module another
 * thread kept there first). */
static hrx_status_t hrx_kernel_cache_make(
    hrx_kernel_cache_t* cache, hrx_backend_device_t* backend,
    const char* source, const hrx_key_t* build, uint64_t hash,
    const char* const* names, size_t name_count, const char* const* options,
    size_t option_count, hrx_kernel_module_t** out_module,
    hrx_kernel_origin_t* out_origin) {
  void* key_copy = malloc(build->size ? build->size : 1);
  if (!key_copy) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot copy the kernel cache key");
  }
  memcpy(key_copy, build->bytes, build->size);
  hrx_kernel_compiler_t toolchain;
  memset(&toolchain, 0, sizeof(toolchain));
  hrx_status_t status = backend->vtable->kernel.toolchain(backend, &toolchain);
  char* dir = NULL;
  char* note = NULL;
  if (!status) status = hrx_kernel_disk_cache_dir(&dir, &note);
  if (status) {
    free(key_copy);
    return status;
  }
  /* The disk key: a version tag, the toolchain, then the names, options
   * and source. */
  hrx_key_t key = {0};
  hrx_key_add_text(&key, "hrx kernel cache key 3");
  hrx_key_add_text(&key, toolchain.language);
  hrx_key_add_text(&key, toolchain.compiler);
  hrx_key_add_text(&key, toolchain.target);
  hrx_key_add_text(&key, toolchain.image_format);
  hrx_key_add_names(&key, names, name_count);
  hrx_key_add(&key, (const char*)build->bytes, build->size);
  hrx_kernel_origin_t origin = HRX_KERNEL_ORIGIN_DISK_CACHE;
  hrx_kernel_module_t* module = NULL;
  if (dir && !key.failed) {
    module = hrx_kernel_cache_read_disk(backend, dir, &key, names, name_count,
                                        &note);
  }
  if (!module) {
    origin = HRX_KERNEL_ORIGIN_COMPILED;
    hrx_kernel_param_record_t* records =
        calloc(name_count ? name_count : 1, sizeof(*records));
    status = records ? hrx_kernel_cache_compile(backend, source, names,
                                                name_count, options,
                                                option_count, records, &module)
                     : hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                                       "cannot allocate the parameter "
                                       "records of %zu kernels",
                                       name_count);
    void* payload = NULL;
    size_t payload_size = 0;
    if (!status && dir && !key.failed) {
      char* path = NULL;
      char* written = NULL;
      if (hrx_kernel_payload_make(records, name_count, module->image,
                                  module->image_size, &payload,
                                  &payload_size)) {
        hrx_kernel_disk_cache_write(dir, key.bytes, key.size, payload,
                                    payload_size, &path, &written);
      } else {
        written = strdup("not cached: out of memory for the cache entry");
      }
      module->cache_path = path;
      note = hrx_note_join(note, written);
    }
    free(payload);
    free(records);
  }
  free(dir);
  free(key.bytes);
  if (status) {
    free(note);
    free(key_copy);
    return status;
  }
  module->cache_note = note;
  module->hash = hash;
  module->key = key_copy;
  module->key_size = build->size;

  pthread_mutex_lock(&cache->mutex);
  hrx_kernel_module_t* raced = hrx_kernel_cache_find_locked(
      cache, hash, module->key, module->key_size, names, name_count);
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

static int hrx_kernel_name_order(const void* a, const void* b) {
  return strcmp(*(const char* const*)a, *(const char* const*)b);
}

/* The names a compile of names[0..name_count) compiles for (kernel
 * cache.h): the source's declared kernels (kernel_source_names.h) when
 * they include every name asked for, sorted (so that a compile of any of
 * them makes the same module and disk entry); else NULL (compile the names
 * asked for). *out_declared holds the strings; free both. */
static hrx_status_t hrx_kernel_cache_declared(
    const char* source, const char* const* names, size_t name_count,
    char*** out_declared, size_t* out_count) {
  *out_declared = NULL;
  *out_count = 0;
  char** declared = NULL;
  size_t count = 0;
  HRX_RETURN_IF_ERROR(hrx_kernel_source_names(
      source, HRX_KERNEL_MAX_MODULE_NAMES, &declared, &count));
  bool covers = count > name_count;
  for (size_t i = 0; covers && i < name_count; ++i) {
    bool found = false;
    for (size_t j = 0; !found && j < count; ++j) {
      found = strcmp(names[i], declared[j]) == 0;
    }
    covers = found;
  }
  if (!covers) {
    hrx_kernel_source_names_free(declared, count);
    return NULL;
  }
  qsort(declared, count, sizeof(*declared), hrx_kernel_name_order);
  *out_declared = declared;
  *out_count = count;
  return NULL;
}

/* Whether `message` names a kernel of declared[0..declared_count) that is
 * not among names[0..name_count) (as a whole word). */
static bool hrx_kernel_message_names_other(const char* message,
                                           char* const* declared,
                                           size_t declared_count,
                                           const char* const* names,
                                           size_t name_count) {
  for (size_t i = 0; i < declared_count; ++i) {
    bool asked = false;
    for (size_t j = 0; !asked && j < name_count; ++j) {
      asked = strcmp(declared[i], names[j]) == 0;
    }
    if (!asked && hrx_kernel_text_names(message, declared[i])) return true;
  }
  return false;
}

/* Sources whose declared kernels the compiler refused together (the
 * cache's `narrow` list): compiled for the names asked for only. */
static bool hrx_kernel_cache_is_narrow(hrx_kernel_cache_t* cache,
                                       uint64_t hash) {
  pthread_mutex_lock(&cache->mutex);
  bool narrow = false;
  for (size_t i = 0; !narrow && i < cache->narrow_count; ++i) {
    narrow = cache->narrow[i] == hash;
  }
  pthread_mutex_unlock(&cache->mutex);
  return narrow;
}

static void hrx_kernel_cache_set_narrow(hrx_kernel_cache_t* cache,
                                        uint64_t hash) {
  pthread_mutex_lock(&cache->mutex);
  cache->narrow[cache->narrow_next] = hash;
  cache->narrow_next = (cache->narrow_next + 1) % HRX_KERNEL_CACHE_NARROW;
  if (cache->narrow_count < HRX_KERNEL_CACHE_NARROW) ++cache->narrow_count;
  pthread_mutex_unlock(&cache->mutex);
}

hrx_status_t hrx_kernel_cache_get(hrx_kernel_cache_t* cache,
                                  hrx_backend_device_t* backend,
                                  const char* source,
                                  const char* const* names, size_t name_count,
                                  const char* const* options,
                                  size_t option_count,
                                  hrx_kernel_module_t** out_module,
                                  hrx_kernel_origin_t* out_origin) {
  hrx_key_t build = {0};
  hrx_key_add_build(&build, source, options, option_count);
  if (build.failed) {
    free(build.bytes);
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot build the kernel cache key");
  }
  uint64_t hash = hrx_kernel_hash(build.bytes, build.size, 0);
  pthread_mutex_lock(&cache->mutex);
  hrx_kernel_module_t* module = hrx_kernel_cache_find_locked(
      cache, hash, build.bytes, build.size, names, name_count);
  pthread_mutex_unlock(&cache->mutex);
  if (module) {
    free(build.bytes);
    *out_module = module;
    *out_origin = HRX_KERNEL_ORIGIN_MEMORY_CACHE;
    return NULL;
  }
  /* One compile for every kernel the source declares, so that a compile
   * of another of them finds this module. */
  char** declared = NULL;
  size_t declared_count = 0;
  hrx_status_t status =
      hrx_kernel_cache_is_narrow(cache, hash)
          ? NULL
          : hrx_kernel_cache_declared(source, names, name_count, &declared,
                                      &declared_count);
  if (!status && declared) {
    status = hrx_kernel_cache_make(cache, backend, source, &build, hash,
                                   (const char* const*)declared,
                                   declared_count, options, option_count,
                                   out_module, out_origin);
    bool refused_other =
        hrx_status_code(status) == HRX_STATUS_INVALID_ARGUMENT &&
        hrx_kernel_message_names_other(hrx_status_message(status), declared,
                                       declared_count, names, name_count);
    hrx_kernel_source_names_free(declared, declared_count);
    if (!refused_other) {
      free(build.bytes);
      return status;
    }
    /* The compiler (or loader) refused a kernel that was not asked for
     * (one inside a disabled #if block, or of C++ linkage): the names
     * asked for alone decide, now and for later compiles of this source.
     * Any other refusal (a syntax error) is the source's own. */
    hrx_status_free(status);
    status = NULL;
    hrx_kernel_cache_set_narrow(cache, hash);
  }
  if (!status) {
    status = hrx_kernel_cache_make(cache, backend, source, &build, hash,
                                   names, name_count, options, option_count,
                                   out_module, out_origin);
  }
  free(build.bytes);
  return status;
}
