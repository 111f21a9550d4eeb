/* entries.c - the name tables of entry_points.h and the dlsym walk that fills an entry-point table (no Python: the worker program links it too) */
#include "driver/driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

enum { REQUIRED = 1, OPTIONAL = 0 };

#define CUKIT_X(ret, name, sym, req, params) {sym, offsetof(cukit_api_t, name), req},
const cukit_entry cukit_driver_entries[] = {CUKIT_DRIVER_API(CUKIT_X)};
const cukit_entry cukit_nvrtc_entries[] = {CUKIT_NVRTC_API(CUKIT_X)};
const cukit_entry cukit_nvjitlink_entries[] = {CUKIT_NVJITLINK_API(CUKIT_X)};
#undef CUKIT_X
const size_t cukit_driver_nentries = sizeof cukit_driver_entries / sizeof *cukit_driver_entries;
const size_t cukit_nvrtc_nentries = sizeof cukit_nvrtc_entries / sizeof *cukit_nvrtc_entries;
const size_t cukit_nvjitlink_nentries =
    sizeof cukit_nvjitlink_entries / sizeof *cukit_nvjitlink_entries;

const char *
cukit_entries_fill(void *api, void *lib, const cukit_entry *list, size_t n,
                   unsigned int major)
{
    for (size_t i = 0; i < n; i++) {
        void *fn = NULL;
        if (major > 0) {
            char versioned[128];
            snprintf(versioned, sizeof versioned, "__%s_%u_0", list[i].symbol, major);
            fn = dlsym(lib, versioned);
        }
        if (fn == NULL)
            fn = dlsym(lib, list[i].symbol);
        if (fn == NULL && list[i].required)
            return list[i].symbol;
        memcpy((char *)api + list[i].offset, &fn, sizeof fn);
    }
    return NULL;
}
