"""``tf.data.experimental.assert_cardinality`` (AssertCardinalityDataset).

Built from engine kernels only, so it saves and restores as they do and its
engine cardinality is the expected one (stages after it, such as ``batch``,
count from it). For an expected count N:

    index    = range(0, int64 max)                       # infinite
    marked   = zip(input, (False, 0)) ++ zip(repeat((filler, True)), range(0, int64 max))
    checked  = map(check, zip(index, marked))            # infinite
    result   = map(drop j, zip(checked, range(N)))       # cardinality N

``check`` (Python, per element) sees the element's index i and whether it
is an end marker: the m-th marker shows that the input had i - m elements,
and raises if that is not N; a real element at index N means the input had
more (``FailedPreconditionError`` with tf.data's messages). ``zip`` pulls
``checked`` before ``range(N)``, so element N is always checked: a marker
there ends the result, as the input did. ``filler`` is one all-zero element
of the input's spec (unknown dims 0), never yielded. After an error, later
calls raise again until N elements were pulled in all, then end (tf.data
raises on every later call). For ``INFINITE_CARDINALITY`` the result is
``checked``.
never yielded. For ``INFINITE_CARDINALITY`` the result is ``checked``.
"""
import numpy as np

from conveyor import _engine
from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor import nest
from conveyor.data.ops.dataset_base import INFINITE_CARDINALITY, UnaryUnchangedStructureDataset
from conveyor.data.ops.range_op import RangeDataset
from conveyor.data.ops.structured_function import MapFunction
from conveyor.data.ops.zip_concatenate_op import ZipDataset
from conveyor.tensor_spec import TensorSpec

__all__ = ["AssertCardinalityDataset"]

_INT64_MAX = 2 ** 63 - 1


def _filler(spec):
    arrays = []
    for leaf in nest.flatten(spec):
        if not isinstance(leaf, TensorSpec):
            raise TypeError(f"assert_cardinality: elements with {type(leaf).__name__} "
                            f"components are not supported here; got {spec}.")
        shape = [0 if d is None else d for d in leaf.shape.as_list()]
        if leaf.dtype == _dtypes.string:
            arrays.append(np.full(shape, b"", dtype=object))
        else:
            arrays.append(np.zeros(shape, dtype=leaf.dtype.as_numpy_dtype))
    return arrays


def _elements(n):
    """As tf.data words a count: "an infinite number of elements", "1 element", "5 elements"."""
    if n == INFINITE_CARDINALITY:
        return "an infinite number of elements"
    return f"{n} element{'' if n == 1 else 's'}"


class AssertCardinalityDataset(UnaryUnchangedStructureDataset):
    def __init__(self, input_dataset, expected_cardinality):
        super().__init__(input_dataset)
        self._expected = expected_cardinality
        self._strip = None
        spec = input_dataset._known_spec()
        if spec is not None:
            _filler(spec)  # unsupported components raise where the pipeline is built
        if expected_cardinality != INFINITE_CARDINALITY:
            # The program that drops range(N)'s component: traced over (element, j).
            carrier = ZipDataset((input_dataset, RangeDataset((0, 1, 1), _dtypes.int64)))
            self._strip = MapFunction(lambda element, _: element, carrier,
                                      stage="assert_cardinality")

    def _build(self, ctx, engine_inputs):
        expected = self._expected
        spec = self._inputs[0].element_spec
        n = len(nest.flatten(spec))
        int64 = _dtypes.int64._code
        index = _engine.range(start=0, stop=_INT64_MAX, step=1, dtype=int64)
        # Components of `marked`: the element's, the end flag, and for end markers
        # their own count m (the input had i - m elements: stateless, so it
        # stays right on the calls after an error and across save/restore).
        real = _engine.zip([engine_inputs[0], _engine.repeat(
            _engine.tensors([np.asarray(False), np.asarray(0, np.int64)]), count=-1)])
        filler = _engine.tensors(_filler(spec) + [np.asarray(True)])
        end = _engine.zip([_engine.repeat(filler, count=-1),
                           _engine.range(start=0, stop=_INT64_MAX, step=1, dtype=int64)])
        marked = _engine.concatenate([real, end])

        def check(epoch, position, i, *flat):
            i = int(i)
            if flat[n]:
                count = i - int(flat[n + 1])
                if count != expected:
                    raise _errors.FailedPreconditionError(
                        f"Input dataset was expected to contain {_elements(expected)} but "
                        f"contained only {_elements(count)}.")
            elif expected != INFINITE_CARDINALITY and i >= expected:
                raise _errors.FailedPreconditionError(
                    f"Input dataset was expected to contain {_elements(expected)} but "
                    f"contained at least {_elements(i + 1)}.")
            return list(flat[:n])

        checked = _engine.map(_engine.zip([index, marked]), fn=check, out_convert=_as_arrays,
                              num_parallel_calls=0, deterministic=True, name="assert_cardinality",
                              with_id=True, memory=ctx.memory)
        if expected == INFINITE_CARDINALITY:
            return checked
        fn, with_id = self._strip.function_for_engine()
        counted = _engine.zip([checked, _engine.range(start=0, stop=expected, step=1, dtype=int64)])
        return _engine.map(counted, fn=fn, out_convert=self._strip.convert, num_parallel_calls=0,
                           deterministic=True, name=self._strip.name, with_id=with_id,
                           memory=ctx.memory)


def _as_arrays(result):
    return result
