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


# -- the CPython binding (csrc/python/) ------------------------------------

BINDING = CSRC / "python"


def _binding_sources():
    return {p.name: p.read_text() for p in sorted(BINDING.glob("*.c"))}


def _binding_cross_file_symbols(sources):
    """cv_ functions and variables defined at file scope -> the file defining them."""
    owner = {}
    for name, text in sources.items():
        for fn, _ in _functions(text):
            if fn.startswith("cv_"):
                owner[fn] = name
        for var in re.findall(r"^[A-Za-z][\w \t\*]*?\b(cv_\w+)\s*(?:\[\])?\s*[=;]", text, re.M):
            owner[var] = name
    return owner


def test_binding_files_do_not_depend_on_module_init():
    """module.c only assembles the module: no other binding file includes it or
    uses a symbol it defines."""
    sources = _binding_sources()
    init = sources.pop("module.c")
    symbols = {fn for fn, _ in _functions(init)} | set(re.findall(r"\b(module_\w+|PyInit_\w+)\b", init))
    sources["binding.h"] = (BINDING / "binding.h").read_text()
    for name, text in sources.items():
        assert not re.search(r'#\s*include\s*"[^"]*module\.c"', text), f"{name} includes module.c"
        used = sorted(s for s in symbols if re.search(rf"\b{s}\b", text))
        assert not used, f"{name} uses module.c's {used}"


def test_binding_call_graph_has_no_cycles():
    """Binding files call each other's cv_ functions bottom-up only (binding.h lists
    the order): the file-level call graph is acyclic."""
    sources = _binding_sources()
    owner = _binding_cross_file_symbols(sources)
    edges = {name: set() for name in sources}
    for name, text in sources.items():
        for symbol, where in owner.items():
            if where != name and re.search(rf"\b{symbol}\b", text):
                edges[name].add(where)
    state = {}  # name -> "open" while on the DFS stack, "done" after

    def visit(name, path):
        if state.get(name) == "done":
            return
        assert state.get(name) != "open", f"call cycle: {' -> '.join(path + [name])}"
        state[name] = "open"
        for callee in sorted(edges[name]):
            visit(callee, path + [name])
        state[name] = "done"
    for name in sorted(edges):
        visit(name, [])


def test_binding_defines_no_py_prefixed_types():
    """Py is CPython's prefix: binding types are Cv-prefixed (CvPy... for wrappers)."""
    pattern = re.compile(r"^\}[ \t]*(Py\w*)[ \t]*;|\bstruct\s+(Py\w*)\s*\{"
                         r"|\btypedef\b[^;{}]*?\b(Py\w*)\s*;|\btypedef\b[^;{}]*\(\s*\*\s*(Py\w*)\s*\)",
                         re.M)
    offenders = []
    for path in sorted(BINDING.glob("*.[ch]")):
        for match in pattern.finditer(path.read_text()):
            offenders.append(f"{path.name}: {next(g for g in match.groups() if g)}")
    assert not offenders, offenders
