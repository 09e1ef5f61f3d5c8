"""The layout of the Python package: no private module at the package's top
but the compiled engine, no import circles between conveyor's modules, no
module longer than 1,000 lines, and no module but the Dataset base class
touching another dataset's graph fields.

The tensor ops live in conveyor/ops/ (math_ops, array_ops, string_ops ...),
the machinery in conveyor/framework/ (tracing, eager, variables ...), the
protobuf wire code in conveyor/proto/; conveyor's public modules
(conveyor.math, conveyor.strings, conveyor.random ...) are faces that
re-export from them. Pipeline rewrites live in conveyor/data/rewrites/.

Imports are read from the source with ``ast`` (module level and inside
functions alike, so an import moved into a function to dodge a circle still
counts). An import follows Python's semantics: importing ``conveyor.a.b``
first runs ``conveyor/a/__init__.py``, so a module outside ``conveyor.a``
that imports ``conveyor.a.b`` depends on the package ``conveyor.a`` as well.
Imports of modules outside conveyor (NumPy, the standard library, optional
tqdm or tensorflow) are ignored.
"""
import ast
import os

import conveyor

PACKAGE = os.path.dirname(os.path.abspath(conveyor.__file__))
MAX_LINES = 1000
# The private modules allowed at the package's top: only the compiled engine,
# which csrc/ builds as conveyor._engine. A new private module belongs in a
# room: conveyor/ops/, conveyor/framework/, conveyor/proto/, or the private
# modules of conveyor/data, conveyor/io, conveyor/image.
TOP_LEVEL_PRIVATE = {"conveyor._engine"}


def _modules(extensions=False):
    """{dotted module name: path} of every .py file of the package (and, with
    `extensions`, of its compiled modules, such as conveyor._engine)."""
    found = {}
    for folder, dirs, files in os.walk(PACKAGE):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__")))
        for name in sorted(files):
            if name.endswith(".py"):
                stem = name[:-3]
            elif extensions and name.endswith((".so", ".pyd")):
                stem = name.split(".")[0]
            else:
                continue
            rel = os.path.relpath(os.path.join(folder, stem), os.path.dirname(PACKAGE))
            parts = rel.split(os.sep)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = os.path.join(folder, name)
    return found


def _is_package(path):
    return os.path.basename(path) == "__init__.py"


def _ancestors(name):
    """conveyor.a.b -> [conveyor, conveyor.a]."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _imports(name, path, modules):
    """The conveyor modules that module `name` (at `path`) imports, each
    with the line of the import."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    package = name if _is_package(path) else name.rpartition(".")[0]
    targets = []  # (module imported, line, whether a `from` import may name a package attribute)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                # `from P import x`: the submodule P.x if there is one, else P itself.
                targets.append((sub if sub in modules else source, node.lineno))
    # A module being imported already runs inside its own packages' __init__.
    own = set(_ancestors(name)) | ({name} if _is_package(path) else set())
    edges = []
    for target, line in targets:
        if target not in modules:
            continue  # not conveyor's (third-party or standard library)
        for dep in _ancestors(target) + [target]:
            if dep in modules and dep != name and (dep not in own or dep == target):
                edges.append((dep, line))
    return edges


def _graph():
    modules = _modules(extensions=True)
    return modules, {name: (_imports(name, path, modules) if path.endswith(".py") else [])
                     for name, path in modules.items()}


def _find_cycle(graph):
    """One import cycle as a list of (module, line of its import of the next), or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        for dep, line in graph[node]:
            stack.append((node, line))
            if state.get(dep) == "open":
                start = next(i for i, (n, _) in enumerate(stack) if n == dep)
                return stack[start:]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
            stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_import_graph_sees_the_packages_modules():
    modules, graph = _graph()
    assert {"conveyor", "conveyor.framework.tracing", "conveyor.ops.math_ops", "conveyor.data",
            "conveyor.data.dataset", "conveyor.io.image_ops"} <= set(modules)
    deps = {dep for dep, _ in graph["conveyor.ops.math_ops"]}
    assert "conveyor.framework.tracing" in deps and "conveyor.dtypes" in deps


def test_a_circle_is_found():
    # The checker itself: a -> b (inside a function) -> a is a cycle.
    graph = {"a": [("b", 3)], "b": [("c", 7)], "c": [("a", 1)], "d": [("a", 2)]}
    cycle = _find_cycle(graph)
    assert [n for n, _ in cycle] == ["a", "b", "c"]
    assert _find_cycle({"a": [("b", 1)], "b": []}) is None


def test_no_import_circles():
    modules, graph = _graph()
    cycle = _find_cycle(graph)
    if cycle:
        names = [n for n, _ in cycle] + [cycle[0][0]]
        where = ", ".join(f"{os.path.relpath(modules[n], os.path.dirname(PACKAGE))}:{line}"
                          for n, line in cycle)
        raise AssertionError(f"import circle: {' -> '.join(names)} (imports at {where})")


def test_no_private_module_at_the_package_top():
    top = [name for name in _modules(extensions=True) if name.count(".") == 1]
    private = {name for name in top if name.split(".")[1].startswith("_")}
    assert "conveyor._engine" in private  # the checker sees the compiled module
    extra = sorted(private - TOP_LEVEL_PRIVATE)
    assert not extra, (f"private modules at conveyor's top: {extra}; put each in its room "
                       f"(conveyor/ops, conveyor/framework, conveyor/proto, ...)")


def test_no_module_over_1000_lines():
    too_long = []
    for name, path in _modules().items():
        with open(path, encoding="utf-8") as f:
            lines = sum(1 for _ in f)
        if lines > MAX_LINES:
            too_long.append(f"{os.path.relpath(path, os.path.dirname(PACKAGE))}: {lines} lines")
    assert not too_long, "modules over 1,000 lines: " + "; ".join(too_long)


# -- the graph fields ------------------------------------------------------------
# A dataset's inputs, its cache of built engine datasets and its positional
# arguments are its own storage. Code that reads or rebuilds a pipeline (the
# rewrites in conveyor/data/rewrites/, sharding, statistics, the doctor) goes
# through the graph API of conveyor/data/ops/dataset_base.py (inputs(),
# with_inputs(), named_args, arg(name), _cached_engine(), _forget_engine()),
# so that an op can change how it stores them. The check: in every module of
# the package but dataset_base.py (which implements that API), an attribute
# `_inputs`, `_engine_cache` or `_args` may be read or assigned only on `self`
# (`x._inputs`, `getattr(x, "_args")`, `x._args = ...` on anything else fail).

GRAPH_FIELDS = frozenset({"_inputs", "_engine_cache", "_args"})
GRAPH_API_MODULE = "conveyor.data.ops.dataset_base"


def _foreign_graph_fields(source, path="<string>"):
    """[(line, text)] where `source` touches a graph field of an object other than self."""
    found = []
    for node in ast.walk(ast.parse(source, path)):
        owner = field = None
        if isinstance(node, ast.Attribute) and node.attr in GRAPH_FIELDS:
            owner, field = node.value, node.attr
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
              and node.args[1].value in GRAPH_FIELDS):
            owner, field = node.args[0], node.args[1].value
        if field is not None and not (isinstance(owner, ast.Name) and owner.id == "self"):
            found.append((node.lineno, f"{ast.unparse(owner)}.{field}"))
    return found


def test_the_graph_field_check_finds_foreign_access():
    source = ("def f(self, ds):\n"
              "    a = self._inputs[0]._inputs\n"          # an input's inputs: foreign
              "    ds._engine_cache = {}\n"
              "    b = getattr(ds, '_args')\n"
              "    self._args = (1,)\n"                    # its own: fine
              "    return self._engine_cache, ds.inputs()\n")
    assert _foreign_graph_fields(source) == [
        (2, "self._inputs[0]._inputs"), (3, "ds._engine_cache"), (4, "ds._args")]


def test_only_the_dataset_base_touches_other_datasets_graph_fields():
    offenders = []
    for name, path in _modules().items():
        if name == GRAPH_API_MODULE:
            continue
        with open(path, encoding="utf-8") as f:
            found = _foreign_graph_fields(f.read(), path)
        rel = os.path.relpath(path, os.path.dirname(PACKAGE))
        offenders += [f"{rel}:{line}: {text}" for line, text in found]
    assert not offenders, ("another dataset's graph fields touched outside "
                           "dataset_base.py (use inputs(), with_inputs(), arg(name), "
                           "_cached_engine(), _forget_engine()): " + "; ".join(offenders))
