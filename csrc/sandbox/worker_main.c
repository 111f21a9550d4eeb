/* worker_main.c - the _cukit_worker executable: serves NVRTC compiles and driver image loads for cukit over descriptor 3 */
#include "sandbox/sandbox.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Built as its own program, not into the extension: it has its own entry-point
 * table, of which it fills only NVRTC's part. */
cukit_api_t cukit_api;

static char loaded[PATH_MAX]; /* the real path of the NVRTC in cukit_api, "" before one */

/* dlopen `path` and fill NVRTC's entry points. 0, or -1 when it is not NVRTC. */
static int
load(const char *path)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        return -1;
    cukit_api_t api = cukit_api;
    if (cukit_entries_fill(&api, lib, cukit_nvrtc_entries, cukit_nvrtc_nentries, 0)) {
        dlclose(lib);
        return -1;
    }
    Dl_info info;
    char real[PATH_MAX];
    if (!dladdr(*(void **)&api.nvrtcVersion, &info) || info.dli_fname == NULL ||
        realpath(info.dli_fname, real) == NULL)
        snprintf(real, sizeof real, "%s", path);
    cukit_api = api;
    snprintf(loaded, sizeof loaded, "%s", real);
    return 0;
}

/* The NVRTC the user's process loaded (its real path), unless it is the one here. */
static int
ensure(const char *path)
{
    if (path[0] == '\0' || strcmp(path, loaded) == 0)
        return loaded[0] ? 0 : -1;
    return load(path);
}

/* Look for NVRTC the way the user's process does, its wheels' folders (which only
 * Python can name) given as `wheels`: it is found here while that process loads
 * its own, and each request names the one to use anyway. */
static void
search(char **wheels)
{
    static const char *names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
    static const char *roots[] = {"CUDA_HOME", "CUDA_PATH"};
    const char *explicit_path = getenv("CUKIT_NVRTC");
    if (explicit_path && explicit_path[0] && load(explicit_path) == 0)
        return;
    char dirs[6][PATH_MAX];
    int ndirs = 0;
    dirs[ndirs++][0] = '\0';
    for (int i = 0; i < 2; i++) {
        const char *root = getenv(roots[i]);
        if (root && root[0]) {
            snprintf(dirs[ndirs++], PATH_MAX, "%s/lib64/", root);
            snprintf(dirs[ndirs++], PATH_MAX, "%s/lib/", root);
        }
    }
    snprintf(dirs[ndirs++], PATH_MAX, "/usr/local/cuda/lib64/");
    for (int d = 0; d < ndirs; d++)
        for (size_t n = 0; n < sizeof names / sizeof *names; n++) {
            char path[PATH_MAX + 32];
            snprintf(path, sizeof path, "%.4000s%s", dirs[d], names[n]);
            if (load(path) == 0)
                return;
        }
    for (int d = 0; wheels[d]; d++)
        for (size_t n = 0; n < sizeof names / sizeof *names; n++) {
            char path[PATH_MAX + 32];
            snprintf(path, sizeof path, "%.4000s/%s", wheels[d], names[n]);
            if (load(path) == 0)
                return;
        }
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "%s: cukit starts this program to compile with NVRTC; it is not "
                        "meant to be run by hand\n", argv[0]);
        return 2;
    }
    /* "--image": started to load one image with the driver; it needs no NVRTC. */
    if (strcmp(argv[1], "--image") != 0 && (argv[1][0] == '\0' || load(argv[1]) < 0))
        search(argv + 2);
    cukit_worker_serve(3, ensure);
}
