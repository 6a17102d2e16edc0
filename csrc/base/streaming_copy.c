/* Copies around the CPU caches (streaming_copy.h). */
#include "streaming_copy.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>
#define HRX_HAVE_STREAMING_STORES 1
#else
#define HRX_HAVE_STREAMING_STORES 0
#endif

bool hrx_streaming_copy_bypasses_caches(void) {
  return HRX_HAVE_STREAMING_STORES;
}

void hrx_streaming_copy(void* dst, const void* src, size_t length) {
#if HRX_HAVE_STREAMING_STORES
  uint8_t* out = dst;
  const uint8_t* in = src;
  /* Streaming stores need 16-byte aligned destinations: the bytes before
   * the first such address, and the tail shorter than one 64-byte line,
   * go through memcpy. */
  size_t head = (size_t)(-(uintptr_t)out & 15u);
  if (head > length) head = length;
  memcpy(out, in, head);
  out += head;
  in += head;
  length -= head;
  size_t body = length & ~(size_t)63;
  for (size_t i = 0; i < body; i += 64) {
    __m128i a = _mm_loadu_si128((const __m128i*)(in + i));
    __m128i b = _mm_loadu_si128((const __m128i*)(in + i + 16));
    __m128i c = _mm_loadu_si128((const __m128i*)(in + i + 32));
    __m128i d = _mm_loadu_si128((const __m128i*)(in + i + 48));
    _mm_stream_si128((__m128i*)(out + i), a);
    _mm_stream_si128((__m128i*)(out + i + 16), b);
    _mm_stream_si128((__m128i*)(out + i + 32), c);
    _mm_stream_si128((__m128i*)(out + i + 48), d);
  }
  /* Streaming stores are weakly ordered: fence them before whatever the
   * caller stores next (the flag that says the copy is done). */
  _mm_sfence();
  memcpy(out + body, in + body, length - body);
#else
  memcpy(dst, src, length);
#endif
}

void hrx_host_copy(void* dst, const void* src, size_t length,
                   bool streaming) {
  if (!length) return;
  if (streaming) {
    hrx_streaming_copy(dst, src, length);
  } else {
    memcpy(dst, src, length);
  }
}
