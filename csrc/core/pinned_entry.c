/* The public calls of pinned host memory (hrx.h): each checks the device's
 * entry, then goes to the device's registry (pinned.h). */
#include "base/status.h"
#include "entry.h"
#include "hrx.h"
#include "live_device.h"
#include "pinned.h"

hrx_status_t hrx_device_pinned_alloc(hrx_device_t* device, uint64_t size,
                                     void** out_ptr) {
  HRX_RETURN_IF_ERROR(hrx_entry_check(device, HRX_ENTRY_BLOCKING,
                                      "allocating pinned host memory"));
  return hrx_pinned_alloc(hrx_device_pinned(device), size, out_ptr);
}

hrx_status_t hrx_device_pinned_free(hrx_device_t* device, void* ptr) {
  /* A fork's child leaves the parent's device untouched. */
  if (hrx_device_is_stale(device)) return NULL;
  return hrx_pinned_free(hrx_device_pinned(device), ptr);
}

hrx_status_t hrx_device_pin(hrx_device_t* device, void* ptr, uint64_t size) {
  HRX_RETURN_IF_ERROR(
      hrx_entry_check(device, HRX_ENTRY_BLOCKING, "pinning host memory"));
  return hrx_pinned_register(hrx_device_pinned(device), ptr, size);
}

hrx_status_t hrx_device_unpin(hrx_device_t* device, void* ptr,
                              const hrx_wait_hook_t* hook,
                              bool* out_interrupted) {
  HRX_RETURN_IF_ERROR(
      hrx_entry_check(device, HRX_ENTRY_BLOCKING, "unpinning host memory"));
  return hrx_pinned_unregister(hrx_device_pinned(device), ptr, hook,
                               out_interrupted);
}

bool hrx_device_is_pinned(hrx_device_t* device, const void* ptr,
                          uint64_t length) {
  if (!ptr || length == 0) return false;
  return hrx_pinned_contains(hrx_device_pinned(device), ptr, length);
}
