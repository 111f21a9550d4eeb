"""Run cukit's generated reduction and scan kernels on the host: the CUDA C compiled as
C++ with shim.h (a thread per CUDA thread, barriers for __syncthreads and the warp
shuffles, blocks one after another), so the kernels' logic and their argument block
can be checked without a GPU. Used by tests/test_reduce_host.py."""
import ctypes, hashlib, os, re, subprocess, struct
import numpy as np
import cukit

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = None  # a folder for the built libraries, set by the tests
RNAMES = ["ckr_v", "ckr_vw", "ckr_n", "ckr_nw", "ckc", "ckcv", "ckr_f"]
SNAMES = ["cks", "ckl", "ckw"]


def build(src, reduce=True):
    h = hashlib.sha1(src.encode()).hexdigest()[:16]
    so = os.path.join(WORK, f"k_{h}.so")
    if not os.path.exists(so):
        names = RNAMES if reduce else SNAMES
        table = "{" + ", ".join(f'{{"{n}", {n}}}' for n in names) + "}"
        cpp = os.path.join(WORK, f"k_{h}.cpp")
        with open(cpp, "w") as f:
            f.write('#include "shim.h"\n' + src + "\n")
            f.write(f"#define CK_ARGS {'ck_rargs' if reduce else 'ck_sargs'}\n#define CK_TABLE {table}\n")
            if reduce:
                f.write("#define CK_REDUCE 1\n#include <stddef.h>\n")
            f.write('#include "launch.inc"\n')
        r = subprocess.run(["g++", "-O1", "-std=c++17", "-shared", "-fPIC", "-pthread", "-w",
                            "-I", HERE, "-o", so, cpp], capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(r.stderr[:4000])
    lib = ctypes.CDLL(so)
    lib.ck_launch_cpu.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    return lib


def addr(a):
    return a.__array_interface__["data"][0]


def spec(a):
    return (a.shape, a.strides, a.itemsize, addr(a))


def reduce_run(src, inputs, axis, out, keep_order=False, init=None, count=None, d=None,
               acc_size=8, vec=None, sm=4):
    lib = build(src)
    if vec is None:
        w = max(x.itemsize for x in inputs)
        vec = 1 if w >= 16 else 16 // w
    nin = len(inputs)
    plan = cukit._cukit._reduce_plan([spec(x) for x in inputs], axis, spec(out), keep_order, vec, sm)
    nops = nin + 1
    off_init = 16 * nops
    off_part = off_init + 16
    off_nout = off_part + 8
    off_splits = off_nout + 40
    off_kshape = off_splits + 16
    off_rshape = off_kshape + 64
    off_ks = off_rshape + 64
    off_rs = off_ks + 64 * nops
    size = (off_rs + 64 * nops + 15) // 16 * 16
    lib.ck_args_size.restype = ctypes.c_int
    assert lib.ck_args_size() == size, (lib.ck_args_size(), size)
    lib.ck_offsets.restype = ctypes.c_long
    want = [off_init, off_part, off_nout, off_nout + 32, off_splits, off_kshape, off_rshape, off_ks, off_rs]
    got = [lib.ck_offsets(i) for i in range(9)]
    assert got == want, (got, want)
    buf = bytearray(size)
    for k, x in enumerate(inputs + [out]):
        struct.pack_into("<Q", buf, 16 * k, addr(x))
    if init is not None:
        buf[off_init:off_init + len(init)] = init
    splits = plan["splits"]
    part = None
    if splits > 1:
        # the fold's counters (zeroed), then the partials; poisoned, as the pool's are
        head = (4 * plan["ncnt"] + 15) // 16 * 16
        part = np.full(head + plan["nout"] * splits * acc_size + 16, 0x5A, np.uint8)
        part[:4 * plan["ncnt"]] = 0
        struct.pack_into("<Q", buf, off_part, addr(part))
    nred = plan["nred"]
    struct.pack_into("<qqqqd", buf, off_nout, plan["nout"], nred, plan["chunk"],
                     nred if count is None else count, float(nred if d is None else d))
    struct.pack_into("<iiii", buf, off_splits, splits, len(plan["kshape"]), len(plan["rshape"]),
                     plan["fblock"])
    struct.pack_into(f"<{len(plan['kshape'])}q", buf, off_kshape, *plan["kshape"])
    struct.pack_into(f"<{len(plan['rshape'])}q", buf, off_rshape, *plan["rshape"])
    for k in range(nops):
        struct.pack_into(f"<{len(plan['ks'][k])}q", buf, off_ks + 64 * k, *plan["ks"][k])
        struct.pack_into(f"<{len(plan['rs'][k])}q", buf, off_rs + 64 * k, *plan["rs"][k])
    cbuf = (ctypes.c_char * size).from_buffer(buf)
    if plan["nout"] == 0:
        return plan
    rc = lib.ck_launch_cpu(RNAMES[plan["fn"]].encode(), plan["gx"], plan["gy"], cbuf)
    assert rc == 0
    if splits > 1:  # the last block reset every counter
        assert not part[:4 * plan["ncnt"]].any()
    return plan


def scan_run(src, x, out, axis=0):
    lib = build(src, reduce=False)
    n = x.shape[axis]
    other = [d for d in range(x.ndim) if d != axis and x.shape[d] != 1]
    nlines = int(np.prod([x.shape[d] for d in range(x.ndim) if d != axis])) if x.ndim > 1 else 1
    tile = 256 * int(re.search(r"#define CK_IT (\d+)", src).group(1))
    ntiles = (n + tile - 1) // tile
    # the ticket, then per tile a packed word or a flag and two 16-byte slots (scan.c's);
    # zeroed, so epoch 1 finds nothing published
    status = np.zeros(16 + (4 * ntiles + 15) // 16 * 16 + 32 * ntiles + 16, np.uint8)
    lsh = [x.shape[d] for d in other] + [0] * (8 - len(other))
    lsi = [x.strides[d] for d in other] + [0] * (8 - len(other))
    lso = [out.strides[d] for d in other] + [0] * (8 - len(other))
    buf = struct.pack("<QQQqqqqiiII8q8q8q", addr(x), addr(out), addr(status), n, x.strides[axis],
                      out.strides[axis], nlines, ntiles, len(other), 1, 0, *lsh, *lsi, *lso)
    lib.ck_args_size.restype = ctypes.c_int
    assert lib.ck_args_size() == len(buf), (lib.ck_args_size(), len(buf))
    cbuf = ctypes.create_string_buffer(buf, len(buf))
    if nlines == 1 and not other:
        fn, grid = "cks", ntiles
    elif x.strides[axis] == x.itemsize and n >= 32:
        fn, grid = "ckw", (nlines + 7) // 8
    else:
        fn, grid = "ckl", (nlines + 255) // 256
    assert lib.ck_launch_cpu(fn.encode(), grid, 1, cbuf) == 0
    return fn
