/* scan.c - stub */
#include "compute/reduce_impl.h"
PyObject *ck_scan_call(cukit_state *st, int which, PyObject *const *args, Py_ssize_t nargs,
                       PyObject *kwnames) { (void)st; (void)which; (void)args; (void)nargs; (void)kwnames; PyErr_SetString(PyExc_NotImplementedError, "x"); return NULL; }
int ck_scan_setup(PyObject *module, cukit_state *st) { (void)module; (void)st; return 0; }
int ck_reduce_kernel_setup(PyObject *module, cukit_state *st) { (void)module; (void)st; return 0; }
