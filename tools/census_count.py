"""Count which CuPy names real code uses, by repository (the census of the arrays issue).

    python tools/census_count.py FOLDER [--out tools/census/cupy_names.json] [--top 200]

FOLDER holds fetched source files as FOLDER/<repo-slug>/<file>: one subfolder per
repository. A file counts when it imports cupy or cupyx. For each such file this finds,
with plain regular expressions (best effort, no parsing):

- module names: every dotted chain after a cupy alias (`cp.zeros`, `cp.random.rand`,
  `cp.cuda.Stream.null.synchronize`), named without the `cupy.` root; cupyx names keep
  their root (`cupyx.scipy.ndimage.gaussian_filter`). Aliases come from `import cupy as
  X`, `import cupy`, `import cupy.fft as X`, `from cupy[x].a import b [as c]`, `xp = cp`,
  `xp = cp if ... else np` and `xp = <...>get_array_module(...)` (or a call of
  `*array_module*`, `cupy()`, `xp_*`, `get_xp*`).
- array methods and attributes: `.name` after a word, `)` or `]`, for names in METHODS
  (numpy's ndarray methods and attributes plus CuPy's `get`/`set`/`data.ptr`); `.get`
  counts only as `.get()` or with `stream=`/`out=`/`blocking=`.
- indexing forms: each `x[...]` on a line is sorted into a form (`a[i:j]`, `a[mask]`,
  `a[idx]`, `a[rows, cols]`, ...) from what the index looks like, plus ` = v` when the
  line assigns to it. Ambiguous indices (a bare name) count as `a[i]`.

Each name is counted once per repository. Writes JSON: a header (date, files and
repositories read, how many import CuPy) and the top names by number of repositories,
each {"name", "kind", "repos", "files"}. Prints the table.
"""
import argparse
import collections
import datetime
import json
import os
import re
import sys

METHODS = {
    # attributes
    "T", "shape", "dtype", "ndim", "size", "nbytes", "itemsize", "strides", "flags",
    "real", "imag", "device", "__cuda_array_interface__",
    # methods
    "get", "set", "copy", "astype", "reshape", "ravel", "flatten", "transpose",
    "swapaxes", "squeeze", "sum", "mean", "std", "var", "max", "min", "argmax", "argmin",
    "prod", "cumsum", "cumprod", "all", "any", "dot", "clip", "round", "fill", "item",
    "tolist", "tobytes", "tofile", "view", "sort", "argsort", "nonzero", "repeat", "take",
    "put", "conj", "conjugate", "diagonal", "trace", "partition", "argpartition",
    "searchsorted", "toDlpack", "__dlpack__",
}
ATTRIBUTES = {"T", "shape", "dtype", "ndim", "size", "nbytes", "itemsize", "strides",
              "flags", "real", "imag", "device", "__cuda_array_interface__", "data.ptr"}
# words before a dot that are modules or plain objects, never arrays
NOT_ARRAYS = {"np", "numpy", "self", "os", "sys", "math", "time", "plt", "torch", "pd",
              "cv2", "scipy", "random", "args", "params", "config", "json", "pickle",
              "logger", "logging", "re", "itertools", "functools", "collections", "string",
              "tqdm", "parser", "kwargs", "cls", "super", "mempool", "pool", "cf", "nb",
              "numba", "jax", "jnp", "tf", "ctypes", "lib", "module", "ql", "img", "Image"}
KERNELS = {"ElementwiseKernel", "RawKernel", "ReductionKernel", "RawModule", "fuse"}
DTYPES = {"bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128", "cfloat", "double",
          "single", "intp", "int", "float", "complex", "half"}
CONSTANTS = {"pi", "e", "inf", "nan", "NaN", "newaxis"}

IMPORT_RE = re.compile(r"^\s*(?:import|from)\s+cupyx?\b", re.M)
STRING_RE = re.compile(r"'''.*?'''|\"\"\".*?\"\"\"|'(?:\\.|[^'\\\n])*'|\"(?:\\.|[^\"\\\n])*\"",
                       re.S)


def strip(text):
    """Blank out string literals (keeping '' in their place) and comments."""
    text = STRING_RE.sub("''", text)
    return re.sub(r"#.*", "", text)


def aliases(text):
    """name -> prefix ("" for cupy itself, "cupyx", "fft", "cupyx.scipy.ndimage", ...).

    The second map holds names imported from a module (`from cupy.fft import fft2`):
    those count when they appear bare too."""
    mods, names = {}, {}

    def prefix(path):  # "cupy.fft" -> "fft", "cupy" -> "", "cupyx.x" -> "cupyx.x"
        return path[5:] if path.startswith("cupy.") else ("" if path == "cupy" else path)

    for m in re.finditer(r"^\s*import\s+(.+)$", text, re.M):
        for part in m.group(1).split(","):
            p = part.split()
            if not p or not re.match(r"cupyx?(\.|$)", p[0]):
                continue
            if len(p) == 3 and p[1] == "as":
                mods[p[2]] = prefix(p[0])
            elif p[0] in ("cupy", "cupyx"):
                mods[p[0]] = prefix(p[0])
    for m in re.finditer(r"^\s*from\s+(cupyx?(?:\.\w+)*)\s+import\s+\(?([^)\n]+)", text, re.M):
        base = prefix(m.group(1))
        for part in m.group(2).split(","):
            p = part.split()
            if not p or p[0] == "*":
                continue
            full = (base + "." if base else "") + p[0]
            names[p[2] if len(p) == 3 and p[1] == "as" else p[0]] = full
    # derived aliases: xp = cp / xp = cp if ... / xp = cp.get_array_module(x) / cp = cupy()
    for _ in range(2):
        known = "|".join(re.escape(a) for a in mods) or "(?!)"
        for m in re.finditer(rf"^\s*(\w+)\s*=\s*({known})\s*(?:$|\bif\b)", text, re.M):
            mods.setdefault(m.group(1), mods[m.group(2)])
        for m in re.finditer(r"^\s*(\w+)\s*=\s*(?:\w+\.)*"
                             r"(?:\w*array_module\w*|cupy|_?xp_\w+|get_xp\w*)\s*\(", text, re.M):
            mods.setdefault(m.group(1), "")
    return mods, names


def kind_of(name, called):
    head = name.split(".")[0]
    if name.startswith("cupyx"):
        return "cupyx"
    if head in ("random", "linalg", "fft", "cuda", "lib", "testing", "sparse"):
        return head
    if head in KERNELS:
        return "kernel"
    if name in DTYPES:
        return "dtype"
    if name in CONSTANTS:
        return "constant"
    return "function" if called else "attribute"


def index_form(inner):
    """Sort the text inside x[...] into one indexing form, or None to skip it."""
    inner = inner.strip()
    if not inner or inner == "''":
        return None
    parts, depth, cur = [], 0, ""
    for ch in inner:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    parts.append(cur.strip())
    parts = [p for p in parts if p]
    kinds = []
    for p in parts:
        top = re.sub(r"\([^()]*\)|\[[^\[\]]*\]", "", p)
        low = p.lower()
        if p in ("None",) or p.endswith("newaxis"):
            kinds.append("new")
        elif p == "...":
            kinds.append("ell")
        elif ":" in top:
            kinds.append("slice")
        elif re.search(r"[<>]|==|!=|^~", top) or re.search(r"mask|valid|keep|cond", low):
            kinds.append("mask")
        elif re.match(r"-?\d+$", p):
            kinds.append("int")
        elif p.startswith("tuple("):
            kinds.append("tuple")
        elif (p.startswith("[") or re.search(r"\b(where|argsort|argmax|arange|array|asarray|"
                                             r"randint|choice|nonzero|argwhere)\b", p)
              or re.search(r"idx|ind|perm|order|sel|nearest|rows|cols", low)):
            kinds.append("array")
        else:
            kinds.append("int")  # a bare name or expression: most often an integer
    ks = set(kinds)
    if "tuple" in ks:
        return "a[tuple(...)]"
    if "mask" in ks and len(kinds) == 1:
        return "a[mask]"
    if "mask" in ks:
        return "a[mask, ...] (mask with other indices)"
    n_arr = kinds.count("array")
    if n_arr >= 2:
        return "a[rows, cols]"
    if n_arr == 1 and len(kinds) == 1:
        return "a[idx]"
    if n_arr == 1:
        return "a[:, idx] (array with slices or ints)"
    if ks & {"new", "ell"}:
        return "a[:, None] (newaxis or ellipsis)"
    if "slice" in ks:
        return "a[i:j] (slices)"
    return "a[i] (integers)"


def names_in(text):
    """(module names with whether each is called, array methods, indexing forms) of a file."""
    mods, imported = aliases(text)
    code = strip(text)
    found = {}  # name -> called?
    if mods:
        alias_re = "|".join(re.escape(a) for a in sorted(mods, key=len, reverse=True))
        for m in re.finditer(rf"(?<![\w.])({alias_re})((?:\.\w+)+)(\s*\()?", code):
            chain = m.group(2)[1:]
            base = mods[m.group(1)]
            name = (base + "." if base else "") + chain
            found[name] = found.get(name, False) or bool(m.group(3))
    for short, full in imported.items():
        for m in re.finditer(rf"(?<![\w.]){re.escape(short)}((?:\.\w+)*)(\s*\()?", code):
            line = code[code.rfind("\n", 0, m.start()) + 1:code.find("\n", m.end())]
            if re.match(r"\s*(from|import)\b", line):
                continue
            name = full + m.group(1)
            found[name] = found.get(name, False) or bool(m.group(2))
    methods = set()
    for m in re.finditer(r"([\w\)\]])\.(\w+)(\s*\()?", code):
        word = re.search(r"(\w+)$", code[:m.start() + 1])
        base = word.group(1) if word and m.group(1) not in ")]" else None
        if base in mods or base in NOT_ARRAYS or m.group(2) not in METHODS:
            continue
        if base is not None and base in imported:
            continue
        name = m.group(2)
        if name == "get" and not re.match(r"\s*(\)|(stream|out|blocking|order)\s*=)",
                                          code[m.end():m.end() + 12]):
            continue
        methods.add(name)
    if re.search(r"\.data\.ptr\b", code):
        methods.add("data.ptr")
    forms = set()
    for line in code.split("\n"):
        for m in re.finditer(r"([\w\)\]])\[", line):
            word = re.search(r"(\w+)$", line[:m.start() + 1])
            if word and (word.group(1) in mods or word.group(1) in NOT_ARRAYS
                         or word.group(1) in ("print", "return", "in", "for", "if", "and",
                                              "or", "not", "else", "lambda", "yield")):
                continue
            depth, j = 1, m.end()
            while j < len(line) and depth:
                depth += line[j] == "["
                depth -= line[j] == "]"
                j += 1
            if depth:
                continue
            form = index_form(line[m.end():j - 1])
            if form is None:
                continue
            if re.match(r"\s*([-+*/%&|^@]|//|\*\*)?=(?!=)", line[j:]):
                form += " = v"
            forms.add(form)
    return found, methods, forms


def census(folder):
    repo_names = collections.defaultdict(dict)   # repo -> name -> kind
    files_per_name = collections.Counter()
    n_files = n_cupy = 0
    importing = set()
    repos = sorted(d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d)))
    for repo in repos:
        for root, _, files in os.walk(os.path.join(folder, repo)):
            for f in sorted(files):
                with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                n_files += 1
                if not IMPORT_RE.search(text):
                    continue
                n_cupy += 1
                importing.add(repo)
                found, methods, forms = names_in(text)
                here = {}
                for name, called in found.items():
                    here[name] = kind_of(name, called)
                for name in methods:
                    here["." + name] = "array attribute" if name in ATTRIBUTES else "array method"
                for name in forms:
                    here[name] = "indexing"
                for name, kind in here.items():
                    files_per_name[name] += 1
                    old = repo_names[repo].get(name)
                    # a module name called anywhere is a function
                    repo_names[repo][name] = "function" if "function" in (old, kind) else kind
    repo_count = collections.Counter()
    kinds = {}
    for repo, names in repo_names.items():
        for name, kind in names.items():
            repo_count[name] += 1
            if kinds.get(name) != "function":
                kinds[name] = kind
    return repo_count, files_per_name, kinds, n_files, n_cupy, len(repos), len(importing)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "census",
                                                  "cupy_names.json"))
    ap.add_argument("--top", type=int, default=200)
    args = ap.parse_args(argv)
    repo_count, files_per_name, kinds, n_files, n_cupy, n_repos, with_cupy = census(args.folder)
    ranked = sorted(repo_count, key=lambda n: (-repo_count[n], -files_per_name[n], n))
    top = [{"name": n, "kind": kinds[n], "repos": repo_count[n], "files": files_per_name[n]}
           for n in ranked[:args.top]]
    out = {
        "date": datetime.date.today().isoformat(),
        "files_read": n_files,
        "files_importing_cupy": n_cupy,
        "repositories_read": n_repos,
        "repositories_importing_cupy": with_cupy,
        "distinct_names": len(repo_count),
        "method": "tools/census_count.py: regular expressions over the files of each "
                  "repository; each name counted once per repository",
        "names": top,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:  # one name a line, to read and diff
        head = json.dumps({k: v for k, v in out.items() if k != "names"}, indent=1)
        rows = ",\n".join("  " + json.dumps(e) for e in top)
        fh.write(head[:-2] + ',\n "names": [\n' + rows + "\n ]\n}\n")
    print(f"{n_files} files ({n_cupy} import CuPy) from {n_repos} repositories; "
          f"{len(repo_count)} distinct names; top {len(top)} written to {args.out}")
    for i, e in enumerate(top, 1):
        print(f"{i:4d} {e['repos']:4d} {e['files']:4d}  {e['kind']:16s} {e['name']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
