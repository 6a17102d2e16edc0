/* The CUDA dialect of host kernel sources (host_kernel_dialect.h). */
#include "host_kernel_dialect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "host_kernel_tokens.h"

/* ------------------------------------------------------------- output */

/* Appends text[begin, end) with its line breaks made spaces. */
static void hrx_dialect_one_line(hrx_text_t* out, const char* text,
                                 size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) {
    hrx_text_append(out, text[i] == '\n' ? " " : &text[i], 1);
  }
}

/* Appends the line breaks of text[begin, end). */
static void hrx_dialect_line_breaks(hrx_text_t* out, const char* text,
                                    size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) {
    if (text[i] == '\n') hrx_text_append(out, "\n", 1);
  }
}

/* ------------------------------------------------------- line markers */

/* Whether the line at `pos` is a line marker (`# N "file"` or
 * `#line N "file"`); if so *out_header says whether it names
 * hrx_kernel.h. */
static bool hrx_dialect_marker(const char* text, size_t length, size_t pos,
                               bool* out_header) {
  size_t i = pos;
  while (i < length && (text[i] == ' ' || text[i] == '\t')) ++i;
  if (i >= length || text[i] != '#') return false;
  ++i;
  while (i < length && (text[i] == ' ' || text[i] == '\t')) ++i;
  if (i + 4 <= length && memcmp(text + i, "line", 4) == 0) i += 4;
  while (i < length && (text[i] == ' ' || text[i] == '\t')) ++i;
  if (i >= length || text[i] < '0' || text[i] > '9') return false;
  while (i < length && text[i] >= '0' && text[i] <= '9') ++i;
  while (i < length && (text[i] == ' ' || text[i] == '\t')) ++i;
  if (i >= length || text[i] != '"') return false;
  size_t name = ++i;
  while (i < length && text[i] != '"' && text[i] != '\n') ++i;
  static const char header[] = "hrx_kernel.h";
  size_t n = sizeof(header) - 1;
  *out_header = i - name >= n && memcmp(text + i - n, header, n) == 0;
  return true;
}

/* ------------------------------------------------------------ helpers */

static bool hrx_dialect_punct(const char* text, const hrx_token_t* token,
                              char c) {
  return token->kind == HRX_TOKEN_PUNCT && token->length == 1 &&
         text[token->start] == c;
}

static size_t hrx_dialect_end(const hrx_token_t* token) {
  return token->start + token->length;
}

/* The names of file-scope dynamic shared memory pointers. */
typedef struct {
  const hrx_token_t** names;
  size_t count;
} hrx_dialect_names_t;

/* Rewrites `extern static __thread SPEC name [ ] ;` at tokens [at, ...):
 * *out_next is the token after the ';'. */
static hrx_status_t hrx_dialect_dynamic_shared(
    const char* text, const hrx_token_t* tokens, size_t count, size_t at,
    bool file_scope, hrx_text_t* out, hrx_dialect_names_t* names,
    size_t* out_next) {
  size_t semicolon = at;
  while (semicolon < count && !hrx_dialect_punct(text, &tokens[semicolon], ';'))
    ++semicolon;
  size_t spec = at + 3;
  if (semicolon == count || semicolon < spec + 4 ||
      !hrx_dialect_punct(text, &tokens[semicolon - 1], ']') ||
      !hrx_dialect_punct(text, &tokens[semicolon - 2], '[') ||
      tokens[semicolon - 3].kind != HRX_TOKEN_IDENTIFIER) {
    size_t end = semicolon < count ? hrx_dialect_end(&tokens[semicolon])
                                   : hrx_dialect_end(&tokens[count - 1]);
    size_t begin = tokens[at].start;
    return hrx_make_status(
        HRX_STATUS_INVALID_ARGUMENT,
        "an extern __shared__ declaration names the block's dynamic shared "
        "memory and must read `extern __shared__ T name[];` (one name, an "
        "array of unknown size); the source has: %.*s",
        (int)(end - begin > 200 ? 200 : end - begin), text + begin);
  }
  const hrx_token_t* name = &tokens[semicolon - 3];
  size_t spec_begin = tokens[spec].start;
  size_t spec_end = hrx_dialect_end(&tokens[semicolon - 4]);
  if (file_scope) {
    hrx_text_add(out, "static __thread ");
    hrx_dialect_one_line(out, text, spec_begin, spec_end);
    hrx_text_add(out, "* ");
    hrx_text_append(out, text + name->start, name->length);
    hrx_text_add(out, ";");
    names->names[names->count++] = name;
  } else {
    hrx_dialect_one_line(out, text, spec_begin, spec_end);
    hrx_text_add(out, "* const ");
    hrx_text_append(out, text + name->start, name->length);
    hrx_text_add(out, " = hrx_kernel_thread.shared;");
  }
  hrx_dialect_line_breaks(out, text, tokens[at].start,
                          hrx_dialect_end(&tokens[semicolon]));
  *out_next = semicolon + 1;
  return NULL;
}

/* ---------------------------------------------------------- the pass */

hrx_status_t hrx_host_kernel_dialect(const char* text, size_t length,
                                     char** out_text, size_t* out_length,
                                     bool* out_barriers) {
  hrx_tokens_t all = {0};
  hrx_text_t out = {0};
  hrx_dialect_names_t names = {0};
  /* Per open brace: whether it opened an extern "C" block. */
  bool* linkage = NULL;
  size_t open = 0, scope_depth = 0;
  bool barriers = false, in_header = false;
  hrx_status_t status = hrx_tokenize(text, length, &all);
  if (!status) {
    size_t n = all.count ? all.count : 1;
    linkage = malloc(n * sizeof(*linkage));
    names.names = malloc(n * sizeof(*names.names));
    if (!linkage || !names.names) {
      status = hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                               "cannot rewrite the kernel source");
    }
  }
  const hrx_token_t* tokens = all.tokens;
  size_t count = all.count;
  size_t copied = 0;  /* text before this offset is in `out` */
  size_t line = 0;    /* the next line not yet read for a marker */
  for (size_t i = 0; i < count && !status;) {
    const hrx_token_t* token = &tokens[i];
    while (line <= token->start && line < length) {
      hrx_dialect_marker(text, length, line, &in_header);
      const char* newline = memchr(text + line, '\n', length - line);
      line = newline ? (size_t)(newline - text) + 1 : length;
    }
    if (token->kind == HRX_TOKEN_IDENTIFIER) {
      if (!in_header && hrx_token_is(text, token, "hrx_kernel_sync_threads")) {
        barriers = true;
      }
      if (hrx_token_is(text, token, "extern") && i + 1 < count) {
        const hrx_token_t* next = &tokens[i + 1];
        if (next->kind == HRX_TOKEN_OTHER && text[next->start] == '"') {
          /* A linkage specification: dropped, with its block's braces. */
          size_t skip = 2;
          if (i + 2 < count && hrx_dialect_punct(text, &tokens[i + 2], '{')) {
            linkage[open++] = true;
            skip = 3;
          }
          hrx_text_append(&out, text + copied, token->start - copied);
          hrx_text_add(&out, " ");
          size_t end = hrx_dialect_end(&tokens[i + skip - 1]);
          hrx_dialect_line_breaks(&out, text, token->start, end);
          copied = end;
          i += skip;
          continue;
        }
        if (i + 2 < count && hrx_token_is(text, next, "static") &&
            hrx_token_is(text, &tokens[i + 2], "__thread")) {
          hrx_text_append(&out, text + copied, token->start - copied);
          size_t after = i;
          status = hrx_dialect_dynamic_shared(text, tokens, count, i,
                                              scope_depth == 0, &out, &names,
                                              &after);
          if (status) break;
          copied = hrx_dialect_end(&tokens[after - 1]);
          i = after;
          continue;
        }
      }
    } else if (hrx_dialect_punct(text, token, '{')) {
      linkage[open++] = false;
      ++scope_depth;
    } else if (hrx_dialect_punct(text, token, '}') && open > 0) {
      if (linkage[--open]) {
        hrx_text_append(&out, text + copied, token->start - copied);
        hrx_text_add(&out, " ");
        copied = hrx_dialect_end(token);
      } else if (scope_depth > 0) {
        --scope_depth;
      }
    }
    ++i;
  }
  if (!status) {
    hrx_text_append(&out, text + copied, length - copied);
    hrx_text_add(&out,
                     "\n# 1 \"<hrx dialect>\"\n"
                     "static __attribute__((unused)) void "
                     "hrx_kernel_block_begin(void* hrx_shared) {\n");
    for (size_t k = 0; k < names.count; ++k) {
      hrx_text_add(&out, "  ");
      hrx_text_append(&out, text + names.names[k]->start,
                         names.names[k]->length);
      hrx_text_add(&out, " = hrx_shared;\n");
    }
    hrx_text_add(&out, "  (void)hrx_shared;\n}\n");
    hrx_text_add(&out,
                     barriers
                         ? "__attribute__((visibility(\"default\"))) const "
                           "unsigned int hrx_kernel_module_barriers = 1;\n"
                         : "__attribute__((visibility(\"default\"))) const "
                           "unsigned int hrx_kernel_module_barriers = 0;\n");
    if (out.failed) {
      status = hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                               "cannot rewrite the kernel source");
    }
  }
  free(all.tokens);
  free(linkage);
  free(names.names);
  if (status) {
    free(out.text);
    return status;
  }
  *out_text = out.text;
  *out_length = out.length;
  *out_barriers = barriers;
  return NULL;
}
