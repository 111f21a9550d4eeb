"""python -m cukit: what this machine offers, and what a kernel costs.

    python -m cukit info
    python -m cukit compile saxpy.cu --arch sm_90 -o saxpy.cubin
    python -m cukit cache info|clear

Each subcommand is one add_<name>(subparsers) function that registers its parser
and the function that runs it; COMMANDS lists them. A failure is one line on
stderr (a compile error's diagnostics follow it) and exit status 1.
"""
import argparse
import os
import re
import sys

import cukit


class CliError(Exception):
    """A failure shown as one line; `details` (the compiler's log) may follow it."""

    def __init__(self, message, details=""):
        super().__init__(message)
        self.details = details


def one_line(exc):
    """An exception's message on one line."""
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return text or type(exc).__name__


# ------------------------------------------------------------------ info

def _size(nbytes):
    units = ("B", "KiB", "MiB", "GiB", "TiB")
    i = 0
    while nbytes >= 1024 and i < len(units) - 1:
        nbytes /= 1024
        i += 1
    return f"{nbytes:.0f} {units[i]}" if nbytes == int(nbytes) else f"{nbytes:.1f} {units[i]}"


def _row(label, value):
    print(f"  {label:<28} {value}")


def run_info(args):
    print(f"cukit {cukit.__version__}")
    try:
        archs = cukit.nvrtc_archs()
        print("NVRTC      {}.{}, machine code for {}".format(*cukit.nvrtc_version(), ", ".join(archs)))
    except cukit.CudaError as e:
        print(f"NVRTC      not available: {one_line(e)}")
    try:
        print("nvJitLink  {}.{}".format(*cukit.nvjitlink_version()))
    except cukit.CudaError as e:
        print(f"nvJitLink  not available: {one_line(e)}")
    try:
        if cukit.backend() == "emulator":
            why = cukit._cukit._driver_why()
            print(f"driver     none: {why}" if why else
                  "driver     not used: CUKIT_BACKEND=emulator")
            print("devices    cukit's CPU emulator: kernels run on the CPU (device 0 below)")
        else:
            print("driver     supports CUDA {}.{}".format(*cukit.driver_version()))
    except cukit.CudaError as e:
        print(f"driver     none: {one_line(e)}")
        print("devices    none: no CUDA driver, so no GPU can be used")
        return 0
    count = cukit.device_count()
    if count == 0:
        print("devices    none: the driver sees no GPU")
    for i in range(count):
        dev = cukit.Device(i)
        a = dev.attributes
        print(f"device {i}   {dev.name}")
        _row("compute capability", "{}.{} ({})".format(*dev.compute_capability, dev.arch))
        _row("multiprocessors", dev.multiprocessor_count)
        _row("memory", _size(dev.total_memory))
        _row("max threads per block", a["max_threads_per_block"])
        _row("shared memory per block", "{} ({} opt-in)".format(
            _size(a["max_shared_memory_per_block"]), _size(a["max_shared_memory_per_block_optin"])))
        _row("shared memory per SM", _size(a["max_shared_memory_per_multiprocessor"]))
        _row("registers per block", a["max_registers_per_block"])
        _row("L2 cache", _size(a["l2_cache_size"]))
        _row("clock", f"{a['clock_rate'] / 1e6:.2f} GHz")
    return 0


def add_info(subparsers):
    p = subparsers.add_parser(
        "info", help="driver, NVRTC and nvJitLink versions and each GPU's key attributes",
        description="Print the driver, NVRTC and nvJitLink versions and each device's key "
                    "attributes. Without a driver it prints what the toolkit offers.")
    p.set_defaults(run=run_info)


# ------------------------------------------------------------------ compile

# ptxas -v lines, e.g.
#   ptxas info    : Compiling entry function 'saxpy' for 'sm_90'
#   ptxas info    : Function properties for saxpy
#   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
#   ptxas info    : Used 10 registers, used 1 barriers, 256 bytes smem
ENTRY = re.compile(r"Compiling entry function '([^']+)'")
PROPERTIES = re.compile(r"Function properties for (\S+)")
FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
USED = re.compile(r"Used (\d+) registers")
SMEM = re.compile(r"(\d+) bytes smem")


def parse_ptxas(log):
    """{symbol: {registers, shared, spill_stores, spill_loads, stack}} for each kernel, in order."""
    kernels, frames = {}, {}
    entry = props = None
    for line in log.splitlines():
        if m := ENTRY.search(line):
            entry = m.group(1)
            kernels[entry] = {"registers": 0, "shared": 0}
        elif m := PROPERTIES.search(line):
            props = m.group(1)
        elif (m := FRAME.search(line)) and props:
            frames[props] = dict(zip(("stack", "spill_stores", "spill_loads"), map(int, m.groups())))
        elif (m := USED.search(line)) and entry:
            kernels[entry]["registers"] = int(m.group(1))
            if s := SMEM.search(line):
                kernels[entry]["shared"] = int(s.group(1))
    for sym, k in kernels.items():
        k.update(frames.get(sym, {"stack": 0, "spill_stores": 0, "spill_loads": 0}))
    return kernels


def _mangled_prefix(name):
    """How a C++ kernel's symbol begins ("ns::k" -> "_ZN2ns1kE"), to show the source name."""
    parts = name.split("::")
    encoded = "".join(f"{len(p)}{p}" for p in parts)
    return f"_ZN{encoded}E" if len(parts) > 1 else f"_Z{encoded}"


def source_name(symbol, names):
    for name in names:
        if symbol == name or symbol.startswith(_mangled_prefix(name)):
            return name if symbol == name else f"{name} [{symbol}]"
    return symbol


def _arch_for(args):
    """The architecture to compile for, and why it was chosen.

    Without --arch it is the current GPU's; without a GPU too it is an error, as
    for Program.cubin() without arch (the CLI never guesses a GPU).
    """
    archs = cukit.nvrtc_archs()
    if args.arch is None:
        if cukit.device_count() > 0:
            return cukit.Device().arch, "the current GPU's"
        raise CliError(f"no GPU to take the architecture from; pass --arch, e.g. --arch sm_90 "
                       f"(this NVRTC compiles for {', '.join(archs)})")
    m = re.fullmatch(r"sm_([1-9]\d{1,2})([af]?)", args.arch)
    if m is None or f"sm_{m.group(1)}" not in archs:
        raise CliError(f"--arch {args.arch!r} is not an architecture this NVRTC compiles for; "
                       f"use one of {', '.join(archs)} (sm_90a and newer: with 'a' for "
                       f"architecture-specific features)")
    return args.arch, "--arch"


# NVRTC options that take a value: given alone, NVRTC would take the next option
# (cukit's own) as their value.
VALUE_OPTIONS = {"-I": "-I DIR", "--include-path": "-I DIR", "-D": "-D NAME[=VALUE]",
                 "--define-macro": "-D NAME[=VALUE]", "-U": None, "--undefine-macro": None,
                 "-include": None, "--pre-include": None, "-maxrregcount": None,
                 "--maxrregcount": None, "-std": "--std", "--std": "--std"}


def _check_options(values):
    """Refuse --option values that would swallow the next option or fight cukit's own."""
    for opt in values:
        flag = opt.rstrip("=")
        if flag in VALUE_OPTIONS or (opt.endswith("=") and opt.startswith("-")):
            better = VALUE_OPTIONS.get(flag)
            raise CliError(f"--option={opt} has no value: write it in the same argument, e.g. "
                           f"--option={flag}=VALUE" + (f", or use {better}" if better else ""))
        if opt.startswith(("-arch", "--gpu-architecture")):
            raise CliError(f"--option={opt} sets the architecture; use --arch instead, e.g. "
                           f"--arch {opt.partition('=')[2] or 'sm_90'}")


def _defines(values):
    out = {}
    for d in values:
        name, eq, value = d.partition("=")
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise CliError(f"-D {d!r}: expected NAME or NAME=VALUE")
        out[name] = value if eq else None
    return out


def _compile_verbose(source, options, common, arch):
    """The Program compiled to a cubin with ptxas's report in its log, and the cubin.

    NVRTC 13 keeps a compile cache (where a driver is installed); a cubin taken from
    it comes without ptxas's report, so the cache is bypassed. An NVRTC that does
    not know --no-cache has no cache either.
    """
    verbose = ["--ptxas-options=-v"]
    for extra in (["--no-cache"], []):
        prog = cukit.Program(source, options=options + verbose + extra, **common)
        try:
            return prog, prog.cubin(arch=arch)
        except ValueError as e:
            if not extra or "no-cache" not in str(e).split(":")[-1]:
                raise
        except cukit.CompileError as e:
            raise CliError(f"{common['name']} did not compile for {arch}", e.log) from None


def run_compile(args):
    try:
        with open(args.file, encoding="utf-8") as f:
            source = f.read()
    except OSError as e:
        raise CliError(f"cannot read {args.file}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise CliError(f"cannot read {args.file}: not UTF-8 text ({e.reason})") from None
    _check_options(args.option)
    arch, why = _arch_for(args)
    options = [f"-std={args.std}"] if args.std else []
    options += args.option
    name = os.path.basename(args.file)
    common = dict(name=name, include_dirs=args.include, defines=_defines(args.define))
    prog, cubin = _compile_verbose(source, options, common, arch)

    fmt = "ptx" if args.ptx else "cubin" if args.cubin else (
        "ptx" if args.output and args.output.endswith(".ptx") else "cubin")
    report = sys.stderr if args.output == "-" else sys.stdout
    if args.output:
        data = cubin if fmt == "cubin" else cukit.Program(source, options=options, **common).ptx(arch=arch)
        if args.output == "-":
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        else:
            try:
                with open(args.output, "wb") as f:
                    f.write(data)
            except OSError as e:
                raise CliError(f"cannot write {args.output}: {e.strerror or e}") from None

    warnings = [line for line in prog.log.splitlines() if line.strip() and not line.startswith("ptxas")]
    if warnings:
        print("\n".join(warnings), file=sys.stderr)
    kernels = parse_ptxas(prog.log)
    print(f"{name}: {len(kernels)} kernel{'s' * (len(kernels) != 1)} for {arch} ({why})", file=report)
    for sym, k in kernels.items():
        print(f"  {source_name(sym, prog.signatures)}: {k['registers']} registers, "
              f"{k['shared']} bytes shared (static), {k['spill_stores']} bytes spill stores, "
              f"{k['spill_loads']} bytes spill loads, {k['stack']} bytes stack", file=report)
    if args.output and args.output != "-":
        print(f"wrote {fmt} to {args.output}", file=report)
    return 0


def add_compile(subparsers):
    p = subparsers.add_parser(
        "compile", help="compile a .cu file; report registers, shared memory and spills",
        description="Compile FILE with NVRTC to machine code and print each kernel's registers, "
                    "static shared memory, spill stores and loads and stack frame, as ptxas "
                    "reports them. Needs no GPU. The architecture is --arch, else the current "
                    "GPU's; without a GPU, --arch is needed.")
    p.add_argument("file", metavar="FILE.cu")
    p.add_argument("--arch", help="e.g. sm_90 (default: the current GPU's; needed without a GPU)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--ptx", action="store_true", help="-o writes PTX")
    fmt.add_argument("--cubin", action="store_true", help="-o writes the cubin (the default, "
                     "unless OUT ends in .ptx)")
    p.add_argument("-o", dest="output", metavar="OUT", help="write the PTX or cubin here (- for stdout)")
    p.add_argument("-D", dest="define", action="append", default=[], metavar="NAME[=VALUE]",
                   help="define a macro")
    p.add_argument("-I", dest="include", action="append", default=[], metavar="DIR",
                   help="add an include folder")
    p.add_argument("--std", help="C++ standard, e.g. c++20 (default c++17)")
    p.add_argument("--option", action="append", default=[], metavar="OPT",
                   help="pass an option to NVRTC as is, e.g. --option=-lineinfo")
    p.set_defaults(run=run_compile)


# ------------------------------------------------------------------ cache

def run_cache(args):
    info = cukit.cache_info()
    if args.action == "clear":
        removed = cukit.clear_cache()
        print(f"removed {removed} {'entry' if removed == 1 else 'entries'} from {info['dir']}")
        return 0
    print(f"folder     {info['dir']}")
    print(f"enabled    {'yes' if info['enabled'] else 'no (CUKIT_CACHE=0)'}")
    print(f"entries    {info['entries']} ({_size(info['bytes'])})")
    return 0


def add_cache(subparsers):
    p = subparsers.add_parser(
        "cache", help="the kernel cache on disk: where it is and what it holds, or clear it",
        description="Show the kernel cache's folder, whether it is on, and its entries and "
                    "size; or delete its entries.")
    p.add_argument("action", choices=("info", "clear"))
    p.set_defaults(run=run_cache)


# ------------------------------------------------------------------ warmup

def run_warmup(args):
    from . import _warmup

    dtypes = tuple(args.dtypes.split(",")) if args.dtypes else _warmup.COMMON
    for d in dtypes:
        if d not in _warmup.COMMON:
            raise CliError(f"unknown dtype {d!r}; choose from {', '.join(_warmup.COMMON)}")
    jobs = _warmup.common_jobs(dtypes, with_scalars=not args.no_scalars)
    arch = args.arch
    if arch is None and cukit.device_count() == 0:
        raise CliError("no GPU here: name the architecture to compile for with --arch sm_90")
    if not cukit.cache_info()["enabled"]:
        raise CliError("the kernel cache is off (CUKIT_CACHE=0): warmup would keep nothing")
    # the other families are warmed by calling them: on this device, for its architecture
    here = cukit.device_count() > 0 and (arch is None or arch == cukit.Device().arch)
    groups = _warmup.family_calls(dtypes) if here and not args.ufuncs_only else {}
    calls = [c for g in groups.values() for c in g]
    nsources = len(dict.fromkeys(map(_warmup.source, jobs)))
    total = nsources + len(calls)
    print(f"compiling the kernels of {len(jobs)} ufunc x dtype loops"
          + (f" and {len(calls)} calls of the reductions, scans, sorts, random draws and "
             "matmul" if calls else "")
          + f" for {arch or cukit.Device().arch} into {cukit.cache_info()['dir']}, on "
          f"{args.threads or min(32, os.cpu_count() or 1)} threads", file=sys.stderr)
    bar = None if args.quiet else (lambda done, _: _warmup.bar(done, total))
    os.environ["CUKIT_QUIET"] = "1"  # warmup's own bar says what is compiling
    try:
        n = _warmup.compile_jobs(jobs, arch=arch, threads=args.threads, progress=bar)
        if calls:
            n += _warmup.run_groups(dtypes, threads=args.threads, offset=nsources, total=total,
                                    progress=None if args.quiet else _warmup.bar)
    except (cukit.CudaError, RuntimeError) as e:
        raise CliError(f"warmup failed: {one_line(e)}")
    print(f"{n} kernels and calls ready", file=sys.stderr)
    return 0


def add_warmup(subparsers):
    p = subparsers.add_parser(
        "warmup", help="precompile cukit's own kernels into the disk cache",
        description="Compile the kernels that cukit's ufuncs and operators use on contiguous "
                    "arrays of the common dtypes (and with a Python scalar operand), and, on "
                    "the current device, those of its reductions and scans, sorts, random "
                    "draws and matmul (by calling each on tiny arrays), so that a program's "
                    "first a + b, a.sum() or sort does not pay a compile. Uses every core.")
    p.add_argument("--dtypes", help="comma-separated dtypes (default: all 13)")
    p.add_argument("--arch", help="compile for this architecture (default: the current GPU's)")
    p.add_argument("--threads", type=int, help="compiler threads (default: the cores)")
    p.add_argument("--no-scalars", action="store_true",
                   help="skip the array-with-scalar kernels")
    p.add_argument("--ufuncs-only", action="store_true",
                   help="only the ufuncs' kernels (not the reductions, sorts, random, matmul)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=run_warmup)


# ------------------------------------------------------------------ replay

def run_replay(args):
    from . import debug

    try:
        result = debug.replay(args.folder, backend=args.backend, launch=args.launch,
                              out=sys.stdout)
    except debug.ReproducerError as e:
        raise CliError(f"cannot replay: {e}")
    except (KeyError, TypeError, IndexError, RecursionError) as e:  # what the checks missed
        raise CliError(f"cannot replay: {args.folder}: its reproducer.json is damaged "
                       f"({type(e).__name__}: {e})")
    print(result.summary())
    return 0 if result else 1


def add_replay(subparsers):
    p = subparsers.add_parser(
        "replay", help="rebuild and run the launches of a reproducer folder",
        description="Run the launches that cukit.debug.capture or save_launch recorded, "
                    "from their own code and data. A fault is reported as it happens (on the "
                    "emulator: kernel, block, thread, allocation and source line); otherwise "
                    "each launch's outputs are compared with those recorded and the first "
                    "difference is named. Exit status 0: identical; 1: a difference or a fault.")
    p.add_argument("folder", help="the reproducer folder (it holds reproducer.json)")
    p.add_argument("--backend", choices=("emulator", "gpu"),
                   help="where to run it (default: CUKIT_BACKEND, else the GPU when there is one)")
    p.add_argument("--launch", type=int, metavar="K", help="replay launch K only")
    p.set_defaults(run=run_replay)


# ------------------------------------------------------------------ main

COMMANDS = [add_info, add_compile, add_cache, add_warmup, add_replay]


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m cukit", description="cukit's command line: devices, compiling kernels.")
    parser.add_argument("--version", action="version", version=f"cukit {cukit.__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(subparsers)
    return parser


def main(argv=None):
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except CliError as e:
        print(f"cukit: error: {e}", file=sys.stderr)
        if e.details.strip():
            print(e.details.rstrip(), file=sys.stderr)
    except (cukit.CudaError, OSError, ValueError, TypeError) as e:
        print(f"cukit: error: {one_line(e)}", file=sys.stderr)
    except KeyboardInterrupt:
        return 130
    return 1


if __name__ == "__main__":
    sys.exit(main())
