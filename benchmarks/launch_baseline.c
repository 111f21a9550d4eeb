/* launch_baseline.c - the raw C floor for benchmarks/bench_launch.py.
 *
 * Times cuLaunchKernel from plain C, with every kernel argument packed once
 * before the loop, so the Python launchers in bench_launch.py have something
 * to be compared with. bench_launch.py compiles this file with the system C
 * compiler, writes the cubin (from cukit.Program(...).cubin()), runs it and
 * reads the single JSON object it prints on stdout.
 *
 * The driver is dlopen'ed (libcuda.so.1): no CUDA headers, no -lcuda. The few
 * types and prototypes it needs are declared below and in baseline.h.
 *
 *   launch_baseline CUBIN DEVICE LAUNCHES REPS WARMUP GRAPH_REPLAYS BIG_N BIG_REPS
 *
 * Measurements (all on the legacy default stream unless said otherwise):
 *   launch_us     per kernel (0, 5 and 16 arguments): REPS times, WARMUP launches
 *                 are done first; each repetition is LAUNCHES launches of 4 x 256
 *                 threads then one cuCtxSynchronize, timed with clock_gettime.
 *   graph_us      per kernel: 100 launches of the 5-argument saxpy captured into
 *                 a CUDA graph on a non-blocking stream, GRAPH_REPLAYS replays
 *                 per repetition.
 *   graph1_us     per replay: one launch of the 5-argument saxpy captured into a
 *                 graph, 100 * GRAPH_REPLAYS replays back to back per repetition
 *                 (where graph_us spreads a replay's own cost over 100 kernels).
 *   round_trip_us one launch of empty0 and its cuStreamSynchronize on a non-blocking
 *                 stream ("launch"), and one replay of a graph of that one launch and
 *                 its cuStreamSynchronize ("graph"): the floor under any launch that
 *                 is waited for, 2000 per repetition.
 *   big_saxpy_ms  GPU time of saxpy_big over BIG_N floats (blocks of 512), with
 *                 cuEventRecord around each launch, BIG_REPS samples.
 * Each reports every sample and their median. Errors go to stderr, exit 1. */
#define _POSIX_C_SOURCE 199309L
#define BASELINE_NAME "launch_baseline"
#include "baseline.h"

/* ------------------------------------------------------------ driver ABI */

typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;

#define CU_STREAM_NON_BLOCKING 1
#define CU_STREAM_CAPTURE_MODE_GLOBAL 0
#define CU_EVENT_DEFAULT 0

typedef CUresult (*cuInit_t)(unsigned int flags);
typedef CUresult (*cuDriverGetVersion_t)(int *version);
typedef CUresult (*cuDeviceGet_t)(CUdevice *dev, int ordinal);
typedef CUresult (*cuDeviceGetName_t)(char *name, int len, CUdevice dev);
typedef CUresult (*cuDevicePrimaryCtxRetain_t)(CUcontext *ctx, CUdevice dev);
typedef CUresult (*cuDevicePrimaryCtxRelease_t)(CUdevice dev);
typedef CUresult (*cuCtxSetCurrent_t)(CUcontext ctx);
typedef CUresult (*cuCtxSynchronize_t)(void);
typedef CUresult (*cuModuleLoadData_t)(CUmodule *mod, const void *image);
typedef CUresult (*cuModuleUnload_t)(CUmodule mod);
typedef CUresult (*cuModuleGetFunction_t)(CUfunction *f, CUmodule mod, const char *name);
typedef CUresult (*cuMemAlloc_t)(CUdeviceptr *ptr, size_t bytes);
typedef CUresult (*cuMemFree_t)(CUdeviceptr ptr);
typedef CUresult (*cuMemsetD32_t)(CUdeviceptr ptr, unsigned int value, size_t count);
typedef CUresult (*cuLaunchKernel_t)(CUfunction f, unsigned int gx, unsigned int gy,
                                     unsigned int gz, unsigned int bx, unsigned int by,
                                     unsigned int bz, unsigned int shared, CUstream stream,
                                     void **params, void **extra);
typedef CUresult (*cuStreamCreate_t)(CUstream *stream, unsigned int flags);
typedef CUresult (*cuStreamDestroy_t)(CUstream stream);
typedef CUresult (*cuStreamSynchronize_t)(CUstream stream);
typedef CUresult (*cuStreamBeginCapture_t)(CUstream stream, int mode);
typedef CUresult (*cuStreamEndCapture_t)(CUstream stream, CUgraph *graph);
typedef CUresult (*cuGraphInstantiateWithFlags_t)(CUgraphExec *exec, CUgraph graph,
                                                  unsigned long long flags);
typedef CUresult (*cuGraphLaunch_t)(CUgraphExec exec, CUstream stream);
typedef CUresult (*cuGraphExecDestroy_t)(CUgraphExec exec);
typedef CUresult (*cuGraphDestroy_t)(CUgraph graph);
typedef CUresult (*cuEventCreate_t)(CUevent *event, unsigned int flags);
typedef CUresult (*cuEventDestroy_t)(CUevent event);
typedef CUresult (*cuEventRecord_t)(CUevent event, CUstream stream);
typedef CUresult (*cuEventSynchronize_t)(CUevent event);
typedef CUresult (*cuEventElapsedTime_t)(float *ms, CUevent start, CUevent end);

static struct {
    cuInit_t Init;
    cuDriverGetVersion_t DriverGetVersion;
    cuDeviceGet_t DeviceGet;
    cuDeviceGetName_t DeviceGetName;
    cuDevicePrimaryCtxRetain_t DevicePrimaryCtxRetain;
    cuDevicePrimaryCtxRelease_t DevicePrimaryCtxRelease;
    cuCtxSetCurrent_t CtxSetCurrent;
    cuCtxSynchronize_t CtxSynchronize;
    cuModuleLoadData_t ModuleLoadData;
    cuModuleUnload_t ModuleUnload;
    cuModuleGetFunction_t ModuleGetFunction;
    cuMemAlloc_t MemAlloc;
    cuMemFree_t MemFree;
    cuMemsetD32_t MemsetD32;
    cuLaunchKernel_t LaunchKernel;
    cuStreamCreate_t StreamCreate;
    cuStreamSynchronize_t StreamSynchronize;
    cuStreamDestroy_t StreamDestroy;
    cuStreamBeginCapture_t StreamBeginCapture;
    cuStreamEndCapture_t StreamEndCapture;
    cuGraphInstantiateWithFlags_t GraphInstantiateWithFlags;
    cuGraphLaunch_t GraphLaunch;
    cuGraphExecDestroy_t GraphExecDestroy;
    cuGraphDestroy_t GraphDestroy;
    cuEventCreate_t EventCreate;
    cuEventDestroy_t EventDestroy;
    cuEventRecord_t EventRecord;
    cuEventSynchronize_t EventSynchronize;
    cuEventElapsedTime_t EventElapsedTime;
} cu;

/* The newer symbol where the driver has it (same prototype), else the older. */
#define LOAD_NEWEST(field, newer, older)                                  \
    do {                                                                  \
        *(void **)&cu.field = dlsym(lib, newer);                          \
        if (cu.field == NULL)                                             \
            LOAD(field, older);                                           \
    } while (0)

static void
load_driver(void)
{
    void *lib = open_driver();
    LOAD(Init, "cuInit");
    LOAD(DriverGetVersion, "cuDriverGetVersion");
    LOAD(DeviceGet, "cuDeviceGet");
    LOAD(DeviceGetName, "cuDeviceGetName");
    LOAD(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    LOAD(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    LOAD(CtxSetCurrent, "cuCtxSetCurrent");
    LOAD(CtxSynchronize, "cuCtxSynchronize");
    LOAD(ModuleLoadData, "cuModuleLoadData");
    LOAD(ModuleUnload, "cuModuleUnload");
    LOAD(ModuleGetFunction, "cuModuleGetFunction");
    LOAD(MemAlloc, "cuMemAlloc_v2");
    LOAD(MemFree, "cuMemFree_v2");
    LOAD(MemsetD32, "cuMemsetD32_v2");
    LOAD(LaunchKernel, "cuLaunchKernel");
    LOAD(StreamCreate, "cuStreamCreate");
    LOAD(StreamDestroy, "cuStreamDestroy_v2");
    LOAD(StreamSynchronize, "cuStreamSynchronize");
    LOAD(StreamBeginCapture, "cuStreamBeginCapture_v2");
    LOAD(StreamEndCapture, "cuStreamEndCapture");
    LOAD(GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
    LOAD(GraphLaunch, "cuGraphLaunch");
    LOAD(GraphExecDestroy, "cuGraphExecDestroy");
    LOAD(GraphDestroy, "cuGraphDestroy");
    LOAD(EventCreate, "cuEventCreate");
    LOAD(EventDestroy, "cuEventDestroy_v2");
    LOAD(EventRecord, "cuEventRecord");
    LOAD(EventSynchronize, "cuEventSynchronize");
    LOAD_NEWEST(EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime"); /* v2: CUDA 12.8+ */
}

/* ------------------------------------------------------------ helpers */

/* Prints "key": {"median": m, "samples": [...]} */
static void
print_samples(const char *key, const double *samples, int n)
{
    printf("\"%s\": {\"median\": %.6g, \"samples\": [", key, median(samples, n));
    for (int i = 0; i < n; i++)
        printf("%s%.6g", i ? ", " : "", samples[i]);
    printf("]}");
}

static void *
read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        die("cannot open the cubin file");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = malloc(size > 0 ? size : 1);
    if (data == NULL || fread(data, 1, size, f) != (size_t)size)
        die("cannot read the cubin file");
    fclose(f);
    return data;
}

/* ------------------------------------------------------------ measurements */

enum { N = 1024, GRID = 4, BLOCK = 256, BIG_BLOCK = 512, GRAPH_KERNELS = 100 };

/* Microseconds per launch of `count` launches followed by one cuCtxSynchronize. */
static double
time_launches(CUfunction f, void **params, int count)
{
    CHECK(cu.CtxSynchronize());
    double t0 = now_s();
    for (int i = 0; i < count; i++)
        CHECK(cu.LaunchKernel(f, GRID, 1, 1, BLOCK, 1, 1, 0, NULL, params, NULL));
    CHECK(cu.CtxSynchronize());
    return (now_s() - t0) * 1e6 / count;
}

static void
measure_launches(CUfunction f, void **params, int launches, int reps, int warmup,
                 double *samples)
{
    time_launches(f, params, warmup);
    for (int r = 0; r < reps; r++)
        samples[r] = time_launches(f, params, launches);
}

/* Microseconds per kernel when `kernels` launches of f replay as one graph. */
static void
measure_graph(CUfunction f, void **params, int kernels, int replays, int reps, double *samples)
{
    CUstream stream;
    CUgraph graph;
    CUgraphExec exec;
    CHECK(cu.StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK(cu.StreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < kernels; i++)
        CHECK(cu.LaunchKernel(f, GRID, 1, 1, BLOCK, 1, 1, 0, stream, params, NULL));
    CHECK(cu.StreamEndCapture(stream, &graph));
    CHECK(cu.GraphInstantiateWithFlags(&exec, graph, 0));

    for (int i = 0; i < 10; i++) /* warm-up */
        CHECK(cu.GraphLaunch(exec, stream));
    for (int r = 0; r < reps; r++) {
        CHECK(cu.CtxSynchronize());
        double t0 = now_s();
        for (int i = 0; i < replays; i++)
            CHECK(cu.GraphLaunch(exec, stream));
        CHECK(cu.CtxSynchronize());
        samples[r] = (now_s() - t0) * 1e6 / ((double)replays * kernels);
    }
    CHECK(cu.GraphExecDestroy(exec));
    CHECK(cu.GraphDestroy(graph));
    CHECK(cu.StreamDestroy(stream));
}

#define ROUND_TRIPS 2000

/* Microseconds per launch of f (graph 0) or per replay of a graph of one launch of f
 * (graph 1), each waited for with cuStreamSynchronize. */
static void
measure_round_trip(CUfunction f, int graph, int reps, double *samples)
{
    CUstream stream;
    CUgraph g = NULL;
    CUgraphExec exec = NULL;
    CHECK(cu.StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    if (graph) {
        CHECK(cu.StreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
        CHECK(cu.LaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL));
        CHECK(cu.StreamEndCapture(stream, &g));
        CHECK(cu.GraphInstantiateWithFlags(&exec, g, 0));
    }
    for (int r = -1; r < reps; r++) { /* -1: warm-up */
        double t0 = now_s();
        for (int i = 0; i < ROUND_TRIPS; i++) {
            if (graph)
                CHECK(cu.GraphLaunch(exec, stream));
            else
                CHECK(cu.LaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL));
            CHECK(cu.StreamSynchronize(stream));
        }
        if (r >= 0)
            samples[r] = (now_s() - t0) * 1e6 / ROUND_TRIPS;
    }
    if (graph) {
        CHECK(cu.GraphExecDestroy(exec));
        CHECK(cu.GraphDestroy(g));
    }
    CHECK(cu.StreamDestroy(stream));
}

/* GPU milliseconds of one saxpy_big launch over n floats, by CUDA events. */
static void
measure_big_saxpy(CUfunction f, size_t n, int reps, double *samples)
{
    CUdeviceptr x, y;
    CUevent start, end;
    CHECK(cu.MemAlloc(&x, n * sizeof(float)));
    CHECK(cu.MemAlloc(&y, n * sizeof(float)));
    CHECK(cu.MemsetD32(x, 0, n));
    CHECK(cu.MemsetD32(y, 0, n));
    CHECK(cu.EventCreate(&start, CU_EVENT_DEFAULT));
    CHECK(cu.EventCreate(&end, CU_EVENT_DEFAULT));
    float a = 2.0f;
    void *params[] = {&a, &x, &y, &n};
    unsigned int grid = (unsigned int)((n + BIG_BLOCK - 1) / BIG_BLOCK);

    for (int i = 0; i < 5; i++) /* warm-up */
        CHECK(cu.LaunchKernel(f, grid, 1, 1, BIG_BLOCK, 1, 1, 0, NULL, params, NULL));
    CHECK(cu.CtxSynchronize());
    for (int r = 0; r < reps; r++) {
        float ms;
        CHECK(cu.EventRecord(start, NULL));
        CHECK(cu.LaunchKernel(f, grid, 1, 1, BIG_BLOCK, 1, 1, 0, NULL, params, NULL));
        CHECK(cu.EventRecord(end, NULL));
        CHECK(cu.EventSynchronize(end));
        CHECK(cu.EventElapsedTime(&ms, start, end));
        samples[r] = ms;
    }
    CHECK(cu.EventDestroy(start));
    CHECK(cu.EventDestroy(end));
    CHECK(cu.MemFree(x));
    CHECK(cu.MemFree(y));
}

int
main(int argc, char **argv)
{
    if (argc != 9) {
        fprintf(stderr, "usage: %s CUBIN DEVICE LAUNCHES REPS WARMUP GRAPH_REPLAYS BIG_N BIG_REPS\n",
                argv[0]);
        return 2;
    }
    int ordinal = atoi(argv[2]), launches = atoi(argv[3]), reps = atoi(argv[4]);
    int warmup = atoi(argv[5]), replays = atoi(argv[6]), big_reps = atoi(argv[8]);
    size_t big_n = strtoull(argv[7], NULL, 10);
    if (launches < 1 || reps < 1 || warmup < 0 || replays < 1 || big_n < 1 || big_reps < 1)
        die("LAUNCHES, REPS, GRAPH_REPLAYS, BIG_N and BIG_REPS must be positive");

    load_driver();
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    int driver_version;
    char device_name[256];
    CHECK(cu.Init(0));
    CHECK(cu.DriverGetVersion(&driver_version));
    CHECK(cu.DeviceGet(&dev, ordinal));
    CHECK(cu.DeviceGetName(device_name, sizeof device_name, dev));
    CHECK(cu.DevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cu.CtxSetCurrent(ctx));
    void *image = read_file(argv[1]);
    CHECK(cu.ModuleLoadData(&mod, image));
    free(image);

    CUfunction empty0, saxpy, args16, saxpy_big;
    CHECK(cu.ModuleGetFunction(&empty0, mod, "empty0"));
    CHECK(cu.ModuleGetFunction(&saxpy, mod, "saxpy"));
    CHECK(cu.ModuleGetFunction(&args16, mod, "args16"));
    CHECK(cu.ModuleGetFunction(&saxpy_big, mod, "saxpy_big"));

    /* The same argument values bench_launch.py passes (see its ARGS table). */
    CUdeviceptr x, y, out;
    CHECK(cu.MemAlloc(&x, N * sizeof(float)));
    CHECK(cu.MemAlloc(&y, N * sizeof(float)));
    CHECK(cu.MemAlloc(&out, N * sizeof(float)));
    CHECK(cu.MemsetD32(x, 0, N));
    CHECK(cu.MemsetD32(y, 0, N));
    float a = 2.0f, f0 = 0.5f, f1 = 1.5f;
    int i0 = 1, i1 = 3, i2 = 5;
    size_t n = N, s0 = 2, s1 = 4;
    void *params5[] = {&a, &x, &y, &out, &n};
    void *params16[] = {&x, &x, &x, &x, &x, &x, &x, &out,
                        &i0, &f0, &s0, &i1, &f1, &s1, &i2, &n};

    double *s_0 = malloc(reps * sizeof(double)), *s_5 = malloc(reps * sizeof(double));
    double *s_16 = malloc(reps * sizeof(double)), *s_graph = malloc(reps * sizeof(double));
    double *s_graph1 = malloc(reps * sizeof(double));
    double *s_big = malloc(big_reps * sizeof(double));
    double *s_trip = malloc(reps * sizeof(double)), *s_gtrip = malloc(reps * sizeof(double));
    if (!s_0 || !s_5 || !s_16 || !s_graph || !s_graph1 || !s_big || !s_trip || !s_gtrip)
        die("out of memory");
    measure_launches(empty0, NULL, launches, reps, warmup, s_0);
    measure_launches(saxpy, params5, launches, reps, warmup, s_5);
    measure_launches(args16, params16, launches, reps, warmup, s_16);
    measure_graph(saxpy, params5, GRAPH_KERNELS, replays, reps, s_graph);
    measure_graph(saxpy, params5, 1, replays * GRAPH_KERNELS, reps, s_graph1);
    measure_big_saxpy(saxpy_big, big_n, big_reps, s_big);
    measure_round_trip(empty0, 0, reps, s_trip);
    measure_round_trip(empty0, 1, reps, s_gtrip);

    printf("{\"driver_version\": %d, \"device\": \"%s\", \"launch_us\": {", driver_version,
           device_name);
    print_samples("0", s_0, reps);
    printf(", ");
    print_samples("5", s_5, reps);
    printf(", ");
    print_samples("16", s_16, reps);
    printf("}, ");
    print_samples("graph_us", s_graph, reps);
    printf(", ");
    print_samples("graph1_us", s_graph1, reps);
    printf(", ");
    print_samples("big_saxpy_ms", s_big, big_reps);
    printf(", \"round_trip_us\": {");
    print_samples("launch", s_trip, reps);
    printf(", ");
    print_samples("graph", s_gtrip, reps);
    printf("}}\n");

    CHECK(cu.MemFree(x));
    CHECK(cu.MemFree(y));
    CHECK(cu.MemFree(out));
    CHECK(cu.ModuleUnload(mod));
    CHECK(cu.DevicePrimaryCtxRelease(dev));
    free(s_0);
    free(s_5);
    free(s_16);
    free(s_graph);
    free(s_graph1);
    free(s_trip);
    free(s_gtrip);
    free(s_big);
    return 0;
}
