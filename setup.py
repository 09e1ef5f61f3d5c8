"""Build the one extension module, conveyor._engine, from csrc/.

The C files compile in parallel (os.cpu_count() jobs; `build_ext -j N` sets another number) into
build/engine-<flags>/, which a rebuild reuses: only changed files recompile, and the link is
skipped when no object changed, so an editable reinstall with no C change does not rebuild.

Environment knobs (no argv flags):
  CV_DEBUG=1            -O0 -g, assertions on
  CV_SANITIZE=address   AddressSanitizer + UndefinedBehaviorSanitizer (see docs/development.md)
  CV_SANITIZE=thread    ThreadSanitizer + UndefinedBehaviorSanitizer (.ci/tsan)
  CV_WERROR=0           turn off -Werror (on by default)
  CV_<NAME>_CFLAGS / CV_<NAME>_LIBS (NAME: ZLIB, JPEG, CURL, CRYPTO)
                        override what pkg-config reports for one row of LIBRARIES
  CV_CUDA_INCLUDE=DIR   the CUDA toolkit's include folder (default: $CUDA_HOME/include,
                        $CUDA_PATH/include, /usr/local/cuda/include); "" builds with conveyor's
                        own declarations. CUDA is never linked: libcudart is loaded at run time.
"""
import concurrent.futures
import glob
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import time

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError

ROOT = os.path.dirname(os.path.abspath(__file__))

# The system libraries the engine links: (pkg-config name, Debian package, environment prefix).
# A new dependency is one row here.
LIBRARIES = [
    ("zlib", "zlib1g-dev", "CV_ZLIB"),
    ("libjpeg", "libjpeg62-turbo-dev", "CV_JPEG"),
    ("libcurl", "libcurl4-openssl-dev", "CV_CURL"),
    ("libcrypto", "libssl-dev", "CV_CRYPTO"),
]


def pkg_config(name):
    """(cflags, libs) from pkg-config, or None when pkg-config or the package is missing."""
    try:
        out = [subprocess.run(["pkg-config", flag, name], check=True, capture_output=True,
                              text=True).stdout for flag in ("--cflags", "--libs")]
    except (OSError, subprocess.CalledProcessError):
        return None
    return shlex.split(out[0]), shlex.split(out[1])


def find_libraries():
    """(cflags, libs) for every row of LIBRARIES; when any is missing, stop the build with one
    message that names all of them and the one apt-get line that installs them."""
    cflags, libs, missing = [], [], []
    for name, _, prefix in LIBRARIES:
        if os.environ.get(prefix + "_LIBS") is not None:
            found = (shlex.split(os.environ.get(prefix + "_CFLAGS", "")),
                     shlex.split(os.environ[prefix + "_LIBS"]))
        else:
            found = pkg_config(name)
        if found is None:
            missing.append((name, prefix))
            continue
        cflags += found[0]
        libs += found[1]
    if missing:
        debian = dict((name, package) for name, package, _ in LIBRARIES)
        names = ", ".join(name for name, _ in missing)
        overrides = ", ".join(f"{p}_CFLAGS/{p}_LIBS" for _, p in missing)
        sys.exit(f"conveyor build: pkg-config did not find {names}.\n"
                 f"  Install them with: apt-get install pkg-config "
                 f"{' '.join(debian[name] for name, _ in missing)}\n"
                 f"  or point the build at them with {overrides}.")
    return cflags, libs


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


# The files whose loops run per value of a tensor, with the optimisation they need; every other
# file (control, I/O, parsing) gains nothing measurable from more than -O2. Measured on 2 CPUs
# (CPU seconds per epoch of the demo's pipelines and of a float elementwise map): everything at
# -O2 costs the JPEG pipeline about a quarter more CPU time and elementwise arithmetic about 70%
# more; these flags match -O3 everywhere, at half its compile time. elementwise.c (its kernels
# are macro-expanded per dtype and op) takes 15 s to compile at -O3 and 5 s at -O2 with the
# vectoriser's dynamic cost model, for the same speed.
HOT_FILES = {
    "csrc/ops/elementwise.c": ["-O2", "-fvect-cost-model=dynamic"],
    **{src: ["-O3"] for src in (
        "csrc/ops/cast.c", "csrc/ops/convert_image.c", "csrc/ops/op.c", "csrc/ops/flip.c",
        "csrc/ops/resize_bilinear.c", "csrc/ops/resize_legacy.c", "csrc/ops/resize_area.c",
        "csrc/ops/resize_bicubic.c", "csrc/ops/resize_nearest_neighbor.c",
        "csrc/ops/resize_common.c", "csrc/kernels/batch.c")},
}


def optimization(src):
    """The optimisation flags for one C file: none under CV_DEBUG (its -O0 holds), else
    HOT_FILES' flags or -O2."""
    if os.environ.get("CV_DEBUG"):
        return []
    return HOT_FILES.get(src.replace(os.sep, "/"), ["-O2"])


def engine_extension():
    sources = sorted(glob.glob("csrc/**/*.c", recursive=True))
    cflags, libs = find_libraries()
    compile_args = ["-std=c11", "-fvisibility=hidden", "-Wall", "-Wextra",
                    "-Wno-missing-field-initializers", "-ffp-contract=off", "-pthread"]
    link_args = ["-pthread"]
    if os.environ.get("CV_WERROR", "1") != "0":
        compile_args.append("-Werror")
    if os.environ.get("CV_DEBUG"):
        compile_args += ["-O0", "-g", "-UNDEBUG"]
    elif not os.environ.get("CV_SANITIZE"):
        # No debug information (Python's own CFLAGS carry -g): a quarter of the compile time.
        # The optimisation level is per file (optimization()).
        compile_args += ["-g0"]
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


def read_depfile(path):
    """The prerequisites gcc's -MMD wrote for one object (make syntax), or None if unreadable."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    _, _, deps = text.replace("\\\n", " ").partition(": ")
    return deps.split()


def quiet_spawn(cmd, **kwargs):
    """Run one compiler or linker command without echoing it; its own messages still print, and
    a failure shows the command."""
    result = subprocess.run(list(cmd), **kwargs)
    if result.returncode != 0:
        raise CompileError(f"exit status {result.returncode}: {shlex.join(map(str, cmd))}")


class BuildEngine(build_ext):
    """build_ext for the one large extension: compiles its C files in parallel (os.cpu_count()
    workers unless -j says otherwise; setuptools' own -j only runs extensions side by side),
    prints progress, and keeps objects and the linked module in a stable folder under build/
    so that a rebuild (an editable reinstall included) recompiles only what changed and skips
    the link when nothing did."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel or self.parallel is True:
            self.parallel = os.cpu_count() or 1

    def _object_dir(self, ext, key):
        # A build folder the user named (--build-temp, as .ci/sanitize does) is honoured; otherwise
        # one folder per set of flags under the source tree's build/, which survives pip's
        # temporary editable build folders.
        options = {**self.distribution.get_option_dict("build"),
                   **self.distribution.get_option_dict("build_ext")}
        base = self.build_temp if "build_temp" in options else os.path.join(ROOT, "build")
        return os.path.join(base, f"engine-{key}")

    def build_extension(self, ext):
        started = time.monotonic()
        numpy_include = numpy.get_include()
        # What the objects depend on besides their files: flags, compiler, NumPy's and Python's
        # ABI. NumPy's include folder is left out: pip's isolated build puts it in a new
        # temporary folder every time.
        recipe = repr((self.compiler.compiler_so, self.compiler.linker_so, ext.extra_compile_args,
                       {src: optimization(src) for src in ext.sources},
                       ext.extra_link_args, ext.define_macros,
                       [d for d in ext.include_dirs if d != numpy_include], numpy.__version__,
                       sysconfig.get_config_var("SOABI"), self.debug))
        key = hashlib.sha256(recipe.encode()).hexdigest()[:12]
        objdir = self._object_dir(ext, key)
        sources = sorted(ext.sources)
        objects = self.compiler.object_filenames(sources, output_dir=objdir)
        for folder in sorted({os.path.dirname(o) for o in objects}):
            os.makedirs(folder, exist_ok=True)
        macros = ext.define_macros + [(name,) for name in ext.undef_macros]
        # Progress lines instead of 180 full gcc commands (distutils runs them through call() or,
        # in older versions, spawn()).
        self.compiler.call = self.compiler.spawn = quiet_spawn
        stale = [(src, obj) for src, obj in zip(sources, objects)
                 if self.force or self._is_stale(src, obj)]
        # HOT_FILES first (the longest compiles), so that no job is left running alone at the end.
        stale.sort(key=lambda pair: (pair[0].replace(os.sep, "/") not in HOT_FILES, pair[0]))
        total = len(stale)
        if total:
            print(f"conveyor: compiling {total} of {len(sources)} C files with "
                  f"{self.parallel} jobs", flush=True)
        else:
            print(f"conveyor: all {len(sources)} C files up to date", flush=True)

        def compile_one(pair):
            src, _ = pair
            self.compiler.compile([src], output_dir=objdir, macros=macros,
                                  include_dirs=ext.include_dirs, debug=self.debug,
                                  extra_postargs=(ext.extra_compile_args + optimization(src)
                                                  + ["-MMD"]),
                                  depends=ext.depends)
            return src

        with concurrent.futures.ThreadPoolExecutor(max_workers=self.parallel) as pool:
            futures = [pool.submit(compile_one, pair) for pair in stale]
            try:
                for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
                    src = future.result()
                    print(f"conveyor: [{done}/{total}] {src}", flush=True)
            except BaseException:
                for future in futures:
                    future.cancel()
                raise

        linked = os.path.join(objdir, os.path.basename(self.get_ext_filename(ext.name)))
        if self.force or not os.path.exists(linked) or any(
                os.path.getmtime(o) > os.path.getmtime(linked) for o in objects):
            print(f"conveyor: linking {os.path.relpath(linked, ROOT)}", flush=True)
            self.compiler.link_shared_object(
                objects, linked, libraries=self.get_libraries(ext),
                library_dirs=ext.library_dirs, runtime_library_dirs=ext.runtime_library_dirs,
                extra_postargs=ext.extra_link_args, export_symbols=self.get_export_symbols(ext),
                debug=self.debug, target_lang="c")
        else:
            print("conveyor: the engine is up to date; link skipped", flush=True)
        # A copy then a rename: a process that has the old module mapped keeps its copy intact.
        ext_path = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(ext_path) or ".", exist_ok=True)
        shutil.copyfile(linked, ext_path + ".tmp")
        os.replace(ext_path + ".tmp", ext_path)
        print(f"conveyor: engine built in {time.monotonic() - started:.1f} s", flush=True)

    def copy_file(self, infile, outfile, *args, **kwargs):
        """The module's copy into the source tree (--inplace, editable installs): a copy then
        a rename, as above; distutils would rewrite the file in place, under a running
        process that has it mapped (SIGBUS)."""
        if not outfile.endswith(sysconfig.get_config_var("EXT_SUFFIX") or ".so"):
            return super().copy_file(infile, outfile, *args, **kwargs)
        if os.path.isdir(outfile):
            outfile = os.path.join(outfile, os.path.basename(infile))
        shutil.copyfile(infile, outfile + ".tmp")
        os.replace(outfile + ".tmp", outfile)
        return outfile, 1

    def _is_stale(self, src, obj):
        """True when obj is missing or older than its source or any project header it included
        (from the -MMD file written beside it; headers outside the project are covered by the
        folder's key)."""
        try:
            built = os.path.getmtime(obj)
        except OSError:
            return True
        deps = read_depfile(os.path.splitext(obj)[0] + ".d")
        if deps is None:
            return True
        for dep in [src] + deps:
            path = os.path.join(ROOT, dep)  # dep when it is absolute
            if not path.startswith(ROOT + os.sep):
                continue
            try:
                if os.path.getmtime(path) > built:
                    return True
            except OSError:
                return True  # a header that was removed or renamed
        return False


setup(ext_modules=[engine_extension()], cmdclass={"build_ext": BuildEngine})
