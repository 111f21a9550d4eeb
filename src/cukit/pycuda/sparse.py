"""pycuda.sparse is not provided by cukit.pycuda."""
raise ImportError(
    "pycuda.sparse is not provided by cukit.pycuda: cukit implements PyCUDA's driver, "
    "compiler, gpuarray and tools modules; sparse linear algebra is not part of it")
