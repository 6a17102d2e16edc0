/* The PTX parameter reader (hip_ptx_params.h). */
#include "hip_ptx_params.h"

#include <string.h>

/* A cursor over the PTX text. */
typedef struct {
  const char* text;
  size_t length;
  size_t at;
} hrx_ptx_cursor_t;

static bool hrx_ptx_is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
         c == '\f';
}

static bool hrx_ptx_is_word(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '$' || c == '.' ||
         c == '%';
}

/* Skips blanks and comments (// to the line's end, block comments). */
static void hrx_ptx_skip(hrx_ptx_cursor_t* c) {
  while (c->at < c->length) {
    char ch = c->text[c->at];
    if (hrx_ptx_is_space(ch)) {
      ++c->at;
    } else if (ch == '/' && c->at + 1 < c->length &&
               c->text[c->at + 1] == '/') {
      while (c->at < c->length && c->text[c->at] != '\n') ++c->at;
    } else if (ch == '/' && c->at + 1 < c->length &&
               c->text[c->at + 1] == '*') {
      c->at += 2;
      while (c->at + 1 < c->length &&
             !(c->text[c->at] == '*' && c->text[c->at + 1] == '/')) {
        ++c->at;
      }
      c->at = c->at + 2 <= c->length ? c->at + 2 : c->length;
    } else {
      return;
    }
  }
}

/* The next token: a word (letters, digits, '_', '$', '.', '%') or one
 * punctuation character; its start and length. False at the end. */
static bool hrx_ptx_next(hrx_ptx_cursor_t* c, const char** out_token,
                         size_t* out_length) {
  hrx_ptx_skip(c);
  if (c->at >= c->length) return false;
  size_t start = c->at;
  if (hrx_ptx_is_word(c->text[c->at])) {
    while (c->at < c->length && hrx_ptx_is_word(c->text[c->at])) ++c->at;
  } else {
    ++c->at;
  }
  *out_token = c->text + start;
  *out_length = c->at - start;
  return true;
}

static bool hrx_ptx_token_is(const char* token, size_t length,
                             const char* word) {
  return strlen(word) == length && memcmp(token, word, length) == 0;
}

/* A decimal number token; false when it is not one or is too large. */
static bool hrx_ptx_number(const char* token, size_t length,
                           uint32_t* out) {
  if (length == 0 || length > 9) return false;
  uint32_t value = 0;
  for (size_t i = 0; i < length; ++i) {
    if (token[i] < '0' || token[i] > '9') return false;
    value = value * 10 + (uint32_t)(token[i] - '0');
  }
  *out = value;
  return true;
}

/* A type token (".u32", ".f64", ".b8", ...): its kind and size. */
static bool hrx_ptx_type(const char* token, size_t length, int* out_kind,
                         uint32_t* out_size) {
  if (length < 3 || token[0] != '.') return false;
  uint32_t bits = 0;
  if (!hrx_ptx_number(token + 2, length - 2, &bits)) return false;
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64) return false;
  switch (token[1]) {
    case 'u':
      *out_kind = HRX_KERNEL_PARAM_INTEGER;
      break;
    case 's':
      *out_kind = HRX_KERNEL_PARAM_SIGNED;
      break;
    case 'b':
      *out_kind = HRX_KERNEL_PARAM_UNKNOWN;
      break;
    case 'f':
      if (bits == 8) return false;
      *out_kind = HRX_KERNEL_PARAM_FLOAT;
      break;
    default:
      return false;
  }
  *out_size = bits / 8;
  return true;
}

/* One ".param ... name[...]" declaration, the cursor after ".param"; its
 * kind, size and alignment. The declaration ends at ',' or ')' (left for
 * the caller: *out_end is that character). */
static bool hrx_ptx_param(hrx_ptx_cursor_t* c, int* out_kind,
                          uint32_t* out_size, uint32_t* out_align,
                          char* out_end) {
  int kind = -1;
  uint32_t element = 0;
  uint32_t align = 0;
  uint32_t count = 1;
  bool pointer = false;
  bool named = false;
  bool array = false;
  const char* token;
  size_t length;
  while (hrx_ptx_next(c, &token, &length)) {
    if (length == 1 && (token[0] == ',' || token[0] == ')')) {
      if (kind < 0 || !named) return false;
      if (count == 0 || (uint64_t)element * count > UINT32_MAX) return false;
      *out_size = element * count;
      /* After .ptr, .align is the pointee's alignment, not the
       * parameter's. */
      *out_align = align && !pointer ? align : element;
      *out_kind = array ? HRX_KERNEL_PARAM_UNKNOWN
                        : pointer ? HRX_KERNEL_PARAM_POINTER : kind;
      *out_end = token[0];
      return true;
    }
    if (hrx_ptx_token_is(token, length, ".align")) {
      if (!hrx_ptx_next(c, &token, &length) ||
          !hrx_ptx_number(token, length, &align) || align == 0 ||
          (align & (align - 1)) != 0) {
        return false;
      }
    } else if (hrx_ptx_token_is(token, length, ".ptr")) {
      pointer = true;
    } else if (hrx_ptx_token_is(token, length, ".global") ||
               hrx_ptx_token_is(token, length, ".const") ||
               hrx_ptx_token_is(token, length, ".shared") ||
               hrx_ptx_token_is(token, length, ".local")) {
      /* the state space a .ptr points into */
    } else if (token[0] == '.' && kind < 0) {
      if (!hrx_ptx_type(token, length, &kind, &element)) return false;
    } else if (length == 1 && token[0] == '[') {
      if (!named || array || !hrx_ptx_next(c, &token, &length) ||
          !hrx_ptx_number(token, length, &count) ||
          !hrx_ptx_next(c, &token, &length) || length != 1 ||
          token[0] != ']') {
        return false;
      }
      array = true;
    } else if (token[0] != '.' && !named && kind >= 0) {
      named = true;
    } else {
      return false;
    }
  }
  return false;
}

/* Finds ".entry name" followed by '(' and leaves the cursor after it. */
static bool hrx_ptx_find_entry(hrx_ptx_cursor_t* c, const char* name) {
  const char* token;
  size_t length;
  bool after_entry = false;
  while (hrx_ptx_next(c, &token, &length)) {
    if (after_entry && hrx_ptx_token_is(token, length, name)) {
      size_t mark = c->at;
      if (hrx_ptx_next(c, &token, &length) && length == 1 &&
          token[0] == '(') {
        return true;
      }
      c->at = mark;
    }
    after_entry = hrx_ptx_token_is(token, length, ".entry");
  }
  return false;
}

bool hrx_hip_ptx_params(const char* ptx, size_t length, const char* name,
                        hrx_ptx_params_t* out) {
  if (!ptx || !name) return false;
  size_t text_length = strnlen(ptx, length);
  hrx_ptx_cursor_t c = {ptx, text_length, 0};
  if (!hrx_ptx_find_entry(&c, name)) return false;
  hrx_ptx_params_t params;
  memset(&params, 0, sizeof(params));
  const char* token;
  size_t token_length;
  uint64_t offset = 0;
  size_t mark = c.at;
  if (hrx_ptx_next(&c, &token, &token_length) && token_length == 1 &&
      token[0] == ')') {
    *out = params;  /* no parameters */
    return true;
  }
  c.at = mark;
  for (;;) {
    if (!hrx_ptx_next(&c, &token, &token_length) ||
        !hrx_ptx_token_is(token, token_length, ".param") ||
        params.count == HRX_KERNEL_MAX_ARGS) {
      return false;
    }
    int kind = 0;
    uint32_t size = 0;
    uint32_t align = 1;
    char end = 0;
    if (!hrx_ptx_param(&c, &kind, &size, &align, &end)) return false;
    offset = (offset + align - 1) / align * align;
    if (offset + size > UINT32_MAX) return false;
    params.kind[params.count] = (uint8_t)kind;
    params.size[params.count] = size;
    params.offset[params.count] = (uint32_t)offset;
    ++params.count;
    offset += size;
    if (end == ')') break;
  }
  *out = params;
  return true;
}
