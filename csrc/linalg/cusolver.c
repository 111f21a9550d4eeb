/* cusolver.c - placeholder: cukit's own kernels run every factorization */
#include "linalg/solver.h"

int cukit_cusolver_choose(cukit_state *st) { return 0; }
const char *cukit_cusolver_path(int *version) { *version = 0; return NULL; }
#define NOPE { PyErr_SetString(PyExc_RuntimeError, "no cuSOLVER"); return -1; }
int cukit_cusolver_lu(cukit_state *st, const solver_job *J, CUdeviceptr a, CUdeviceptr piv, CUdeviceptr info) NOPE
int cukit_cusolver_lu_solve(cukit_state *st, const solver_job *J, CUdeviceptr a, CUdeviceptr piv, CUdeviceptr b, long long nrhs) NOPE
int cukit_cusolver_cholesky(cukit_state *st, const solver_job *J, CUdeviceptr a, CUdeviceptr info) NOPE
int cukit_cusolver_eigh(cukit_state *st, const solver_job *J, CUdeviceptr a, CUdeviceptr w, CUdeviceptr info, int lower, int vectors) NOPE
int cukit_cusolver_qr(cukit_state *st, const solver_job *J, CUdeviceptr a, CUdeviceptr tau, CUdeviceptr info) NOPE
int cukit_cusolver_svd(cukit_state *st, const solver_job *J, CUdeviceptr a, CUdeviceptr s, CUdeviceptr u, CUdeviceptr vh, CUdeviceptr info, int full, int uv) NOPE
