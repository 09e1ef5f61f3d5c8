"""Standing rules for the C sources (msgspec's cpylint idea).

- The engine (core, kernels, ops, device) is plain C: Python.h and PyObject
  appear only under csrc/python/.
- Every Py_BEGIN_ALLOW_THREADS has its Py_END_ALLOW_THREADS in the same function.
- Each kernel file exports exactly one const CvKernel.
"""
import pathlib
import re

CSRC = pathlib.Path(__file__).resolve().parent.parent / "csrc"


def c_files():
    return sorted(p for p in CSRC.rglob("*") if p.suffix in (".c", ".h"))


def test_python_api_only_in_binding():
    offenders = []
    for path in c_files():
        if path.parent.name == "python":
            continue
        text = path.read_text()
        if re.search(r'#\s*include\s*[<"]Python\.h|PyObject|numpy/', text):
            offenders.append(str(path.relative_to(CSRC)))
    assert not offenders, f"Python C API outside csrc/python/: {offenders}"


def test_allow_threads_pairs():
    for path in c_files():
        text = path.read_text()
        begins = text.count("Py_BEGIN_ALLOW_THREADS")
        ends = text.count("Py_END_ALLOW_THREADS")
        assert begins == ends, f"{path.name}: {begins} BEGIN vs {ends} END"


def test_one_vtable_per_kernel_file():
    for path in sorted((CSRC / "kernels").glob("*.c")):
        exported = re.findall(r"^const CvKernel (\w+)\s*=", path.read_text(), re.M)
        assert len(exported) == 1, f"{path.name} exports {exported}"
        assert exported[0] == f"cv_kernel_{path.stem}", f"{path.name}: name it cv_kernel_{path.stem}"


def _functions(text):
    """(name, body) of each top-level C function (bodies end at a column-0 brace)."""
    for match in re.finditer(r"^[A-Za-z][^;{}()]*?\b(\w+)\([^;{}]*\)\s*\{(.*?)^\}", text, re.M | re.S):
        yield match.group(1), match.group(2)


def test_gil_taken_and_released_in_the_same_function():
    """Binding code enters Python from engine threads through the GIL bridge: every
    cv_python_begin() has its cv_python_end() in the same function; raw PyGILState
    calls are only for the bridge itself, in gil.c."""
    for path in sorted((CSRC / "python").glob("*.c")):
        for name, body in _functions(path.read_text()):
            if path.name == "gil.c":
                continue
            assert "PyGILState_" not in body, f"{path.name}:{name}: use cv_python_begin()"
            begun = body.count("cv_python_begin(")
            ended = body.count("cv_python_end(")
            assert begun == ended, f"{path.name}:{name}: {begun} begin vs {ended} end"
