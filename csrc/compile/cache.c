/* cache.c - the compiled-code cache on disk: keys, entries, cache_info() and clear_cache() */
#include "compile/cache.h"
#include "compile/headers.h"
#include "compile/program.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bump when the entry format or what the key covers changes. */
#define CACHE_FORMAT "cukit-cache 1"
#define ENTRY_SUFFIX ".bin"

/* "ptx", "cubin" or "ltoir" for a CUKIT_OUT_* kind. */
static const char *
kind_name(int kind)
{
    static const char *names[] = {[CUKIT_OUT_PTX] = "ptx", [CUKIT_OUT_CUBIN] = "cubin",
                                  [CUKIT_OUT_LTOIR] = "ltoir"};
    return kind >= 0 && kind < (int)(sizeof names / sizeof *names) ? names[kind] : "?";
}

/* ------------------------------------------------------------------ where and whether */

/* A RuntimeWarning; 0, or -1 when warnings are errors. */
static int
warn(const char *fmt, const char *a, const char *b)
{
    return PyErr_WarnFormat(PyExc_RuntimeWarning, 1, fmt, a, b);
}

static int
dir_ready(const char *dir, int create)
{
    return cukit_cache_dir_ready(dir, create, 0);
}

/* The cache folder into dir for a lookup or a store: 1, or 0 when none can be
 * named (a warning says why: a CUKIT_CACHE_DIR longer than paths can be, no home
 * folder), -1 when the warning became an error. */
static int
dir_named(char *dir, size_t n)
{
    if (cukit_cache_dir(dir, n) == 0)
        return 1;
    const char *d = getenv("CUKIT_CACHE_DIR");
    char len[32], max[32];
    if (d && d[0]) {
        snprintf(len, sizeof len, "%zu", strlen(d));
        snprintf(max, sizeof max, "%d", PATH_MAX - 1);
        return warn("cukit: CUKIT_CACHE_DIR is %s characters long, more than a path can be "
                    "here (%s); compiling without the disk cache. Point it at a shorter path",
                    len, max) < 0 ? -1 : 0;
    }
    return warn("cukit: no folder for the kernel cache%s%s (CUKIT_CACHE_DIR, XDG_CACHE_HOME and "
                "HOME name none that fits); compiling without the disk cache", "", "") < 0 ? -1 : 0;
}

/* Absolute form of the first n bytes of `path` against the working directory,
 * into out. 0, or -1 when it does not fit. */
static int
absolute(const char *cwd, const char *path, size_t n, char *out, size_t cap)
{
    int w = (n > 0 && path[0] == '/') ? snprintf(out, cap, "%.*s", (int)n, path)
                                      : snprintf(out, cap, "%s/%.*s", cwd, (int)n, path);
    return w >= 0 && (size_t)w < cap ? 0 : -1;
}

/* ------------------------------------------------------------------ keys */

/* The identity of the NVRTC library that compiled, or that would compile now: its
 * version, real path and file identity, plus what decides which one is found. */
static void
environment_digest(char out[65])
{
    static const char *vars[] = {"CUKIT_NVRTC", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH"};
    cukit_sha256 c;
    cukit_sha256_init(&c);
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        cukit_sha256_field(&c, v ? v : "", v ? strlen(v) : 0);
    }
    PyObject *prefix = PySys_GetObject("prefix"); /* borrowed: NVRTC wheels live under it */
    const char *pre = prefix && PyUnicode_Check(prefix) ? PyUnicode_AsUTF8(prefix) : NULL;
    if (pre == NULL)
        PyErr_Clear();
    cukit_sha256_field(&c, pre ? pre : "", pre ? strlen(pre) : 0);
    struct stat s;
    char ld[64] = "";
    if (stat("/etc/ld.so.cache", &s) == 0)
        snprintf(ld, sizeof ld, "%lld:%lld", (long long)s.st_mtim.tv_sec, (long long)s.st_size);
    cukit_sha256_field(&c, ld, strlen(ld));
    unsigned char d[32];
    cukit_sha256_final(&c, d);
    cukit_sha256_hex(d, out);
}

static int
file_identity(const char *path, char *out, size_t n)
{
    struct stat s;
    if (stat(path, &s) != 0)
        return -1;
    snprintf(out, n, "%llu:%lld:%lld.%09ld", (unsigned long long)s.st_ino, (long long)s.st_size,
             (long long)s.st_mtim.tv_sec, s.st_mtim.tv_nsec);
    return 0;
}

/* "13.0\t/real/path/libnvrtc.so.13\tino:size:mtime" of the loaded NVRTC; -1 if none. */
static int
loaded_nvrtc_identity(char *out, size_t n)
{
    const char *real = cukit_nvrtc_realpath();
    int major = 0, minor = 0;
    char id[128];
    if (real == NULL || cukit_api.nvrtcVersion(&major, &minor) != NVRTC_SUCCESS ||
        file_identity(real, id, sizeof id) < 0)
        return -1;
    snprintf(out, n, "%d.%d\t%s\t%s", major, minor, real, id);
    return 0;
}

int
cukit_cache_key_make(cukit_Program *prog, const char *arch, cukit_output kind, PyObject *opts,
                     cukit_cache_key *key)
{
    key->usable = 0;
    key->hex[0] = '\0';
    key->deps = NULL;
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == NULL) { /* the folder was removed: not cached */
        key->deps = PyTuple_New(0);
        return key->deps ? 0 : -1;
    }
    PyObject *deps = PyList_New(0), *seen = PySet_New(NULL), *idirs = PyList_New(0);
    PyObject *pre = PyList_New(0); /* pre-included headers */
    int rc = -1;
    if (deps == NULL || seen == NULL || idirs == NULL || pre == NULL)
        goto done;
    cukit_sha256 c;
    cukit_sha256_init(&c);
    const char *fixed[] = {CACHE_FORMAT, CUKIT_VERSION, arch, kind_name(kind)};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        cukit_sha256_field(&c, fixed[i], strlen(fixed[i]));
    /* Options that name files NVRTC reads: -I folders (where <names> are looked for,
     * in order) and pre-included headers, in any of their spellings. */
    int complete = 1;
    const char *pending = NULL; /* "-I" or "-include" waiting for its value */
    PyObject *lists[2] = {opts, prog->name_expressions};
    for (int l = 0; l < 2; l++) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(lists[l]); i++) {
            Py_ssize_t n;
            const char *s = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(lists[l], i), &n);
            if (s == NULL)
                goto done;
            cukit_sha256_field(&c, s, (size_t)n);
            if (l != 0)
                continue;
            const char *dir = NULL, *file = NULL;
            if (pending) {
                if (strcmp(pending, "-I") == 0)
                    dir = s;
                else
                    file = s;
                pending = NULL;
            }
            else if (strcmp(s, "-I") == 0 || strcmp(s, "--include-path") == 0)
                pending = "-I";
            else if (strcmp(s, "-include") == 0 || strcmp(s, "--pre-include") == 0)
                pending = "-include";
            else if (strncmp(s, "-I", 2) == 0)
                dir = s + 2;
            else if (strncmp(s, "--include-path=", 15) == 0)
                dir = s + 15;
            else if (strncmp(s, "--pre-include=", 14) == 0)
                file = s + 14;
            else if (strncmp(s, "-include", 8) == 0)
                file = s + 8;
            else if (strstr(s, "pch")) /* precompiled headers are files cukit cannot vouch for */
                complete = 0;
            const char *value = dir ? dir : file;
            while (value && (*value == ' ' || *value == '='))
                value++;
            if (value == NULL)
                continue;
            char abs[PATH_MAX];
            if (absolute(cwd, value, strlen(value), abs, sizeof abs) < 0) {
                complete = 0;
                continue;
            }
            PyObject *d = PyUnicode_DecodeFSDefault(dir ? abs : value);
            if (d == NULL || PyList_Append(dir ? idirs : pre, d) < 0) {
                Py_XDECREF(d);
                goto done;
            }
            Py_DECREF(d);
        }
        cukit_sha256_field(&c, "|", 1);
    }
    /* cukit's stand-ins, searched last: NVIDIA's folders before them are covered by the
     * NVRTC identity, and hold none of the stand-ins' names. */
    const char *const *defaults = cukit_default_include_dirs();
    while (defaults[0] && defaults[1])
        defaults++;
    if (defaults[0]) {
        PyObject *d = PyUnicode_DecodeFSDefault(defaults[0]);
        if (d == NULL || PyList_Append(idirs, d) < 0) {
            Py_XDECREF(d);
            goto done;
        }
        Py_DECREF(d);
    }
    Py_ssize_t srclen, namelen;
    const char *src = PyUnicode_AsUTF8AndSize(prog->source, &srclen);
    const char *name = PyUnicode_AsUTF8AndSize(prog->name, &namelen);
    if (src == NULL || name == NULL)
        goto done;
    cukit_sha256_field(&c, name, (size_t)namelen);
    cukit_sha256_field(&c, src, (size_t)srclen);
    /* Quoted includes of the source are looked for beside the file NVRTC is told it
     * compiles: the program's name, taken relative to the working directory. */
    char srcdir[PATH_MAX];
    const char *slash = strrchr(name, '/');
    if (slash == NULL)
        snprintf(srcdir, sizeof srcdir, "%s", cwd);
    else if (absolute(cwd, name, (size_t)(slash - name), srcdir, sizeof srcdir) < 0) {
        key->deps = PyTuple_New(0); /* a name too long to follow: not cached */
        rc = key->deps ? 0 : -1;
        goto done;
    }
    cukit_sha256_field(&c, srcdir, strlen(srcdir));
    cukit_header_scan sc = {&c, deps, seen, idirs, 0, 0, complete};
    /* A pre-included header is found like a quoted #include in the working folder. */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(pre); i++) {
        PyObject *enc = PyUnicode_EncodeFSDefault(PyList_GET_ITEM(pre, i));
        if (enc == NULL)
            goto done;
        int r = cukit_header_follow(&sc, PyBytes_AS_STRING(enc), (size_t)PyBytes_GET_SIZE(enc), 1, cwd, 0);
        Py_DECREF(enc);
        if (r < 0)
            goto done;
    }
    if (cukit_header_scan_text(&sc, src, srcdir, 0) < 0)
        goto done;
    unsigned char d[32];
    cukit_sha256_final(&c, d);
    cukit_sha256_hex(d, key->hex);
    key->usable = sc.complete;
    key->deps = PyList_AsTuple(deps);
    if (key->deps == NULL)
        goto done;
    rc = 0;
done:
    Py_XDECREF(pre);
    Py_XDECREF(deps);
    Py_XDECREF(seen);
    Py_XDECREF(idirs);
    return rc;
}

void
cukit_cache_key_clear(cukit_cache_key *key)
{
    Py_CLEAR(key->deps);
}

int
cukit_cache_deps_unchanged(PyObject *deps)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(deps); i++) {
        PyObject *rec = PyTuple_GET_ITEM(deps, i);
        PyObject *enc = PyUnicode_EncodeFSDefault(PyTuple_GET_ITEM(rec, 0));
        if (enc == NULL)
            return -1;
        const char *path = PyBytes_AS_STRING(enc);
        struct stat s;
        int found = stat(path, &s) == 0 && S_ISREG(s.st_mode);
        PyObject *now = cukit_header_record(path, found ? &s : NULL);
        Py_DECREF(enc);
        if (now == NULL)
            return -1;
        int same = PyObject_RichCompareBool(now, rec, Py_EQ);
        Py_DECREF(now);
        if (same != 1)
            return same;
    }
    return 1;
}

/* ------------------------------------------------------------------ entries */

/* An entry is text lines, then two length-prefixed blobs, then the SHA-256 of all
 * that came before:
 *     cukit-cache 1\n <key>\n <nvrtc identity>\t<environment>\n symbols N\n
 *     N x "<name>\t<lowered>\n"  log LEN\n <bytes>  image LEN\n <bytes>  <32 bytes> */

static int
entry_path(const char *dir, const cukit_cache_key *key, char *out, size_t n)
{
    return snprintf(out, n, "%s/%s" ENTRY_SUFFIX, dir, key->hex) < (int)n ? 0 : -1;
}

/* Read one text line starting at *p (within end) into a new str-less view. */
static const char *
take_line(const char **p, const char *end, size_t *len)
{
    const char *start = *p;
    const char *nl = memchr(start, '\n', (size_t)(end - start));
    if (nl == NULL)
        return NULL;
    *len = (size_t)(nl - start);
    *p = nl + 1;
    return start;
}

/* Parse "word LEN\n" then LEN bytes. */
static const char *
take_blob(const char **p, const char *end, const char *word, size_t *len)
{
    size_t n;
    const char *line = take_line(p, end, &n);
    size_t w = strlen(word);
    if (line == NULL || n <= w + 1 || memcmp(line, word, w) != 0 || line[w] != ' ')
        return NULL;
    char num[32];
    if (n - w - 1 >= sizeof num)
        return NULL;
    memcpy(num, line + w + 1, n - w - 1);
    num[n - w - 1] = '\0';
    char *stop;
    unsigned long long v = strtoull(num, &stop, 10);
    if (*stop || v > (unsigned long long)(end - *p))
        return NULL;
    const char *blob = *p;
    *len = (size_t)v;
    *p += v;
    return blob;
}

/* Whether the identity recorded in an entry names the NVRTC this process uses, or
 * (NVRTC not loaded yet) the one it would load: same environment, same file. */
static int
same_nvrtc(const char *line, size_t n)
{
    char rec[PATH_MAX + 256];
    if (n >= sizeof rec)
        return 0;
    memcpy(rec, line, n);
    rec[n] = '\0';
    char *env = strrchr(rec, '\t');
    if (env == NULL)
        return 0;
    *env++ = '\0';
    char now[PATH_MAX + 256];
    if (cukit_nvrtc_realpath() != NULL)
        return loaded_nvrtc_identity(now, sizeof now) == 0 && strcmp(now, rec) == 0;
    char digest[65];
    environment_digest(digest);
    char *path = strchr(rec, '\t'), *id = path ? strchr(path + 1, '\t') : NULL;
    if (strcmp(digest, env) != 0 || id == NULL)
        return 0;
    *id++ = '\0';
    char idnow[128];
    return file_identity(path + 1, idnow, sizeof idnow) == 0 && strcmp(idnow, id) == 0;
}

/* Parse a whole entry in memory. 1 good (new refs out), 0 bad with *why set. */
static int
parse_entry(const char *data, size_t size, const cukit_cache_key *key, cukit_output kind,
            PyObject **image, PyObject **symbols, PyObject **log, const char **why)
{
    *why = "it is truncated";
    if (size < 32)
        return 0;
    cukit_sha256 c;
    unsigned char d[32];
    cukit_sha256_init(&c);
    cukit_sha256_update(&c, data, size - 32);
    cukit_sha256_final(&c, d);
    if (memcmp(d, data + size - 32, 32) != 0) {
        *why = "its checksum does not match (truncated or corrupted)";
        return 0;
    }
    const char *p = data, *end = data + size - 32, *line;
    size_t n;
    *why = "its format is not this cukit's";
    line = take_line(&p, end, &n);
    if (line == NULL || n != strlen(CACHE_FORMAT) || memcmp(line, CACHE_FORMAT, n) != 0)
        return 0;
    line = take_line(&p, end, &n);
    if (line == NULL || n != 64 || memcmp(line, key->hex, 64) != 0)
        return 0;
    line = take_line(&p, end, &n);
    if (line == NULL)
        return 0;
    if (!same_nvrtc(line, n)) {
        *why = NULL; /* built by another NVRTC: a plain miss, replaced without a word */
        return 0;
    }
    line = take_line(&p, end, &n);
    unsigned long count;
    if (line == NULL || n < 9 || memcmp(line, "symbols ", 8) != 0 ||
        (count = strtoul(line + 8, NULL, 10)) > 100000)
        return 0;
    *symbols = PyDict_New();
    if (*symbols == NULL)
        return -1;
    for (unsigned long i = 0; i < count; i++) {
        line = take_line(&p, end, &n);
        const char *tab = NULL; /* the last one: lowered names have none, kernel names may */
        for (size_t t = 0; line && t < n; t++)
            if (line[t] == '\t')
                tab = line + t;
        if (tab == NULL)
            goto bad;
        PyObject *k = PyUnicode_DecodeUTF8(line, tab - line, "strict");
        PyObject *v = PyUnicode_DecodeUTF8(tab + 1, line + n - tab - 1, "strict");
        int rc = (k && v) ? PyDict_SetItem(*symbols, k, v) : -1;
        Py_XDECREF(k);
        Py_XDECREF(v);
        if (rc < 0) {
            PyErr_Clear();
            goto bad;
        }
    }
    size_t loglen, imglen;
    const char *logp = take_blob(&p, end, "log", &loglen);
    const char *img = logp ? take_blob(&p, end, kind_name(kind), &imglen) : NULL;
    if (img == NULL || p != end)
        goto bad;
    *log = PyUnicode_DecodeUTF8(logp, (Py_ssize_t)loglen, "replace");
    *image = PyBytes_FromStringAndSize(img, (Py_ssize_t)imglen);
    if (*log == NULL || *image == NULL) {
        Py_CLEAR(*log);
        Py_CLEAR(*image);
        Py_CLEAR(*symbols);
        return -1;
    }
    return 1;
bad:
    Py_CLEAR(*symbols);
    return 0;
}

int
cukit_cache_load(const cukit_cache_key *key, cukit_output kind, PyObject **image, PyObject **symbols,
                 PyObject **log)
{
    char dir[PATH_MAX], path[PATH_MAX + 80];
    *image = *symbols = *log = NULL;
    if (!key->usable)
        return 0;
    int named = dir_named(dir, sizeof dir);
    if (named <= 0 || entry_path(dir, key, path, sizeof path) < 0)
        return named;
    int ready = dir_ready(dir, 0);
    if (ready <= 0)
        return ready;
    /* O_NONBLOCK: an entry replaced by a FIFO is refused below, not waited on */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat s;
    char *data = NULL;
    const char *why = NULL;
    int rc = 0;
    if (fstat(fd, &s) != 0 || !S_ISREG(s.st_mode)) {
        why = "it is not a regular file";
        goto done;
    }
    if (s.st_uid != getuid() || (s.st_mode & 022) != 0) {
        why = "another user owns it or can write to it, so it is not trusted";
        goto done;
    }
    if (s.st_size > (1LL << 31)) {
        why = "it is implausibly large";
        goto done;
    }
    data = malloc((size_t)s.st_size + 1);
    if (data == NULL) {
        PyErr_NoMemory();
        rc = -1;
        goto done;
    }
    size_t got = 0;
    while (got < (size_t)s.st_size) {
        ssize_t r = read(fd, data + got, (size_t)s.st_size - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    rc = parse_entry(data, got, key, kind, image, symbols, log, &why);
done:
    if (fd >= 0)
        close(fd);
    free(data);
    if (rc == 0 && why != NULL &&
        warn("cukit: ignoring the kernel cache entry %s: %s; compiling again", path, why) < 0)
        return -1;
    return rc;
}

/* write(2) all of it. */
static int
write_all(int fd, const void *data, size_t n, cukit_sha256 *c)
{
    const char *p = data;
    cukit_sha256_update(c, data, n);
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int
cukit_cache_store(const cukit_cache_key *key, cukit_output kind, PyObject *image, PyObject *symbols,
                  PyObject *log)
{
    char dir[PATH_MAX], path[PATH_MAX + 80], tmp[PATH_MAX + 80];
    /* A folder that cannot be named was warned about by the lookup before. */
    if (!key->usable || cukit_cache_dir(dir, sizeof dir) < 0 || entry_path(dir, key, path, sizeof path) < 0)
        return 0;
    /* An entry is lines: a kernel name with a line break in it cannot be one. */
    Py_ssize_t spos = 0;
    PyObject *sk, *sv;
    while (PyDict_Next(symbols, &spos, &sk, &sv)) {
        const char *ks = PyUnicode_AsUTF8(sk), *vs = PyUnicode_AsUTF8(sv);
        if (ks == NULL || vs == NULL)
            return -1;
        if (strchr(ks, '\n') || strchr(vs, '\n') || strchr(vs, '\t'))
            return 0;
    }
    int ready = dir_ready(dir, 1);
    if (ready <= 0)
        return ready;
    char ident[PATH_MAX + 256], env[65];
    if (loaded_nvrtc_identity(ident, sizeof ident) < 0)
        return 0;
    environment_digest(env);
    /* A private temporary beside the entry, renamed over it once complete: readers
     * see the old entry or the new one, never half of one, and racing writers each
     * rename a whole file of their own. */
    if (snprintf(tmp, sizeof tmp, "%s/%.16s.XXXXXX", dir, key->hex) >= (int)sizeof tmp)
        return 0;
    int fd = mkstemp(tmp);
    if (fd < 0)
        return warn("cukit: could not write to the kernel cache folder %s (%s)", dir,
                    strerror(errno)) < 0 ? -1 : 0;
    cukit_sha256 c;
    cukit_sha256_init(&c);
    char line[PATH_MAX + 512];
    int ok = 1;
    snprintf(line, sizeof line, CACHE_FORMAT "\n%s\n%s\t%s\nsymbols %zd\n", key->hex, ident, env,
             PyDict_GET_SIZE(symbols));
    ok &= write_all(fd, line, strlen(line), &c) == 0;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (ok && PyDict_Next(symbols, &pos, &k, &v)) {
        Py_ssize_t kn, vn;
        const char *ks = PyUnicode_AsUTF8AndSize(k, &kn), *vs = PyUnicode_AsUTF8AndSize(v, &vn);
        if (ks == NULL || vs == NULL) {
            ok = 0;
            PyErr_Clear();
            break;
        }
        ok &= write_all(fd, ks, (size_t)kn, &c) == 0 && write_all(fd, "\t", 1, &c) == 0 &&
              write_all(fd, vs, (size_t)vn, &c) == 0 && write_all(fd, "\n", 1, &c) == 0;
    }
    Py_ssize_t loglen = 0;
    const char *logs = ok ? PyUnicode_AsUTF8AndSize(log, &loglen) : NULL;
    if (logs == NULL) {
        PyErr_Clear();
        ok = 0;
    }
    if (ok) {
        snprintf(line, sizeof line, "log %zd\n", loglen);
        ok &= write_all(fd, line, strlen(line), &c) == 0 && write_all(fd, logs, (size_t)loglen, &c) == 0;
        snprintf(line, sizeof line, "%s %zd\n", kind_name(kind), PyBytes_GET_SIZE(image));
        ok &= write_all(fd, line, strlen(line), &c) == 0 &&
              write_all(fd, PyBytes_AS_STRING(image), (size_t)PyBytes_GET_SIZE(image), &c) == 0;
    }
    unsigned char d[32];
    cukit_sha256_final(&c, d);
    cukit_sha256 ignored;
    cukit_sha256_init(&ignored);
    ok &= ok && write_all(fd, d, 32, &ignored) == 0;
    ok &= close(fd) == 0;
    if (ok && rename(tmp, path) == 0)
        return 0;
    int err = errno;
    unlink(tmp);
    return warn("cukit: could not write the kernel cache entry %s (%s)", path, strerror(err)) < 0
               ? -1 : 0;
}

/* ------------------------------------------------------------------ cache_info, clear_cache */

/* Whether name is n lowercase hex digits. */
static int
hex_run(const char *name, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
            return 0;
    return 1;
}

/* Walk cukit's own files in dir: entries ("<64 hex>.bin") and temporaries a
 * writer left ("<16 hex>.XXXXXX"); remove them when `remove`. Nothing else there
 * is touched, and nothing in a folder cukit does not trust (a warning says why
 * while the cache is on; with CUKIT_CACHE=0 the folder is not cukit's concern). */
static int
walk_entries(const char *dir, int remove, long long *count, long long *bytes)
{
    *count = *bytes = 0;
    if (cukit_cache_dir_ready(dir, 0, !cukit_cache_enabled()) <= 0)
        return PyErr_Occurred() ? -1 : 0;
    DIR *d = opendir(dir);
    if (d == NULL)
        return 0;
    struct dirent *e;
    size_t suffix = strlen(ENTRY_SUFFIX);
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        int entry = n == 64 + suffix && hex_run(e->d_name, 64) &&
                    strcmp(e->d_name + 64, ENTRY_SUFFIX) == 0;
        int marker = n == 64 + strlen(CUKIT_CACHE_MARKER_SUFFIX) && hex_run(e->d_name, 64) &&
                     strcmp(e->d_name + 64, CUKIT_CACHE_MARKER_SUFFIX) == 0;
        int temp = n == 23 && hex_run(e->d_name, 16) && e->d_name[16] == '.';
        if (!entry && !temp && !marker)
            continue;
        char path[PATH_MAX + 300];
        struct stat s;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (lstat(path, &s) != 0 || !S_ISREG(s.st_mode) || s.st_uid != getuid())
            continue;
        if (remove) {
            if (unlink(path) == 0)
                ++*count;
        }
        else if (entry) {
            ++*count;
            *bytes += s.st_size;
        }
    }
    closedir(d);
    return 0;
}

static PyObject *
mod_cache_info(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    cukit_state *st = PyModule_GetState(m);
    char dir[PATH_MAX];
    int named = cukit_cache_enabled() ? dir_named(dir, sizeof dir) : cukit_cache_dir(dir, sizeof dir) == 0;
    if (named < 0)
        return NULL;
    if (named == 0)
        dir[0] = '\0';
    long long count = 0, bytes = 0;
    if (dir[0] && walk_entries(dir, 0, &count, &bytes) < 0)
        return NULL;
    return Py_BuildValue("{s:s,s:O,s:L,s:L,s:n}", "dir", dir, "enabled",
                         cukit_cache_enabled() ? Py_True : Py_False, "entries", count, "bytes",
                         bytes, "memory_entries",
                         st->compile->compiled ? PyDict_GET_SIZE(st->compile->compiled) : (Py_ssize_t)0);
}

static PyObject *
mod_clear_cache(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"disk", NULL};
    int disk = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$p:clear_cache", kwlist, &disk))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    if (st->compile->compiled)
        PyDict_Clear(st->compile->compiled);
    if (!disk)
        return PyLong_FromLong(0);
    char dir[PATH_MAX];
    long long count = 0, bytes = 0;
    if (cukit_cache_dir(dir, sizeof dir) == 0 && walk_entries(dir, 1, &count, &bytes) < 0)
        return NULL;
    return PyLong_FromLongLong(count);
}

static PyMethodDef cache_functions[] = {
    {"cache_info", mod_cache_info, METH_NOARGS,
     "cache_info() -> dict: the kernel cache's folder, whether it is on, its entries and "
     "bytes on disk, and the modules kept in this process."},
    {"clear_cache", (PyCFunction)(void (*)(void))mod_clear_cache, METH_VARARGS | METH_KEYWORDS,
     "clear_cache(*, disk=True) -> int: forget the modules kept in this process and, unless "
     "disk=False, delete the cache's entries on disk; returns how many files were deleted."},
    {NULL},
};

int
cukit_cache_setup(PyObject *module, cukit_state *st)
{
    st->compile->compiled = PyDict_New();
    if (st->compile->compiled == NULL)
        return -1;
    return PyModule_AddFunctions(module, cache_functions);
}
