"""Standing rules for the C sources (msgspec's cpylint idea).

- The engine (core, io, kernels, ops, device) is plain C: Python.h and
  PyObject appear only under csrc/python/.
- Every Py_BEGIN_ALLOW_THREADS has its Py_END_ALLOW_THREADS in the same function.
- Layers (docs/design.md): each csrc/ folder includes only itself and the
  layers below it (LAYERS): core <- io <- kernels, ops <- python; kernels and
  ops are siblings that never include each other (they meet through core's
  contracts); device uses core only. Every quoted #include resolves to a file,
  and the #include graph has no circle.
- No circle among the C files by includes and calls together: a file that
  includes another's header, or calls a function another .c defines, depends
  on it (foo.c and foo.h are one node), and the dependencies form no cycle.
- Each file directly in kernels/ is a kernel: it exports exactly one const
  CvKernel cv_kernel_<file>. Helpers shared by several kernels (or
  separated from a large one) live in kernels/common/: they export no
  kernel, and each <name>.c has its interface in <name>.h.
- Each file in ops/ is an op or a helper. An op file defines exactly one
  const CvOp cv_op_<file>, listed in ops/registry.c; a helper defines none and
  has its interface in a header of the same name (registry.c itself aside).
- No source file (csrc/, conveyor/, tests/, benchmarks/, the top-level scripts) is over MAX_LINES lines.
"""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"
MAX_LINES = 1000

# The layers each csrc/ folder may include (itself included).
LAYERS = {
    "core": {"core"},
    "io": {"core", "io"},
    "kernels": {"core", "io", "kernels"},
    "ops": {"core", "io", "ops"},
    "device": {"core", "device"},
    "python": {"core", "io", "kernels", "ops", "device", "python"},
}


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
    """A file directly in kernels/ is one kernel; kernels/common/ holds the helpers."""
    for path in sorted((CSRC / "kernels").glob("*.c")):
        exported = re.findall(r"^const CvKernel (\w+)\s*=", path.read_text(), re.M)
        assert len(exported) == 1, f"{path.name} exports {exported}"
        assert exported[0] == f"cv_kernel_{path.stem}", f"{path.name}: name it cv_kernel_{path.stem}"


def test_kernel_helpers_export_no_kernel():
    helpers = sorted((CSRC / "kernels" / "common").glob("*.c"))
    assert helpers, "kernels/common/ holds the kernels' shared helpers"
    for path in helpers:
        rel = path.relative_to(CSRC)
        assert not re.search(r"^const CvKernel ", path.read_text(), re.M), \
            f"{rel} defines a kernel: kernels go directly in kernels/"
        assert path.with_suffix(".h").exists(), f"{rel}: a helper declares its interface in {path.stem}.h"
    assert not [p for p in (CSRC / "kernels").iterdir() if p.is_dir() and p.name != "common"], \
        "kernels/ has one helper folder, common/"


OP_DEFINITION = re.compile(r"^const CvOp (\w+)\s*=", re.M)


def test_every_op_file_is_registered():
    """An op file defines one CvOp named after it and is listed in registry.c; a file
    that defines no CvOp is a helper with a header of its own (registry.c aside)."""
    registry = (CSRC / "ops" / "registry.c").read_text()
    listed = set(re.findall(r"^\s*&(cv_op_\w+),", registry, re.M))
    defined = set()
    for path in sorted((CSRC / "ops").glob("*.c")):
        if path.name == "registry.c":
            continue
        ops = OP_DEFINITION.findall(path.read_text())
        if not ops:
            assert path.with_suffix(".h").exists(), \
                f"ops/{path.name} defines no CvOp, so it is a helper: declare its interface in {path.stem}.h"
            continue
        assert ops == [f"cv_op_{path.stem}"], f"ops/{path.name} defines {ops}: one op, cv_op_{path.stem}"
        assert ops[0] in listed, f"ops/{path.name}: add &{ops[0]} to all_ops in ops/registry.c"
        defined.add(ops[0])
    assert listed <= defined, f"registry.c lists ops without a file: {sorted(listed - defined)}"


INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def _include_graph():
    """{file: [included files]} over csrc/, paths relative to csrc/. A quoted include
    resolves against csrc/ (the build's include path) or the including file's folder."""
    graph, unresolved = {}, []
    for path in c_files():
        rel = path.relative_to(CSRC).as_posix()
        graph[rel] = []
        for name in INCLUDE.findall(path.read_text()):
            for candidate in (CSRC / name, path.parent / name):
                if candidate.is_file():
                    graph[rel].append(candidate.resolve().relative_to(CSRC).as_posix())
                    break
            else:
                unresolved.append(f"{rel}: {name}")
    return graph, unresolved


def _layer_offenders(layers):
    graph, _ = _include_graph()
    offenders = []
    for src, targets in sorted(graph.items()):
        layer = src.split("/")[0]
        if layer not in layers:
            continue
        offenders += [f"{src} -> {dst}" for dst in targets if dst.split("/")[0] not in LAYERS[layer]]
    return offenders


def test_includes_resolve():
    _, unresolved = _include_graph()
    assert not unresolved, f"quoted #includes that name no file under csrc/: {unresolved}"


def test_every_folder_is_a_known_layer():
    folders = {p.relative_to(CSRC).parts[0] for p in c_files()}
    assert folders <= set(LAYERS), f"csrc/ folders without a layer in LAYERS: {folders - set(LAYERS)}"


def test_core_and_io_never_include_upward():
    offenders = _layer_offenders({"core", "io"})
    assert not offenders, f"core/ and io/ must not include kernels/, ops/ or python/: {offenders}"


def test_io_includes_only_core_and_io():
    offenders = _layer_offenders({"io"})
    assert not offenders, f"io/ includes only core/ and io/: {offenders}"


def test_kernels_and_ops_never_include_each_other():
    """Siblings: what both need moves down to core/ (contracts) or io/ (file formats)."""
    offenders = _layer_offenders({"kernels", "ops"})
    assert not offenders, f"kernels/ and ops/ meet only through core/ and io/: {offenders}"


def test_every_layer_includes_only_layers_below():
    offenders = _layer_offenders(set(LAYERS))
    assert not offenders, f"#includes against the layer order (LAYERS): {offenders}"


def test_no_include_circle():
    graph, _ = _include_graph()
    state = {}  # 1: on the current path, 2: done

    def visit(node, path):
        state[node] = 1
        for nxt in graph.get(node, ()):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt]
                raise AssertionError("#include circle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])


def test_no_source_file_over_the_line_limit():
    """Every source file: the C engine, the Python package, tests, benchmarks."""
    files = list(c_files())
    for folder in ("conveyor", "tests", "benchmarks"):
        files += sorted((ROOT / folder).rglob("*.py")) + sorted((ROOT / folder).rglob("*.c"))
    files += sorted(ROOT.glob("*.py"))
    too_long = []
    for path in files:
        with path.open("rb") as f:
            lines = sum(1 for _ in f)
        if lines > MAX_LINES:
            too_long.append(f"{path.relative_to(ROOT)} ({lines} lines)")
    assert not too_long, f"source files over {MAX_LINES} lines (split them by concern): {too_long}"


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


MAX_BINDING_LINES = 4000
# The engine's machinery a running pipeline owns (core/pipeline.h): the binding
# reaches it only through the pipeline, never by its own headers or calls.
_ENGINE_MACHINERY_HEADERS = ("core/pool.h", "core/stats.h", "core/autotune.h")
_ENGINE_MACHINERY_CALL = re.compile(r"\b(cv_(?:pool|stats|autotuner)_\w+)\s*\(")


def test_binding_stays_small_and_owns_no_engine_machinery():
    """The binding is the GIL, conversions and Python objects: under
    MAX_BINDING_LINES lines in all (csrc/python/*.c and *.h), and no file of it
    includes the pool's, the statistics' or the tuner's header or calls their
    functions (a pipeline is core/pipeline.c's; the binding wraps it)."""
    files = sorted(BINDING.glob("*.[ch]"))
    lines = {}
    for path in files:
        with path.open("rb") as f:
            lines[path.name] = sum(1 for _ in f)
    total = sum(lines.values())
    largest = ", ".join(f"{n} {c}" for n, c in sorted(lines.items(), key=lambda x: -x[1])[:5])
    assert total < MAX_BINDING_LINES, \
        f"the binding has {total} lines (largest: {largest}); move what is not Python's to csrc/core/"
    offenders = []
    for path in files:
        included = re.findall(r'^\s*#\s*include\s*"([^"]+)"', path.read_text(), re.M)
        offenders += [f"{path.name} includes {h}" for h in included if h in _ENGINE_MACHINERY_HEADERS]
        called = sorted(set(_ENGINE_MACHINERY_CALL.findall(_code(path))))
        offenders += [f"{path.name} calls {c}" for c in called]
    assert not offenders, f"pool, statistics or tuner code in the binding: {offenders}"


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


# -- no circle among the C files, by includes and by calls ------------------

_COMMENT_OR_STRING = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"', re.S)
# A function definition with external linkage: a cv_ name at the start of a
# line's declaration, its parameter list, then the body's brace (not static).
_EXTERN_DEFINITION = re.compile(r"^(?!static\b)[A-Za-z][^;{}()#]*?\b(cv_\w+)\s*\([^;{}]*\)\s*\{", re.M)

# Dependencies that still close a circle, each (from, to) with why, so the
# test holds while they are being removed: delete an entry when its edge goes
# (the test says so). Only core/ may appear here; a circle in ops/ or
# anywhere else is fixed, not listed.
ALLOWED_CIRCLE_EDGES = set()  # none: every circle is removed, none may come back


def _node(rel):
    """foo.c and foo.h are one node, "folder/foo"."""
    return rel.rsplit(".", 1)[0]


def _code(path):
    """The C text without comments and string literals (a name in a comment
    or a message is no dependency)."""
    return _COMMENT_OR_STRING.sub(lambda m: '""' if m.group(0).startswith('"') else " ", path.read_text())


def _dependency_graph():
    """{node: {node it depends on: [why, ...]}} over csrc/: A includes a
    header of B, or A's code calls (names) a cv_ function that B.c defines.
    A header's prototypes are no call; its inline functions' bodies are."""
    includes, _ = _include_graph()
    graph = {}
    for src, targets in includes.items():
        deps = graph.setdefault(_node(src), {})
        for dst in targets:
            if _node(dst) != _node(src):
                deps.setdefault(_node(dst), []).append(f"includes {dst}")
    codes = {path.relative_to(CSRC).as_posix(): _code(path) for path in c_files()}
    definer = {}
    for rel, code in codes.items():
        if rel.endswith(".c"):
            for name in _EXTERN_DEFINITION.findall(code):
                definer.setdefault(name, set()).add(_node(rel))
    for rel, code in codes.items():
        if rel.endswith(".h"):
            code = "\n".join(body for _, body in _functions(code))
        deps = graph.setdefault(_node(rel), {})
        for name in sorted(set(re.findall(r"\bcv_\w+\b", code))):
            for owner in definer.get(name, ()):
                if owner != _node(rel):
                    deps.setdefault(owner, []).append(f"calls {name}")
    return graph


def _circles(graph):
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_dependency_graph_sees_includes_and_calls():
    """The graph the circle test walks: an include, a call, and a header's
    prototype that is no call (op.h declares cv_op_find, registry.c defines it)."""
    graph = _dependency_graph()
    assert "ops/op" in graph["ops/program"]
    assert any(why.startswith("calls cv_jpeg_decode") for why in graph["ops/image_decode"]["ops/jpeg"])
    assert "ops/registry" not in graph["ops/op"]


def test_no_circle_by_includes_and_calls():
    graph = _dependency_graph()
    stale = sorted(f"{a} -> {b}" for a, b in ALLOWED_CIRCLE_EDGES if b not in graph.get(a, {}))
    assert not stale, f"ALLOWED_CIRCLE_EDGES lists dependencies that are gone: delete {stale}"
    assert all(a.startswith("core/") for a, _ in ALLOWED_CIRCLE_EDGES), "only core/ circles may wait"
    remaining = {a: {b: why for b, why in deps.items() if (a, b) not in ALLOWED_CIRCLE_EDGES}
                 for a, deps in graph.items()}
    circles = _circles(remaining)
    report = [" / ".join(c) + ": " + "; ".join(f"{a} -> {b} ({', '.join(sorted(set(remaining[a][b]))[:3])})"
                                             for a in c for b in c if b in remaining[a])
              for c in circles]
    assert not circles, "files that depend on each other (includes or calls):\n" + "\n".join(report)
