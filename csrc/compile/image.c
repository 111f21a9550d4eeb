/* image.c - device code images: their format by magic bytes, and reading them from files */
#include "compile/compile.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { EM_CUDA = 190 }; /* ELF e_machine of a cubin; a host object has its CPU's */

/* Each format by the bytes it starts with. An ELF file is a cubin or a host
 * object, told apart by its machine below. PTX may start after white space. */
static const struct {
    const char *magic;
    size_t len;
    int kind;
} magics[] = {
    {"\x7f" "ELF", 4, NVJITLINK_INPUT_OBJECT},
    {"\x50\xed\x55\xba", 4, NVJITLINK_INPUT_FATBIN}, /* 0xBA55ED50, little-endian */
    {"\xed\x43\x4e\x7f", 4, NVJITLINK_INPUT_LTOIR},  /* NVRTC's -dlto output */
    {"!<arch>\n", 8, NVJITLINK_INPUT_LIBRARY},
    {"//", 2, NVJITLINK_INPUT_PTX},
    {".version", 8, NVJITLINK_INPUT_PTX},
};

static const char *const kind_names[] = {
    [NVJITLINK_INPUT_NONE] = "unrecognised data",
    [NVJITLINK_INPUT_CUBIN] = "cubin",
    [NVJITLINK_INPUT_PTX] = "PTX",
    [NVJITLINK_INPUT_LTOIR] = "LTO-IR",
    [NVJITLINK_INPUT_FATBIN] = "fatbin",
    [NVJITLINK_INPUT_OBJECT] = "host object file",
    [NVJITLINK_INPUT_LIBRARY] = "static library",
};

int
cukit_image_kind(const unsigned char *data, size_t n)
{
    size_t skip = 0;
    while (skip < n && (data[skip] == ' ' || data[skip] == '\t' || data[skip] == '\r' ||
                        data[skip] == '\n'))
        skip++;
    for (size_t i = 0; i < sizeof magics / sizeof *magics; i++) {
        size_t at = magics[i].kind == NVJITLINK_INPUT_PTX ? skip : 0;
        if (n - at < magics[i].len || memcmp(data + at, magics[i].magic, magics[i].len) != 0)
            continue;
        if (magics[i].kind == NVJITLINK_INPUT_OBJECT)
            return n < 20 ? NVJITLINK_INPUT_NONE
                   : (data[18] | data[19] << 8) == EM_CUDA ? NVJITLINK_INPUT_CUBIN
                                                           : NVJITLINK_INPUT_OBJECT;
        return magics[i].kind;
    }
    return NVJITLINK_INPUT_NONE;
}

const char *
cukit_image_kind_name(int kind)
{
    return kind >= 0 && kind < (int)(sizeof kind_names / sizeof *kind_names) && kind_names[kind]
               ? kind_names[kind] : kind_names[NVJITLINK_INPUT_NONE];
}

PyObject *
cukit_read_file(PyObject *path, Py_ssize_t limit)
{
    PyObject *fspath = PyOS_FSPath(path), *encoded = NULL, *out = NULL;
    if (fspath == NULL)
        return NULL;
    if (!PyUnicode_FSConverter(fspath, &encoded))
        goto done;
    int fd, err = 0;
    Py_ssize_t size = 0, cap = 0;
    struct stat sb;
    Py_BEGIN_ALLOW_THREADS
    fd = open(PyBytes_AS_STRING(encoded), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        err = errno;
    else if (fstat(fd, &sb) < 0)
        err = errno;
    else if (S_ISDIR(sb.st_mode))
        err = EISDIR;
    Py_END_ALLOW_THREADS
    if (err == 0) {
        cap = S_ISREG(sb.st_mode) && sb.st_size > 0 ? (Py_ssize_t)sb.st_size : 65536;
        if (limit >= 0 && cap > limit)
            cap = limit;
        out = PyBytes_FromStringAndSize(NULL, cap);
    }
    /* Until end of file (or limit): a file that grows meanwhile, or a pipe, is read whole. */
    while (out && err == 0 && (limit < 0 || size < limit)) {
        if (size == cap && _PyBytes_Resize(&out, cap *= 2) < 0)
            break;
        ssize_t got;
        char *dst = PyBytes_AS_STRING(out) + size;
        Py_ssize_t want = limit >= 0 && limit < cap ? limit - size : cap - size;
        Py_BEGIN_ALLOW_THREADS
        got = read(fd, dst, (size_t)want);
        Py_END_ALLOW_THREADS
        if (got < 0 && errno != EINTR)
            err = errno;
        else if (got == 0)
            break;
        else if (got > 0)
            size += got;
    }
    if (fd >= 0)
        close(fd);
    if (err != 0) {
        Py_CLEAR(out);
        errno = err;
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, fspath);
    }
    else if (out && size != cap)
        _PyBytes_Resize(&out, size);
done:
    Py_XDECREF(encoded);
    Py_DECREF(fspath);
    return out;
}
