"""Build the one extension module, conveyor._engine, from csrc/.

Environment knobs (no argv flags):
  CV_DEBUG=1            -O0 -g, assertions on
  CV_SANITIZE=address   AddressSanitizer + UndefinedBehaviorSanitizer (see docs/development.md)
  CV_SANITIZE=thread    ThreadSanitizer + UndefinedBehaviorSanitizer (.ci/tsan)
  CV_WERROR=0           turn off -Werror (on by default)
  CV_ZLIB_CFLAGS / CV_ZLIB_LIBS, CV_JPEG_CFLAGS / CV_JPEG_LIBS
                        override what pkg-config reports for zlib / libjpeg-turbo
  CV_CUDA_INCLUDE=DIR   the CUDA toolkit's include folder (default: $CUDA_HOME/include,
                        $CUDA_PATH/include, /usr/local/cuda/include); "" builds with conveyor's
                        own declarations. CUDA is never linked: libcudart is loaded at run time.
"""
import glob
import os
import shlex
import subprocess
import sys

import numpy
from setuptools import Extension, setup

DEBIAN_PACKAGES = {"zlib": "zlib1g-dev", "libjpeg": "libjpeg62-turbo-dev",
                   "libcurl": "libcurl4-openssl-dev", "libcrypto": "libssl-dev"}
ENV_PREFIX = {"zlib": "CV_ZLIB", "libjpeg": "CV_JPEG", "libcurl": "CV_CURL",
              "libcrypto": "CV_CRYPTO"}


def find_library(name):
    """Return (cflags, libs) for a pkg-config package, or stop the build with one clear message."""
    prefix = ENV_PREFIX[name]
    if os.environ.get(prefix + "_LIBS") is not None:
        return (shlex.split(os.environ.get(prefix + "_CFLAGS", "")),
                shlex.split(os.environ[prefix + "_LIBS"]))
    try:
        cflags = subprocess.run(["pkg-config", "--cflags", name], check=True,
                                capture_output=True, text=True).stdout
        libs = subprocess.run(["pkg-config", "--libs", name], check=True,
                              capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        sys.exit(f"conveyor build: {name} was not found by pkg-config. Install it with "
                 f"'apt-get install pkg-config {DEBIAN_PACKAGES[name]}', or set "
                 f"{prefix}_CFLAGS and {prefix}_LIBS.")
    return shlex.split(cflags), shlex.split(libs)


def cuda_include():
    """The CUDA toolkit's include folder when its runtime header is there, else None:
    csrc/device/cuda.h then checks its declarations against the toolkit's prototypes."""
    if "CV_CUDA_INCLUDE" in os.environ:
        candidates = [os.environ["CV_CUDA_INCLUDE"]]
    else:
        candidates = [os.path.join(os.environ[v], "include") for v in ("CUDA_HOME", "CUDA_PATH")
                      if os.environ.get(v)] + ["/usr/local/cuda/include"]
    for folder in candidates:
        if folder and os.path.isfile(os.path.join(folder, "cuda_runtime_api.h")):
            return folder
    return None


def engine_extension():
    sources = sorted(glob.glob("csrc/**/*.c", recursive=True))
    cflags, libs = [], []
    for name in ("zlib", "libjpeg", "libcurl", "libcrypto"):
        c, l = find_library(name)
        cflags += c
        libs += l
    compile_args = ["-std=c11", "-fvisibility=hidden", "-Wall", "-Wextra",
                    "-Wno-missing-field-initializers", "-ffp-contract=off", "-pthread"]
    link_args = ["-pthread"]
    if os.environ.get("CV_WERROR", "1") != "0":
        compile_args.append("-Werror")
    if os.environ.get("CV_DEBUG"):
        compile_args += ["-O0", "-g", "-UNDEBUG"]
    else:
        compile_args += ["-O3"]
    sanitize = os.environ.get("CV_SANITIZE")
    if sanitize:
        flags = [f"-fsanitize={sanitize},undefined", "-fno-omit-frame-pointer",
                 "-fno-sanitize-recover=undefined"]
        compile_args += flags + ["-g"]
        link_args += flags
    include_dirs = ["csrc", numpy.get_include()]
    macros = [("NPY_NO_DEPRECATED_API", "NPY_1_23_API_VERSION"), ("_GNU_SOURCE", "1")]
    cuda = cuda_include()
    if cuda:
        include_dirs.append(cuda)
        macros.append(("CV_HAVE_CUDA_HEADERS", "1"))
    return Extension(
        "conveyor._engine",
        sources=sources,
        include_dirs=include_dirs,
        define_macros=macros,
        extra_compile_args=compile_args + cflags,
        extra_link_args=link_args + libs + ["-ldl"],
    )


setup(ext_modules=[engine_extension()])
