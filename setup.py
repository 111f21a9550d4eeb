"""Build cukit._cukit from csrc/ (one folder per layer), and the _cukit_worker program
that runs NVRTC for it in a process of its own. Needs a C compiler and Python headers only."""
import glob
import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# The worker program's own entry point; the rest of it is csrc/sandbox/worker.c and
# the loader's entry-point tables (csrc/driver/entries.c, which uses no Python).
WORKER_MAIN = "csrc/sandbox/worker_main.c"
WORKER_SOURCES = ["csrc/sandbox/worker.c", "csrc/driver/entries.c", WORKER_MAIN]
WORKER_NAME = "_cukit_worker"

flags = ["-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers"]
if os.environ.get("CUKIT_WERROR") == "1":
    flags.append("-Werror")
link = []
# The worker program is not sanitized: it is mostly NVRTC, and a sanitizer's own
# fault handler would hide how NVRTC crashed.
worker_flags = list(flags)
if os.environ.get("CUKIT_SANITIZE") == "1":
    flags += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-O1", "-g"]
    link += ["-fsanitize=address,undefined"]


class build_ext_and_worker(build_ext):
    """build_ext, then the worker program beside the extension module (also --inplace)."""

    def run(self):
        super().run()
        ext = self.extensions[0]
        out_dir = os.path.dirname(self.get_ext_fullpath(ext.name))
        # Objects of their own (worker.c is built differently here than in the extension).
        objects = self.compiler.compile(WORKER_SOURCES, output_dir=os.path.join(self.build_temp, "worker"),
                                        include_dirs=["csrc"], macros=[("CUKIT_WORKER_PROGRAM", "1")],
                                        extra_postargs=worker_flags + ["-O2"], depends=ext.depends)
        self.compiler.link_executable(objects, WORKER_NAME, output_dir=out_dir,
                                      libraries=["dl", "pthread"])


setup(
    cmdclass={"build_ext": build_ext_and_worker},
    ext_modules=[
        Extension(
            "cukit._cukit",
            sources=sorted(p for p in glob.glob("csrc/**/*.c", recursive=True)
                           if p != WORKER_MAIN),
            depends=sorted(glob.glob("csrc/**/*.h", recursive=True)),
            include_dirs=["csrc"],
            extra_compile_args=flags,
            extra_link_args=link,
            libraries=["dl", "pthread", "m"],
        )
    ],
)
