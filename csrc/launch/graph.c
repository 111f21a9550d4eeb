/* graph.c - cukit.Graph and cukit.KernelNode: CUDA graphs by stream capture or by hand
 *
 * A graph replays launches whose arguments were packed when they were recorded,
 * so it holds strong references to every kernel and argument its nodes use:
 * memory a graph writes cannot be freed while the graph lives. */
#include "launch/launch.h"

#include <string.h>

typedef struct {
    PyObject_HEAD
    cukit_state *st;
    cukit_Device *device;     /* strong ref */
    CUgraph graph;            /* owned; NULL until a capture ends */
    CUgraphExec exec;         /* owned; NULL until the first launch, or after a change */
    cukit_Stream *capturing;  /* strong ref: the stream of `with stream.capture()`, or NULL */
    PyObject *nodes;          /* strong ref: list of KernelNode, in capture or add order */
    PyObject *keep;           /* strong ref: list of what captured work uses */
} cukit_Graph;

typedef struct {
    PyObject_HEAD
    cukit_Graph *graph;       /* strong ref */
    cukit_Kernel *kernel;     /* strong ref */
    CUgraphNode node;         /* owned by graph->graph */
    CUDA_KERNEL_NODE_PARAMS params; /* configuration; kernelParams only valid during a call */
    PyObject *args;           /* strong ref: tuple, the arguments the node now holds */
} cukit_KernelNode;

static cukit_KernelNode *
node_create(cukit_Graph *g, cukit_Kernel *k, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS *p,
            PyObject *args)
{
    cukit_KernelNode *n = PyObject_GC_New(cukit_KernelNode, g->st->launch->KernelNodeType);
    if (n == NULL)
        return NULL;
    n->graph = (cukit_Graph *)Py_NewRef(g);
    n->kernel = (cukit_Kernel *)Py_NewRef(k);
    n->node = node;
    n->params = *p;
    n->params.kernelParams = NULL;
    n->params.extra = NULL;
    n->args = Py_NewRef(args);
    PyObject_GC_Track(n);
    if (PyList_Append(g->nodes, (PyObject *)n) < 0) {
        Py_DECREF(n);
        return NULL;
    }
    return n;
}

static void
drop_exec(cukit_Graph *g)
{
    if (g->exec) {
        cukit_api.cuGraphExecDestroy(g->exec);
        g->exec = NULL;
    }
}

static cukit_Graph *
graph_alloc(cukit_state *st, cukit_Device *dev)
{
    cukit_Graph *g = PyObject_GC_New(cukit_Graph, st->launch->GraphType);
    if (g == NULL)
        return NULL;
    g->st = st;
    g->device = (cukit_Device *)Py_NewRef(dev);
    g->graph = NULL;
    g->exec = NULL;
    g->capturing = NULL;
    g->nodes = PyList_New(0);
    g->keep = PyList_New(0);
    PyObject_GC_Track(g);
    if (g->nodes == NULL || g->keep == NULL) {
        Py_DECREF(g);
        return NULL;
    }
    return g;
}

/* ------------------------------------------------------------------ capture */

/* Stream.capture() (hooks.stream_capture): a Graph to use as
 * `with stream.capture() as graph:`. */
static PyObject *
stream_capture(PyObject *stream)
{
    cukit_Stream *s = (cukit_Stream *)stream;
    if (s->handle == NULL) {
        PyErr_SetString(PyExc_ValueError,
                        "the default stream cannot be captured; capture on a cukit.Stream()");
        return NULL;
    }
    cukit_Graph *g = graph_alloc(s->st, s->device);
    if (g)
        g->capturing = (cukit_Stream *)Py_NewRef(s);
    return (PyObject *)g;
}

static PyObject *
graph_enter(cukit_Graph *self, PyObject *Py_UNUSED(ignored))
{
    cukit_Stream *s = self->capturing;
    if (s == NULL || self->graph != NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "only a graph from stream.capture() is a context manager, and only once");
        return NULL;
    }
    if (s->capture != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "this stream is already being captured");
        return NULL;
    }
    if (cukit_device_activate(s->device) < 0)
        return NULL;
    if (cukit_capture_begin(s) < 0)
        return NULL;
    if (CU_CALL(self->st, cuStreamBeginCapture, (s->handle, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)) < 0) {
        Py_DECREF(cukit_capture_end(s));
        return NULL;
    }
    return Py_NewRef(self);
}

/* Match the captured kernel nodes with the launches recorded during capture. */
static int
collect_nodes(cukit_Graph *g, PyObject *recorded)
{
    size_t n = 0;
    if (CU_CALL(g->st, cuGraphGetNodes, (g->graph, NULL, &n)) < 0)
        return -1;
    CUgraphNode *nodes = PyMem_Calloc(n ? n : 1, sizeof *nodes);
    char *used = PyMem_Calloc((size_t)PyList_GET_SIZE(recorded) + 1, 1);
    int rc = -1;
    if (nodes == NULL || used == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* (a capture that recorded nothing: the driver refuses a second call with n == 0) */
    if (n > 0 && CU_CALL(g->st, cuGraphGetNodes, (g->graph, nodes, &n)) < 0)
        goto done;
    for (size_t i = 0; i < n; i++) {
        int type = -1;
        CUDA_KERNEL_NODE_PARAMS p;
        memset(&p, 0, sizeof p);
        if (CU_CALL(g->st, cuGraphNodeGetType, (nodes[i], &type)) < 0)
            goto done;
        if (type != CU_GRAPH_NODE_TYPE_KERNEL)
            continue;
        if (CU_CALL(g->st, cuGraphKernelNodeGetParams, (nodes[i], &p)) < 0)
            goto done;
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(recorded); j++) {
            PyObject *t = PyList_GET_ITEM(recorded, j);
            cukit_Kernel *k = (cukit_Kernel *)PyTuple_GET_ITEM(t, 0);
            if (used[j] || !Py_IS_TYPE(k, g->st->launch->KernelType) || k->func != p.func)
                continue;
            used[j] = 1;
            PyObject *args = PyTuple_GetSlice(t, 1, PyTuple_GET_SIZE(t));
            cukit_KernelNode *kn = args ? node_create(g, k, nodes[i], &p, args) : NULL;
            Py_XDECREF(args);
            if (kn == NULL)
                goto done;
            Py_DECREF(kn);
            break;
        }
    }
    rc = 0;
done:
    PyMem_Free(nodes);
    PyMem_Free(used);
    return rc;
}

static PyObject *
graph_exit(cukit_Graph *self, PyObject *args)
{
    cukit_Stream *s = self->capturing;
    PyObject *exc_type = Py_None;
    if (PyTuple_GET_SIZE(args) > 0)
        exc_type = PyTuple_GET_ITEM(args, 0);
    if (s == NULL || s->capture == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "__exit__ without a capture in progress");
        return NULL;
    }
    PyObject *recorded = cukit_capture_end(s);
    CUgraph graph = NULL;
    CUresult res = cukit_api.cuStreamEndCapture(s->handle, &graph);
    int ok = 0;
    if (exc_type != Py_None) {
        /* The block raised: drop what was captured and let the exception through. */
        if (graph)
            cukit_api.cuGraphDestroy(graph);
        Py_DECREF(recorded);
        Py_RETURN_FALSE;
    }
    if (cukit_check_cu(self->st, res, "cuStreamEndCapture") == 0) {
        self->graph = graph;
        PyObject *extend = PyObject_CallMethod(self->keep, "extend", "O", recorded);
        ok = extend != NULL && collect_nodes(self, recorded) == 0;
        Py_XDECREF(extend);
    }
    Py_DECREF(recorded);
    if (!ok)
        return NULL;
    Py_RETURN_FALSE;
}

/* ------------------------------------------------------------------ building by hand */

static PyObject *
graph_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"device", NULL};
    PyObject *device = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:Graph", kwlist, &device))
        return NULL;
    cukit_state *st = cukit_state_of_type(type);
    cukit_Device *dev = cukit_device_arg(st, device);
    if (dev == NULL || cukit_device_activate(dev) < 0)
        return NULL;
    cukit_Graph *g = graph_alloc(st, dev);
    if (g && CU_CALL(st, cuGraphCreate, (&g->graph, 0)) < 0)
        Py_CLEAR(g);
    return (PyObject *)g;
}

/* Pack args for node n's kernel and hand them to the driver as its parameters. */
static int
set_params(cukit_KernelNode *n, PyObject *const *args, Py_ssize_t nargs, int add,
           const CUgraphNode *deps, size_t ndeps)
{
    cukit_Kernel *k = n->kernel;
    const cukit_Signature *sig = k->sig;
    if (nargs != sig->nparams)
        return cukit_arg_count_error(k->sig, nargs);
    cukit_params packed;
    if (cukit_params_init(&packed, sig) < 0)
        return -1;
    int rc = cukit_kernel_pack(k, args, packed.buf, packed.ptrs);
    CUDA_KERNEL_NODE_PARAMS p = n->params;
    p.kernelParams = packed.ptrs; /* the driver copies the values */
    cukit_Graph *g = n->graph;
    if (rc == 0)
        rc = cukit_device_activate(g->device);
    if (rc == 0 && add) {
        rc = CU_CALL(g->st, cuGraphAddKernelNode, (&n->node, g->graph, deps, ndeps, &p));
        if (rc == 0)
            drop_exec(g);
    }
    else if (rc == 0) {
        rc = CU_CALL(g->st, cuGraphKernelNodeSetParams, (n->node, &p));
        if (rc == 0 && g->exec)
            rc = CU_CALL(g->st, cuGraphExecKernelNodeSetParams, (g->exec, n->node, &p));
    }
    cukit_params_release(&packed);
    if (rc < 0)
        return -1;
    PyObject *t = PyTuple_New(nargs);
    if (t == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < nargs; i++)
        PyTuple_SET_ITEM(t, i, Py_NewRef(args[i]));
    Py_XSETREF(n->args, t);
    return 0;
}

static PyObject *
graph_add_kernel(cukit_Graph *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    cukit_state *st = self->st;
    if (self->graph == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "add nodes after the capture has ended");
        return NULL;
    }
    if (nargs < 1 || !Py_IS_TYPE(args[0], st->launch->KernelType)) {
        PyErr_SetString(PyExc_TypeError,
                        "add_kernel(kernel, *args, grid=, block=, shared_mem=0, depends_on=())");
        return NULL;
    }
    cukit_Kernel *k = (cukit_Kernel *)args[0];
    if (k->device != self->device) {
        PyErr_SetString(PyExc_ValueError, "the kernel is loaded on another device than the graph");
        return NULL;
    }
    /* Split depends_on= off the launch keywords. */
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *deps_o = NULL, *launch_kw = PyList_New(0), *launch_vals = PyList_New(0);
    cukit_KernelNode *n = NULL;
    CUgraphNode deps[64];
    size_t ndeps = 0;
    if (launch_kw == NULL || launch_vals == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, i);
        if (PyUnicode_CompareWithASCIIString(key, "depends_on") == 0)
            deps_o = args[nargs + i];
        else if (PyList_Append(launch_kw, key) < 0 || PyList_Append(launch_vals, args[nargs + i]) < 0)
            goto done;
    }
    if (deps_o) {
        PyObject *seq = PySequence_Fast(deps_o, "depends_on must be a sequence of KernelNode");
        if (seq == NULL)
            goto done;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
            PyObject *d = PySequence_Fast_GET_ITEM(seq, i);
            if (!Py_IS_TYPE(d, st->launch->KernelNodeType) || ((cukit_KernelNode *)d)->graph != self ||
                ndeps == 64) {
                PyErr_SetString(PyExc_TypeError,
                                "depends_on takes up to 64 KernelNodes of this same graph");
                Py_DECREF(seq);
                goto done;
            }
            deps[ndeps++] = ((cukit_KernelNode *)d)->node;
        }
        Py_DECREF(seq);
    }
    PyObject *kwt = PyList_AsTuple(launch_kw);
    if (kwt == NULL)
        goto done;
    cukit_launch_cfg cfg;
    int rc = cukit_launch_config(k, PySequence_Fast_ITEMS(launch_vals), kwt, 0, &cfg);
    Py_DECREF(kwt);
    if (rc < 0)
        goto done;
    if (cfg.cooperative || cfg.cluster[0]) {
        PyErr_SetString(PyExc_ValueError,
                        "cooperative and cluster launches are not supported as graph nodes yet");
        goto done;
    }
    CUDA_KERNEL_NODE_PARAMS p = {k->func, cfg.grid[0], cfg.grid[1], cfg.grid[2], cfg.block[0],
                                 cfg.block[1], cfg.block[2], cfg.shared, NULL, NULL, NULL, NULL};
    n = PyObject_GC_New(cukit_KernelNode, st->launch->KernelNodeType);
    if (n == NULL)
        goto done;
    n->graph = (cukit_Graph *)Py_NewRef(self);
    n->kernel = (cukit_Kernel *)Py_NewRef(k);
    n->node = NULL;
    n->params = p;
    n->args = NULL;
    PyObject_GC_Track(n);
    if (set_params(n, args + 1, nargs - 1, 1, deps, ndeps) < 0 ||
        PyList_Append(self->nodes, (PyObject *)n) < 0)
        Py_CLEAR(n);
done:
    Py_XDECREF(launch_kw);
    Py_XDECREF(launch_vals);
    return (PyObject *)n;
}

/* launch()'s arguments when they are not 0 or 1 positional: stream= by keyword, or
 * the TypeError. 0 / -1. */
static int
launch_keywords(cukit_state *st, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                PyObject **stream)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs + nkw > 1) {
        PyErr_Format(PyExc_TypeError, "launch() takes at most 1 argument, the stream (%zd given)",
                     nargs + nkw);
        return -1;
    }
    if (nkw == 1) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, 0);
        if (key != st->launch->str_stream && PyUnicode_CompareWithASCIIString(key, "stream") != 0) {
            PyErr_Format(PyExc_TypeError, "launch() got an unexpected keyword argument %R; it "
                         "takes stream= only", key);
            return -1;
        }
        *stream = args[nargs];
    }
    return 0;
}

/* launch(stream=None): a replay is cuGraphLaunch and as little else as may be: the
 * stream read without an argument parser, no allocation, and the GIL kept when no
 * other Python thread could run meanwhile (as for a kernel launch, run.c says why). */
static PyObject *
graph_launch(cukit_Graph *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *stream = nargs == 1 ? args[0] : Py_None;
    if ((nargs > 1 || kwnames != NULL) &&
        launch_keywords(self->st, args, nargs, kwnames, &stream) < 0)
        return NULL;
    if (self->graph == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the graph is empty: the capture has not ended");
        return NULL;
    }
    CUstream h;
    if (cukit_stream_handle(self->st, stream, self->device, &h) < 0 ||
        cukit_device_activate(self->device) < 0)
        return NULL;
    if (self->exec == NULL &&
        CU_CALL(self->st, cuGraphInstantiate, (&self->exec, self->graph, 0)) < 0) {
        self->exec = NULL;
        return NULL;
    }
    CUresult res;
    if (cukit_other_threads()) {
        Py_BEGIN_ALLOW_THREADS
        res = cukit_api.cuGraphLaunch(self->exec, h);
        Py_END_ALLOW_THREADS
    }
    else {
        res = cukit_api.cuGraphLaunch(self->exec, h);
    }
    if (cukit_check_cu(self->st, res, "cuGraphLaunch") < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
graph_get_nodes(cukit_Graph *self, void *c)
{
    return PyList_AsTuple(self->nodes);
}

static int
graph_traverse(cukit_Graph *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->nodes);
    Py_VISIT(self->keep);
    Py_VISIT(self->capturing);
    return 0;
}

/* Destroy the CUDA graph and its instance (once); the device is made current for it. */
static void
release_graph(cukit_Graph *self)
{
    if (self->exec == NULL && self->graph == NULL)
        return;
    /* An exception may be propagating through here (a `with` block that raised). */
    PyObject *saved = PyErr_GetRaisedException();
    if (self->device && cukit_device_activate(self->device) == 0) {
        /* Dropped while a stream is captured (the collector may run anywhere): the
         * driver refuses cuGraphExecDestroy from the capturing thread outside relaxed
         * mode, and invalidates the capture. */
        int mode = cukit_capture_relax(self->st, 1);
        drop_exec(self);
        if (self->graph)
            cukit_api.cuGraphDestroy(self->graph);
        cukit_capture_restore(mode);
        self->graph = NULL;
    }
    PyErr_Clear();
    PyErr_SetRaisedException(saved);
}

static int
graph_clear(cukit_Graph *self)
{
    release_graph(self); /* before `keep`: what it keeps (an NCCL communicator) may wait
                            in its own release for the graph to be gone */
    Py_CLEAR(self->nodes);
    Py_CLEAR(self->keep);
    Py_CLEAR(self->capturing);
    return 0;
}

static void
graph_dealloc(cukit_Graph *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    graph_clear(self);
    Py_CLEAR(self->device);
    PyObject_GC_Del(self);
    Py_DECREF(tp);
}

static PyMethodDef graph_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))graph_launch, METH_FASTCALL | METH_KEYWORDS,
     "launch(stream=None): replay the graph (instantiated at the first launch)."},
    {"add_kernel", (PyCFunction)(void (*)(void))graph_add_kernel, METH_FASTCALL | METH_KEYWORDS,
     "add_kernel(kernel, *args, grid=, block=, shared_mem=0, depends_on=()) -> KernelNode"},
    {"__enter__", (PyCFunction)graph_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)graph_exit, METH_VARARGS, NULL},
    {NULL},
};

static PyGetSetDef graph_getset[] = {
    {"nodes", (getter)graph_get_nodes, NULL, "The kernel nodes, in capture or add order."},
    {NULL},
};

static PyMemberDef graph_members[] = {
    {"device", Py_T_OBJECT_EX, offsetof(cukit_Graph, device), Py_READONLY, "The Device."},
    {NULL},
};

static PyType_Slot graph_slots[] = {
    {Py_tp_doc, "Graph(device=None): a CUDA graph. Build one by hand with add_kernel(), or "
                "record one with `with stream.capture() as graph:`; replay with launch()."},
    {Py_tp_new, graph_new},
    {Py_tp_dealloc, graph_dealloc},
    {Py_tp_traverse, graph_traverse},
    {Py_tp_clear, graph_clear},
    {Py_tp_methods, graph_methods},
    {Py_tp_getset, graph_getset},
    {Py_tp_members, graph_members},
    {0, NULL},
};

static PyType_Spec graph_spec = {
    .name = "cukit.Graph",
    .basicsize = sizeof(cukit_Graph),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_HAVE_GC,
    .slots = graph_slots,
};

/* ------------------------------------------------------------------ KernelNode */

static PyObject *
node_set_args(cukit_KernelNode *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (set_params(self, args, nargs, 0, NULL, 0) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
node_get_args(cukit_KernelNode *self, void *c)
{
    return Py_NewRef(self->args ? self->args : Py_None);
}

static PyObject *
node_repr(cukit_KernelNode *self)
{
    return PyUnicode_FromFormat("<cukit.KernelNode %s grid=(%u, %u, %u) block=(%u, %u, %u)>",
                                self->kernel->sig->name, self->params.gridDimX,
                                self->params.gridDimY, self->params.gridDimZ,
                                self->params.blockDimX, self->params.blockDimY,
                                self->params.blockDimZ);
}

static int
node_traverse(cukit_KernelNode *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->graph);
    Py_VISIT(self->kernel);
    Py_VISIT(self->args);
    return 0;
}

static int
node_clear(cukit_KernelNode *self)
{
    /* graph_clear breaks the Graph <-> KernelNode cycle; a node keeps its graph. */
    Py_CLEAR(self->args);
    return 0;
}

static void
node_dealloc(cukit_KernelNode *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    node_clear(self);
    Py_CLEAR(self->graph);
    Py_CLEAR(self->kernel);
    PyObject_GC_Del(self);
    Py_DECREF(tp);
}

static PyMethodDef node_methods[] = {
    {"set_args", (PyCFunction)(void (*)(void))node_set_args, METH_FASTCALL,
     "set_args(*args): new arguments for this kernel node, also in the instantiated graph "
     "(no new capture needed)."},
    {NULL},
};

static PyGetSetDef node_getset[] = {
    {"args", (getter)node_get_args, NULL, "The arguments the node holds."},
    {NULL},
};

static PyMemberDef node_members[] = {
    {"kernel", Py_T_OBJECT_EX, offsetof(cukit_KernelNode, kernel), Py_READONLY, "The Kernel."},
    {NULL},
};

static PyType_Slot node_slots[] = {
    {Py_tp_doc, "KernelNode: one kernel launch in a Graph; set_args() changes its arguments."},
    {Py_tp_dealloc, node_dealloc},
    {Py_tp_traverse, node_traverse},
    {Py_tp_clear, node_clear},
    {Py_tp_repr, node_repr},
    {Py_tp_methods, node_methods},
    {Py_tp_getset, node_getset},
    {Py_tp_members, node_members},
    {0, NULL},
};

static PyType_Spec node_spec = {
    .name = "cukit.KernelNode",
    .basicsize = sizeof(cukit_KernelNode),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = node_slots,
};

int
cukit_graph_setup(PyObject *module, cukit_state *st)
{
    st->hooks.stream_capture = stream_capture;
    st->launch->GraphType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &graph_spec, NULL);
    if (st->launch->GraphType == NULL || PyModule_AddType(module, st->launch->GraphType) < 0)
        return -1;
    st->launch->KernelNodeType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &node_spec, NULL);
    if (st->launch->KernelNodeType == NULL)
        return -1;
    return PyModule_AddType(module, st->launch->KernelNodeType);
}
