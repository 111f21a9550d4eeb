/* setup.c - the compute layer's setup: ufuncs and the Array's operators, the array
 * functions, ElementwiseKernel, reductions and scans */
#include "compute/compute.h"

int
ck_compute_setup(PyObject *module, cukit_state *st)
{
    if (ck_ufunc_setup(module, st) < 0 || ck_functions_setup(module, st) < 0 ||
        ck_elementwise_setup(module, st) < 0 || ck_reductions_setup(module, st) < 0 ||
        ck_reduce_kernel_setup(module, st) < 0 || ck_scan_setup(module, st) < 0 ||
        ck_index_setup(module, st) < 0 || ck_histogram_setup(module, st) < 0)
        return -1;
    return 0;
}
