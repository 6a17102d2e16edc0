/* Host kernel modules (host_kernel_module.h). An image is loaded from
 * memory: its bytes go into an anonymous memory file (memfd_create; a
 * private temporary file where that is missing) that dlopen opens by its
 * /proc/self/fd path, so nothing named is left on disk. The file stays
 * open while the module is loaded: dlopen takes an object already loaded
 * under the same path for the one asked for, and an open descriptor's
 * number (so its path) is not reused. */
#include "host_kernel_module.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/status.h"

struct hrx_host_module_s {
  atomic_int ref_count;
  void* handle;                  /* owned: dlopen */
  int fd;                        /* owned: the image's memory file, or -1 */
  bool barriers;                 /* its source calls __syncthreads */
  pthread_mutex_t mutex;
  hrx_host_kernel_t* kernels;    /* owned; looked up so far; mutex */
};

/* The ELF machine of this process's code. */
#if defined(__x86_64__)
#define HRX_HOST_ELF_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HRX_HOST_ELF_MACHINE EM_AARCH64
#elif defined(__powerpc64__)
#define HRX_HOST_ELF_MACHINE EM_PPC64
#elif defined(__riscv)
#define HRX_HOST_ELF_MACHINE EM_RISCV
#elif defined(__i386__)
#define HRX_HOST_ELF_MACHINE EM_386
#endif

#if UINTPTR_MAX > 0xffffffffu
#define HRX_HOST_ELF_CLASS ELFCLASS64
typedef Elf64_Ehdr hrx_host_elf_header_t;
typedef Elf64_Phdr hrx_host_elf_segment_t;
#else
#define HRX_HOST_ELF_CLASS ELFCLASS32
typedef Elf32_Ehdr hrx_host_elf_header_t;
typedef Elf32_Phdr hrx_host_elf_segment_t;
#endif

static const char hrx_host_not_ours[] =
    "; host kernel images are the bytes of Kernel.image (a shared object "
    "hrx compiled for this kind of host)";

/* Refuses what is not a shared object for this host before dlopen sees it
 * (dlopen runs a library's constructors). */
static hrx_status_t hrx_host_module_check_elf(const void* image, size_t size) {
  hrx_host_elf_header_t header;
  if (size < sizeof(header)) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "the image has %zu bytes, fewer than an ELF "
                           "header%s",
                           size, hrx_host_not_ours);
  }
  memcpy(&header, image, sizeof(header));
  if (memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "the image is not an ELF file%s",
                           hrx_host_not_ours);
  }
  bool little = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
  if (header.e_ident[EI_CLASS] != HRX_HOST_ELF_CLASS ||
      header.e_ident[EI_DATA] != (little ? ELFDATA2LSB : ELFDATA2MSB)) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "the image is ELF of another word size or byte "
                           "order than this host%s",
                           hrx_host_not_ours);
  }
#ifdef HRX_HOST_ELF_MACHINE
  if (header.e_machine != HRX_HOST_ELF_MACHINE) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "the image is code for another machine (ELF "
                           "machine %u, this host's is %u)%s",
                           (unsigned)header.e_machine,
                           (unsigned)HRX_HOST_ELF_MACHINE, hrx_host_not_ours);
  }
#endif
  if (header.e_type != ET_DYN) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "the image is ELF but not a shared object (type "
                           "%u)%s",
                           (unsigned)header.e_type, hrx_host_not_ours);
  }
  /* Every table and loaded segment must lie within the bytes: dlopen maps
   * segments as the headers say, and touching a mapping past the end of
   * its file kills the process (SIGBUS). */
  uint64_t segments = (uint64_t)header.e_phnum * header.e_phentsize;
  uint64_t sections = (uint64_t)header.e_shnum * header.e_shentsize;
  bool inside =
      header.e_phentsize == sizeof(hrx_host_elf_segment_t) &&
      header.e_phoff <= size && segments <= size - header.e_phoff &&
      header.e_shoff <= size && sections <= size - header.e_shoff;
  for (unsigned i = 0; inside && i < header.e_phnum; ++i) {
    hrx_host_elf_segment_t segment;
    memcpy(&segment,
           (const char*)image + header.e_phoff + (uint64_t)i * sizeof(segment),
           sizeof(segment));
    inside = segment.p_type != PT_LOAD ||
             (segment.p_offset <= size &&
              segment.p_filesz <= size - segment.p_offset);
  }
  if (!inside) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "the image is a truncated or damaged shared "
                           "object (%zu bytes; its headers name bytes "
                           "beyond them)%s",
                           size, hrx_host_not_ours);
  }
  return NULL;
}

static hrx_status_t hrx_host_module_write_all(int fd, const void* image,
                                              size_t size) {
  const char* bytes = image;
  while (size) {
    ssize_t n = write(fd, bytes, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                             "cannot stage the kernel image for loading: %s",
                             strerror(n < 0 ? errno : ENOSPC));
    }
    bytes += n;
    size -= (size_t)n;
  }
  return NULL;
}

/* dlopen of the image's bytes; *out_fd is the memory file to keep open
 * while the object is loaded (-1 for a temporary file, unlinked). */
static hrx_status_t hrx_host_module_open(const void* image, size_t size,
                                         void** out_handle, int* out_fd) {
  char path[64];
  char temp[4096] = "";
  int fd = memfd_create("hrx-kernel", MFD_CLOEXEC);
  if (fd < 0) {
    /* No memory files here: a private temporary file, unlinked once
     * loaded. */
    const char* dir = getenv("TMPDIR");
    snprintf(temp, sizeof(temp), "%s/hrx-kernel-XXXXXX",
             dir && *dir ? dir : "/tmp");
    fd = mkstemp(temp);
    if (fd < 0) {
      return hrx_make_status(HRX_STATUS_UNAVAILABLE,
                             "cannot stage the kernel image for loading: "
                             "memfd_create and mkstemp(%s) failed: %s",
                             temp, strerror(errno));
    }
  }
  hrx_status_t status = hrx_host_module_write_all(fd, image, size);
  void* handle = NULL;
  if (!status) {
    if (!temp[0]) snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    handle = dlopen(temp[0] ? temp : path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* error = dlerror();
      status = hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                               "cannot load the kernel image: %s%s",
                               error ? error : "dlopen failed",
                               hrx_host_not_ours);
    }
  }
  if (temp[0]) {
    unlink(temp);
    close(fd);
    fd = -1;
  } else if (status) {
    close(fd);
  }
  if (!status) {
    *out_handle = handle;
    *out_fd = fd;
  }
  return status;
}

hrx_status_t hrx_host_module_load(const void* image, size_t size,
                                  hrx_host_module_t** out_module) {
  if (!image) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT, "the image is NULL");
  }
  HRX_RETURN_IF_ERROR(hrx_host_module_check_elf(image, size));
  void* handle = NULL;
  int fd = -1;
  HRX_RETURN_IF_ERROR(hrx_host_module_open(image, size, &handle, &fd));
  const unsigned int* abi = dlsym(handle, "hrx_kernel_module_abi");
  if (!abi || *abi != HRX_KERNEL_ABI) {
    /* Read before the image is unmapped. */
    const unsigned int built_for = abi ? *abi : 0;
    dlclose(handle);
    if (fd >= 0) close(fd);
    if (!abi) {
      return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                             "the image is a shared object without hrx's "
                             "module marker (hrx_kernel_module_abi)%s",
                             hrx_host_not_ours);
    }
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "the image was built for launcher version %u; "
                           "this hrx runs version %u: compile the kernel "
                           "again",
                           built_for, HRX_KERNEL_ABI);
  }
  const unsigned int* barriers = dlsym(handle, "hrx_kernel_module_barriers");
  if (!barriers || *barriers > 1) {
    dlclose(handle);
    if (fd >= 0) close(fd);
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "the image has hrx's module marker but no valid "
                           "hrx_kernel_module_barriers marker%s",
                           hrx_host_not_ours);
  }
  hrx_host_module_t* module = calloc(1, sizeof(*module));
  if (!module) {
    dlclose(handle);
    if (fd >= 0) close(fd);
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a kernel module");
  }
  atomic_init(&module->ref_count, 1);
  module->handle = handle;
  module->fd = fd;
  module->barriers = *barriers != 0;
  pthread_mutex_init(&module->mutex, NULL);
  *out_module = module;
  return NULL;
}

void hrx_host_module_retain(hrx_host_module_t* module) {
  atomic_fetch_add_explicit(&module->ref_count, 1, memory_order_relaxed);
}

void hrx_host_module_release(hrx_host_module_t* module) {
  if (!module || atomic_fetch_sub_explicit(&module->ref_count, 1,
                                           memory_order_acq_rel) != 1) {
    return;
  }
  while (module->kernels) {
    hrx_host_kernel_t* next = module->kernels->next;
    free(module->kernels);
    module->kernels = next;
  }
  dlclose(module->handle);
  if (module->fd >= 0) close(module->fd);
  pthread_mutex_destroy(&module->mutex);
  free(module);
}

/* A layout the launcher generated, checked before it is trusted. */
static hrx_status_t hrx_host_module_check_layout(
    const hrx_kernel_layout_t* layout, const char* name) {
  if (layout->abi != HRX_KERNEL_ABI) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "kernel '%s' has launcher version %u; this hrx "
                           "runs version %u: compile it again",
                           name, layout->abi, HRX_KERNEL_ABI);
  }
  if (layout->param_count > HRX_KERNEL_MAX_ARGS || !layout->entry ||
      layout->params_align == 0 ||
      (layout->params_align & (layout->params_align - 1)) != 0 ||
      layout->params_align > 4096) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "kernel '%s' has a launcher hrx cannot use (%u "
                           "parameters, alignment %u; at most %d "
                           "parameters, alignment a power of two up to "
                           "4096)",
                           name, layout->param_count, layout->params_align,
                           HRX_KERNEL_MAX_ARGS);
  }
  for (unsigned i = 0; i < layout->param_count; ++i) {
    if ((uint64_t)layout->param_offset[i] + layout->param_size[i] >
        layout->params_size) {
      return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                             "kernel '%s': parameter %u lies outside its "
                             "parameter block",
                             name, i);
    }
  }
  return NULL;
}

/* The parameters' kinds and names that the launcher recorded beside the
 * layout (host_kernel_source.h); left UNKNOWN and NULL where the module
 * has none. The names are one string per parameter, one after another. */
static void hrx_host_module_describe_params(hrx_host_module_t* module,
                                            const char* name,
                                            unsigned count,
                                            hrx_kernel_attributes_t* info) {
  char symbol[HRX_KERNEL_MAX_NAME + 32];
  snprintf(symbol, sizeof(symbol), "hrx_kernel_param_kinds__%s", name);
  const unsigned char* kinds = dlsym(module->handle, symbol);
  snprintf(symbol, sizeof(symbol), "hrx_kernel_param_names__%s", name);
  const char* names = dlsym(module->handle, symbol);
  if (!kinds || !names) return;
  for (unsigned i = 0; i < count; ++i) {
    info->param_kind[i] =
        kinds[i] <= HRX_KERNEL_PARAM_BOOL ? kinds[i] : HRX_KERNEL_PARAM_UNKNOWN;
    info->param_name[i] = names;
    names += strlen(names) + 1;
  }
}

hrx_status_t hrx_host_module_get_kernel(hrx_host_module_t* module,
                                        const char* name,
                                        hrx_host_kernel_t** out_kernel,
                                        hrx_kernel_attributes_t* out_info) {
  size_t length = strlen(name);
  pthread_mutex_lock(&module->mutex);
  hrx_host_kernel_t* kernel = module->kernels;
  while (kernel && strcmp(kernel->name, name) != 0) kernel = kernel->next;
  hrx_status_t status = NULL;
  if (!kernel) {
    char symbol[HRX_KERNEL_MAX_NAME + 32];
    snprintf(symbol, sizeof(symbol), "hrx_kernel_layout__%s", name);
    const hrx_kernel_layout_t* layout = dlsym(module->handle, symbol);
    if (!layout) {
      status = hrx_make_status(
          HRX_STATUS_INVALID_ARGUMENT,
          "the module has no kernel named '%s' (a host module launches the "
          "kernels named when it was compiled)",
          name);
    } else {
      status = hrx_host_module_check_layout(layout, name);
    }
    const hrx_kernel_thread_entry_t* threads = NULL;
    if (!status && module->barriers) {
      snprintf(symbol, sizeof(symbol), "hrx_kernel_threads__%s", name);
      threads = dlsym(module->handle, symbol);
      if (!threads || !*threads) {
        status = hrx_make_status(
            HRX_STATUS_INVALID_ARGUMENT,
            "kernel '%s' uses barriers but the module has no thread entry "
            "for it (hrx_kernel_threads__%s); compile it again",
            name, name);
      }
    }
    if (!status) {
      kernel = calloc(1, sizeof(*kernel) + length + 1);
      if (!kernel) {
        status = hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                                 "cannot allocate a kernel");
      } else {
        kernel->module = module;
        kernel->layout = layout;
        kernel->threads = threads ? *threads : NULL;
        memcpy(kernel->name, name, length + 1);
        kernel->next = module->kernels;
        module->kernels = kernel;
      }
    }
  }
  pthread_mutex_unlock(&module->mutex);
  if (status) return status;
  memset(out_info, 0, sizeof(*out_info));
  const hrx_kernel_layout_t* layout = kernel->layout;
  out_info->param_count = (int)layout->param_count;
  for (unsigned i = 0; i < layout->param_count; ++i) {
    out_info->param_offset[i] = layout->param_offset[i];
    out_info->param_size[i] = layout->param_size[i];
  }
  hrx_host_module_describe_params(module, name, layout->param_count,
                                  out_info);
  out_info->max_threads_per_block = HRX_HOST_MAX_THREADS_PER_BLOCK;
  out_info->static_shared_bytes = 0;
  out_info->max_dynamic_shared_bytes = HRX_HOST_MAX_SHARED_BYTES;
  *out_kernel = kernel;
  return NULL;
}
