/* entry_points.h - every dlopen'ed function cukit calls, one line each.
 *
 * X(return type, field name, exported symbol, REQUIRED|OPTIONAL, (parameters))
 *
 * loader.c expands these lists into the function-pointer table (cukit_api) and
 * the name table it walks after dlopen. No other code reaches libcuda, NVRTC or
 * nvJitLink.
 * A REQUIRED symbol that is missing makes the whole library unusable; an
 * OPTIONAL one stays NULL and the call that needs it raises NotSupportedError. */
#ifndef CUKIT_ENTRY_POINTS_H
#define CUKIT_ENTRY_POINTS_H

#define CUKIT_DRIVER_API(X)                                                              \
    X(CUresult, cuInit, "cuInit", REQUIRED, (unsigned int))                              \
    X(CUresult, cuDriverGetVersion, "cuDriverGetVersion", REQUIRED, (int *))             \
    X(CUresult, cuGetErrorName, "cuGetErrorName", REQUIRED, (CUresult, const char **))   \
    X(CUresult, cuGetErrorString, "cuGetErrorString", REQUIRED, (CUresult, const char **)) \
    X(CUresult, cuDeviceGetCount, "cuDeviceGetCount", REQUIRED, (int *))                 \
    X(CUresult, cuDeviceGet, "cuDeviceGet", REQUIRED, (CUdevice *, int))                 \
    X(CUresult, cuDeviceGetName, "cuDeviceGetName", REQUIRED, (char *, int, CUdevice))   \
    X(CUresult, cuDeviceGetAttribute, "cuDeviceGetAttribute", REQUIRED, (int *, int, CUdevice)) \
    X(CUresult, cuDeviceTotalMem, "cuDeviceTotalMem_v2", REQUIRED, (size_t *, CUdevice)) \
    X(CUresult, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", REQUIRED, (CUcontext *, CUdevice)) \
    X(CUresult, cuCtxGetCurrent, "cuCtxGetCurrent", REQUIRED, (CUcontext *))             \
    X(CUresult, cuCtxSetCurrent, "cuCtxSetCurrent", REQUIRED, (CUcontext))               \
    X(CUresult, cuCtxGetDevice, "cuCtxGetDevice", REQUIRED, (CUdevice *))               \
    X(CUresult, cuCtxSynchronize, "cuCtxSynchronize", REQUIRED, (void))                  \
    X(CUresult, cuCtxGetLimit, "cuCtxGetLimit", OPTIONAL, (size_t *, int))               \
    X(CUresult, cuCtxSetLimit, "cuCtxSetLimit", OPTIONAL, (int, size_t))                 \
    X(CUresult, cuMemGetInfo, "cuMemGetInfo_v2", REQUIRED, (size_t *, size_t *))         \
    X(CUresult, cuMemAlloc, "cuMemAlloc_v2", REQUIRED, (CUdeviceptr *, size_t))          \
    X(CUresult, cuMemFree, "cuMemFree_v2", REQUIRED, (CUdeviceptr))                      \
    X(CUresult, cuMemcpyHtoD, "cuMemcpyHtoD_v2", REQUIRED, (CUdeviceptr, const void *, size_t)) \
    X(CUresult, cuMemcpyDtoH, "cuMemcpyDtoH_v2", REQUIRED, (void *, CUdeviceptr, size_t)) \
    X(CUresult, cuMemcpyDtoD, "cuMemcpyDtoD_v2", REQUIRED, (CUdeviceptr, CUdeviceptr, size_t)) \
    X(CUresult, cuMemsetD8, "cuMemsetD8_v2", REQUIRED, (CUdeviceptr, unsigned char, size_t)) \
    /* mem: pinned, registered and managed host memory, the stream-ordered pool, and \
       the asynchronous copies of the transfer pipeline */                               \
    X(CUresult, cuMemHostAlloc, "cuMemHostAlloc", REQUIRED, (void **, size_t, unsigned int)) \
    X(CUresult, cuMemFreeHost, "cuMemFreeHost", REQUIRED, (void *))                      \
    X(CUresult, cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2", REQUIRED,     \
      (CUdeviceptr *, void *, unsigned int))                                             \
    X(CUresult, cuMemHostRegister, "cuMemHostRegister_v2", REQUIRED, (void *, size_t, unsigned int)) \
    X(CUresult, cuMemHostUnregister, "cuMemHostUnregister", REQUIRED, (void *))          \
    X(CUresult, cuMemAllocManaged, "cuMemAllocManaged", REQUIRED, (CUdeviceptr *, size_t, unsigned int)) \
    X(CUresult, cuPointerGetAttribute, "cuPointerGetAttribute", REQUIRED, (void *, int, CUdeviceptr)) \
    X(CUresult, cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", REQUIRED,                     \
      (CUdeviceptr, const void *, size_t, CUstream))                                     \
    X(CUresult, cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", REQUIRED,                     \
      (void *, CUdeviceptr, size_t, CUstream))                                           \
    X(CUresult, cuStreamIsCapturing, "cuStreamIsCapturing", OPTIONAL, (CUstream, int *)) \
    X(CUresult, cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode", OPTIONAL, \
      (int *))                                                                           \
    X(CUresult, cuMemPrefetchAsync, "cuMemPrefetchAsync_v2", OPTIONAL,                   \
      (CUdeviceptr, size_t, CUmemLocation, unsigned int, CUstream))                      \
    X(CUresult, cuMemAdvise, "cuMemAdvise_v2", OPTIONAL, (CUdeviceptr, size_t, int, CUmemLocation)) \
    X(CUresult, cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", OPTIONAL, (CUmemoryPool *, CUdevice)) \
    X(CUresult, cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", OPTIONAL,           \
      (CUdeviceptr *, size_t, CUmemoryPool, CUstream))                                   \
    X(CUresult, cuMemFreeAsync, "cuMemFreeAsync", OPTIONAL, (CUdeviceptr, CUstream))     \
    X(CUresult, cuMemPoolSetAttribute, "cuMemPoolSetAttribute", OPTIONAL, (CUmemoryPool, int, void *)) \
    X(CUresult, cuMemPoolGetAttribute, "cuMemPoolGetAttribute", OPTIONAL, (CUmemoryPool, int, void *)) \
    X(CUresult, cuMemPoolTrimTo, "cuMemPoolTrimTo", OPTIONAL, (CUmemoryPool, size_t))    \
    X(CUresult, cuModuleLoadData, "cuModuleLoadData", REQUIRED, (CUmodule *, const void *)) \
    X(CUresult, cuModuleUnload, "cuModuleUnload", REQUIRED, (CUmodule))                  \
    X(CUresult, cuModuleGetFunction, "cuModuleGetFunction", REQUIRED, (CUfunction *, CUmodule, const char *)) \
    X(CUresult, cuModuleGetGlobal, "cuModuleGetGlobal_v2", REQUIRED,                     \
      (CUdeviceptr *, size_t *, CUmodule, const char *))                                 \
    X(CUresult, cuFuncGetAttribute, "cuFuncGetAttribute", REQUIRED, (int *, int, CUfunction)) \
    X(CUresult, cuFuncSetAttribute, "cuFuncSetAttribute", REQUIRED, (CUfunction, int, int)) \
    X(CUresult, cuFuncGetParamInfo, "cuFuncGetParamInfo", OPTIONAL, (CUfunction, size_t, size_t *, size_t *)) \
    X(CUresult, cuLaunchKernel, "cuLaunchKernel", REQUIRED,                              \
      (CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,  \
       unsigned int, unsigned int, CUstream, void **, void **))                          \
    X(CUresult, cuLaunchKernelEx, "cuLaunchKernelEx", OPTIONAL,                         \
      (const CUlaunchConfig *, CUfunction, void **, void **))                            \
    X(CUresult, cuOccupancyMaxActiveBlocksPerMultiprocessor,                             \
      "cuOccupancyMaxActiveBlocksPerMultiprocessor", REQUIRED, (int *, CUfunction, int, size_t)) \
    X(CUresult, cuOccupancyMaxPotentialBlockSize, "cuOccupancyMaxPotentialBlockSize", REQUIRED, \
      (int *, int *, CUfunction, size_t (*)(int), size_t, int))                          \
    X(CUresult, cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", REQUIRED,                     \
      (CUdeviceptr, CUdeviceptr, size_t, CUstream))                                      \
    /* many GPUs: peer access and copies between devices */                           \
    X(CUresult, cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer", OPTIONAL, (int *, CUdevice, CUdevice)) \
    X(CUresult, cuCtxEnablePeerAccess, "cuCtxEnablePeerAccess", OPTIONAL, (CUcontext, unsigned int)) \
    X(CUresult, cuIpcGetMemHandle, "cuIpcGetMemHandle", OPTIONAL, (CUipcMemHandle *, CUdeviceptr)) \
    X(CUresult, cuIpcOpenMemHandle, "cuIpcOpenMemHandle_v2", OPTIONAL,                   \
      (CUdeviceptr *, CUipcMemHandle, unsigned int))                                     \
    X(CUresult, cuIpcCloseMemHandle, "cuIpcCloseMemHandle", OPTIONAL, (CUdeviceptr))     \
    X(CUresult, cuMemPoolSetAccess, "cuMemPoolSetAccess", OPTIONAL,                      \
      (CUmemoryPool, const CUmemAccessDesc *, size_t))                                   \
    X(CUresult, cuMemcpyPeerAsync, "cuMemcpyPeerAsync", OPTIONAL,                        \
      (CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream))                \
    /* views and interop: strided copies and fills, stream-ordered temporaries,       \
     * the device of a foreign pointer; the two async copies serve transfer.c */       \
    X(CUresult, cuMemcpy2D, "cuMemcpy2D_v2", REQUIRED, (const CUDA_MEMCPY2D *))          \
    X(CUresult, cuMemcpy2DAsync, "cuMemcpy2DAsync_v2", REQUIRED, (const CUDA_MEMCPY2D *, CUstream)) \
    X(CUresult, cuMemcpy3D, "cuMemcpy3D_v2", REQUIRED, (const CUDA_MEMCPY3D *))          \
    X(CUresult, cuMemcpy3DAsync, "cuMemcpy3DAsync_v2", REQUIRED, (const CUDA_MEMCPY3D *, CUstream)) \
    /* CUDA arrays, texture and surface objects (memory/cudaarray.c, texture.c) */    \
    X(CUresult, cuArray3DCreate, "cuArray3DCreate_v2", OPTIONAL,                         \
      (CUarray *, const CUDA_ARRAY3D_DESCRIPTOR *))                                      \
    X(CUresult, cuArrayDestroy, "cuArrayDestroy", OPTIONAL, (CUarray))                   \
    X(CUresult, cuTexObjectCreate, "cuTexObjectCreate", OPTIONAL,                        \
      (CUtexObject *, const CUDA_RESOURCE_DESC *, const CUDA_TEXTURE_DESC *,             \
       const CUDA_RESOURCE_VIEW_DESC *))                                                 \
    X(CUresult, cuTexObjectDestroy, "cuTexObjectDestroy", OPTIONAL, (CUtexObject))       \
    X(CUresult, cuSurfObjectCreate, "cuSurfObjectCreate", OPTIONAL,                      \
      (CUsurfObject *, const CUDA_RESOURCE_DESC *))                                      \
    X(CUresult, cuSurfObjectDestroy, "cuSurfObjectDestroy", OPTIONAL, (CUsurfObject))    \
    X(CUresult, cuMemsetD2D8Async, "cuMemsetD2D8Async", REQUIRED,                        \
      (CUdeviceptr, size_t, unsigned char, size_t, size_t, CUstream))                    \
    X(CUresult, cuMemsetD2D16Async, "cuMemsetD2D16Async", REQUIRED,                      \
      (CUdeviceptr, size_t, unsigned short, size_t, size_t, CUstream))                   \
    X(CUresult, cuMemAllocAsync, "cuMemAllocAsync", OPTIONAL, (CUdeviceptr *, size_t, CUstream)) \
    X(CUresult, cuMemsetD8Async, "cuMemsetD8Async", REQUIRED, (CUdeviceptr, unsigned char, size_t, CUstream)) \
    X(CUresult, cuMemsetD16Async, "cuMemsetD16Async", REQUIRED, (CUdeviceptr, unsigned short, size_t, CUstream)) \
    X(CUresult, cuMemsetD2D32Async, "cuMemsetD2D32Async", REQUIRED,                  \
      (CUdeviceptr, size_t, unsigned int, size_t, size_t, CUstream))                     \
    X(CUresult, cuStreamBeginCapture, "cuStreamBeginCapture_v2", REQUIRED, (CUstream, int)) \
    X(CUresult, cuStreamEndCapture, "cuStreamEndCapture", REQUIRED, (CUstream, CUgraph *)) \
    X(CUresult, cuGraphCreate, "cuGraphCreate", REQUIRED, (CUgraph *, unsigned int))     \
    X(CUresult, cuGraphDestroy, "cuGraphDestroy", REQUIRED, (CUgraph))                   \
    X(CUresult, cuGraphGetNodes, "cuGraphGetNodes", REQUIRED, (CUgraph, CUgraphNode *, size_t *)) \
    X(CUresult, cuGraphNodeGetType, "cuGraphNodeGetType", REQUIRED, (CUgraphNode, int *)) \
    X(CUresult, cuGraphAddKernelNode, "cuGraphAddKernelNode_v2", REQUIRED,               \
      (CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_KERNEL_NODE_PARAMS *)) \
    X(CUresult, cuGraphKernelNodeGetParams, "cuGraphKernelNodeGetParams_v2", REQUIRED,   \
      (CUgraphNode, CUDA_KERNEL_NODE_PARAMS *))                                          \
    X(CUresult, cuGraphKernelNodeSetParams, "cuGraphKernelNodeSetParams_v2", REQUIRED,   \
      (CUgraphNode, const CUDA_KERNEL_NODE_PARAMS *))                                    \
    X(CUresult, cuGraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams_v2", REQUIRED, \
      (CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS *))                       \
    X(CUresult, cuGraphInstantiate, "cuGraphInstantiateWithFlags", REQUIRED,             \
      (CUgraphExec *, CUgraph, unsigned long long))                                      \
    X(CUresult, cuGraphExecDestroy, "cuGraphExecDestroy", REQUIRED, (CUgraphExec))       \
    X(CUresult, cuGraphLaunch, "cuGraphLaunch", REQUIRED, (CUgraphExec, CUstream))       \
    X(CUresult, cuStreamCreateWithPriority, "cuStreamCreateWithPriority", REQUIRED, (CUstream *, unsigned int, int)) \
    X(CUresult, cuStreamDestroy, "cuStreamDestroy_v2", REQUIRED, (CUstream))             \
    X(CUresult, cuStreamSynchronize, "cuStreamSynchronize", REQUIRED, (CUstream))        \
    X(CUresult, cuStreamQuery, "cuStreamQuery", REQUIRED, (CUstream))                    \
    X(CUresult, cuStreamGetCtx, "cuStreamGetCtx", OPTIONAL, (CUstream, CUcontext *))     \
    X(CUresult, cuStreamGetId, "cuStreamGetId", OPTIONAL, (CUstream, unsigned long long *)) \
    /* what a capture is building, and user objects a graph keeps alive (oneshot.c) */   \
    X(CUresult, cuStreamGetCaptureInfo, "cuStreamGetCaptureInfo_v3", OPTIONAL,           \
      (CUstream, int *, unsigned long long *, CUgraph *, const CUgraphNode **,           \
       const void **, size_t *))                                                         \
    X(CUresult, cuUserObjectCreate, "cuUserObjectCreate", OPTIONAL,                      \
      (CUuserObject *, void *, void (*)(void *), unsigned int, unsigned int))            \
    X(CUresult, cuUserObjectRelease, "cuUserObjectRelease", OPTIONAL, (CUuserObject, unsigned int)) \
    X(CUresult, cuGraphRetainUserObject, "cuGraphRetainUserObject", OPTIONAL,            \
      (CUgraph, CUuserObject, unsigned int, unsigned int))                               \
    X(CUresult, cuStreamWaitEvent, "cuStreamWaitEvent", REQUIRED, (CUstream, CUevent, unsigned int)) \
    X(CUresult, cuEventCreate, "cuEventCreate", REQUIRED, (CUevent *, unsigned int))     \
    X(CUresult, cuEventDestroy, "cuEventDestroy_v2", REQUIRED, (CUevent))                \
    X(CUresult, cuEventRecord, "cuEventRecord", REQUIRED, (CUevent, CUstream))           \
    X(CUresult, cuEventSynchronize, "cuEventSynchronize", REQUIRED, (CUevent))           \
    X(CUresult, cuEventQuery, "cuEventQuery", REQUIRED, (CUevent))                       \
    X(CUresult, cuEventElapsedTime, "cuEventElapsedTime", REQUIRED, (float *, CUevent, CUevent))

#define CUKIT_NVRTC_API(X)                                                               \
    X(nvrtcResult, nvrtcVersion, "nvrtcVersion", REQUIRED, (int *, int *))               \
    X(const char *, nvrtcGetErrorString, "nvrtcGetErrorString", REQUIRED, (nvrtcResult)) \
    X(nvrtcResult, nvrtcCreateProgram, "nvrtcCreateProgram", REQUIRED,                   \
      (nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *)) \
    X(nvrtcResult, nvrtcDestroyProgram, "nvrtcDestroyProgram", REQUIRED, (nvrtcProgram *)) \
    X(nvrtcResult, nvrtcCompileProgram, "nvrtcCompileProgram", REQUIRED, (nvrtcProgram, int, const char *const *)) \
    X(nvrtcResult, nvrtcGetPTXSize, "nvrtcGetPTXSize", REQUIRED, (nvrtcProgram, size_t *)) \
    X(nvrtcResult, nvrtcGetPTX, "nvrtcGetPTX", REQUIRED, (nvrtcProgram, char *))         \
    X(nvrtcResult, nvrtcGetCUBINSize, "nvrtcGetCUBINSize", REQUIRED, (nvrtcProgram, size_t *)) \
    X(nvrtcResult, nvrtcGetCUBIN, "nvrtcGetCUBIN", REQUIRED, (nvrtcProgram, char *))     \
    X(nvrtcResult, nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", REQUIRED, (nvrtcProgram, size_t *)) \
    X(nvrtcResult, nvrtcGetProgramLog, "nvrtcGetProgramLog", REQUIRED, (nvrtcProgram, char *)) \
    X(nvrtcResult, nvrtcAddNameExpression, "nvrtcAddNameExpression", REQUIRED, (nvrtcProgram, const char *)) \
    X(nvrtcResult, nvrtcGetLoweredName, "nvrtcGetLoweredName", REQUIRED, (nvrtcProgram, const char *, const char **)) \
    X(nvrtcResult, nvrtcGetNumSupportedArchs, "nvrtcGetNumSupportedArchs", OPTIONAL, (int *)) \
    X(nvrtcResult, nvrtcGetSupportedArchs, "nvrtcGetSupportedArchs", OPTIONAL, (int *)) \
    X(nvrtcResult, nvrtcGetLTOIRSize, "nvrtcGetLTOIRSize", OPTIONAL, (nvrtcProgram, size_t *)) \
    X(nvrtcResult, nvrtcGetLTOIR, "nvrtcGetLTOIR", OPTIONAL, (nvrtcProgram, char *))

/* nvJitLink's header turns each call into a versioned symbol of the header's
 * major version (nvJitLinkCreate -> __nvJitLinkCreate_13_0); the library also
 * exports the plain names. loader.c asks nvJitLinkVersion for the library's major
 * and takes __<symbol>_<major>_0 where it exists, else the plain symbol below. */
#define CUKIT_NVJITLINK_API(X)                                                           \
    X(nvJitLinkResult, nvJitLinkVersion, "nvJitLinkVersion", OPTIONAL, (unsigned int *, unsigned int *)) \
    X(nvJitLinkResult, nvJitLinkCreate, "nvJitLinkCreate", REQUIRED,                     \
      (nvJitLinkHandle *, uint32_t, const char *const *))                                \
    X(nvJitLinkResult, nvJitLinkDestroy, "nvJitLinkDestroy", REQUIRED, (nvJitLinkHandle *)) \
    X(nvJitLinkResult, nvJitLinkAddData, "nvJitLinkAddData", REQUIRED,                   \
      (nvJitLinkHandle, int, const void *, size_t, const char *))                        \
    X(nvJitLinkResult, nvJitLinkAddFile, "nvJitLinkAddFile", REQUIRED, (nvJitLinkHandle, int, const char *)) \
    X(nvJitLinkResult, nvJitLinkComplete, "nvJitLinkComplete", REQUIRED, (nvJitLinkHandle)) \
    X(nvJitLinkResult, nvJitLinkGetLinkedCubinSize, "nvJitLinkGetLinkedCubinSize", REQUIRED, (nvJitLinkHandle, size_t *)) \
    X(nvJitLinkResult, nvJitLinkGetLinkedCubin, "nvJitLinkGetLinkedCubin", REQUIRED, (nvJitLinkHandle, void *)) \
    X(nvJitLinkResult, nvJitLinkGetLinkedPtxSize, "nvJitLinkGetLinkedPtxSize", OPTIONAL, (nvJitLinkHandle, size_t *)) \
    X(nvJitLinkResult, nvJitLinkGetLinkedPtx, "nvJitLinkGetLinkedPtx", OPTIONAL, (nvJitLinkHandle, char *)) \
    X(nvJitLinkResult, nvJitLinkGetErrorLogSize, "nvJitLinkGetErrorLogSize", REQUIRED, (nvJitLinkHandle, size_t *)) \
    X(nvJitLinkResult, nvJitLinkGetErrorLog, "nvJitLinkGetErrorLog", REQUIRED, (nvJitLinkHandle, char *)) \
    X(nvJitLinkResult, nvJitLinkGetInfoLogSize, "nvJitLinkGetInfoLogSize", REQUIRED, (nvJitLinkHandle, size_t *)) \
    X(nvJitLinkResult, nvJitLinkGetInfoLog, "nvJitLinkGetInfoLog", REQUIRED, (nvJitLinkHandle, char *))

#endif /* CUKIT_ENTRY_POINTS_H */
