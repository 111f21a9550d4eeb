/* report.c - each device's error record: kernels note the first bad index they meet in mapped host memory, and cukit's next synchronizing point raises it */
#include "runtime/runtime.h"

#include <stdatomic.h>
#include <string.h>

/* The record, as kernels see it (compute/index/kernels/index.cu's BadIndex): a kernel
 * that meets a bad index takes `state` from 0 to 1 (atomicCAS, so the first one met
 * wins), writes the three numbers, fences, and sets `state` to 2. The host reads a
 * record only at 2, so a kernel still running on another stream is never half read. */
typedef struct {
    volatile unsigned long long state; /* 0 empty, 1 being written, 2 ready */
    volatile long long value;          /* the index as given */
    volatile long long size;           /* the length of the axis it indexed */
    volatile long long axis;           /* that axis, of the array the user indexed */
} bad_index;

int
cukit_report_device_ptr(cukit_Device *dev, CUdeviceptr *out)
{
    if (dev->report == NULL) {
        /* page-locked and mapped: a kernel writes it, the host reads it after a
         * synchronize without a copy; kept for the life of the process, as the
         * primary context is */
        void *host = NULL;
        CUdeviceptr d = 0;
        cukit_state *st = dev->st;
        if (cukit_device_activate(dev) < 0)
            return -1;
        int mode = cukit_capture_relax(st, 0); /* the first use may come under a capture */
        int bad = CU_CALL(st, cuMemHostAlloc, (&host, sizeof(bad_index),
                                               CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP)) < 0;
        cukit_capture_restore(mode);
        if (bad)
            return -1;
        if (CU_CALL(st, cuMemHostGetDevicePointer, (&d, host, 0)) < 0) {
            cukit_api.cuMemFreeHost(host);
            return -1;
        }
        memset(host, 0, sizeof(bad_index));
        dev->report_dev = d;
        dev->report = host;
    }
    *out = dev->report_dev;
    return 0;
}

int
cukit_report_raise(cukit_state *st)
{
    PyObject *devices = st->runtime->devices;
    if (devices == NULL)
        return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(devices); i++) {
        PyObject *o = PyList_GET_ITEM(devices, i);
        if (o == Py_None)
            continue;
        bad_index *r = ((cukit_Device *)o)->report;
        if (r == NULL || r->state != 2)
            continue;
        atomic_thread_fence(memory_order_acquire); /* the numbers after the state (Arm hosts) */
        long long value = r->value, size = r->size, axis = r->axis;
        r->state = 0; /* cleared: the next bad index is reported again */
        PyErr_Format(PyExc_IndexError,
                     "index %lld is out of bounds for axis %lld with size %lld (an index array "
                     "on device %zd, found by a kernel queued before this synchronizing point; "
                     "the elements it named were not read or written)",
                     value, axis, size, i);
        return -1;
    }
    return 0;
}
