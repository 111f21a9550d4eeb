/* checks.c - declarations written for cukit (Signature, get_kernel(signature=)): checked as C, refused with a caret at the column
 *
 * A Program's source is NVRTC's to judge; a declaration a user writes for cukit is
 * cukit's, and one that is not C must not become a made-up parameter list. */
#include "declarations/parse.h"

#include <string.h>

/* Where token `at` (lx->n: the end) points into text: its start when it is the
 * text's own (buf 0), else just past the last token before it that is. */
static size_t
position_of(const char *text, const lexer *lx, int at)
{
    if (at < lx->n && lx->toks[at].buf == 0)
        return (size_t)(lx->toks[at].p - text);
    for (int k = (at < lx->n ? at : lx->n) - 1; k >= 0; k--)
        if (lx->toks[k].buf == 0)
            return (size_t)(lx->toks[k].p + lx->toks[k].len - text);
    return 0;
}

static int
utf8_continuation(unsigned char c)
{
    return (c & 0xC0) == 0x80;
}

int
cukit_decl_error(const char *text, const lexer *lx, int at, const char *what)
{
    size_t pos = position_of(text, lx, at), n = strlen(text);
    size_t ls = pos, le = pos;
    while (ls > 0 && text[ls - 1] != '\n')
        ls--;
    while (le < n && text[le] != '\n' && text[le] != '\r')
        le++;
    int line = 1, column = 1;
    for (size_t k = 0; k < ls; k++)
        line += text[k] == '\n';
    for (size_t k = ls; k < pos; k++)
        column += !utf8_continuation((unsigned char)text[k]);
    /* A long line is shown around the column. */
    size_t from = ls, to = le;
    if (pos - from > 60) {
        from = pos - 60;
        while (from < pos && utf8_continuation((unsigned char)text[from]))
            from++;
    }
    if (to - pos > 60) {
        to = pos + 60;
        while (to > pos && utf8_continuation((unsigned char)text[to]))
            to--;
    }
    cukit_text caret = {0}, shown = {0};
    int rc = cukit_text_add(&caret, "", 0);
    for (size_t k = from; rc == 0 && k < pos; k++)
        if (!utf8_continuation((unsigned char)text[k]))
            rc = cukit_text_add(&caret, text[k] == '\t' ? "\t" : " ", 1);
    if (rc == 0 && from > ls)
        rc = cukit_text_add(&shown, "...", 3) < 0 || cukit_text_add(&caret, "   ", 3) < 0 ? -1 : 0;
    /* Control characters and Unicode's line breaks (U+0085, U+2028, U+2029) are shown
     * as '?', one column each, so the message keeps its lines and the caret its place. */
    for (size_t k = from; rc == 0 && k < to; k++) {
        const unsigned char *c = (const unsigned char *)text + k;
        size_t skip = 0;
        if ((c[0] < 0x20 && c[0] != '\t') || c[0] == 0x7f)
            skip = 1;
        else if (c[0] == 0xC2 && k + 1 < to && c[1] == 0x85)
            skip = 2;
        else if (c[0] == 0xE2 && k + 2 < to && c[1] == 0x80 && (c[2] == 0xA8 || c[2] == 0xA9))
            skip = 3;
        rc = cukit_text_add(&shown, skip ? "?" : text + k, 1);
        k += skip ? skip - 1 : 0;
    }
    if (rc == 0 && to < le)
        rc = cukit_text_add(&shown, "...", 3);
    if (rc == 0)
        PyErr_Format(PyExc_ValueError,
                     "could not read the declaration at line %d, column %d: %s\n"
                     "    %s\n    %s^\n"
                     "write it as C, such as \"name(float a, const float* x, int n)\"",
                     line, column, what, cukit_text_str(&shown), cukit_text_str(&caret));
    cukit_text_free(&shown);
    cukit_text_free(&caret);
    return -1;
}

/* Words that name a built-in type: a parameter has at most one other word (its
 * name) beside them, else at most two (a type and a name). Each may appear once,
 * "long" twice, and only one of "signed" and "unsigned". */
static const char *builtin_words[] = {"signed", "unsigned", "short", "long", "int", "char",
                                      "float", "double", "bool", "void"};
#define N_BUILTIN_WORDS (sizeof builtin_words / sizeof *builtin_words)
enum { W_SIGNED, W_UNSIGNED, W_SHORT, W_LONG };

/* Index of token t in builtin_words, or -1. */
static int
builtin_word(const token *t)
{
    for (size_t i = 0; i < N_BUILTIN_WORDS; i++)
        if (token_is(t, builtin_words[i]))
            return (int)i;
    return -1;
}

static int
qualifier_word(const token *t)
{
    static const char *words[] = {"const", "volatile", "__restrict__", "__restrict", "restrict",
                                  "struct", "class", "union", "typename", "__grid_constant__",
                                  "register", "enum"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (token_is(t, words[i]))
            return 1;
    return 0;
}

/* Inside a group of a parameter (template arguments, array bounds, an attribute's
 * or a declarator's parentheses): nothing that ends a declaration, and brackets that
 * match. Returns the index past the group, or -1 with the error raised. */
static int
check_group(const char *text, const lexer *lx, int i, int to)
{
    int end = cukit_skip_group(lx, i);
    if (end > to) {
        cukit_decl_error(text, lx, i, "this bracket is never closed");
        return -1;
    }
    int parens = 0, squares = 0, entry = i + 1;
    for (int k = i + 1; k < end - 1; k++) {
        if (token_is(&lx->toks[i], "(") && parens == 0 && squares == 0 &&
            token_is(&lx->toks[k], ",")) {
            if (k == entry) {
                cukit_decl_error(text, lx, k, "an empty entry in parentheses (a stray comma?)");
                return -1;
            }
            entry = k + 1;
        }
        const token *t = &lx->toks[k];
        if (t->kind == TOK_STRING && i > 0 && token_is(&lx->toks[i - 1], "__attribute__"))
            continue;
        if (t->kind == TOK_STRING || (t->kind == TOK_PUNCT && strchr(";#{}\\@$`", t->p[0]))) {
            cukit_decl_error(text, lx, k, t->kind == TOK_STRING
                             ? "a string cannot appear inside these brackets"
                             : "this cannot appear inside these brackets");
            return -1;
        }
        if (t->kind != TOK_PUNCT)
            continue;
        parens += (t->p[0] == '(') - (t->p[0] == ')');
        squares += (t->p[0] == '[') - (t->p[0] == ']');
        if (parens < 0 || squares < 0) {
            cukit_decl_error(text, lx, k, "this bracket closes nothing");
            return -1;
        }
    }
    if (entry > i + 1 && entry == end - 1) {
        cukit_decl_error(text, lx, end - 1, "an empty entry in parentheses (a stray comma?)");
        return -1;
    }
    return end;
}

/* The "(" at toks[i] inside parameter toks[from..to): after the type it holds a
 * declarator (float (*p)[4], float* (x)) or a function's parameters (float(int n),
 * void (*f)(int, int)). A declarator holds one name, and after a '*' or '&' only a
 * declarator can come. 0 / -1 with the error raised. */
static int
paren_error(const char *text, const lexer *lx, int from, int i, int to)
{
    if (i == from)
        return cukit_decl_error(text, lx, i, "a parameter starts with its type, not '('");
    const token *prev = &lx->toks[i - 1];
    int declarator = cukit_declarator_at(lx, i + 1, to);
    if (!declarator && prev->kind == TOK_PUNCT && strchr("*&", prev->p[0]))
        return cukit_decl_error(text, lx, i + 1 < to ? i + 1 : i,
                                "expected a name, '*' or '&' in these parentheses");
    int close = cukit_skip_group(lx, i) - 1;
    for (int k = i + 1; declarator && k < close && k < to; k++) {
        if (lx->toks[k].kind == TOK_PUNCT && strchr("([<{", lx->toks[k].p[0]))
            k = cukit_skip_group(lx, k) - 1;
        else if (token_is(&lx->toks[k], ","))
            return cukit_decl_error(text, lx, k, "a declarator in parentheses names one "
                                    "parameter: a ',' cannot follow its name");
    }
    return 0;
}

/* Parameter number `index` (1-based), toks[from..to). 0 / -1 with the error raised. */
static int
check_param(const char *text, const lexer *lx, int from, int to, int index, int only)
{
    char what[96];
    int builtins = 0, others = 0, stars = 0, is_void = 0, seen[N_BUILTIN_WORDS] = {0};
    for (int i = from; i < to; i++) {
        const token *t = &lx->toks[i];
        const char *why = NULL;
        if (t->kind == TOK_PUNCT && t->p[0] == '=') { /* a default argument */
            if (i + 1 == to)
                why = "a default argument has no value";
            for (int k = i + 1; k < to && why == NULL; k++)
                if (lx->toks[k].kind == TOK_PUNCT && strchr(";#", lx->toks[k].p[0]))
                    return cukit_decl_error(text, lx, k, "this cannot be part of a parameter");
            if (why == NULL)
                break;
        }
        else if (t->kind == TOK_IDENT) {
            if ((token_is(t, "__align__") || token_is(t, "alignas") ||
                 token_is(t, "__attribute__") || token_is(t, "__declspec")) &&
                i + 1 < to && token_is(&lx->toks[i + 1], "(")) {
                int end = check_group(text, lx, i + 1, to);
                if (end < 0)
                    return -1;
                i = end - 1;
                continue;
            }
            if (qualifier_word(t))
                continue;
            is_void |= token_is(t, "void"); /* std::void reads as void too */
            if (i > from && token_is(&lx->toks[i - 1], "::"))
                continue;
            int b = builtin_word(t);
            if (b >= 0) {
                builtins++;
                if (++seen[b] > (b == W_LONG ? 2 : 1)) {
                    PyOS_snprintf(what, sizeof what, "'%s' once too often (parameter %d)",
                                  builtin_words[b], index);
                    return cukit_decl_error(text, lx, i, what);
                }
                if (seen[W_SIGNED] && seen[W_UNSIGNED]) {
                    PyOS_snprintf(what, sizeof what, "a type cannot be both signed and unsigned "
                                  "(parameter %d)", index);
                    return cukit_decl_error(text, lx, i, what);
                }
            }
            else if (++others > (builtins ? 1 : 2))
                why = "one word too many: a parameter is a type and a name";
        }
        else if (t->kind == TOK_PUNCT && (strchr("*&", t->p[0]) || token_is(t, "::"))) {
            stars += t->p[0] != ':';
            continue;
        }
        else if (t->kind == TOK_PUNCT && strchr("[<(", t->p[0])) {
            if (t->p[0] == '<' && (i == from || lx->toks[i - 1].kind != TOK_IDENT))
                why = "'<' must follow a template's name";
            else if (t->p[0] == '(' && paren_error(text, lx, from, i, to) < 0)
                return -1;
            else {
                int end = check_group(text, lx, i, to);
                if (end < 0)
                    return -1;
                stars += t->p[0] != '<';
                i = end - 1;
                continue;
            }
        }
        else if (t->kind == TOK_PUNCT && t->p[0] == '.') {
            why = "a kernel cannot take a variable number of arguments";
        }
        else if (t->kind == TOK_NUMBER) {
            why = "a number cannot be a parameter's type or name";
        }
        else if (t->kind == TOK_STRING) {
            why = "a string cannot be part of a parameter";
        }
        else {
            unsigned char c = (unsigned char)t->p[0];
            if (c < 0x20 || c == 0x7f)
                PyOS_snprintf(what, sizeof what, "the control character \\x%02x cannot be "
                              "part of a parameter", c);
            else
                PyOS_snprintf(what, sizeof what, "'%c' cannot be part of a parameter", c);
            why = what;
        }
        if (why) {
            if (why != what)
                PyOS_snprintf(what, sizeof what, "%s (parameter %d)", why, index);
            return cukit_decl_error(text, lx, i, what);
        }
    }
    if (builtins + others == 0) {
        PyOS_snprintf(what, sizeof what, "parameter %d has no type", index);
        return cukit_decl_error(text, lx, from, what);
    }
    if (is_void && !stars && !(only && to - from == 1)) {
        PyOS_snprintf(what, sizeof what, "parameter %d cannot have type void", index);
        return cukit_decl_error(text, lx, from, what);
    }
    return 0;
}

int
cukit_decl_check(const char *text, const lexer *lx, int open)
{
    /* The ")" that closes the list, counting only parentheses. */
    int depth = 0, close = -1;
    for (int i = open; i < lx->n && close < 0; i++) {
        if (lx->toks[i].kind != TOK_PUNCT)
            continue;
        depth += (lx->toks[i].p[0] == '(') - (lx->toks[i].p[0] == ')');
        if (depth == 0)
            close = i;
    }
    if (close < 0)
        return cukit_decl_error(text, lx, lx->n, "the parameter list is not closed: a ')' is "
                                "missing");
    int *bounds = NULL;
    int n = cukit_params_bounds(lx, open, &bounds);
    if (n < 0)
        return -1;
    int rc = 0;
    for (int k = 0; k < n && rc == 0; k++) {
        int from = bounds[2 * k], to = bounds[2 * k + 1];
        if (from == to && n > 1) {
            char what[64];
            PyOS_snprintf(what, sizeof what, "parameter %d is empty (a stray comma?)", k + 1);
            rc = cukit_decl_error(text, lx, to, what);
        }
        else if (from < to) {
            rc = check_param(text, lx, from, to, k + 1, n == 1);
        }
    }
    PyMem_Free(bounds);
    return rc < 0 ? -1 : close + 1;
}

int
cukit_decl_check_name(const char *text, const lexer *lx, int open)
{
    int start = open;
    for (int i = 0; i < open; i++) {
        const token *t = &lx->toks[i];
        /* A name starts at an identifier or a "::" that does not continue one. */
        int continues = i > 0 && (lx->toks[i - 1].kind == TOK_IDENT || token_is(&lx->toks[i - 1], ">"));
        if (t->kind == TOK_IDENT) {
            if (i == 0 || !token_is(&lx->toks[i - 1], "::"))
                start = i;
            continue;
        }
        if (token_is(t, "::")) {
            if (!continues)
                start = i;
            continue;
        }
        if (t->kind == TOK_STRING && token_is(t, "\"C\""))
            continue;
        if (token_is(t, "(") && i > 0 && cukit_attribute_at(lx, i - 1)) {
            int end = check_group(text, lx, i, open);
            if (end < 0)
                return -1;
            i = end - 1;
            continue;
        }
        if (token_is(t, "<") && i > 0 && lx->toks[i - 1].kind == TOK_IDENT) {
            int end = check_group(text, lx, i, open);
            if (end < 0)
                return -1;
            i = end - 1;
            continue;
        }
        return cukit_decl_error(text, lx, i, "this cannot be part of a kernel's name");
    }
    if (open > 0 && lx->toks[open - 1].kind != TOK_IDENT && !token_is(&lx->toks[open - 1], ">"))
        return cukit_decl_error(text, lx, open - 1, "expected the kernel's name before '('");
    return start;
}

