/* codegen_buffer.c - the growing text buffer the CUDA C generators write into */
#include "compute/builders.h"

#include <stdarg.h>
#include <stdio.h>

void
ck_put(ck_buf *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    for (;;) {
        va_list va;
        va_start(va, fmt);
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, va);
        va_end(va);
        if (n < 0) {
            b->failed = 1;
            return;
        }
        if (b->p && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap : 16384;
        while (cap <= b->len + (size_t)n)
            cap *= 2;
        char *grown = PyMem_Realloc(b->p, cap);
        if (grown == NULL) {
            b->failed = 1;
            return;
        }
        b->p = grown;
        b->cap = cap;
    }
}

PyObject *
ck_buf_finish(ck_buf *b)
{
    PyObject *s = b->failed ? PyErr_NoMemory()
                            : PyUnicode_FromStringAndSize(b->p ? b->p : "", (Py_ssize_t)b->len);
    PyMem_Free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
    return s;
}
