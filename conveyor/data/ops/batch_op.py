"""The batching family: ``Dataset.batch`` (BatchDataset, ParallelBatchDataset),
``padded_batch`` (PaddedBatchDataset), ``unbatch`` (UnbatchDataset) and
``rebatch`` (RebatchDataset)."""
import numpy as np

from conveyor import _engine
from conveyor import dtypes as _dtypes
from conveyor import nest
from conveyor.framework.convert import to_array
from conveyor.data.ops.dataset_base import UNKNOWN_CARDINALITY, Cardinality, Dataset
from conveyor.data.rewrites import map_batch, parallel_batch, shuffle_batch
from conveyor.tensor_spec import TensorShape, TensorSpec

__all__ = ["BatchDataset", "ParallelBatchDataset", "PaddedBatchDataset", "UnbatchDataset",
           "RebatchDataset"]


class BatchDataset(Dataset):
    _arg_fields = {"batch_size": "_batch_size", "drop_remainder": "_drop_remainder",
                   "num_parallel_calls": "_parallelism", "deterministic": "_deterministic"}

    def __init__(self, input_dataset, batch_size, drop_remainder, parallelism, deterministic):
        super().__init__([input_dataset])
        self._batch_size = batch_size
        self._drop_remainder = drop_remainder
        self._parallelism = parallelism
        self._deterministic = deterministic

    def _build(self, ctx, engine_inputs):
        # The rewrites that may build another kernel (conveyor/data/rewrites/),
        # in this order: shuffle+batch, map+batch, then parallel batch.
        for rewrite in (shuffle_batch.rewrite, map_batch.rewrite, parallel_batch.rewrite):
            built = rewrite(self, ctx, engine_inputs)
            if built is not None:
                return built
        deterministic = ctx.deterministic if self._deterministic is None else self._deterministic
        return _engine.batch(engine_inputs[0], batch_size=self._batch_size,
                             drop_remainder=self._drop_remainder,
                             num_parallel_calls=ctx.parallelism(self._parallelism),
                             deterministic=deterministic, memory=ctx.memory)

    def _batched(self, spec):
        dim = self._batch_size if self._drop_remainder else None
        return nest.map_structure(
            lambda s: TensorSpec(TensorShape([dim]).concatenate(s.shape), s.dtype), spec)

    def _derive_spec(self):
        return self._batched(self._inputs[0].element_spec)

    def _known_spec(self):
        spec = self._inputs[0]._known_spec()
        return None if spec is None else self._batched(spec)


class ParallelBatchDataset(BatchDataset):
    """``batch`` with ``num_parallel_calls``: batches are copied on worker threads."""


class _SpecDerivedDataset(Dataset):
    """A one-input dataset whose element spec (and engine arguments) follow from
    its input's spec: resolved at construction when the input spec is known, else
    (a Python map upstream) when first iterated or asked for its element_spec,
    so that building the pipeline runs no user code."""

    def __init__(self, input_dataset):
        super().__init__([input_dataset])
        self._spec = None
        spec = input_dataset._known_spec()
        if spec is not None:
            self._spec = self._resolve(spec)

    def _resolve(self, input_spec):  # pragma: no cover - abstract
        raise NotImplementedError

    def _derive_spec(self):
        if self._spec is None:
            self._spec = self._resolve(self._inputs[0].element_spec)
        return self._spec

    def _known_spec(self):
        return self._spec


class UnbatchDataset(_SpecDerivedDataset):
    def _resolve(self, spec):
        flat = nest.flatten(spec)
        if any(s.shape.rank == 0 for s in flat):
            raise ValueError("Cannot unbatch an input with scalar components.")
        known = None
        self._static_batch = -1  # tf.data: the first known leading dimension, for cardinality
        for s in flat:
            dim = s.shape[0]
            if dim is not None and self._static_batch < 0 and s.shape.rank is not None:
                self._static_batch = dim
            if known is not None and dim is not None and dim != known:
                raise ValueError("`unbatch()` is only supported for datasets of elements whose "
                                 "components have a matching leading dimension. Encountered both "
                                 f"{known} and {dim}.")
            known = dim if dim is not None else known
        return nest.map_structure(lambda s: TensorSpec(s.shape[1:], s.dtype), spec)

    def _build(self, ctx, engine_inputs):
        # Without a known spec (a Python map upstream that has not run) the engine
        # checks each element, and the count is unknown.
        static_batch = -1 if self._spec is None else self._static_batch
        return _engine.unbatch(engine_inputs[0], static_batch_size=static_batch)


def _zero_rows(spec):
    """An array with no rows in the shape of a batch of `spec` (unknown dims: 0)."""
    dims = [0] + [d or 0 for d in (spec.shape.dims or [])[1:]]
    if spec.dtype == _dtypes.string:
        return to_array(np.empty(dims, dtype=object), _dtypes.string)
    return np.zeros(dims, dtype=spec.dtype.as_numpy_dtype)


class RebatchDataset(_SpecDerivedDataset):
    def __init__(self, input_dataset, sizes, drop_remainder):
        self._sizes = sizes
        self._drop_remainder = drop_remainder
        super().__init__(input_dataset)

    def _static_batch_dim(self, spec):
        """tf.data's static batch dimension: the common size, unless a partial
        batch may form."""
        dim = self._sizes[0] if all(s == self._sizes[0] for s in self._sizes) else None
        if dim is None or self._drop_remainder:
            return dim
        known = []
        for s in nest.flatten(spec):
            if s.shape.rank is None:
                continue
            if s.shape.rank < 1:
                raise ValueError("Invalid `batch_sizes`. Expected dataset with rank of >= 1 but "
                                 "found a dataset with scalar elements. Fix the issue by adding "
                                 "the `batch` transformation to the dataset.")
            if s.shape[0] is not None:
                known.append(s.shape[0])
        if not known:
            return None
        if any(k != known[0] for k in known):
            raise ValueError(f"Invalid `input_dataset.` The batch dimension of component 0 is "
                             f"{known[0]}, while the batch dimension of component i is {known}.")
        return dim if dim == 0 or known[0] % dim == 0 else None

    def _resolve(self, spec):
        dim = self._static_batch_dim(spec)

        def rebatched(s):
            if s.shape.rank == 0:
                raise ValueError("Unbatching a tensor is only supported for rank >= 1")
            return TensorSpec(TensorShape([dim]).concatenate(s.shape[1:]), s.dtype)
        return nest.map_structure(rebatched, spec)

    def _build(self, ctx, engine_inputs):
        # The spec is needed only for the empty batches of size 0; the engine
        # checks each input element itself.
        empty = [_zero_rows(s) for s in nest.flatten(self._derive_spec())] if 0 in self._sizes else []
        return _engine.rebatch(engine_inputs[0], batch_sizes=self._sizes,
                               drop_remainder=self._drop_remainder, empty_components=empty)

    def cardinality(self):
        return Cardinality(UNKNOWN_CARDINALITY)


def _padded_shape(value, input_shape):
    """`value` (an int, a list of ints/None/-1, a TensorShape or an int vector) as a
    TensorShape of known rank that `input_shape` can be padded to."""
    if isinstance(value, TensorShape):
        dims = value.dims
        if dims is None:
            raise ValueError("A padded shape must have a known rank.")
    else:
        def is_dim(d):
            return d is None or (isinstance(d, (int, np.integer)) and not isinstance(d, bool))
        if is_dim(value) and value is not None:
            value = [value]
        if isinstance(value, (list, tuple)) and all(is_dim(d) for d in value):
            dims = [-1 if d is None else int(d) for d in value]
        else:
            arr = np.asarray(value)
            if arr.ndim != 1:
                raise ValueError(f"Padded shape {value} must be a `tf.int64` vector tensor, but "
                                 f"its shape was {TensorShape(arr.shape)}.")
            if arr.dtype.kind not in "iu":
                raise TypeError(f"Padded shape {value} must be a `tf.int64` vector tensor, but its "
                                f"element type was {arr.dtype}.")
            dims = [int(d) for d in arr]
        for d in dims:
            if d is not None and d < -1:
                raise ValueError(f"Dimension {d} must be >= 0")
    shape = TensorShape(dims)
    if input_shape.rank is not None and (shape.rank != input_shape.rank or any(
            p is not None and i is not None and p < i for p, i in zip(shape, input_shape))):
        raise ValueError(f"The padded shape {shape} is not compatible with the shape "
                         f"{input_shape} of the corresponding input component.")
    return shape


def _padding_value(value, spec):
    arr = to_array(value)
    if arr.ndim != 0:
        raise ValueError("Invalid `padding_values`. `padding_values` values should be scalars, "
                         f"but got {TensorShape(arr.shape)}.")
    dtype = _dtypes.as_dtype(arr.dtype)
    if dtype != spec.dtype:
        raise TypeError(f"Invalid `padding_values`. `padding_values` values type {dtype.name} does "
                        f"not match type {spec.dtype.name} of the corresponding input component.")
    return arr


class PaddedBatchDataset(_SpecDerivedDataset):
    def __init__(self, input_dataset, batch_size, padded_shapes, padding_values, drop_remainder):
        self._batch_size = batch_size
        self._padded_shapes = padded_shapes
        self._padding_values = padding_values
        self._drop_remainder = drop_remainder
        super().__init__(input_dataset)

    def _resolve(self, spec):
        flat = nest.flatten(spec)
        for s in flat:
            if not isinstance(s, TensorSpec):
                raise TypeError("`padded_batch` is only supported for datasets that produce tensor "
                                f"elements, got `{s}`.")
        if self._padded_shapes is None:
            for i, s in enumerate(flat):
                if s.shape.rank is None:
                    raise ValueError("You must provide `padded_shapes` argument because component "
                                     f"{i} has unknown rank.")
            wanted = [s.shape for s in flat]
        else:
            wanted = nest.flatten_up_to(spec, self._padded_shapes)
        shapes = [_padded_shape(w, s.shape) for w, s in zip(wanted, flat)]
        values = self._padding_values
        if values is None:
            values = [None] * len(flat)
        elif nest.is_nested(spec) and not nest.is_nested(values):
            values = [values] * len(flat)
        else:
            values = nest.flatten_up_to(spec, values)
        defaults = [b"" if s.dtype == _dtypes.string else np.zeros((), s.dtype.as_numpy_dtype)
                    for s in flat]
        self._flat_shapes = [np.array([-1 if d is None else d for d in shape], dtype=np.int64)
                             for shape in shapes]
        self._flat_values = [_padding_value(d if v is None else v, s)
                             for v, d, s in zip(values, defaults, flat)]
        dim = self._batch_size if self._drop_remainder else None
        return nest.pack_sequence_as(spec, [TensorSpec(TensorShape([dim]).concatenate(shape),
                                                       s.dtype) for shape, s in zip(shapes, flat)])

    def _build(self, ctx, engine_inputs):
        self._derive_spec()
        return _engine.padded_batch(engine_inputs[0], batch_size=self._batch_size,
                                    padded_shapes=self._flat_shapes,
                                    padding_values=self._flat_values,
                                    drop_remainder=self._drop_remainder)
