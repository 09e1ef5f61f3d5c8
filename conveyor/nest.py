"""Element structures, with tf.data's rules.

Tuples (including namedtuples) and mappings (dicts) are structure; every
other value, Python lists included, is a leaf (a tensor). Dicts flatten in
sorted key order, as ``tf.nest`` does.
"""
from collections.abc import Mapping

__all__ = ["is_nested", "flatten", "pack_sequence_as", "map_structure",
           "assert_same_structure", "flatten_up_to"]


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def is_nested(x):
    """True for tuples, namedtuples and mappings."""
    return isinstance(x, (tuple, Mapping))


def _children(x):
    if isinstance(x, Mapping):
        return [x[k] for k in _sorted_keys(x)]
    return list(x)


def _sorted_keys(mapping):
    try:
        return sorted(mapping)
    except TypeError:
        raise TypeError(f"dict keys must be sortable to form an element structure, got "
                        f"{list(mapping)!r}") from None


def flatten(structure):
    """The leaves of `structure`, depth first (dicts by sorted key)."""
    if not is_nested(structure):
        return [structure]
    out = []
    for child in _children(structure):
        out.extend(flatten(child))
    return out


def _rebuild(template, children):
    if isinstance(template, Mapping):
        keys = _sorted_keys(template)
        values = dict(zip(keys, children))
        if type(template) is dict:
            return {k: values[k] for k in template}
        return type(template)((k, values[k]) for k in template)
    if _is_namedtuple(template):
        return type(template)(*children)
    return tuple(children)


def structure_key(structure):
    """A hashable description of how `structure` nests (types and dict keys, not
    leaves): two structures nest the same way exactly when their keys are equal."""
    if isinstance(structure, Mapping):
        keys = _sorted_keys(structure)
        return (type(structure), tuple(keys), tuple(structure_key(structure[k]) for k in keys))
    if isinstance(structure, tuple):
        return (type(structure), tuple(structure_key(c) for c in structure))
    return None


def pack_sequence_as(structure, flat):
    """Put the leaves `flat` back into the shape of `structure`."""
    flat = list(flat)
    pos = 0

    def build(template):
        nonlocal pos
        if not is_nested(template):
            pos += 1
            return flat[pos - 1]
        return _rebuild(template, [build(c) for c in _children(template)])

    result = build(structure)
    if pos != len(flat):
        raise ValueError(f"Structure had {pos} leaves but {len(flat)} values were given.")
    return result


def assert_same_structure(a, b):
    """Raise ValueError/TypeError unless `a` and `b` nest the same way."""
    if is_nested(a) != is_nested(b):
        raise ValueError(f"The two structures don't have the same nested structure: {a!r} vs {b!r}")
    if not is_nested(a):
        return
    if isinstance(a, Mapping) != isinstance(b, Mapping) or _is_namedtuple(a) != _is_namedtuple(b):
        raise TypeError(f"The two structures don't have the same sequence type: "
                        f"{type(a).__name__} vs {type(b).__name__}")
    if isinstance(a, Mapping) and _sorted_keys(a) != _sorted_keys(b):
        raise ValueError(f"The two dicts don't have the same keys: {sorted(a)} vs {sorted(b)}")
    ca, cb = _children(a), _children(b)
    if len(ca) != len(cb):
        raise ValueError(f"The two structures don't have the same number of elements: "
                         f"{len(ca)} vs {len(cb)}")
    for x, y in zip(ca, cb):
        assert_same_structure(x, y)


def flatten_up_to(shallow, value):
    """Flatten `value` down to the leaves of `shallow` (which must match its nesting)."""
    if not is_nested(shallow):
        return [value]
    if not is_nested(value) or isinstance(shallow, Mapping) != isinstance(value, Mapping):
        raise ValueError(f"expected a {type(shallow).__name__}, got {type(value).__name__}")
    if isinstance(shallow, Mapping):
        if _sorted_keys(shallow) != _sorted_keys(value):
            raise ValueError(f"expected keys {sorted(shallow)}, got {sorted(value)}")
    elif len(shallow) != len(value):
        raise ValueError(f"expected {len(shallow)} items, got {len(value)}")
    out = []
    for s, v in zip(_children(shallow), _children(value)):
        out.extend(flatten_up_to(s, v))
    return out


def map_structure(fn, *structures):
    """Apply `fn` leaf-wise over structures of the same nesting."""
    first = structures[0]
    for other in structures[1:]:
        assert_same_structure(first, other)
    flats = [flatten(s) for s in structures]
    return pack_sequence_as(first, [fn(*leaves) for leaves in zip(*flats)])
