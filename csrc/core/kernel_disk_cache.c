/* The kernel cache on disk (kernel_disk_cache.h). */
#include "kernel_disk_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/environment.h"
#include "base/status.h"

static const char hrx_entry_magic[8] = {'H', 'R', 'X', 'K',
                                        'C', 'A', 'C', 'H'};
enum { HRX_ENTRY_HEADER = 8 + 4 + 4 + 8 + 8 + 8 };
/* Larger files are not read (no image is near this). */
#define HRX_ENTRY_MAX ((uint64_t)1 << 30)

uint64_t hrx_kernel_hash(const void* data, size_t size, uint64_t seed) {
  uint64_t hash = 0xcbf29ce484222325ull ^ seed;
  const unsigned char* bytes = data;
  for (size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

static char* hrx_text(const char* format, ...)
    __attribute__((format(printf, 1, 2)));

/* A malloc'ed printf (NULL when out of memory). */
static char* hrx_text(const char* format, ...) {
  va_list args;
  va_start(args, format);
  int n = vsnprintf(NULL, 0, format, args);
  va_end(args);
  if (n < 0) return NULL;
  char* text = malloc((size_t)n + 1);
  if (!text) return NULL;
  va_start(args, format);
  vsnprintf(text, (size_t)n + 1, format, args);
  va_end(args);
  return text;
}

hrx_status_t hrx_kernel_disk_cache_dir(char** out_dir, char** out_note) {
  bool enabled = true;
  HRX_RETURN_IF_ERROR(hrx_env_switch("HRX_KERNEL_CACHE", true, &enabled));
  *out_dir = NULL;
  *out_note = NULL;
  if (!enabled) {
    *out_note = hrx_text("the disk cache is off (HRX_KERNEL_CACHE=0)");
    return NULL;
  }
  const char* dir = NULL;
  HRX_RETURN_IF_ERROR(hrx_env_string("HRX_KERNEL_CACHE_DIR", &dir));
  if (dir) {
    *out_dir = hrx_text("%s", dir);
    return NULL;
  }
  const char* base = NULL;
  HRX_RETURN_IF_ERROR(hrx_env_string("XDG_CACHE_HOME", &base));
  if (base) {
    *out_dir = hrx_text("%s/hrx/kernels", base);
    return NULL;
  }
  const char* home = NULL;
  HRX_RETURN_IF_ERROR(hrx_env_string("HOME", &home));
  if (home) {
    *out_dir = hrx_text("%s/.cache/hrx/kernels", home);
    return NULL;
  }
  *out_note = hrx_text("no cache directory: HRX_KERNEL_CACHE_DIR, "
                       "XDG_CACHE_HOME and HOME are unset");
  return NULL;
}

static char* hrx_entry_path(const char* dir, const void* key,
                            size_t key_size) {
  return hrx_text("%s/%016llx.hrxk", dir,
                  (unsigned long long)hrx_kernel_hash(key, key_size, 0));
}

static void hrx_put_u32(unsigned char* out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out[i] = (unsigned char)(value >> (8 * i));
}

static void hrx_put_u64(unsigned char* out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out[i] = (unsigned char)(value >> (8 * i));
}

static uint32_t hrx_get_u32(const unsigned char* in) {
  uint32_t value = 0;
  for (int i = 3; i >= 0; --i) value = (value << 8) | in[i];
  return value;
}

static uint64_t hrx_get_u64(const unsigned char* in) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | in[i];
  return value;
}

/* The whole file: malloc'ed bytes, or NULL with errno (EFBIG when larger
 * than an entry may be). */
static unsigned char* hrx_read_whole(const char* path, size_t* out_size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  unsigned char* data = NULL;
  if (fstat(fd, &st) == 0) {
    if ((uint64_t)st.st_size > HRX_ENTRY_MAX) {
      errno = EFBIG;
    } else {
      size_t size = (size_t)st.st_size;
      data = malloc(size ? size : 1);
      size_t got = 0;
      while (data && got < size) {
        ssize_t n = read(fd, data + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          free(data);
          data = NULL;
          if (n == 0) errno = EIO;
          break;
        }
        got += (size_t)n;
      }
      *out_size = size;
    }
  }
  int saved = errno;
  close(fd);
  errno = saved;
  return data;
}

void hrx_kernel_disk_cache_read(const char* dir, const void* key,
                                size_t key_size, void** out_image,
                                size_t* out_size, char** out_path,
                                char** out_note) {
  *out_image = NULL;
  *out_path = NULL;
  *out_note = NULL;
  char* path = hrx_entry_path(dir, key, key_size);
  if (!path) return;
  size_t size = 0;
  unsigned char* data = hrx_read_whole(path, &size);
  if (!data) {
    if (errno != ENOENT) {
      *out_note = hrx_text("the cache entry %s could not be read (%s); "
                           "compiled again",
                           path, strerror(errno));
    }
    free(path);
    return;
  }
  const char* wrong = NULL;
  uint64_t stored_key = 0, stored_image = 0;
  if (size < HRX_ENTRY_HEADER || memcmp(data, hrx_entry_magic, 8) != 0) {
    wrong = "is not a kernel cache entry";
  } else if (hrx_get_u32(data + 8) != HRX_KERNEL_DISK_CACHE_VERSION) {
    wrong = "is of another cache format version";
  } else {
    stored_key = hrx_get_u64(data + 16);
    stored_image = hrx_get_u64(data + 24);
    if (stored_key > size || stored_image > size ||
        HRX_ENTRY_HEADER + stored_key + stored_image != size) {
      wrong = "is truncated or has extra bytes";
    } else if (stored_key != key_size ||
               memcmp(data + HRX_ENTRY_HEADER, key, key_size) != 0) {
      wrong = "belongs to another kernel (its key differs)";
    } else if (hrx_kernel_hash(data + HRX_ENTRY_HEADER + key_size,
                               (size_t)stored_image, 0) !=
               hrx_get_u64(data + 32)) {
      wrong = "is corrupt (its image does not match its checksum)";
    }
  }
  if (wrong) {
    *out_note = hrx_text("the cache entry %s %s; compiled again", path, wrong);
    free(path);
    free(data);
    return;
  }
  /* The image moves to the front of the block it was read into. */
  memmove(data, data + HRX_ENTRY_HEADER + key_size, (size_t)stored_image);
  *out_image = data;
  *out_size = (size_t)stored_image;
  *out_path = path;
}

/* mkdir -p, new directories private to the user. */
static int hrx_make_dirs(const char* dir) {
  char* path = hrx_text("%s", dir);
  if (!path) return ENOMEM;
  int error = 0;
  for (char* p = path + 1;; ++p) {
    bool end = *p == '\0';
    if (*p == '/' || end) {
      *p = '\0';
      if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        error = errno;
        break;
      }
      if (end) break;
      *p = '/';
    }
  }
  free(path);
  return error;
}

static bool hrx_write_all(int fd, const void* data, size_t size) {
  const unsigned char* bytes = data;
  while (size) {
    ssize_t n = write(fd, bytes, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      return false;
    }
    bytes += n;
    size -= (size_t)n;
  }
  return true;
}

void hrx_kernel_disk_cache_write(const char* dir, const void* key,
                                 size_t key_size, const void* image,
                                 size_t image_size, char** out_path,
                                 char** out_note) {
  static atomic_uint_fast64_t serial;
  *out_path = NULL;
  *out_note = NULL;
  int error = hrx_make_dirs(dir);
  if (error) {
    *out_note = hrx_text("not cached: cannot create the cache directory %s "
                         "(%s)",
                         dir, strerror(error));
    return;
  }
  char* path = hrx_entry_path(dir, key, key_size);
  char* temp = path ? hrx_text("%s.tmp-%ld-%llu", path, (long)getpid(),
                               (unsigned long long)atomic_fetch_add(&serial,
                                                                    1))
                    : NULL;
  if (!path || !temp) {
    free(path);
    free(temp);
    return;
  }
  unsigned char header[HRX_ENTRY_HEADER];
  memcpy(header, hrx_entry_magic, 8);
  hrx_put_u32(header + 8, HRX_KERNEL_DISK_CACHE_VERSION);
  hrx_put_u32(header + 12, 0);
  hrx_put_u64(header + 16, key_size);
  hrx_put_u64(header + 24, image_size);
  hrx_put_u64(header + 32, hrx_kernel_hash(image, image_size, 0));
  int fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  bool ok = fd >= 0 && hrx_write_all(fd, header, sizeof(header)) &&
            hrx_write_all(fd, key, key_size) &&
            hrx_write_all(fd, image, image_size);
  error = ok ? 0 : errno;
  if (fd >= 0 && close(fd) != 0 && ok) {
    ok = false;
    error = errno;
  }
  if (ok && rename(temp, path) != 0) {
    ok = false;
    error = errno;
  }
  if (!ok) {
    if (fd >= 0) unlink(temp);
    *out_note = hrx_text("not cached: cannot write to the cache directory %s "
                         "(%s)",
                         dir, strerror(error));
    free(path);
  } else {
    *out_path = path;
  }
  free(temp);
}
