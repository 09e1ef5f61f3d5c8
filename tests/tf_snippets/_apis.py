"""Which TensorFlow APIs a snippet uses that conveyor lacks (a static scan of its source).

The ranking in known.py counts each snippet's first blocker only; this scan
counts every missing API a snippet (and the module helpers it calls) refers
to: ``tf.a.b`` chains that do not resolve on conveyor, method calls on
datasets (``.scan(``, ``.reduce(``) that conveyor's Dataset lacks, and
``x.numpy()`` calls (conveyor yields NumPy values, which have no ``.numpy()``).
"""
import ast
import inspect
import textwrap


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _functions_used(fn, seen):
    """fn and the module-level functions it calls, transitively."""
    if fn in seen or not (fn.__module__ or "").startswith("tf_snippets.") or \
            fn.__module__ == "tf_snippets._compare":
        return
    seen.add(fn)
    module = inspect.getmodule(fn)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            target = getattr(module, node.id, None)
            if inspect.isfunction(target) and not node.id.startswith("snippet_"):
                _functions_used(target, seen)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            # helpers imported from another snippet module: images_tutorial._jpeg_dir
            target = getattr(module, node.value.id, None)
            if inspect.ismodule(target):
                sub = getattr(target, node.attr, None)
                if inspect.isfunction(sub):
                    _functions_used(sub, seen)


def _resolves(module, dotted):
    obj = module
    for part in dotted.split(".")[1:]:
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def missing_apis(fn, tf_module, cv_module):
    """Sorted names ("tf.strings.split", "Dataset.scan") fn uses that conveyor lacks."""
    funcs = set()
    _functions_used(fn, funcs)
    tf_methods = {m for m in dir(tf_module.data.Dataset) if not m.startswith("_")}
    cv_methods = {m for m in dir(cv_module.data.Dataset) if not m.startswith("_")}
    elements_have_numpy = hasattr(next(iter(cv_module.data.Dataset.range(1))), "numpy")
    missing = set()
    for f in funcs:
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(f)))
        except (OSError, TypeError, SyntaxError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                name = _dotted(node)
                if name and name.startswith("tf."):
                    # the longest prefix that exists in TensorFlow
                    parts = name.split(".")
                    while len(parts) > 1 and not _resolves(tf_module, ".".join(parts)):
                        parts.pop()
                    name = ".".join(parts)
                    if len(parts) > 1 and not _resolves(cv_module, name):
                        # report the first missing link (tf.strings, not tf.strings.split)
                        i = 2
                        while _resolves(cv_module, ".".join(parts[:i])):
                            i += 1
                        missing.add(".".join(parts[:i]))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                attr = node.func.attr
                if attr == "numpy" and not node.args and not elements_have_numpy:
                    missing.add("x.numpy() on elements and values (conveyor yields NumPy)")
                receiver = _dotted(node.func.value) or ""
                if attr == "save" and "ds" not in receiver and "dataset" not in receiver:
                    continue  # a checkpoint's save(), not Dataset.save
                if (attr in tf_methods and attr not in cv_methods
                        and not (_dotted(node.func) or "").startswith("tf.")):
                    missing.add(f"Dataset.{attr}")
    return sorted(missing)
