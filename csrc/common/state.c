/* state.c - the module state's lookups: numpy, the owning module, other Python threads */
#include "common/common.h"

cukit_state *
cukit_state_of_type(PyTypeObject *type)
{
    /* A Python subclass of a cukit type has no module of its own: the first
     * type in its MRO that cukit defined has. */
    PyObject *mro = type->tp_mro;
    Py_ssize_t n = mro ? PyTuple_GET_SIZE(mro) : 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTypeObject *t = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if (PyType_HasFeature(t, Py_TPFLAGS_HEAPTYPE) && ((PyHeapTypeObject *)t)->ht_module)
            return (cukit_state *)PyModule_GetState(((PyHeapTypeObject *)t)->ht_module);
    }
    return (cukit_state *)PyType_GetModuleState(type);
}

int
cukit_numpy(cukit_state *st)
{
    if (st->numpy)
        return 0;
    PyObject *np = PyImport_ImportModule("numpy");
    if (np == NULL) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ImportError,
                        "cukit needs numpy for arrays; install it with `pip install numpy`");
        return -1;
    }
    static const struct {
        const char *name;
        size_t offset;
    } attrs[] = {
        {"dtype", offsetof(cukit_state, np_dtype)},
        {"empty", offsetof(cukit_state, np_empty)},
        {"asarray", offsetof(cukit_state, np_asarray)},
        {"ndarray", offsetof(cukit_state, np_ndarray)},
        {"generic", offsetof(cukit_state, np_generic)},
        {"floating", offsetof(cukit_state, np_floating)},
        {"integer", offsetof(cukit_state, np_integer)},
        {"bool_", offsetof(cukit_state, np_bool)},
    };
    for (size_t i = 0; i < sizeof attrs / sizeof *attrs; i++) {
        PyObject *v = PyObject_GetAttrString(np, attrs[i].name);
        if (v == NULL) {
            Py_DECREF(np);
            return -1;
        }
        PyObject **slot = (PyObject **)((char *)st + attrs[i].offset);
        Py_XSETREF(*slot, v);
    }
    st->numpy = np;
    return 0;
}

/* Whether this interpreter has a Python thread besides the calling one. Read
 * under the GIL; a thread starting at this instant is seen at the next launch. */
int
cukit_other_threads(void)
{
    PyThreadState *me = PyThreadState_Get();
    PyThreadState *head = PyInterpreterState_ThreadHead(PyThreadState_GetInterpreter(me));
    return head != me || PyThreadState_Next(head) != NULL;
}
