/* prelude.c - the lines a source gets before NVRTC reads it: the fp16/bf16 headers and nvcc's short type names */
#include "compile/program.h"

#include <ctype.h>
#include <limits.h>
#include <string.h>

/* nvcc's host compiler gets these from the C library (<sys/types.h>, which <stdlib.h>
 * includes); cukit's stand-in <sys/types.h> declares the same. */
static const char nvcc_types[] = "typedef unsigned char uchar;\ntypedef unsigned short ushort;\n"
                                 "typedef unsigned int uint;\ntypedef unsigned long ulong;\n";

/* Whether `word` appears in src as a whole identifier. */
static int
has_word(const char *src, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = strstr(src, word); p; p = strstr(p + 1, word)) {
        int before = p > src && (p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z') ||
                                 (p[-1] >= 'A' && p[-1] <= 'Z') || (p[-1] >= '0' && p[-1] <= '9'));
        char c = p[n];
        int after = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!before && !after)
            return 1;
    }
    return 0;
}

/* Whether the source declares `word` itself: as a typedef, alias, macro or class. */
static int
declares(const char *src, const char *word)
{
    static const char *forms[] = {" %s;", "define %s", "using %s", "struct %s", "class %s"};
    char pat[64];
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        PyOS_snprintf(pat, sizeof pat, forms[i], word);
        if (strstr(src, pat))
            return 1;
    }
    return 0;
}

/* A copy of src (PyMem: the caller frees) with its comments and its string and
 * character literals blanked, newlines kept, so that a word in a comment ("the high
 * half of a float") or a string is not taken for code. A preprocessor line keeps its
 * strings: `#include "cuda_fp16.h"` is code. NULL with MemoryError. */
static char *
code_only(const char *src)
{
    size_t n = strlen(src);
    char *out = PyMem_Malloc(n + 1);
    if (out == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    int directive = 0, line_start = 1;
    for (size_t i = 0; i < n;) {
        char c = src[i];
        if (c == '\n') {
            out[i++] = c;
            directive = 0;
            line_start = 1;
            continue;
        }
        if (line_start && c == '#')
            directive = 1;
        if (c != ' ' && c != '\t')
            line_start = 0;
        if (c == '/' && src[i + 1] == '/') { /* to the end of the line */
            while (i < n && src[i] != '\n')
                out[i++] = ' ';
            continue;
        }
        if (c == '/' && src[i + 1] == '*') {
            out[i] = out[i + 1] = ' ';
            for (i += 2; i < n && !(src[i] == '*' && src[i + 1] == '/'); i++)
                out[i] = src[i] == '\n' ? '\n' : ' ';
            for (int k = 0; k < 2 && i < n; k++)
                out[i++] = ' ';
            continue;
        }
        /* a literal; a ' after a digit or letter is a digit separator (1'000) */
        int quote = c == '"' || (c == '\'' && !(i > 0 && (isalnum((unsigned char)src[i - 1]) ||
                                                          src[i - 1] == '_')));
        if (quote && !directive) {
            out[i++] = ' ';
            while (i < n && src[i] != c && src[i] != '\n') {
                if (src[i] == '\\' && i + 1 < n && src[i + 1] != '\n')
                    out[i++] = ' ';
                out[i++] = ' ';
            }
            if (i < n && src[i] == c)
                out[i++] = ' ';
            continue;
        }
        out[i] = c;
        i++;
    }
    out[n] = '\0';
    return out;
}

int
cukit_prelude_needs(const char *src)
{
    static const char *types[] = {"half", "__half", "half2", "__half2", "__nv_bfloat16",
                                  "nv_bfloat16", "__nv_bfloat162", "nv_bfloat162"};
    static const char *nvcc[] = {"uint", "ushort", "ulong", "uchar"};
    char *code = code_only(src);
    if (code == NULL)
        return -1;
    int out = 0;
    if (!strstr(code, "cuda_fp16.h") && !strstr(code, "cuda_bf16.h"))
        for (size_t i = 0; i < sizeof types / sizeof *types && !out; i++)
            if (has_word(code, types[i]))
                out = CUKIT_PRELUDE_FP16;
    for (size_t i = 0; i < sizeof nvcc / sizeof *nvcc; i++)
        if (has_word(code, nvcc[i]) && !declares(code, nvcc[i])) {
            out |= CUKIT_PRELUDE_NVCC_TYPES;
            break;
        }
    PyMem_Free(code);
    return out;
}

PyObject *
cukit_prelude_source(cukit_Program *self, const char *name)
{
    int fp16 = (self->prelude & CUKIT_PRELUDE_FP16) && cukit_default_include_has("cuda_fp16.h");
    if (!fp16 && !(self->prelude & CUKIT_PRELUDE_NVCC_TYPES))
        return Py_NewRef(self->source);
    char quoted[PATH_MAX];
    size_t q = 0;
    for (const char *c = name; *c && q + 3 < sizeof quoted; c++) {
        if (*c == '"' || *c == '\\')
            quoted[q++] = '\\';
        quoted[q++] = *c;
    }
    quoted[q] = '\0';
    return PyUnicode_FromFormat("%s%s#line 1 \"%s\"\n%U",
                                fp16 ? "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n" : "",
                                (self->prelude & CUKIT_PRELUDE_NVCC_TYPES) ? nvcc_types : "",
                                quoted, self->source);
}
