"""pycuda.compiler on cukit: SourceModule and DynamicModule compiled with NVRTC
through cukit's Program, kernel cache and linker (no nvcc, no host compiler).

nvcc options are translated to NVRTC's by one table; an option with no NVRTC
meaning that cukit knows of is refused with a message, never dropped silently
(host-compiler options, which cannot affect device code, are ignored)."""
from __future__ import annotations

import os
import re
import shlex
import threading
import warnings

import cukit

from . import driver as _drv  # first: driver imports _texref, which uses driver's names
from . import _texref

DEFAULT_NVCC_FLAGS = shlex.split(os.environ.get("PYCUDA_DEFAULT_NVCC_FLAGS", ""))

INCLUDE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")


def _get_per_user_string():
    try:
        return "uid%d" % os.getuid()
    except AttributeError:  # pragma: no cover
        return "user"


class CompilerWarning(UserWarning):
    """The compiler succeeded but printed something (warnings)."""


# ------------------------------------------------------------------ options

# nvcc spellings -> what they become. "same": NVRTC takes it as written;
# "ignore": it cannot change device code (host compiler, output kinds, keep).
_SAME = {
    "-use_fast_math", "--use_fast_math", "-restrict", "--restrict", "-w",
    "--expt-relaxed-constexpr", "-expt-relaxed-constexpr", "--extended-lambda",
    "--expt-extended-lambda", "-G", "--device-debug", "-dw", "--disable-warnings",
    "--device-as-default-execution-space", "-default-device",
}
_SAME_PREFIX = ("-ftz=", "--ftz=", "-prec-div=", "--prec-div=", "-prec-sqrt=", "--prec-sqrt=",
                "-fmad=", "--fmad=", "-maxrregcount=", "--maxrregcount=", "-std=", "--std=",
                "-Xptxas=", "--ptxas-options=", "-diag-suppress=", "--diag-suppress=",
                "-diag-error=", "--diag-error=", "-diag-warn=", "--diag-warn=",
                "-split-compile=", "--split-compile=")
_IGNORE = {"-keep", "--keep", "-cubin", "--cubin", "-ptx", "--ptx", "-m64", "--machine=64",
           "-rdc=true", "--relocatable-device-code=true", "-dc", "--device-c",
           "-shared",
           # nvcc's -O sets the host code's optimization; device code is always optimized
           "-O", "-O0", "-O1", "-O2", "-O3"}
_IGNORE_WITH_VALUE = {"-Xcompiler", "--compiler-options", "-ccbin", "--compiler-bindir",
                      "-Xlinker", "--linker-options", "-odir", "--output-directory"}
_VALUE_NEXT = {"-I": "include", "--include-path": "include", "-D": "define",
               "--define-macro": "define", "-arch": "arch", "--gpu-architecture": "arch",
               "-code": "code", "--gpu-code": "code", "-gencode": "gencode",
               "-maxrregcount": "maxrregcount", "--maxrregcount": "maxrregcount",
               "-Xptxas": "ptxas", "--ptxas-options": "ptxas", "-std": "std", "--std": "std",
               "-l": "lib", "--library": "lib", "-L": "libdir", "--library-path": "libdir"}


class _Options:
    def __init__(self):
        self.options = []
        self.include_dirs = []
        self.defines = {}
        self.lineinfo = False
        self.arch = None
        self.libs = []
        self.libdirs = []


def _translate(flags, who):
    """nvcc-style flags -> _Options for NVRTC. ValueError on an option it does not know."""
    out = _Options()
    flags = list(flags or ())
    i = 0
    while i < len(flags):
        f = str(flags[i])
        i += 1
        if f in _VALUE_NEXT:
            if i >= len(flags):
                raise ValueError("%s: option %s needs a value" % (who, f))
            _apply(out, _VALUE_NEXT[f], str(flags[i]), who)
            i += 1
            continue
        if f in _IGNORE_WITH_VALUE:
            i += 1
            continue
        if f in _SAME or f.startswith(_SAME_PREFIX):
            if f.startswith(("-Xptxas=", "--ptxas-options=")):
                out.options.append("--ptxas-options=" + f.split("=", 1)[1])
            elif f.startswith(("-std=", "--std=")):
                out.options.append("-std=" + f.split("=", 1)[1])
            elif f.startswith(("-maxrregcount=", "--maxrregcount=")):
                out.options.append("-maxrregcount=" + f.split("=", 1)[1])
            elif f in ("-G", "--device-debug"):
                out.options.append("-G")
            elif f in ("--expt-extended-lambda",):
                out.options.append("--extended-lambda")
            elif f in ("-dw", "--disable-warnings"):
                out.options.append("-w")
            else:
                out.options.append(f)
            continue
        if f in ("-lineinfo", "--generate-line-info"):
            out.lineinfo = True
            continue
        if f in _IGNORE or f.startswith(("-Xcompiler=", "--compiler-options=", "-ccbin=",
                                         "--compiler-bindir=", "-odir=", "-Xlinker=")):
            continue
        m = re.match(r"^(-I|--include-path=)(.+)$", f)
        if m:
            _apply(out, "include", m.group(2), who)
            continue
        m = re.match(r"^(-D|--define-macro=)(.+)$", f)
        if m:
            _apply(out, "define", m.group(2), who)
            continue
        m = re.match(r"^(-arch=|--gpu-architecture=|-arch)(.+)$", f)
        if m:
            _apply(out, "arch", m.group(2), who)
            continue
        m = re.match(r"^(-code=|--gpu-code=|-gencode=)(.+)$", f)
        if m:
            _apply(out, "code", m.group(2), who)
            continue
        m = re.match(r"^(-l|--library=)(.+)$", f)
        if m:
            out.libs.append(m.group(2))
            continue
        m = re.match(r"^(-L|--library-path=)(.+)$", f)
        if m:
            out.libdirs.append(m.group(2))
            continue
        raise ValueError(
            "%s: nvcc option %r has no NVRTC equivalent that cukit knows. cukit compiles "
            "with NVRTC, which takes -O3, --use_fast_math, -lineinfo, -I, -D, -arch, -std=, "
            "-maxrregcount=, -G, -ftz=, -prec-div=, -prec-sqrt=, -fmad=, -Xptxas; remove the "
            "option, or pass an NVRTC option cukit.Program takes" % (who, f))
    return out


def _apply(out, what, value, who):
    if what == "include":
        out.include_dirs.append(value)
    elif what == "define":
        name, eq, val = value.partition("=")
        out.defines[name] = val if eq else None
    elif what in ("arch", "code", "gencode"):
        m = re.search(r"(?:sm|compute)_(\d+)", value)
        if m is None:
            raise ValueError("%s: cannot read an architecture from %r" % (who, value))
        out.arch = int(m.group(1))
    elif what == "maxrregcount":
        out.options.append("-maxrregcount=" + value)
    elif what == "ptxas":
        out.options.append("--ptxas-options=" + value)
    elif what == "std":
        out.options.append("-std=" + value)
    elif what == "lib":
        out.libs.append(value)
    elif what == "libdir":
        out.libdirs.append(value)


def _check_arch(requested, who):
    """cukit compiles for the device's own architecture; an older one asked for
    runs there too (it is what the GPU runs natively), a newer one cannot."""
    if requested is None:
        return
    if isinstance(requested, str):
        m = re.search(r"(\d+)", requested)
        requested = int(m.group(1)) if m else None
        if requested is None:
            return
    major, minor = cukit.get_device().compute_capability
    if requested > major * 10 + minor:
        raise ValueError("%s: sm_%d is newer than this GPU (sm_%d%d); cukit compiles for the "
                         "device's own architecture" % (who, requested, major, minor))


# ------------------------------------------------------------------ the cache switches

_env_lock = threading.Lock()


class _CacheSettings:
    """PyCUDA's cache switches on cukit's cache: cache_dir=False or
    PYCUDA_DISABLE_CACHE turn it off, a folder (or PYCUDA_CACHE_DIR) moves it."""

    def __init__(self, cache_dir):
        if cache_dir is None:
            if os.environ.get("PYCUDA_DISABLE_CACHE"):
                cache_dir = False
            else:
                cache_dir = os.environ.get("PYCUDA_CACHE_DIR")
        self.cache_dir = cache_dir
        self.saved = None

    @property
    def enabled(self):
        return self.cache_dir is not False

    def __enter__(self):
        if self.cache_dir is None:
            return self
        _env_lock.acquire()
        self.saved = {k: os.environ.get(k) for k in ("CUKIT_CACHE", "CUKIT_CACHE_DIR")}
        if self.cache_dir is False:
            os.environ["CUKIT_CACHE"] = "0"
        else:
            os.environ["CUKIT_CACHE_DIR"] = str(self.cache_dir)
        return self

    def __exit__(self, *exc):
        if self.saved is None:
            return
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _env_lock.release()


# ------------------------------------------------------------------ compiling

_loaded = {}   # (source, options...) -> cukit.Module, for sources with no user headers
_loaded_lock = threading.Lock()


def _text(source):
    return source if type(source) is str else str(source)


_TEXREF_INCLUDE = "#include <pycuda-texref.hpp>\n"


def _wrap(source, no_extern_c, dirs=()):
    # Texture and surface references (removed by CUDA 12) become __constant__ structs of
    # pycuda-texref.hpp holding texture and surface objects (see _texref.py), in the
    # source and in the files it includes through `dirs`.
    source, included = _texref.inline_references(source, dirs, own=(INCLUDE_DIR,))
    source, refs = _texref.lower_references(source)
    refs = refs or included
    head = _TEXREF_INCLUDE if refs else ""
    if no_extern_c:
        return head + "#line 1\n" + source if refs else source
    # #line keeps the user's line numbers in compiler messages.
    return '%sextern "C" {\n#line 1\n%s\n}\n' % (head, source)


def _include_dirs(opts, include_dirs):
    return [INCLUDE_DIR] + list(opts.include_dirs) + [str(d) for d in include_dirs]


def _program(source, opts, include_dirs, name="kernel.cu"):
    dirs = _include_dirs(opts, include_dirs)
    return cukit.Program(source, name=name, options=tuple(opts.options),
                         include_dirs=dirs, defines=dict(opts.defines),
                         lineinfo=opts.lineinfo)


def _raise_compile_error(e, opts):
    raise _drv.CompileError(str(e), command_line="nvrtc " + " ".join(opts.options),
                            stdout="", stderr=getattr(e, "log", str(e))) from None


def _warn_log(log):
    if log and log.strip():
        warnings.warn("The CUDA compiler succeeded, but said the following:\n" + log,
                      CompilerWarning, stacklevel=4)


def _load(source, options, no_extern_c, arch, code, cache_dir, include_dirs, who):
    opts = _translate(DEFAULT_NVCC_FLAGS if options is None else options, who)
    _check_arch(arch or opts.arch, who)
    _check_arch(code, who)
    if opts.libs:
        raise ValueError("%s: libraries (-l%s) need relocatable device code: use "
                         "DynamicSourceModule" % (who, opts.libs[0]))
    text = _wrap(source, no_extern_c, _include_dirs(opts, include_dirs))
    settings = _CacheSettings(cache_dir)
    key = None
    # A module with texture or surface references is loaded afresh: each holds its own
    # bindings, as each PyCUDA SourceModule does.
    if settings.enabled and settings.cache_dir is None and not include_dirs \
            and not opts.include_dirs and '#include "' not in source \
            and not text.startswith(_TEXREF_INCLUDE):
        dev = cukit.get_device().ordinal
        key = (text, tuple(opts.options), tuple(sorted(opts.defines.items(), key=str)),
               opts.lineinfo, dev)
        hit = _loaded.get(key)
        if hit is not None:
            return hit
    with settings:
        prog = _program(text, opts, include_dirs)
        try:
            module = prog.load()
        except cukit.CompileError as e:
            _raise_compile_error(e, opts)
    _warn_log(prog.log)
    if key is not None:
        with _loaded_lock:
            if len(_loaded) > 512:
                _loaded.clear()
            _loaded[key] = module
    return module


class SourceModule(_drv.Module):
    """Compile CUDA C with NVRTC (through cukit's kernel cache) and load it.

    The source is wrapped in extern "C" { } unless no_extern_c=True; cukit's
    pycuda-complex.hpp and pycuda-helpers.hpp are on the include path. `nvcc`
    and `keep` are accepted and have no effect (there is no nvcc)."""

    def __init__(self, source, nvcc="nvcc", options=None, keep=False, no_extern_c=False,
                 arch=None, code=None, cache_dir=None, include_dirs=[]):
        # PyCUDA takes any object and compiles str() of it (cgen/codepy modules)
        module = _load(_text(source), options, no_extern_c, arch, code, cache_dir,
                       include_dirs, "SourceModule")
        super().__init__(module)


def compile(source, nvcc="nvcc", options=None, keep=False, no_extern_c=False, arch=None,
            code=None, cache_dir=None, include_dirs=[], target="cubin"):
    """Compile to machine code (target "cubin", the default) or PTX, as bytes."""
    opts = _translate(DEFAULT_NVCC_FLAGS if options is None else options, "compile")
    want = arch or code or opts.arch
    if want is None:
        major, minor = cukit.get_device().compute_capability
        sm = "sm_%d%d" % (major, minor)
    else:
        m = re.search(r"(\d+)", str(want))
        sm = "sm_%s" % m.group(1)
    with _CacheSettings(cache_dir):
        prog = _program(_wrap(_text(source), no_extern_c, _include_dirs(opts, include_dirs)),
                        opts, include_dirs)
        try:
            if target == "cubin":
                out = prog.cubin(arch=sm)
            elif target == "ptx":
                out = prog.ptx(arch=sm.replace("sm_", "compute_"))
            else:
                raise ValueError("compile(): target must be 'cubin' or 'ptx', got %r" % (target,))
        except cukit.CompileError as e:
            _raise_compile_error(e, opts)
    _warn_log(prog.log)
    return out


# ------------------------------------------------------------------ relocatable code


def _library_dirs():
    """Where the CUDA toolkit's static device libraries (libcudadevrt.a) may be:
    beside the NVRTC cukit loaded, then the usual toolkit folders."""
    dirs = []
    try:
        cukit.nvrtc_version()  # loads NVRTC
        with open("/proc/self/maps") as f:
            for line in f:
                if "libnvrtc" in line and "/" in line:
                    d = os.path.dirname(line[line.index("/"):].strip())
                    dirs += [d, os.path.join(d, "..", "lib64"), os.path.join(d, "..", "lib"),
                             os.path.join(d, "..", "lib", "x64")]
                    break
    except (OSError, cukit.CudaError):
        pass
    for env in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(env)
        if root:
            dirs += [os.path.join(root, "lib64"), os.path.join(root, "lib")]
    dirs += ["/usr/local/cuda/lib64", "/usr/local/cuda/lib", "/usr/lib/x86_64-linux-gnu"]
    return dirs


def _find_library(name, extra_dirs=()):
    fname = "lib%s.a" % name
    for d in list(extra_dirs) + _library_dirs():
        path = os.path.join(d, fname)
        if os.path.isfile(path):
            return os.path.realpath(path)
    raise _drv.LogicError(
        "%s was not found beside NVRTC or in the CUDA toolkit folders (CUDA_HOME, "
        "/usr/local/cuda); it ships with the CUDA toolkit. Pass cuda_libdir= to say where"
        % fname)


class DynamicModule(_drv.Module):
    """Relocatable device code linked with nvJitLink (cukit.link): add_source,
    add_data, add_file, add_stdlib, then link()."""

    def __init__(self, nvcc="nvcc", link_options=None, keep=False, no_extern_c=False,
                 arch=None, code=None, cache_dir=None, include_dirs=[], message_handler=None,
                 log_verbose=False, cuda_libdir=None):
        self._items = []
        self._no_extern_c = no_extern_c
        self._include_dirs = list(include_dirs)
        self._link_options = list(link_options or ())
        self._cache_dir = cache_dir
        self._libdirs = [cuda_libdir] if cuda_libdir else []
        _check_arch(arch, "DynamicModule")
        self._m = None
        self._functions = {}
        self._pending = []

    def add_source(self, source, nvcc_options=None, name="kernel.ptx"):
        opts = _translate(DEFAULT_NVCC_FLAGS if nvcc_options is None else nvcc_options,
                          "DynamicModule.add_source")
        self._libdirs += opts.libdirs
        for lib in opts.libs:
            self.add_stdlib(lib)
        dirs = _include_dirs(opts, self._include_dirs)
        self._items.append(_program(_wrap(_text(source), self._no_extern_c, dirs), opts,
                                    self._include_dirs,
                                    name=name.replace(".ptx", ".cu")))
        return self

    def add_data(self, data, input_type=None, name="unknown"):
        self._items.append(bytes(data))
        return self

    def add_file(self, filename, input_type=None):
        self._items.append(str(filename))
        return self

    def add_stdlib(self, libname):
        path = _find_library(libname, self._libdirs)
        if path not in self._items:
            self._items.append(path)
        return self

    def link(self):
        with _CacheSettings(self._cache_dir):
            try:
                if self._link_options:
                    self._m = cukit.link(self._items, options=self._link_options)
                else:
                    self._m = cukit.link(self._items)
            except cukit.CompileError as e:
                raise _drv.CompileError(str(e), command_line="nvJitLink",
                                        stderr=getattr(e, "log", str(e))) from None
        return self

    def get_function(self, name):
        if self._m is None:
            raise _drv.LogicError("DynamicModule: call link() before get_function()")
        return super().get_function(name)


class DynamicSourceModule(DynamicModule):
    """A source with dynamic parallelism (kernels launching kernels): compiled as
    relocatable code and linked with the CUDA device runtime (libcudadevrt.a)."""

    def __init__(self, source, nvcc="nvcc", options=None, keep=False, no_extern_c=False,
                 arch=None, code=None, cache_dir=None, include_dirs=[], cuda_libdir=None):
        super().__init__(nvcc=nvcc, keep=keep, no_extern_c=no_extern_c, arch=arch, code=code,
                         cache_dir=cache_dir, include_dirs=include_dirs,
                         cuda_libdir=cuda_libdir)
        self.add_source(source, nvcc_options=options)
        self.add_stdlib("cudadevrt")
        self.link()
