"""``Dataset.from_generator`` (GeneratorDataset): elements from a Python
generator, called anew for every iterator and checked against the signature."""
from conveyor import _engine
from conveyor import errors as _errors
from conveyor import nest
from conveyor.framework.convert import to_array
from conveyor.data.ops.dataset_base import SourceDataset
from conveyor.tensor_spec import TensorShape, TensorSpec

__all__ = ["GeneratorDataset"]


def _signature_from_types(output_types, output_shapes):
    if output_shapes is None:
        output_shapes = nest.map_structure(lambda _: None, output_types)
    if not nest.is_nested(output_types):
        return TensorSpec(output_shapes, output_types)
    flat_types = nest.flatten(output_types)
    flat_shapes = nest.flatten_up_to(output_types, output_shapes) if nest.is_nested(
        output_shapes) else [output_shapes] * len(flat_types)
    return nest.pack_sequence_as(
        output_types, [TensorSpec(s, t) for t, s in zip(flat_types, flat_shapes)])


class GeneratorDataset(SourceDataset):
    def __init__(self, generator, output_types, output_shapes, args, output_signature):
        if not callable(generator):
            raise TypeError("`generator` must be a Python callable.")
        if output_signature is not None:
            if output_types is not None:
                raise TypeError("The `output_types` argument can not be used together with the "
                                "`output_signature` argument.")
            if output_shapes is not None:
                raise TypeError("The `output_shapes` argument can not be used together with the "
                                "`output_signature` argument.")
            for spec in nest.flatten(output_signature):
                if not isinstance(spec, TensorSpec):
                    raise TypeError(f"`output_signature` must contain TensorSpec objects, got {spec!r}.")
            signature = output_signature
        else:
            if output_types is None:
                if output_shapes is not None:
                    raise TypeError("The `output_shapes` argument must not be specified without "
                                    "the `output_types` argument.")
                raise TypeError("Either `output_signature` or `output_types` must be specified.")
            signature = _signature_from_types(output_types, output_shapes)
        args = tuple(to_array(a) for a in (args or ()))
        # As TensorFlow hands them: a scalar string as bytes, another scalar
        # as a NumPy scalar (hashable: a dict key), arrays as arrays.
        call_args = [a.item() if a.dtype == object and a.ndim == 0 else
                     a[()] if a.ndim == 0 else a for a in args]

        def factory():
            return _CheckedGenerator(generator(*call_args), signature)

        super().__init__(_engine.generator(factory, name="Dataset.from_generator"), signature,
                         (generator, args))


class _CheckedGenerator:
    """Checks each value the user's generator yields against the signature and
    converts it to flat arrays. A bad value raises at its element; the
    generator itself goes on, as tf.data's does."""

    def __init__(self, iterator, signature):
        self._iterator = iter(iterator)
        self._signature = signature
        self._flat_specs = nest.flatten(signature)

    def __iter__(self):
        return self

    def __next__(self):
        return _check_generated(next(self._iterator), self._signature, self._flat_specs)


def _check_generated(value, signature, flat_specs):
    if type(value) is list and nest.is_nested(signature):
        value = tuple(value)
    try:
        flat = nest.flatten_up_to(signature, value)
    except (ValueError, TypeError):
        raise _errors.InvalidArgumentError(
            "`generator` yielded an element that did not match the expected structure. The "
            f"expected structure was {signature}, but the yielded element was {value}.") from None
    out = []
    for spec, leaf in zip(flat_specs, flat):
        try:
            arr = to_array(leaf, spec.dtype)
        except (ValueError, TypeError, OverflowError):
            raise _errors.InvalidArgumentError(
                "`generator` yielded an element that could not be converted to the expected type. "
                f"The expected type was {spec.dtype.name}, but the yielded element was {leaf}."
            ) from None
        if not spec.shape.is_compatible_with(arr.shape):
            raise _errors.InvalidArgumentError(
                f"`generator` yielded an element of shape {TensorShape(arr.shape)} where an "
                f"element of shape {spec.shape} was expected.")
        out.append(arr)
    return out
