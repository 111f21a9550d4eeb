"""Build cukit._cukit from csrc/*.c. Needs a C compiler and Python headers only."""
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
            sources=sorted(glob.glob("csrc/*.c") + glob.glob("csrc/compute/*.c")),
            depends=sorted(glob.glob("csrc/*.h") + glob.glob("csrc/compute/*.h")),
            extra_compile_args=flags,
            extra_link_args=link,
            libraries=["dl", "pthread"],
        )
    ],
)
