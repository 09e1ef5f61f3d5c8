"""Op attributes are passed by name (csrc/ops/op.h, CvOp.int_attrs), and so
are the arguments of the dataset constructors (csrc/python/*.c).

The rules, checked on the sources (as tests/test_csource_lint.py does):

- C: an op file (csrc/ops/*.c defining a const CvOp) whose op reads int
  attributes (``attrs->ints``, ``attrs->num_ints``, or ``attrs`` handed to a
  helper) declares ``.int_attrs``; one that reads ``attrs->floats`` or
  ``attrs->num_floats`` declares ``.float_attrs``. No op file or helper
  indexes ``attrs->ints`` / ``attrs->floats`` with a bare number: slots are
  named by the file's enum.
- Every declared names list is well formed: lowercase identifiers, each
  optionally ending in "?" (optional) or, the last int name only, "[]" (a list
  of ints); no required name after an optional one; no name twice in an op
  (ints and floats together); ``NULL``-terminated.
- Python: no call of ``tracing.apply`` in conveyor/ passes ``ints=`` or
  ``floats=`` or more than three positional arguments (op, inputs, outputs):
  attributes go in ``attrs=`` (a dict by name). ``_engine.run_op`` in conveyor/
  gets its attributes as ``attr_text`` of a dict display or of a name bound
  to the dict ``apply`` built (the text csrc/ops/op.c parses by name), never
  a list or tuple display, and ``_engine.program`` nodes carry that text (the
  binding refuses positional ints there).

- Dataset constructors: every function of the engine module (and the
  engine Dataset's make_iterator) that takes keywords (``CV_METHOD_KEYWORDS``
  in its method table) is called from conveyor/ with at most its first
  argument (the input dataset, the filenames, the structure) by position,
  everything else by keyword.

Tests may still call ``_engine.run_op`` with positional ints: that raw form
probes the C ops' own checks on malformed attributes.
"""
import array
import ast
import pathlib
import re

import numpy as np
import pytest

import conveyor as cv
from conveyor.framework.eager import attr_text

ROOT = pathlib.Path(__file__).resolve().parent.parent
OPS = ROOT / "csrc" / "ops"
NAME = re.compile(r"^[a-z][a-z0-9_]*(\?|\[\])?$")
NAMES_LIST = re.compile(r"const char \*const (\w+)\[\] = \{(.*?)\};", re.S)


def _op_files():
    for path in sorted(OPS.glob("*.c")):
        text = path.read_text()
        table = re.search(r"const CvOp cv_op_\w+ = \{(.*?)\};", text, re.S)
        if table:
            yield path, text, table.group(1)


def _reads_ints(text):
    return bool(re.search(r"attrs->(ints|num_ints)\b|[(,]\s*attrs\s*[,)]", text))


def _reads_floats(text):
    return bool(re.search(r"attrs->(floats|num_floats)\b", text))


def test_ops_that_read_attributes_declare_their_names():
    offenders = []
    for path, text, table in _op_files():
        if _reads_ints(text) and ".int_attrs" not in table:
            offenders.append(f"{path.name}: .int_attrs")
        if _reads_floats(text) and ".float_attrs" not in table:
            offenders.append(f"{path.name}: .float_attrs")
    assert not offenders, f"ops reading attributes without declaring their names: {offenders}"


def test_no_attribute_slot_is_a_bare_number():
    offenders = []
    for path in sorted(OPS.glob("*.[ch]")):
        for m in re.finditer(r"attrs->(ints|floats)\[\s*\d", path.read_text()):
            offenders.append(f"{path.name}: {m.group(0)}")
    assert not offenders, f"name the slot with the op's enum: {offenders}"


def test_declared_names_are_well_formed():
    lists = 0
    for path in sorted(OPS.glob("*.c")):
        text = path.read_text()
        declared = {}
        for var, body in NAMES_LIST.findall(text):
            lists += 1
            items = [item.strip() for item in body.split(",") if item.strip()]
            assert items[-1] == "NULL", f"{path.name}: {var} must end with NULL"
            names = [ast.literal_eval(item) for item in items[:-1]]
            for i, name in enumerate(names):
                assert NAME.match(name) and len(name) < 64, f"{path.name}: {var}: {name!r}"
                if name.endswith("[]"):
                    assert i == len(names) - 1 and "int" in var, \
                        f"{path.name}: {var}: only the last int name may be a list"
                if i and names[i - 1].endswith("?"):
                    assert name.endswith("?"), \
                        f"{path.name}: {var}: required {name!r} after an optional name"
            declared[var] = [n.rstrip("?[]") for n in names]
        # An op's int and float names (one table per op file) are distinct.
        tables = re.findall(r"\.(?:int|float)_attrs = (\w+)", text)
        bare = [n for var in tables if var in declared for n in declared[var]]
        assert len(bare) == len(set(bare)), f"{path.name}: a name is declared twice: {bare}"
    assert lists > 0


def _calls(tree, name):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            called = f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)
            if called == name:
                yield node


def test_conveyor_passes_op_attributes_by_name():
    offenders = []
    for path in sorted((ROOT / "conveyor").rglob("*.py")):
        tree = ast.parse(path.read_text())
        where = path.relative_to(ROOT)
        for call in _calls(tree, "apply"):
            if len(call.args) > 3 or any(k.arg in ("ints", "floats") for k in call.keywords):
                offenders.append(f"{where}:{call.lineno} apply")
        for call in _calls(tree, "run_op"):
            attrs = call.args[2] if len(call.args) > 2 else None
            named = (isinstance(attrs, ast.Call) and getattr(attrs.func, "id", None) == "attr_text"
                     and len(attrs.args) == 1 and isinstance(attrs.args[0], (ast.Dict, ast.Name)))
            if not named:
                offenders.append(f"{where}:{call.lineno} run_op")
    assert not offenders, f"op attributes passed by position: {offenders}"


def _keyword_constructors():
    names = set()
    for path in sorted((ROOT / "csrc" / "python").glob("*.c")):
        names.update(re.findall(r'\{"(\w+)", CV_METHOD_KEYWORDS\(', path.read_text()))
    # the builder tables (core/builder.h): each entry opens with its name
    for path in (ROOT / "csrc" / "kernels" / "common" / "builders.c",
                 ROOT / "csrc" / "device" / "prefetch_to_device.c"):
        names.update(re.findall(r'^    \{?"(\w+)",', path.read_text(), re.M))
    return names


def test_conveyor_calls_dataset_constructors_by_keyword():
    constructors = _keyword_constructors()
    assert {"map", "interleave", "csv", "group_by_window", "batch", "shuffle",
            "make_iterator"} <= constructors
    offenders = []
    for path in sorted((ROOT / "conveyor").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            direct = (isinstance(f, ast.Attribute) and f.attr in constructors and
                      (f.attr == "make_iterator" or
                       isinstance(f.value, ast.Name) and f.value.id == "_engine"))
            by_name = (isinstance(f, ast.Call) and getattr(f.func, "id", None) == "getattr"
                       and getattr(f.args[0], "id", None) == "_engine")
            if (direct or by_name) and (len(node.args) > 1 or
                                        any(isinstance(a, ast.Starred) for a in node.args)):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, f"dataset constructors called with positional arguments: {offenders}"


def test_constructor_keywords_are_checked():
    from conveyor import _engine
    with pytest.raises(TypeError, match="missing required argument .buffer_size."):
        _engine.shuffle(_engine.range(start=0, stop=3, step=1, dtype=cv.int64._code),
                        buffer_sise=2, seed=0, seed2=0, reshuffle_each_iteration=False)


# -- the binding's checks -------------------------------------------------------------

RNG = (0, 0, 0, 0, 0, 0)


def _resize(attrs):
    from conveyor import _engine
    return _engine.run_op("ResizeBilinear", [np.zeros((4, 4, 3), np.uint8)], attr_text(attrs),
                          [], None, None, 1, RNG)[0]


def test_named_attributes_fill_their_slots():
    out = _resize({"width": 5, "preserve_aspect_ratio": 0, "height": 3})
    assert out.shape == (3, 5, 3)


@pytest.mark.parametrize("attrs, message", [
    ({"height": 3, "width": 3}, "ResizeBilinear: missing attribute 'preserve_aspect_ratio'"),
    ({"height": 3, "width": 3, "preserve_aspect_ratio": 0, "size": 1},
     "ResizeBilinear: unknown attribute 'size'"),
    ([("height", 3), ("height", 4), ("width", 3), ("preserve_aspect_ratio", 0)],
     "ResizeBilinear: attribute 'height' given twice"),
])
def test_unknown_missing_and_repeated_names_are_refused(attrs, message):
    with pytest.raises(TypeError, match=re.escape(message)):
        _resize(attrs)


def test_an_optional_attribute_needs_the_optional_ones_before_it():
    from conveyor import _engine
    attrs = {"channels": 0, "ratio": 1, "fancy_upscaling": 1, "try_recover_truncated": 0,
             "dct_method": 0, "max_pixels": 0, "min_width": 8, "acceptable_fraction": 1.0}
    with pytest.raises(TypeError, match="DecodeJpeg: attribute 'min_width' needs the optional "
                                        "'min_height'"):
        _engine.run_op("DecodeJpeg", [np.array(b"", object)], attr_text(attrs), [], None, None,
                       1, RNG)


def test_program_nodes_take_named_attributes_only():
    from conveyor import _engine
    code = cv.float32._code
    ids = array.array("i", [0]), array.array("i", [1])  # a node's inputs, the results
    node = ("Cast", ids[0], [code], None, None, 1, 0)  # positional ints: refused
    with pytest.raises(TypeError, match="Cast: attributes must be named"):
        _engine.program("f", 1, [], [node], ids[1], 0, 0)
    named = ("Cast", ids[0], attr_text({"dtype": code}), None, None, 1, 0)
    program = _engine.program("f", 1, [], [named], ids[1], 0, 0)
    (out,) = _engine.run_program(program, [np.array([1.5, 2.5], np.float64)], 0, 0)
    assert out.dtype == np.float32
