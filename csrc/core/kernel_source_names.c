/* The kernels a source defines, from its text (kernel_source_names.h). */
#include "kernel_source_names.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"

/* ---------------------------------------------------------------- lexer */

typedef enum {
  HRX_SCAN_END,
  HRX_SCAN_IDENTIFIER,
  HRX_SCAN_STRING,  /* "..." (its text includes the quotes) */
  HRX_SCAN_PUNCT,   /* one character, or "::" */
  HRX_SCAN_OTHER,   /* numbers, character literals */
} hrx_scan_kind_t;

typedef struct {
  hrx_scan_kind_t kind;
  const char* text;
  size_t length;
} hrx_scan_token_t;

typedef struct {
  const char* at;
  bool line_start;  /* nothing but blanks since the last newline */
} hrx_scan_lexer_t;

static bool hrx_scan_is_identifier_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool hrx_kernel_name_char(char c) {
  return hrx_scan_is_identifier_start(c) || (c >= '0' && c <= '9');
}

bool hrx_kernel_text_names(const char* text, const char* name) {
  size_t n = strlen(name);
  if (!text || !n) return false;
  for (const char* at = strstr(text, name); at; at = strstr(at + 1, name)) {
    bool starts = at == text || !hrx_kernel_name_char(at[-1]);
    if (starts && !hrx_kernel_name_char(at[n])) return true;
  }
  return false;
}

/* Past a preprocessor line and its backslash continuations. */
static const char* hrx_scan_skip_directive(const char* at) {
  while (*at) {
    if (at[0] == '\\' && at[1] == '\n') {
      at += 2;
    } else if (at[0] == '\\' && at[1] == '\r' && at[2] == '\n') {
      at += 3;
    } else if (*at == '\n') {
      break;
    } else {
      ++at;
    }
  }
  return at;
}

/* Past a literal opened by `quote` at at[0]: to its closing quote, or the
 * end of the line for an unterminated one. */
static const char* hrx_scan_skip_literal(const char* at, char quote) {
  ++at;
  while (*at && *at != quote && *at != '\n') {
    at += (at[0] == '\\' && at[1]) ? 2 : 1;
  }
  return *at == quote ? at + 1 : at;
}

static hrx_scan_token_t hrx_scan_next(hrx_scan_lexer_t* lexer) {
  const char* at = lexer->at;
  for (;;) {
    char c = *at;
    if (c == '\0') {
      lexer->at = at;
      return (hrx_scan_token_t){HRX_SCAN_END, at, 0};
    }
    if (c == '\n') {
      lexer->line_start = true;
      ++at;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' ||
               c == '\v') {
      ++at;
    } else if (c == '\\' && (at[1] == '\n' || at[1] == '\r')) {
      ++at;  /* a line continuation outside a directive */
    } else if (c == '/' && at[1] == '/') {
      while (*at && *at != '\n') ++at;
    } else if (c == '/' && at[1] == '*') {
      const char* end = strstr(at + 2, "*/");
      at = end ? end + 2 : at + strlen(at);
    } else if (c == '#' && lexer->line_start) {
      at = hrx_scan_skip_directive(at);
    } else {
      break;
    }
  }
  lexer->line_start = false;
  const char* start = at;
  hrx_scan_kind_t kind = HRX_SCAN_PUNCT;
  char c = *at;
  if (hrx_scan_is_identifier_start(c)) {
    while (hrx_kernel_name_char(*at)) ++at;
    kind = HRX_SCAN_IDENTIFIER;
  } else if ((c >= '0' && c <= '9') ||
             (c == '.' && at[1] >= '0' && at[1] <= '9')) {
    /* A preprocessing number: digits, letters, '_', '.', and a sign after
     * an exponent. */
    ++at;
    for (;;) {
      if ((*at == '+' || *at == '-') &&
          (at[-1] == 'e' || at[-1] == 'E' || at[-1] == 'p' ||
           at[-1] == 'P')) {
        ++at;
      } else if (hrx_kernel_name_char(*at) || *at == '.' ||
                 *at == '\'') {
        ++at;
      } else {
        break;
      }
    }
    kind = HRX_SCAN_OTHER;
  } else if (c == '"') {
    at = hrx_scan_skip_literal(at, '"');
    kind = HRX_SCAN_STRING;
  } else if (c == '\'') {
    at = hrx_scan_skip_literal(at, '\'');
    kind = HRX_SCAN_OTHER;
  } else if (c == ':' && at[1] == ':') {
    at += 2;
  } else {
    ++at;
  }
  lexer->at = at;
  return (hrx_scan_token_t){kind, start, (size_t)(at - start)};
}

static bool hrx_scan_is(const hrx_scan_token_t* token, const char* text) {
  size_t n = strlen(text);
  return token->length == n && memcmp(token->text, text, n) == 0;
}

/* Past the parenthesised group whose '(' was just read. */
static void hrx_scan_skip_group(hrx_scan_lexer_t* lexer) {
  int depth = 1;
  while (depth > 0) {
    hrx_scan_token_t token = hrx_scan_next(lexer);
    if (token.kind == HRX_SCAN_END) return;
    if (token.kind != HRX_SCAN_PUNCT) continue;
    if (*token.text == '(') ++depth;
    if (*token.text == ')') --depth;
  }
}

/* Words that may stand between `__global__` and the kernel's name with a
 * parenthesised group of their own. */
static bool hrx_scan_is_attribute(const hrx_scan_token_t* token) {
  static const char* const words[] = {
      "__launch_bounds__", "__attribute__", "__attribute", "__declspec",
      "__align__",         "alignas",       "__cluster_dims__",
      "__maxnreg__"};
  for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); ++i) {
    if (hrx_scan_is(token, words[i])) return true;
  }
  return false;
}

/* --------------------------------------------------------------- names */

typedef struct {
  char** names;
  size_t count;
  size_t capacity;
  size_t limit;
  bool failed;
} hrx_scan_names_t;

static void hrx_scan_add(hrx_scan_names_t* out, const hrx_scan_token_t* name) {
  if (out->failed || out->count >= out->limit ||
      name->length > HRX_KERNEL_MAX_NAME) {
    return;
  }
  for (size_t i = 0; i < out->count; ++i) {
    if (strlen(out->names[i]) == name->length &&
        memcmp(out->names[i], name->text, name->length) == 0) {
      return;  /* declared before (a prototype, then the definition) */
    }
  }
  if (out->count == out->capacity) {
    size_t capacity = out->capacity ? 2 * out->capacity : 8;
    char** grown = realloc(out->names, capacity * sizeof(*grown));
    if (!grown) {
      out->failed = true;
      return;
    }
    out->names = grown;
    out->capacity = capacity;
  }
  char* copy = malloc(name->length + 1);
  if (!copy) {
    out->failed = true;
    return;
  }
  memcpy(copy, name->text, name->length);
  copy[name->length] = '\0';
  out->names[out->count++] = copy;
}

/* The declaration being read at file scope. */
typedef struct {
  size_t tokens;
  bool extern_c;              /* its tokens so far are `extern "C"` */
  bool is_template;
  bool is_kernel;             /* `__global__` seen */
  bool named;                 /* its first parameter list was reached */
  hrx_scan_token_t last;      /* the last token */
  hrx_scan_token_t before;    /* the token before `last` */
} hrx_scan_declaration_t;

hrx_status_t hrx_kernel_source_names(const char* source, size_t limit,
                                     char*** out_names, size_t* out_count) {
  *out_names = NULL;
  *out_count = 0;
  hrx_scan_names_t found = {.limit = limit};
  hrx_scan_lexer_t lexer = {.at = source ? source : "", .line_start = true};
  size_t extern_blocks = 0;  /* open `extern "C" {` blocks */
  size_t body_depth = 0;     /* braces open inside any other block */
  hrx_scan_declaration_t decl = {0};
  for (;;) {
    hrx_scan_token_t token = hrx_scan_next(&lexer);
    if (token.kind == HRX_SCAN_END) break;
    bool punct = token.kind == HRX_SCAN_PUNCT;
    if (body_depth > 0) {
      /* Inside a function body, namespace, class or initializer: only the
       * braces matter. */
      if (punct && *token.text == '{') ++body_depth;
      if (punct && *token.text == '}') --body_depth;
      continue;
    }
    if (punct && token.length == 1 && *token.text == ';') {
      decl = (hrx_scan_declaration_t){0};
      continue;
    }
    if (punct && *token.text == '{') {
      if (decl.extern_c && decl.tokens == 2) {
        ++extern_blocks;
      } else {
        body_depth = 1;
      }
      decl = (hrx_scan_declaration_t){0};
      continue;
    }
    if (punct && *token.text == '}') {
      if (extern_blocks > 0) --extern_blocks;
      decl = (hrx_scan_declaration_t){0};
      continue;
    }
    if (punct && token.length == 1 && *token.text == '(') {
      bool attribute = decl.last.kind == HRX_SCAN_IDENTIFIER &&
                       hrx_scan_is_attribute(&decl.last);
      if (decl.is_kernel && !decl.named && !attribute) {
        decl.named = true;
        bool qualified = decl.before.kind == HRX_SCAN_PUNCT &&
                         hrx_scan_is(&decl.before, "::");
        bool operator_ = hrx_scan_is(&decl.before, "operator");
        if (decl.last.kind == HRX_SCAN_IDENTIFIER && !decl.is_template &&
            !qualified && !operator_) {
          hrx_scan_add(&found, &decl.last);
        }
      }
      hrx_scan_skip_group(&lexer);
      decl.before = decl.last;
      decl.last = (hrx_scan_token_t){HRX_SCAN_PUNCT, ")", 1};
      ++decl.tokens;
      continue;
    }
    if (token.kind == HRX_SCAN_IDENTIFIER) {
      if (hrx_scan_is(&token, "template")) decl.is_template = true;
      if (hrx_scan_is(&token, "__global__")) decl.is_kernel = true;
    }
    decl.extern_c =
        (decl.tokens == 0 && hrx_scan_is(&token, "extern")) ||
        (decl.tokens == 1 && decl.extern_c && hrx_scan_is(&token, "\"C\""));
    decl.before = decl.last;
    decl.last = token;
    ++decl.tokens;
  }
  if (found.failed) {
    hrx_kernel_source_names_free(found.names, found.count);
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot list the kernels of a source");
  }
  *out_names = found.names;
  *out_count = found.count;
  return NULL;
}

void hrx_kernel_source_names_free(char** names, size_t count) {
  for (size_t i = 0; i < count; ++i) free(names[i]);
  free(names);
}
