"""``tf.io.parse_single_sequence_example`` and ``tf.io.parse_sequence_example``:
``SequenceExample`` protos (a context ``Features`` and ``FeatureLists`` of
per-step features) as dicts of NumPy arrays and :class:`SparseTensor` values.

The context is parsed by the native Example parser (a SequenceExample's
context is an Example's field 1; the feature lists are skipped). The feature
lists are decoded in Python (conveyor.proto), so a map function calling
these runs in Python per element (the trace stops with a TracingWarning)."""
import numpy as np

from conveyor import errors as _errors
from conveyor.framework import tracing as _tracing
from conveyor.io.example import (FixedLenSequenceFeature, SparseTensor, VarLenFeature,
                                 _as_bytes, _bytes_list, _feature_dtype,
                                 _feature_shape, _FIXED_LEN_SEQUENCE, parse_example,
                                 parse_single_example)
from conveyor.proto.example_pb import DecodeError, SequenceExample

__all__ = ["parse_single_sequence_example", "parse_sequence_example"]

_KINDS = {"float32": "float_list", "int64": "int64_list", "string": "bytes_list"}


def _np_dtype(dtype):
    return object if dtype.name == "string" else dtype.as_numpy_dtype


def _compile(sequence_features):
    """[(key, feature, dtype, shape or None, None)], TensorFlow's order:
    the VarLenFeatures sorted, then the FixedLenSequenceFeatures sorted."""
    sparse, dense = [], []
    for key, feature in (sequence_features or {}).items():
        if isinstance(feature, VarLenFeature):
            sparse.append((key, feature, _feature_dtype(feature.dtype, "Tdense"), None, None))
        elif isinstance(feature, FixedLenSequenceFeature):
            dtype = _feature_dtype(feature.dtype, "Tdense")
            shape = tuple(_feature_shape(key, feature.shape, _FIXED_LEN_SEQUENCE))
            if feature.default_value is not None:  # TensorFlow's refusal
                raise ValueError(f"Value feature_list.dense_defaults[{key}] must be None")
            dense.append((key, feature, dtype, shape, None))
        else:
            raise ValueError(f"Unsupported sequence feature type for {key}: "
                             f"{type(feature).__name__} (expected VarLenFeature or "
                             f"FixedLenSequenceFeature)")
    return sorted(sparse, key=lambda s: s[0]) + sorted(dense, key=lambda s: s[0])


def _steps(data, name, key_specs):
    """{key: [one list of values per step]} for the keys asked for."""
    try:
        msg = SequenceExample.FromString(data)
    except DecodeError:
        raise _errors.InvalidArgumentError(
            None, None, f"Could not parse example input, value: '{data[:64]!r}'") from None
    lists = msg.feature_lists.feature_list
    out = {}
    for key, _, dtype, _, _ in key_specs:
        if key not in lists:
            continue
        kind = _KINDS[dtype.name]
        steps = []
        for i, feature in enumerate(lists[key].feature):
            which = feature.WhichOneof("kind")
            if which is not None and which != kind:
                raise _errors.InvalidArgumentError(
                    None, None, f"Name: {name}, Feature list: {key}, Index: {i}.  Data types "
                                f"don't match. Expected type: {dtype.name}")
            steps.append(list(getattr(feature, kind).value) if which else [])
        out[key] = steps
    return out


def _dense(key, feature, dtype, shape, name, steps):
    """The [steps] + shape array of one FixedLenSequenceFeature."""
    per_step = int(np.prod(shape, dtype=np.int64))
    if steps is None:
        if not feature.allow_missing:
            raise _errors.InvalidArgumentError(
                None, None, f"Name: {name}, Feature list '{key}' is required but could not be "
                            f"found.  Did you mean to include it in "
                            f"feature_list_dense_missing_assumed_empty or "
                            f"feature_list_dense_defaults?")
        steps = []
    flat = [v for step in steps for v in step]
    if len(flat) != len(steps) * per_step:
        dims = ",".join(str(d) for d in shape)
        raise _errors.InvalidArgumentError(
            None, None, f"Feature list '{key}' has an unexpected number of values.  Total values "
                        f"size: {len(flat)} is not consistent with output shape: "
                        f"[?{',' if dims else ''}{dims}]")
    arr = np.empty(len(flat), dtype=object) if dtype.name == "string" else None
    if arr is not None:
        arr[:] = flat
    else:
        arr = np.asarray(flat, dtype=_np_dtype(dtype))
    return arr.reshape((len(steps),) + shape)


def _sparse_parts(steps, dtype):
    """(indices [N, 2] of (step, position), values [N], dense shape [steps, longest])."""
    steps = steps or []
    idx = [(t, j) for t, step in enumerate(steps) for j in range(len(step))]
    values = [v for step in steps for v in step]
    arr = np.empty(len(values), dtype=object) if dtype.name == "string" else np.asarray(
        values, dtype=_np_dtype(dtype))
    if dtype.name == "string":
        arr[:] = values
    longest = max((len(s) for s in steps), default=0)
    return (np.asarray(idx, np.int64).reshape(-1, 2), arr,
            np.asarray([len(steps), longest], np.int64))


def _untraceable(serialized, what):
    if isinstance(serialized, _tracing.Tensor):
        raise serialized._trace.fail(f"{what} decodes SequenceExamples in Python")


def parse_single_sequence_example(serialized, context_features=None, sequence_features=None,
                                  example_name=None, name=None):
    """Parses one ``SequenceExample`` (``tf.io.parse_single_sequence_example``).

    Args:
      serialized: a scalar string, the serialized ``SequenceExample``.
      context_features: a dict of ``FixedLenFeature`` / ``VarLenFeature`` /
        ``FixedLenSequenceFeature`` for the context (parsed as an Example's).
      sequence_features: a dict of ``FixedLenSequenceFeature`` (an array
        ``[steps] + shape``) or ``VarLenFeature`` (a :class:`SparseTensor`
        of dense shape ``[steps, longest step]``) for the feature lists.
      example_name: the name error messages give the example.
      name: unused.

    Returns:
      ``(context, feature_lists)``: two dicts, keys in TensorFlow's order.

    Raises:
      InvalidArgumentError: the record is not a SequenceExample, a required
        feature list is missing, or values have the wrong type or count.
    """
    del name
    _untraceable(serialized, "parse_single_sequence_example")
    data = _as_bytes(serialized, "serialized")
    specs = _compile(sequence_features)
    ex_name = "<unknown>" if example_name is None else _as_bytes(example_name, "name").decode()
    context = parse_single_example(data, context_features) if context_features else {}
    steps = _steps(data, ex_name, specs)
    lists = {}
    for key, feature, dtype, shape, _ in specs:
        if shape is None:
            lists[key] = SparseTensor(*_sparse_parts(steps.get(key), dtype))
        else:
            lists[key] = _dense(key, feature, dtype, shape, ex_name, steps.get(key))
    return context, lists


def parse_sequence_example(serialized, context_features=None, sequence_features=None,
                           example_names=None, name=None):
    """Parses a batch of ``SequenceExample`` protos (``tf.io.parse_sequence_example``).

    Returns ``(context, feature_lists, lengths)``: the context as
    ``parse_example`` gives it; each ``FixedLenSequenceFeature`` as
    ``[batch, longest] + shape``, shorter sequences padded with zeros (empty
    strings), with its lengths (int64
    ``[batch]``) in ``lengths``; each ``VarLenFeature`` as a
    :class:`SparseTensor` of dense shape ``[batch, longest, longest step]``.
    """
    del name
    _untraceable(serialized, "parse_sequence_example")
    data = _bytes_list(serialized, "serialized")
    names = (["<unknown>"] * len(data) if example_names is None or len(example_names) == 0
             else [n.decode() for n in _bytes_list(example_names, "example_names")])
    specs = _compile(sequence_features)
    context = parse_example(data, context_features) if context_features else {}
    per_example = [_steps(d, n, specs) for d, n in zip(data, names)]
    lists, lengths = {}, {}
    for key, feature, dtype, shape, _ in specs:
        if shape is None:
            parts = [_sparse_parts(steps.get(key), dtype) for steps in per_example]
            idx = [np.concatenate([np.full((len(p[0]), 1), b, np.int64), p[0]], axis=1)
                   for b, p in enumerate(parts)]
            values = [p[1] for p in parts]
            lists[key] = SparseTensor(
                np.concatenate(idx).reshape(-1, 3) if idx else np.zeros((0, 3), np.int64),
                np.concatenate(values) if values else np.zeros(0, _np_dtype(dtype)),
                np.asarray([len(data)] + [max((int(p[2][i]) for p in parts), default=0)
                                          for i in range(2)], np.int64))
            continue
        arrays = [_dense(key, feature, dtype, shape, n, steps.get(key))
                  for steps, n in zip(per_example, names)]
        longest = max((len(a) for a in arrays), default=0)
        fill = b"" if dtype.name == "string" else 0
        out = np.full((len(data), longest) + shape, fill, dtype=_np_dtype(dtype))
        for b, a in enumerate(arrays):
            out[b, :len(a)] = a
        lists[key] = out
        lengths[key] = np.asarray([len(a) for a in arrays], np.int64)
    return context, lists, lengths
