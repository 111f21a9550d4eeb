/* sort.h - the sort layer: cukit.sort, argsort and searchsorted on a stable merge sort of cukit's own */
#ifndef CUKIT_SORT_H
#define CUKIT_SORT_H

#include "compute/compute.h"

/* cukit.sort, cukit.argsort and cukit.searchsorted. 0 / -1. */
int cukit_sort_setup(PyObject *module, cukit_state *st);

#endif /* CUKIT_SORT_H */
