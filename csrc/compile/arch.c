/* arch.c - architecture names ("sm_90", "sm_90a", "compute_90"): parsed strictly, checked against NVRTC */
#include "compile/program.h"

#include <string.h>

/* Parse n bytes of "sm_90", "sm_90a", "sm_100f", "compute_90" (or "90") strictly:
 * two or three digits, then at most one 'a' or 'f', nothing else. The number into
 * *num and the suffix ('\0', 'a' or 'f') into *suffix; 0, or -1 when it is none of
 * these. */
static int
parse_arch(const char *arch, size_t n, int *num, char *suffix)
{
    size_t at = 0;
    if (n > 3 && strncmp(arch, "sm_", 3) == 0)
        at = 3;
    else if (n > 8 && strncmp(arch, "compute_", 8) == 0)
        at = 8;
    int v = 0, digits = 0;
    for (; at < n && arch[at] >= '0' && arch[at] <= '9' && digits < 4; at++, digits++)
        v = v * 10 + (arch[at] - '0');
    *suffix = '\0';
    if (at < n && (arch[at] == 'a' || arch[at] == 'f'))
        *suffix = arch[at++];
    if (digits < 2 || digits > 3 || at != n || arch[at - digits - (*suffix != 0)] == '0')
        return -1;
    *num = v;
    return 0;
}

/* ValueError for an arch that cannot be compiled for, listing the valid forms and
 * what this NVRTC supports; `why` completes "arch 'sm_35' ...". Returns -1. */
static int
arch_error(PyObject *arch, const char *why)
{
    PyObject *list = PyUnicode_FromString("");
    int n = 0, archs[256];
    if (list && cukit_api.nvrtcGetNumSupportedArchs && cukit_api.nvrtcGetNumSupportedArchs(&n) == 0 &&
        n > 0 && n <= 256 && cukit_api.nvrtcGetSupportedArchs(archs) == 0) {
        for (int i = 0; list && i < n; i++)
            Py_SETREF(list, PyUnicode_FromFormat("%U%ssm_%d", list, i ? ", " : "", archs[i]));
    }
    if (list == NULL)
        return -1;
    PyErr_Format(PyExc_ValueError,
                 "arch %R %s. arch must look like \"sm_90\" (machine code for one GPU), "
                 "\"sm_90a\" (with that GPU's architecture-specific features, sm_90 and newer), "
                 "\"sm_100f\" (a family, sm_100 and newer) or \"compute_90\" (PTX)%s%U",
                 arch, why, PyUnicode_GET_LENGTH(list) ? "; this NVRTC supports " : "", list);
    Py_DECREF(list);
    return -1;
}

/* Whether this NVRTC can generate machine code for `cc`; 1 when it cannot say. */
int
cukit_nvrtc_supports(int cc)
{
    int n = 0;
    if (!cukit_api.nvrtcGetNumSupportedArchs || cukit_api.nvrtcGetNumSupportedArchs(&n) != 0 ||
        n <= 0 || n > 256)
        return 1;
    int archs[256];
    if (cukit_api.nvrtcGetSupportedArchs(archs) != 0)
        return 1;
    for (int i = 0; i < n; i++)
        if (archs[i] == cc)
            return 1;
    return 0;
}

/* The newest architecture this NVRTC knows, for PTX the driver can JIT. */
int
cukit_nvrtc_newest(void)
{
    int n = 0, archs[256];
    if (!cukit_api.nvrtcGetNumSupportedArchs || cukit_api.nvrtcGetNumSupportedArchs(&n) != 0 ||
        n <= 0 || n > 256 || cukit_api.nvrtcGetSupportedArchs(archs) != 0)
        return 0;
    return archs[n - 1];
}

int
cukit_arch_parse(cukit_state *st, PyObject *arch, int *num, char *suffix)
{
    if (!PyUnicode_Check(arch)) {
        PyErr_Format(PyExc_TypeError, "arch must be a str such as \"sm_90\", got %s",
                     Py_TYPE(arch)->tp_name);
        return -1;
    }
    Py_ssize_t len;
    const char *a = PyUnicode_AsUTF8AndSize(arch, &len);
    if (a == NULL)
        return -1;
    if (parse_arch(a, (size_t)len, num, suffix) < 0)
        return arch_error(arch, "is not an architecture");
    if (*suffix == 'a' && *num < 90)
        return arch_error(arch, "asks for architecture-specific features (the 'a'), which begin with sm_90");
    if (*suffix == 'f' && *num < 100)
        return arch_error(arch, "asks for an architecture family (the 'f'), which begin with sm_100");
    /* Checked against NVRTC here only if it is loaded: a cached compile needs none. */
    if (cukit_nvrtc_realpath() && !cukit_nvrtc_supports(*num))
        return arch_error(arch, "is not one this NVRTC can compile for");
    return 0;
}

int
cukit_arch_check_supported(const char *arch)
{
    int num;
    char suffix;
    const char *digits = strchr(arch, '_');
    digits = digits ? digits + 1 : arch;
    if (parse_arch(digits, strlen(digits), &num, &suffix) < 0 || cukit_nvrtc_supports(num))
        return 0;
    PyObject *name = PyUnicode_FromString(arch);
    if (name == NULL)
        return -1;
    arch_error(name, "is not one this NVRTC can compile for");
    Py_DECREF(name);
    return -1;
}
