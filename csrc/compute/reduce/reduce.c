/* reduce.c - the reduction engine: axes, the plan (kept and reduced dimensions, each
 * sorted and merged), the choice of kernel for the layout, and its one launch
 *
 * Layouts and kernels (reduce_codegen.c):
 *   reduced part one contiguous run (axis=-1, or every axis of a contiguous array):
 *     a block or a warp per row, vector loads; a long row is cut into splits, one even
 *     wave of blocks (a full reduction is one row, with a kernel of its own)
 *   reduced axis outside a kept one (axis=0 of a C-contiguous matrix): a thread per
 *     output, neighbouring threads on neighbouring columns, no transpose; where the
 *     innermost kept axis is contiguous and aligned, a block per 32 vectors of outputs
 *     (16 bytes of each row a thread), so a warp reads 512 contiguous bytes of a row,
 *     its warps on consecutive runs of rows; the reduced axis is split (blockIdx.y) so
 *     the grid fills the device and no thread sums more than 512 in a row
 *   anything else: a block or warp per row over any strides
 * Splits are folded in the same launch by the last block of each group to finish (a
 * counter zero on entry, reset by that block: in scratch the stream keeps between
 * launches, or the launch's own zeroed on its stream just before): one launch. */
#include "compute/reduce/reduce_impl.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The counters' part of a stream's kept scratch (cukit_stream_kept): a launch with up to
 * CK_KEPT_COUNTERS / 4 of them and partials that fit above it uses that scratch. */
#define CK_KEPT_COUNTERS 8192u

/* ------------------------------------------------------------------ the tables */

static void
tables_free(PyObject *capsule)
{
    ck_kcache *c = PyCapsule_GetPointer(capsule, "cukit.reduce_tables");
    if (c == NULL) {
        PyErr_Clear();
        return;
    }
    for (int i = 0; i < 2; i++)
        ck_kcache_clear(&c[i]);
    PyMem_Free(c);
}

ck_kcache *
ck_reduce_cache(cukit_state *st, int which)
{
    if (st->compute->reduce_tables == NULL) {
        ck_kcache *c = PyMem_Calloc(2, sizeof(ck_kcache));
        if (c == NULL)
            return (ck_kcache *)PyErr_NoMemory();
        st->compute->reduce_tables = PyCapsule_New(c, "cukit.reduce_tables", tables_free);
        if (st->compute->reduce_tables == NULL) {
            PyMem_Free(c);
            return NULL;
        }
    }
    ck_kcache *c = PyCapsule_GetPointer(st->compute->reduce_tables, "cukit.reduce_tables");
    return c ? &c[which] : NULL;
}

int
ck_acc_size(int tc)
{
    return tc == CUKIT_TC_F16 || tc == CUKIT_TC_BF16 ? 4 : ck_dtypes[tc].size;
}

/* ------------------------------------------------------------------ axes */

static int
axis_error(cukit_state *st, long long axis, int ndim)
{
    PyObject *m = PyImport_ImportModule("numpy.exceptions");
    PyObject *cls = m ? PyObject_GetAttrString(m, "AxisError") : NULL;
    Py_XDECREF(m);
    if (cls == NULL) {
        PyErr_Clear();
        cls = Py_NewRef(PyExc_ValueError);
    }
    PyObject *msg = PyUnicode_FromFormat("axis %lld is out of bounds for array of dimension %d",
                                         axis, ndim);
    if (msg)
        PyErr_SetObject(cls, msg);
    Py_XDECREF(msg);
    Py_DECREF(cls);
    (void)st;
    return -1;
}

int
ck_parse_axes(cukit_state *st, PyObject *axis, int ndim, uint64_t *axes)
{
    if (axis == NULL || axis == Py_None) {
        *axes = ndim >= 64 ? ~0ULL : ((1ULL << ndim) - 1);
        return 0;
    }
    *axes = 0;
    PyObject *seq = PyTuple_Check(axis) || PyList_Check(axis) ? PySequence_Tuple(axis)
                                                              : PyTuple_Pack(1, axis);
    if (seq == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(seq); i++) {
        PyObject *v = PyTuple_GET_ITEM(seq, i);
        if (PyBool_Check(v) || !PyIndex_Check(v)) {
            PyErr_Format(PyExc_TypeError,
                         "axis must be None, an integer or a tuple of integers, not %s",
                         Py_TYPE(v)->tp_name);
            Py_DECREF(seq);
            return -1;
        }
        long long a = PyLong_AsLongLong(v);
        if (a == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        if (a < -ndim || a >= ndim) {
            Py_DECREF(seq);
            return axis_error(st, a, ndim);
        }
        if (a < 0)
            a += ndim;
        if (*axes & (1ULL << a)) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError, "duplicate value in 'axis'");
            return -1;
        }
        *axes |= 1ULL << a;
    }
    Py_DECREF(seq);
    return 0;
}

int
ck_rout_shape(int ndim, const Py_ssize_t *shape, uint64_t axes, int keepdims,
              Py_ssize_t *oshape)
{
    int n = 0;
    for (int d = 0; d < ndim; d++) {
        if (axes & (1ULL << d)) {
            if (keepdims)
                oshape[n++] = 1;
        }
        else {
            oshape[n++] = shape[d];
        }
    }
    return n;
}

/* ------------------------------------------------------------------ the plan */

typedef struct {
    int n;
    long long shape[CUKIT_MAXDIM];
    long long s[CK_RMAXIN + 1][CUKIT_MAXDIM];
} group;

/* Merge neighbours every operand walks as one run; copy into the plan's arrays. */
static int
merge(group *g, int nops, long long *shape, long long (*s)[CK_RMAXD])
{
    int nd = 0;
    for (int d = 1; d < g->n; d++) {
        int ok = 1;
        for (int k = 0; k < nops && ok; k++)
            if (g->s[k][nd] != g->s[k][d] * g->shape[d])
                ok = 0;
        if (ok) {
            g->shape[nd] *= g->shape[d];
            for (int k = 0; k < nops; k++)
                g->s[k][nd] = g->s[k][d];
        }
        else {
            nd++;
            g->shape[nd] = g->shape[d];
            for (int k = 0; k < nops; k++)
                g->s[k][nd] = g->s[k][d];
        }
    }
    int n = g->n ? nd + 1 : 0;
    if (n > CK_RMAXD) {
        PyErr_Format(PyExc_ValueError,
                     "cukit reductions take up to %d kept and %d reduced dimensions that do "
                     "not merge; copy the array with cukit.ascontiguousarray first",
                     CK_RMAXD, CK_RMAXD);
        return -1;
    }
    for (int d = 0; d < n; d++) {
        shape[d] = g->shape[d];
        for (int k = 0; k < nops; k++)
            s[k][d] = g->s[k][d];
    }
    return n;
}

int
ck_rplan_make(ck_rplan *plan, cukit_Array *const *in, const int *kind, int nin, int ndim,
              const Py_ssize_t *shape, uint64_t axes, cukit_Array *out, int keep_order)
{
    group kept, reduced;
    kept.n = reduced.n = 0;
    plan->nin = nin;
    int nops = nin + 1, keep = out->ndim == ndim, oax = 0;
    long long nout = 1, nred = 1;
    for (int k = 0; k < nin; k++) {
        plan->kind[k] = kind[k];
        plan->itemsize[k] = in[k] ? (int)in[k]->itemsize : 0;
        if (in[k] && kind[k] != CK_OPND_SCALAR)
            plan->ptr[k] = cukit_array_ptr(in[k]);
    }
    plan->ptr[nin] = cukit_array_ptr(out);
    plan->itemsize[nin] = (int)out->itemsize;
    for (int d = 0; d < ndim; d++) {
        int red = (int)((axes >> d) & 1);
        int od = keep ? d : (red ? -1 : oax++);
        long long n = shape[d];
        if (red)
            nred *= n;
        else
            nout *= n;
        if (n == 1)
            continue;
        group *g = red ? &reduced : &kept;
        int j = g->n++;
        long long col[CK_RMAXIN + 1];
        for (int k = 0; k < nin; k++) {
            cukit_Array *a = in[k];
            int ad = a ? d - (ndim - a->ndim) : -1;
            col[k] = (a == NULL || kind[k] != CK_OPND_ARRAY || ad < 0 || a->shape[ad] == 1)
                         ? 0 : a->strides[ad];
        }
        col[nin] = red ? 0 : out->strides[od];
        /* reduced dimensions: outer to inner by the first input's strides */
        long long key = llabs(col[0]);
        while (red && !keep_order && j > 0 && llabs(g->s[0][j - 1]) < key) {
            g->shape[j] = g->shape[j - 1];
            for (int k = 0; k < nops; k++)
                g->s[k][j] = g->s[k][j - 1];
            j--;
        }
        g->shape[j] = n;
        for (int k = 0; k < nops; k++)
            g->s[k][j] = col[k];
    }
    plan->nout = nout;
    plan->nred = nred;
    if ((plan->kd = merge(&kept, nops, plan->kshape, plan->ks)) < 0 ||
        (plan->rd = merge(&reduced, nops, plan->rshape, plan->rs)) < 0)
        return -1;
    return 0;
}

/* ------------------------------------------------------------------ the launch */

/* Kernel fn of the reduction cached under key: compiled alone (its module holds that
 * kernel only, so a first call compiles what it runs) and added to the cache with its
 * occupancy. 0 / -1. */
static int
load_one(cukit_state *st, cukit_Device *dev, ck_kcache *cache, uint64_t key, int fn,
         const ck_rspec *spec, const char *file, PyObject *options)
{
    PyObject *src = ck_reduce_source(spec, fn);
    if (src == NULL)
        return -1;
    PyObject *opts = options ? Py_NewRef(options) : PyTuple_New(0);
    PyObject *module = NULL;
    CUfunction f;
    int rc = opts ? cukit_builtin_function(st, dev, src, file, opts, ck_rfunc_names[fn], &module,
                                          &f)
                   : -1;
    Py_DECREF(src);
    Py_XDECREF(opts);
    if (rc < 0)
        return -1;
    /* blocks of the kernel one SM holds at once (0: unknown), kept in the entry */
    int occ = 0, nt = fn == RF_FULL ? CK_FNT : CK_THREADS;
    if (CU_CALL(st, cuOccupancyMaxActiveBlocksPerMultiprocessor, (&occ, f, nt, 0)) < 0) {
        PyErr_Clear();
        occ = 0;
    }
    rc = ck_kcache_add(cache, key | (uint64_t)fn, f, occ, module);
    Py_DECREF(module);
    return rc;
}

/* Splits of a reduction whose splits take `per` blocks each, all of equal work, in
 * [lo, hi]: blocks of equal work run in waves of `want` (the blocks resident at once),
 * so a grid a few blocks past a whole wave runs those few nearly alone for a block's
 * whole time (the axis-0 sum of 8192 x 8192 float32: 704 blocks on an H200's 660 slots).
 * For k = 1, 2, ... 16 waves, the most splits whose blocks fit in k waves: the first
 * of these that fills its waves to 90% or more; as many as hi allows when that is at
 * most one wave; else the best filling found. */
static long long
wave_splits(long long per, long long want, long long lo, long long hi)
{
    if (per < 1)
        per = 1;
    if (want < 1)
        want = 1;
    if (lo < 1)
        lo = 1;
    if (hi < lo)
        hi = lo;
    if (hi <= want / per)
        return hi;
    long long best = lo;
    double beff = 0;
    for (long long k = 1; k <= 16; k++) {
        long long s = k * want / per; /* the most splits within k waves */
        if (s > hi)
            s = hi;
        if (s < lo)
            continue;
        long long n = s * per, waves = (n + want - 1) / want;
        double eff = (double)n / (double)(waves * want);
        if (eff >= 0.9)
            return s;
        if (eff > beff) {
            beff = eff;
            best = s;
        }
    }
    return best;
}

/* A column reduction's grid: splits kept within [1, min(most, 65535)], each split an
 * equal chunk of the nred rows (the last one shorter), bx blocks across the outputs. */
static void
col_grid(long long nred, long long bx, long long most, long long *splits, long long *chunk,
         long long *gx, long long *gy)
{
    long long n = *splits;
    if (n > most)
        n = most;
    if (n > 65535)
        n = 65535;
    if (n < 1)
        n = 1;
    *chunk = (nred + n - 1) / n;
    *splits = *chunk ? (nred + *chunk - 1) / *chunk : 1;
    *gx = bx > 0x7fffffffLL ? 0x7fffffffLL : bx;
    *gy = *splits;
}

void
ck_rplan_choose(const ck_rplan *plan, int vec, int sm, const int *occ, ck_rlaunch *launch)
{
    int nin = plan->nin;
    if (sm < 1)
        sm = 1;
    /* blocks resident at once: one wave of them fills the device evenly */
    long long want, nred = plan->nred, nout = plan->nout;
    int first = -1; /* the first array input */
    for (int k = 0; k < nin && first < 0; k++)
        if (plan->kind[k] == CK_OPND_ARRAY)
            first = k;
    int contig = plan->rd == 1;
    for (int k = 0; k < nin && contig; k++)
        if (plan->kind[k] == CK_OPND_ARRAY && plan->rs[k][0] != plan->itemsize[k])
            contig = 0;
    int col = 0;
    if (!contig && plan->kd > 0 && first >= 0 && nout >= 32) {
        long long kmin = -1, rmin = -1;
        for (int d = 0; d < plan->kd; d++) {
            long long v = llabs(plan->ks[first][d]);
            if (v && (kmin < 0 || v < kmin))
                kmin = v;
        }
        for (int d = 0; d < plan->rd; d++) {
            long long v = llabs(plan->rs[first][d]);
            if (v && (rmin < 0 || v < rmin))
                rmin = v;
        }
        col = kmin > 0 && (rmin < 0 || kmin < rmin);
    }
    if (nred <= 16 && nout >= 4096)
        col = 1;
    /* a vector of cv outputs per thread: every array input contiguous along the innermost
     * kept axis, whose extent cv divides, and every vector aligned */
    int cv = col && vec > 1 && plan->kd > 0 && first >= 0 && plan->kshape[plan->kd - 1] % vec == 0 ? vec : 0;
    for (int k = 0; k < nin && cv; k++) {
        if (plan->kind[k] != CK_OPND_ARRAY)
            continue;
        long long align = (long long)cv * plan->itemsize[k];
        if (plan->ks[k][plan->kd - 1] != plan->itemsize[k] || plan->ptr[k] % (CUdeviceptr)align != 0)
            cv = 0;
        for (int d = 0; d < plan->kd - 1 && cv; d++)
            if (plan->ks[k][d] % align != 0)
                cv = 0;
        for (int d = 0; d < plan->rd && cv; d++)
            if (plan->rs[k][d] % align != 0)
                cv = 0;
    }
    long long splits = 1, chunk = nred, gx, gy = 1;
    int fn;
    if (col && cv) {
        /* a block per 32 vectors of outputs (a warp's width) and split; the split's rows
         * shared by the block's warps, 16 rows a warp or more */
        fn = launch->occ_fn = RF_COLV;
        want = (long long)sm * (occ[fn] > 0 ? occ[fn] : 8);
        long long bx = (nout / cv + 31) / 32;
        /* at most 512 rows a warp (the accuracy bound of the docs) */
        long long fewest = (nred + 512 * (CK_THREADS / 32) - 1) / (512 * (CK_THREADS / 32));
        long long most = nred / (16 * (CK_THREADS / 32));
        if (most < fewest)
            most = fewest;
        splits = wave_splits(bx, want, fewest, most < 65535 ? most : 65535);
        col_grid(nred, bx, most, &splits, &chunk, &gx, &gy);
    }
    else if (col) {
        fn = launch->occ_fn = RF_COL;
        want = (long long)sm * (occ[fn] > 0 ? occ[fn] : 8);
        long long bx = (nout + CK_THREADS - 1) / CK_THREADS;
        splits = wave_splits(bx, want, (nred + 511) / 512, nred < 65535 ? nred : 65535);
        col_grid(nred, bx, nred, &splits, &chunk, &gx, &gy);
    }
    else {
        int v = vec > 1 ? vec : 1, vec = contig && v > 1;
        for (int k = 0; k < nin && vec; k++) {
            if (plan->kind[k] != CK_OPND_ARRAY)
                continue;
            long long align = (long long)v * plan->itemsize[k];
            if (plan->ptr[k] % (CUdeviceptr)align != 0)
                vec = 0;
            for (int d = 0; d < plan->kd; d++)
                if (plan->ks[k][d] % align != 0)
                    vec = 0;
        }
        /* one output of one contiguous aligned run: the full reduction's own kernel */
        int full = vec && nout == 1 && plan->kd == 0, kfn = full ? RF_FULL : vec ? RF_ROWV : RF_ROWN;
        /* the occupancy matters to a long row only */
        launch->occ_fn = nred > 16384 ? kfn : -1;
        want = (long long)sm * (occ[kfn] > 0 ? occ[kfn] : 8);
        if (nout < want && nred > 16384)
            splits = wave_splits(nout, want, 1, nred / 8192);
        chunk = (nred + splits - 1) / splits;
        if (vec)
            chunk = (chunk + v - 1) / v * v;
        splits = chunk ? (nred + chunk - 1) / chunk : 1;
        /* a warp per row has no fold: a split row always takes a block (chunk >= 8192) */
        int block = chunk >= 2048 || splits > 1;
        fn = vec ? (block ? (splits > 1 ? RF_ROWV : RF_ROWV1) : RF_ROWVW) : (block ? RF_ROWN : RF_ROWNW);
        if (full && (block || splits > 1))
            fn = RF_FULL;
        long long per = block ? 1 : CK_THREADS / 32, units = nout * splits;
        gx = (units + per - 1) / per;
        if (gx > 0x7fffffffLL)
            gx = 0x7fffffffLL;
    }
    /* the last block's fold: the whole block on each output's partials where the outputs
     * are few (a full reduction), else a warp per output; a counter per group of blocks
     * that share outputs (the columns' blockIdx.x) */
    launch->fblock = nout < CK_THREADS / 32;
    launch->ncnt = splits > 1 ? (col ? gx : 1) : 0;
    launch->fn = fn;
    launch->splits = splits;
    launch->chunk = chunk;
    launch->gx = gx;
    launch->gy = gy;
}

int
ck_rplan_run(cukit_state *st, cukit_Device *dev, ck_kcache *cache, uint64_t key,
             const ck_rspec *spec, const char *file, PyObject *options, ck_rspec_texts texts,
             void *ctx, int acc_size, ck_rplan *plan, CUstream h)
{
    if (plan->nout == 0)
        return 0;
    int nin = plan->nin, nops = nin + 1;
    long long nout = plan->nout, nred = plan->nred;
    /* The choice reads one kernel's occupancy (launch.occ_fn): that kernel is loaded
     * first, so that the choice is the same whichever kernels are loaded; then the
     * kernel chosen. Each is compiled at its first use (texts, when given, completes
     * spec and names the file then). */
    ck_rspec full;
    char fname[64];
    int occ[RF_COUNT];
    for (int i = 0; i < RF_COUNT; i++) {
        ck_entry *x = ck_kcache_find(cache, key | (uint64_t)i);
        occ[i] = x ? x->vec : 0;
    }
    ck_rlaunch launch;
    ck_rplan_choose(plan, spec->vec, dev->sm_count, occ, &launch);
    for (int pass = 0; pass < 2; pass++) {
        int need = pass == 0 ? launch.occ_fn : launch.fn;
        if (need < 0 || ck_kcache_find(cache, key | (uint64_t)need) != NULL)
            continue;
        if (texts) {
            if (texts(ctx, &full, fname, sizeof fname) < 0)
                return -1;
            spec = &full;
            file = fname;
            texts = NULL;
        }
        if (load_one(st, dev, cache, key, need, spec, file, options) < 0)
            return -1;
        if (pass == 0) {
            occ[need] = ck_kcache_find(cache, key | (uint64_t)need)->vec;
            ck_rplan_choose(plan, spec->vec, dev->sm_count, occ, &launch);
        }
    }
    int fn = launch.fn;
    long long splits = launch.splits, chunk = launch.chunk, gx = launch.gx, gy = launch.gy;
    ck_entry *e = ck_kcache_find(cache, key | (uint64_t)fn);
    if (e == NULL) {
        PyErr_SetString(PyExc_SystemError, "reduction kernel missing after load");
        return -1;
    }
    /* the argument block, as struct ck_rargs lays it out */
    _Alignas(16) unsigned char buf[4096];
    size_t off_init = 16 * (size_t)nops, off_part = off_init + 16, off_nout = off_part + 8;
    size_t off_splits = off_nout + 40, off_kshape = off_splits + 16;
    size_t off_rshape = off_kshape + 8 * CK_RMAXD, off_ks = off_rshape + 8 * CK_RMAXD;
    size_t off_rs = off_ks + 8 * CK_RMAXD * (size_t)nops;
    size_t size = (off_rs + 8 * CK_RMAXD * (size_t)nops + 15) / 16 * 16;
    memset(buf, 0, size);
    for (int k = 0; k <= nin; k++) {
        if (k < nin && plan->kind[k] == CK_OPND_SCALAR)
            memcpy(buf + 16 * k, plan->val[k].b, 16);
        else
            memcpy(buf + 16 * k, &plan->ptr[k], 8);
    }
    memcpy(buf + off_init, plan->init.b, 16);
    /* splits: scratch ordered on the launch's stream (so a reduction on another stream
     * never shares it): the fold's counters, zero on entry (the last block resets them),
     * then the partials. The stream's kept scratch where it has one, else the launch's
     * own, with its counters zeroed here. */
    cukit_scratch part = {0, 0};
    if (splits > 1) {
        size_t head = (4 * (size_t)launch.ncnt + 15) / 16 * 16;
        size_t parts = (size_t)(nout * splits) * (size_t)acc_size;
        CUdeviceptr p = 0;
        /* kept scratch: the counters just below CK_KEPT_COUNTERS, the partials above it,
         * so that no launch's partials fall on another's counters, which stay zero */
        int kept = head <= CK_KEPT_COUNTERS
                       ? cukit_stream_kept(dev, h, CUKIT_KEPT_FOLD, CK_KEPT_COUNTERS + parts, &p, NULL)
                       : 0;
        if (kept < 0)
            return -1;
        if (kept)
            p += CK_KEPT_COUNTERS - head;
        else {
            size_t bytes = head + parts;
            if (cukit_scratch_alloc(dev, bytes, h, &part) < 0)
                return -1;
            if (CU_CALL(st, cuMemsetD8Async, (part.ptr, 0, 4 * (size_t)launch.ncnt, h)) < 0) {
                cukit_scratch_release(dev, &part, h);
                return -1;
            }
            p = part.ptr;
        }
        memcpy(buf + off_part, &p, 8);
    }
    long long vals[4] = {nout, nred, chunk, plan->count};
    memcpy(buf + off_nout, vals, 32);
    memcpy(buf + off_nout + 32, &plan->d, 8);
    int ints[4] = {(int)splits, plan->kd, plan->rd, launch.fblock};
    memcpy(buf + off_splits, ints, 16);
    memcpy(buf + off_kshape, plan->kshape, 8 * (size_t)plan->kd);
    memcpy(buf + off_rshape, plan->rshape, 8 * (size_t)plan->rd);
    for (int k = 0; k < nops; k++) {
        memcpy(buf + off_ks + 8 * CK_RMAXD * (size_t)k, plan->ks[k], 8 * (size_t)plan->kd);
        memcpy(buf + off_rs + 8 * CK_RMAXD * (size_t)k, plan->rs[k], 8 * (size_t)plan->rd);
    }
    void *args[] = {buf};
    const int nt = fn == RF_FULL ? CK_FNT : CK_THREADS;
    int rc = cukit_builtin_launch(dev, e->func, (unsigned)gx, (unsigned)gy, (unsigned)nt, 1, h, args);
    if (cukit_scratch_release(dev, &part, h) < 0)
        rc = -1;
    return rc;
}

/* ------------------------------------------------------------------ for the tests */

static PyObject *
ll_tuple(const long long *v, int n)
{
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++) {
        PyObject *x = PyLong_FromLongLong(v[i]);
        if (x == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

/* Fill a (not Python-visible) Array struct from (shape, strides, itemsize, address). */
static int
fake_array(PyObject *spec, cukit_Array *a)
{
    PyObject *shape, *strides;
    Py_ssize_t itemsize;
    unsigned long long addr;
    memset(a, 0, sizeof *a);
    if (!PyArg_ParseTuple(spec, "OOnK", &shape, &strides, &itemsize, &addr))
        return -1;
    Py_ssize_t nd = PySequence_Size(shape);
    if (nd < 0 || nd > CUKIT_MAXDIM || PySequence_Size(strides) != nd) {
        PyErr_SetString(PyExc_ValueError, "_reduce_plan: bad shape or strides");
        return -1;
    }
    a->ndim = (int)nd;
    a->itemsize = itemsize;
    a->base = (CUdeviceptr)addr;
    a->size = 1;
    for (Py_ssize_t d = 0; d < nd; d++) {
        PyObject *s = PySequence_GetItem(shape, d), *t = PySequence_GetItem(strides, d);
        a->shape[d] = s ? PyLong_AsSsize_t(s) : -1;
        a->strides[d] = t ? PyLong_AsSsize_t(t) : -1;
        Py_XDECREF(s);
        Py_XDECREF(t);
        if (PyErr_Occurred())
            return -1;
        a->size *= a->shape[d];
    }
    return 0;
}

PyObject *
ck_reduce_plan_py(PyObject *m, PyObject *args)
{
    PyObject *inputs, *axes_o, *out_spec;
    int keep_order = 0, vec = 4, sm = 132, blocks = 8;
    if (!PyArg_ParseTuple(args, "OOO|piii:_reduce_plan", &inputs, &axes_o, &out_spec, &keep_order,
                          &vec, &sm, &blocks))
        return NULL;
    cukit_state *st = PyModule_GetState(m);
    Py_ssize_t nin = PySequence_Size(inputs);
    if (nin < 1 || nin > CK_RMAXIN) {
        PyErr_SetString(PyExc_ValueError, "_reduce_plan: 1 to 8 inputs");
        return NULL;
    }
    cukit_Array arrs[CK_RMAXIN], out;
    cukit_Array *in[CK_RMAXIN];
    int kinds[CK_RMAXIN] = {0};
    for (Py_ssize_t k = 0; k < nin; k++) {
        PyObject *s = PySequence_GetItem(inputs, k);
        int rc = s ? fake_array(s, &arrs[k]) : -1;
        Py_XDECREF(s);
        if (rc < 0)
            return NULL;
        in[k] = &arrs[k];
    }
    if (fake_array(out_spec, &out) < 0)
        return NULL;
    int ndim;
    Py_ssize_t shape[CUKIT_MAXDIM];
    uint64_t axes;
    ck_rplan plan;
    if (ck_broadcast(in, (int)nin, &ndim, shape) < 0 || ck_parse_axes(st, axes_o, ndim, &axes) < 0 ||
        ck_rplan_make(&plan, in, kinds, (int)nin, ndim, shape, axes, &out, keep_order) < 0)
        return NULL;
    ck_rlaunch launch;
    int occ[RF_COUNT];
    for (int i = 0; i < RF_COUNT; i++)
        occ[i] = blocks;
    ck_rplan_choose(&plan, vec, sm, occ, &launch);
    PyObject *ks = PyList_New(0), *rs = PyList_New(0);
    for (int k = 0; ks && rs && k <= nin; k++) {
        PyObject *a = ll_tuple(plan.ks[k], plan.kd), *b = ll_tuple(plan.rs[k], plan.rd);
        if (!a || !b || PyList_Append(ks, a) < 0 || PyList_Append(rs, b) < 0)
            Py_CLEAR(ks);
        Py_XDECREF(a);
        Py_XDECREF(b);
    }
    PyObject *r = ks && rs ? Py_BuildValue("{sLsLsNsNsOsOsisLsLsLsLsLsi}", "nout", plan.nout, "nred",
                                           plan.nred, "kshape", ll_tuple(plan.kshape, plan.kd), "rshape",
                                           ll_tuple(plan.rshape, plan.rd), "ks", ks, "rs", rs, "fn",
                                           launch.fn, "splits", launch.splits, "chunk", launch.chunk, "gx",
                                           launch.gx, "gy", launch.gy, "ncnt", launch.ncnt, "fblock", launch.fblock)
                           : NULL;
    Py_XDECREF(ks);
    Py_XDECREF(rs);
    return r;
}
