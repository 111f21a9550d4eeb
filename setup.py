"""Build cukit._cukit from csrc/ (one folder per layer). Needs a C compiler and Python headers only."""
import glob
import os

from setuptools import Extension, setup

flags = ["-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers"]
if os.environ.get("CUKIT_WERROR") == "1":
    flags.append("-Werror")
link = []
if os.environ.get("CUKIT_SANITIZE") == "1":
    flags += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-O1", "-g"]
    link += ["-fsanitize=address,undefined"]

setup(
    ext_modules=[
        Extension(
            "cukit._cukit",
            sources=sorted(glob.glob("csrc/*.c") + glob.glob("csrc/*/*.c")),
            depends=sorted(glob.glob("csrc/*/*.h")),
            include_dirs=["csrc"],
            extra_compile_args=flags,
            extra_link_args=link,
            libraries=["dl", "pthread"],
        )
    ],
)
