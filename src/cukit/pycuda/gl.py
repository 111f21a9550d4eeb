"""pycuda.gl is not provided by cukit.pycuda."""
raise ImportError(
    "pycuda.gl is not provided by cukit.pycuda: cukit implements PyCUDA's driver, "
    "compiler, gpuarray and tools modules; OpenGL interop is not part of it")
