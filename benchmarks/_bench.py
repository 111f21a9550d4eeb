"""What the benchmarks share: finding cukit, and building and running a raw C baseline."""
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def import_cukit(tool):
    """cukit from the environment, else from the checkout's src/ (built in place)."""
    try:
        import cukit
    except ImportError:
        sys.path.insert(0, str(HERE.parent / "src"))
        try:
            import cukit
        except ImportError as e:
            sys.exit(f"{tool}: cannot import cukit ({e}). Build it first: "
                     "python setup.py build_ext --inplace -b src, then run with PYTHONPATH=src")
    return cukit


def run_c(source, args, timeout, files=None):
    """Compile benchmarks/SOURCE with the system C compiler, run it with ARGS (files
    named in FILES, a dict name -> bytes, are written beside it first; "{dir}" in an
    argument is their folder) and return the JSON object it prints."""
    cc = shutil.which("cc")
    if cc is None:
        raise RuntimeError("no C compiler: `cc` is not on PATH")
    with tempfile.TemporaryDirectory(prefix="bench_") as workdir:
        exe = Path(workdir) / Path(source).stem
        proc = subprocess.run([cc, "-O2", "-std=c11", "-o", str(exe), str(HERE / source), "-ldl"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"cc failed:\n{proc.stderr}")
        for name, data in (files or {}).items():
            (Path(workdir) / name).write_bytes(data)
        argv = [str(exe), *(str(a).replace("{dir}", workdir) for a in args)]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip() or f"exit status {proc.returncode}")
    return json.loads(proc.stdout)
