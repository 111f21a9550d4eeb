/* fft.h - the fft layer: cukit.fft's transforms on cuFFT or cukit's own kernels, and their plan cache */
#ifndef CUKIT_FFT_H
#define CUKIT_FFT_H

#include "compute/compute.h"

/* fft/'s part of the module state (st->fft; see cukit_state). */
typedef struct cukit_fft_state {
    PyObject *modules; /* strong ref: dict device ordinal -> Module of kernels/fft.cu, compiled
                          at the first transform on cukit's own kernels on that device */
    PyObject *plans;   /* strong ref: dict key tuple -> plan capsule, oldest use first (the
                          cache's order); NULL until the first plan */
    Py_ssize_t max_plans; /* the cache's bound; 0 keeps none */
    int backend;       /* 0 auto, 1 cuFFT, 2 cukit's own kernels */
    int last;          /* the path of the last transform: 0 none yet, 1 cuFFT, 2 cukit's */
    int warned;        /* 1: the missing cuFFT was reported */
} cukit_fft_state;

/* cukit._fft (one transform along one axis), _fft_config and the plan cache's functions.
 * 0 / -1. */
int cukit_fft_setup(PyObject *module, cukit_state *st);

#endif /* CUKIT_FFT_H */
