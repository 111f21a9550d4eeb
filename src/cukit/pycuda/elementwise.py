"""pycuda.elementwise on cukit: ElementwiseKernel, a face of cukit's
ElementwiseKernel (cukit's array engine takes PyCUDA's argument-string form,
builds, caches and launches the kernel, with range=/slice=, loop_prep and
after_loop), and PyCUDA's kernel-building helpers (get_elwise_module,
get_elwise_kernel, get_linear_combination_kernel), which give SourceModules and
prepared Functions of the same grid-stride loop."""
from __future__ import annotations

import numpy as np

import cukit
from cukit import _cukit

from . import _engine, _errors
from . import driver as drv
from ._ctypes import ScalarArg, VectorArg, dtype_to_ctype, parse_c_arg  # noqa: F401
from ._engine import needs_engine
from .compiler import SourceModule
from .gpuarray import GPUArray
from .reduction import _builder_options, _builder_preamble


def _engine_kernel():
    k = getattr(cukit, "ElementwiseKernel", None)
    if k is None:
        raise needs_engine("ElementwiseKernel")
    return k


class ElementwiseKernel(_cukit._PycudaElementwise):
    """ElementwiseKernel(arguments, operation, name="kernel", keep=False, options=None,
    preamble="", loop_prep="", after_loop="")(*args, range=None, slice=None, stream=None).

    The call is C (_PycudaElementwise): GPUArrays become their cukit.Arrays and the
    engine's kernel runs. A call with an array whose dtype is not the one its
    parameter declares (which PyCUDA runs) comes to _call_v, which converts the
    arguments once and calls the kernel once."""

    __slots__ = ("_arguments", "_name", "_warned", "__dict__", "__weakref__")

    def __init__(self, arguments, operation, name="kernel", keep=False, options=None,
                 preamble="", loop_prep="", after_loop=""):
        self._k = _engine_kernel()(arguments, operation, name=name,
                                   preamble=_builder_preamble(preamble),
                                   loop_prep=loop_prep, after_loop=after_loop,
                                   options=_builder_options(options, "ElementwiseKernel"))
        self._arguments = arguments
        self._name = name
        self._warned = set()
        self._declared = _engine.declared_arrays(arguments) or {}
        n = max(self._declared, default=-1) + 1
        self._pointees = tuple(self._declared[i][1] if i in self._declared else None
                               for i in range(n))

    def _call_v(self, *args, **kwargs):
        ops = [a._a if isinstance(a, GPUArray) else a for a in args]
        # an array whose dtype is not the declared one: PyCUDA runs those (lenient says
        # how, or leaves it to cukit's error)
        fixed = self._declared and _engine.lenient(ops, self._declared, "%s()" % self._name,
                                                   self._warned)
        try:
            return self._k(*(fixed or ops), **kwargs)
        except cukit.CudaError as e:
            raise _errors.at_edge(e) from e.__cause__


_LOOP = """#include <pycuda-complex.hpp>

%(preamble)s

extern "C" __global__ void %(name)s(%(arguments)s)
{
    size_t tid = threadIdx.x;
    size_t total_threads = (size_t)gridDim.x * blockDim.x;
    size_t cta_start = (size_t)blockDim.x * blockIdx.x;
    %(index)s i;
    (void)tid; (void)total_threads; (void)cta_start;
    %(loop_prep)s;
%(loop)s
    %(after_loop)s;
}
"""

_FLAT = """    for (i = cta_start + tid; i < n; i += total_threads) {
        %s;
    }"""

# start, stop, step: the loop walks i = start, start + step, ... short of stop
_RANGE = """    if (step < 0) {
        for (i = start + (long)(cta_start + tid) * step; i > stop; i += (long)total_threads * step) {
            %s;
        }
    } else {
        for (i = start + (long)(cta_start + tid) * step; i < stop; i += (long)total_threads * step) {
            %s;
        }
    }"""


def _arguments(arguments):
    """Argument objects from a C argument string or a list of them (a new list)."""
    if isinstance(arguments, str):
        return [parse_c_arg(a) for a in arguments.split(",")]
    return list(arguments)


def _module(arguments, operation, name, keep, options, preamble, loop_prep, after_loop,
            use_range):
    loop = _RANGE % (operation, operation) if use_range else _FLAT % operation
    source = _LOOP % {
        "preamble": preamble, "name": name, "loop_prep": loop_prep, "after_loop": after_loop,
        "arguments": ", ".join(a.declarator() for a in arguments),
        "index": "long" if use_range else "size_t", "loop": loop}
    return SourceModule(source, options=options, keep=keep, no_extern_c=True)


def get_elwise_module(arguments, operation, name="kernel", keep=False, options=None,
                      preamble="", loop_prep="", after_loop=""):
    """A SourceModule whose kernel `name` takes `arguments` (VectorArg/ScalarArg objects,
    the last being the element count n) and runs `operation` for i in [0, n) as a
    grid-stride loop, after loop_prep and before after_loop; launch it with any
    grid and block (a GPUArray's _grid and _block, say)."""
    return _module(_arguments(arguments), operation, name, keep, options, preamble,
                   loop_prep, after_loop, False)


def get_elwise_range_module(arguments, operation, name="kernel", keep=False, options=None,
                            preamble="", loop_prep="", after_loop=""):
    """get_elwise_module's loop over i = start, start + step, ... short of stop (the last
    three arguments)."""
    return _module(_arguments(arguments), operation, name, keep, options, preamble,
                   loop_prep, after_loop, True)


def get_elwise_kernel_and_types(arguments, operation, name="kernel", keep=False,
                                options=None, use_range=False, **kwargs):
    """(module, prepared Function, Argument list) for `arguments` plus the loop's own:
    n (numpy.uintp), or start, stop, step (numpy.intp) with use_range."""
    arguments = _arguments(arguments)
    if use_range:
        arguments += [ScalarArg(np.intp, "start"), ScalarArg(np.intp, "stop"),
                      ScalarArg(np.intp, "step")]
    else:
        arguments.append(ScalarArg(np.uintp, "n"))
    build = get_elwise_range_module if use_range else get_elwise_module
    mod = build(arguments, operation, name, keep, options, **kwargs)
    func = mod.get_function(name)
    func.prepare("".join(a.struct_char for a in arguments))
    return mod, func, arguments


def get_elwise_kernel(arguments, operation, name="kernel", keep=False, options=None, **kwargs):
    """The prepared Function of get_elwise_kernel_and_types: call it with
    prepared_call(grid, block, *args, n) (or prepared_async_call)."""
    return get_elwise_kernel_and_types(arguments, operation, name, keep, options, **kwargs)[1]


_linear = {}


def get_linear_combination_kernel(summand_descriptors, dtype_z):
    """(Function, texture references) for z[i] = a0*x0[i] + a1*x1[i] + ...; each
    descriptor is (is_gpu_scalar, scalar dtype, vector dtype). The prepared Function
    takes, per summand, the scalar (unless it is a GPU scalar, which is read from its
    texture reference) and the vector, then z and n."""
    descriptors = tuple((bool(g), np.dtype(s), np.dtype(v)) for g, s, v in summand_descriptors)
    dtype_z = np.dtype(dtype_z)
    key = (id(drv.Context.get_current()), descriptors, dtype_z)
    found = _linear.get(key)
    if found is not None:
        return found
    args, preamble, loop_prep, summands, textures = [], ["#include <pycuda-helpers.hpp>"], [], [], []
    for i, (on_gpu, scalar_dtype, vector_dtype) in enumerate(descriptors):
        if on_gpu:
            preamble.append("texture <%s, 1, cudaReadModeElementType> tex_a%d;"
                            % (dtype_to_ctype(scalar_dtype, with_fp_tex_hack=True), i))
            loop_prep.append("%s a%d = fp_tex1Dfetch(tex_a%d, 0)"
                             % (dtype_to_ctype(scalar_dtype), i, i))
            textures.append("tex_a%d" % i)
        else:
            args.append(ScalarArg(scalar_dtype, "a%d" % i))
        args.append(VectorArg(vector_dtype, "x%d" % i))
        summands.append("a%d*x%d[i]" % (i, i))
    args += [VectorArg(dtype_z, "z"), ScalarArg(np.uintp, "n")]
    mod = get_elwise_module(args, "z[i] = " + " + ".join(summands), "linear_combination",
                            preamble="\n".join(preamble), loop_prep=";\n".join(loop_prep))
    func = mod.get_function("linear_combination")
    tex_src = [mod.get_texref(name) for name in textures]
    func.prepare("".join(a.struct_char for a in args), texrefs=tex_src)
    found = _linear[key] = (func, tex_src)
    return found
