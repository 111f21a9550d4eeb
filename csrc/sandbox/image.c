/* image.c - device code images: their format by magic bytes, and reading them from files */
#include "sandbox/sandbox.h"

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
        if (magics[i].kind == NVJITLINK_INPUT_OBJECT) /* machine 0: no machine's, no object */
            return n < 20 || (data[18] | data[19] << 8) == 0 ? NVJITLINK_INPUT_NONE
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

/* ------------------------------------------------------------------ static checks of a layout
 *
 * The driver trusts the sizes and offsets inside an image: a damaged one makes it
 * read outside the bytes it was given (a crash) or walk a chain that never ends (a
 * hang). These checks read every size and offset the driver follows, as plain
 * bounds, before it sees the image. */

static unsigned long long
le(const unsigned char *p, int bytes)
{
    unsigned long long v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Whether [off, off + size) lies inside n bytes, without overflow. */
static int
inside(unsigned long long off, unsigned long long size, size_t n)
{
    return off <= n && size <= n - off;
}

enum { FATBIN_HEADER = 16, FATBIN_ENTRY_MIN = 16 };

/* A fatbin: its 16-byte header (magic, u16 version, u16 header size, u64 size of
 * what follows the header) and then entries, each a header (u16 kind, u16 version,
 * u32 header size, u64 payload size, more fields) and its payload, back to back
 * until the size the header gives. */
static int
fatbin_problem(const unsigned char *d, size_t n, char *why, size_t cap)
{
    if (n < FATBIN_HEADER) {
        PyOS_snprintf(why, cap, "it starts like a fatbin (0xBA55ED50) but is only %zu bytes, "
                      "less than a fatbin's header (16): a truncated or damaged fatbin; rebuild it", n);
        return 1;
    }
    unsigned long long hsize = le(d + 6, 2), size = le(d + 8, 8);
    if (hsize < FATBIN_HEADER || !inside(hsize, size, n)) {
        PyOS_snprintf(why, cap, "it is a fatbin whose header (%llu bytes, at least 16) says %llu "
                      "bytes of entries follow it, past its end (%zu bytes): a truncated or "
                      "damaged fatbin; rebuild it", hsize, size, n);
        return 1;
    }
    unsigned long long at = hsize, end = hsize + size;
    if (size == 0) {
        PyOS_snprintf(why, cap, "it is a fatbin with no entries (its header says 0 bytes follow): "
                      "a damaged fatbin; rebuild it");
        return 1;
    }
    for (int i = 0; at < end; i++) {
        if (end - at < FATBIN_ENTRY_MIN) {
            PyOS_snprintf(why, cap, "it is a fatbin whose entry %d at offset %llu has only %llu "
                          "bytes left for its header (at least 16): a damaged fatbin; rebuild it",
                          i, at, end - at);
            return 1;
        }
        unsigned long long eh = le(d + at + 4, 4), payload = le(d + at + 8, 8);
        if (eh < FATBIN_ENTRY_MIN || eh > end - at || payload > end - at - eh) {
            PyOS_snprintf(why, cap, "it is a fatbin whose entry %d at offset %llu (a %llu-byte "
                          "header, at least 16, and %llu bytes of code) runs past the %llu bytes "
                          "its header gives: a damaged fatbin; rebuild it",
                          i, at, eh, payload, end);
            return 1;
        }
        at += eh + payload;
    }
    return 0;
}

enum {
    SHT_NULL = 0, SHT_SYMTAB = 2, SHT_STRTAB = 3, SHT_RELA = 4, SHT_NOBITS = 8, SHT_REL = 9,
    SHT_DYNSYM = 11, SHF_INFO_LINK = 0x40, SHN_LORESERVE = 0xff00,
    EH_SIZE = 64, SH_SIZE = 64, PH_SIZE = 56, SYM_SIZE = 24, REL_SIZE = 16, RELA_SIZE = 24,
};

#define DAMAGED ": a truncated or damaged cubin; rebuild it"

/* Section i's header. */
static const unsigned char *
section(const unsigned char *d, unsigned long long shoff, unsigned i)
{
    return d + shoff + (unsigned long long)i * SH_SIZE;
}

static int
elf_problem(const unsigned char *d, size_t n, char *why, size_t cap)
{
    if (n < EH_SIZE) {
        PyOS_snprintf(why, cap, "it starts like a cubin (an ELF file, b'\\x7fELF') but is only "
                      "%zu bytes, less than an ELF header (64)" DAMAGED, n);
        return 1;
    }
    if (d[4] != 2 || d[5] != 1) {
        PyOS_snprintf(why, cap, "it is an ELF file but not a 64-bit little-endian one, as a "
                      "cubin is: not a cubin, or a damaged one");
        return 1;
    }
    unsigned long long phoff = le(d + 32, 8), shoff = le(d + 40, 8);
    unsigned phentsize = (unsigned)le(d + 54, 2), phnum = (unsigned)le(d + 56, 2);
    unsigned shentsize = (unsigned)le(d + 58, 2), shnum = (unsigned)le(d + 60, 2);
    unsigned shstrndx = (unsigned)le(d + 62, 2);
    if (shoff > n || (unsigned long long)shentsize * shnum > n - shoff) {
        PyOS_snprintf(why, cap, "it is an ELF file whose header places %u sections of %u bytes at "
                      "offset %llu, past its end (%zu bytes)" DAMAGED, shnum, shentsize, shoff, n);
        return 1;
    }
    if (shnum == 0 || shentsize != SH_SIZE) {
        PyOS_snprintf(why, cap, "it is an ELF file whose header gives %u section headers of %u "
                      "bytes (a cubin has sections, of 64 bytes each)" DAMAGED, shnum, shentsize);
        return 1;
    }
    if (phnum && (phentsize != PH_SIZE || !inside(phoff, (unsigned long long)phnum * PH_SIZE, n))) {
        PyOS_snprintf(why, cap, "it is an ELF file whose header places %u program headers of %u "
                      "bytes (56 each) at offset %llu, past its end (%zu bytes)" DAMAGED,
                      phnum, phentsize, phoff, n);
        return 1;
    }
    for (unsigned i = 0; i < phnum; i++) {
        const unsigned char *p = d + phoff + (unsigned long long)i * PH_SIZE;
        unsigned long long off = le(p + 8, 8), filesz = le(p + 32, 8);
        if (le(p, 4) != 0 && filesz && !inside(off, filesz, n)) {
            PyOS_snprintf(why, cap, "it is an ELF file whose program header %u places %llu bytes "
                          "at offset %llu, past its end (%zu bytes)" DAMAGED, i, filesz, off, n);
            return 1;
        }
    }
    for (unsigned i = 0; i < shnum; i++) {
        const unsigned char *s = section(d, shoff, i);
        unsigned type = (unsigned)le(s + 4, 4), link = (unsigned)le(s + 40, 4);
        unsigned info = (unsigned)le(s + 44, 4);
        unsigned long long flags = le(s + 8, 8), off = le(s + 24, 8), size = le(s + 32, 8);
        if (type != SHT_NOBITS && type != SHT_NULL && !inside(off, size, n)) {
            PyOS_snprintf(why, cap, "it is an ELF file whose section %u places %llu bytes at "
                          "offset %llu, past its end (%zu bytes)" DAMAGED, i, size, off, n);
            return 1;
        }
        if (link >= shnum ||
            ((type == SHT_REL || type == SHT_RELA || (flags & SHF_INFO_LINK)) && info >= shnum)) {
            PyOS_snprintf(why, cap, "it is an ELF file whose section %u links to section %u (info "
                          "%u), but it has only %u sections" DAMAGED, i, link, info, shnum);
            return 1;
        }
    }
    if (shstrndx == 0 || shstrndx >= shnum) {
        PyOS_snprintf(why, cap, "it is an ELF file whose section names are in section %u, but it "
                      "has %u sections (1 to %u)" DAMAGED, shstrndx, shnum, shnum - 1);
        return 1;
    }
    const unsigned char *names = section(d, shoff, shstrndx);
    unsigned long long noff = le(names + 24, 8), nsize = le(names + 32, 8);
    if (le(names + 4, 4) != SHT_STRTAB || nsize == 0 || d[noff + nsize - 1] != '\0') {
        PyOS_snprintf(why, cap, "it is an ELF file whose section names (section %u) are not a "
                      "string table ending in a NUL byte" DAMAGED, shstrndx);
        return 1;
    }
    for (unsigned i = 0; i < shnum; i++) {
        const unsigned char *s = section(d, shoff, i);
        unsigned type = (unsigned)le(s + 4, 4), link = (unsigned)le(s + 40, 4);
        unsigned long long off = le(s + 24, 8), size = le(s + 32, 8), entsize = le(s + 56, 8);
        if (le(s, 4) >= nsize) {
            PyOS_snprintf(why, cap, "it is an ELF file whose section %u has its name at %llu, "
                          "outside the %llu bytes of section names" DAMAGED, i, le(s, 4), nsize);
            return 1;
        }
        if (type == SHT_SYMTAB || type == SHT_DYNSYM) {
            const unsigned char *strs = section(d, shoff, link);
            unsigned long long soff = le(strs + 24, 8), ssize = le(strs + 32, 8);
            if (entsize != SYM_SIZE || size % SYM_SIZE != 0) {
                PyOS_snprintf(why, cap, "it is an ELF file whose symbol table (section %u) has "
                              "%llu bytes of %llu-byte entries (24 each, a whole number of "
                              "them)" DAMAGED, i, size, entsize);
                return 1;
            }
            if (le(strs + 4, 4) != SHT_STRTAB || (ssize && d[soff + ssize - 1] != '\0')) {
                PyOS_snprintf(why, cap, "it is an ELF file whose symbol table (section %u) names "
                              "section %u for its strings, which is not a string table ending "
                              "in a NUL byte" DAMAGED, i, link);
                return 1;
            }
            for (unsigned long long k = 0; k < size / SYM_SIZE; k++) {
                const unsigned char *sym = d + off + k * SYM_SIZE;
                unsigned long long name = le(sym, 4), shndx = le(sym + 6, 2);
                if ((name && name >= ssize) || (shndx < SHN_LORESERVE && shndx >= shnum)) {
                    PyOS_snprintf(why, cap, "it is an ELF file whose symbol %llu (section %u) has "
                                  "its name at %llu of %llu bytes of strings and lies in section "
                                  "%llu of %u" DAMAGED, k, i, name, ssize, shndx, shnum);
                    return 1;
                }
            }
        }
        if (type == SHT_REL || type == SHT_RELA) {
            unsigned want = type == SHT_REL ? REL_SIZE : RELA_SIZE;
            const unsigned char *syms = section(d, shoff, link);
            unsigned stype = (unsigned)le(syms + 4, 4);
            unsigned long long nsyms = le(syms + 32, 8) / SYM_SIZE;
            if (entsize != want || size % want != 0 || (stype != SHT_SYMTAB && stype != SHT_DYNSYM)) {
                PyOS_snprintf(why, cap, "it is an ELF file whose relocation section %u has %llu "
                              "bytes of %llu-byte entries (%u each, a whole number of them) and "
                              "names section %u, not a symbol table, for its symbols" DAMAGED,
                              i, size, entsize, want, link);
                return 1;
            }
            for (unsigned long long k = 0; k < size / want; k++) {
                unsigned long long sym = le(d + off + k * want + 8, 8) >> 32;
                if (sym >= nsyms) {
                    PyOS_snprintf(why, cap, "it is an ELF file whose relocation %llu in section %u "
                                  "names symbol %llu, but its symbol table has %llu" DAMAGED,
                                  k, i, sym, nsyms);
                    return 1;
                }
            }
        }
    }
    return 0;
}

int
cukit_image_problem(const unsigned char *data, size_t n, char *why, size_t cap)
{
    if (n >= 4 && memcmp(data, "\x7f" "ELF", 4) == 0 &&
        cukit_image_kind(data, n) != NVJITLINK_INPUT_OBJECT)
        return elf_problem(data, n, why, cap);
    if (cukit_image_kind(data, n) == NVJITLINK_INPUT_FATBIN)
        return fatbin_problem(data, n, why, cap);
    return 0;
}
