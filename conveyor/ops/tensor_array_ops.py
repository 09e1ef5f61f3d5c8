"""``tf.TensorArray``: a list of tensors of one dtype, written and read by
index, stacked into one tensor.

conveyor keeps the tensors in a Python list, so a TensorArray works eagerly
and inside a traced map function as long as its indices are Python ints or
eager values (a Python ``for`` loop over ``range``, ``unstack`` of a tensor
of static first dim): the reads, writes and ``stack`` then become ops of the
native program. An index that is a traced tensor (a ``tf.while_loop`` or
``for i in tf.range(n)``) stops the trace, and the function runs in Python
per element on eager tensors, with TensorFlow's values.
"""
import numpy as np

from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor.framework.eager import EagerTensor, as_eager
from conveyor.framework.tracing import Tensor, convert, dtype_of, op_error, static_shape
from conveyor.tensor_spec import TensorShape

__all__ = ["TensorArray"]


def _index(i, what="index"):
    """A Python int from an int or an eager scalar; a traced index stops the trace."""
    if isinstance(i, Tensor):
        raise i._trace.fail(f"a TensorArray {what} that is a traced tensor (a tf.while_loop or "
                            f"a loop over tf.range) is not supported natively")
    return int(np.asarray(i).reshape(()))


class TensorArray:
    """A list of tensors of one `dtype` (``tf.TensorArray``).

    `size` is the number of elements (grown by writes when `dynamic_size`);
    `element_shape` (or, with `infer_shape`, the first write) fixes every
    element's shape. ``write``, ``unstack`` and ``scatter`` return the array
    (use the result, as TensorFlow requires inside functions); ``read``,
    ``gather``, ``stack`` and ``concat`` give tensors. Unwritten elements
    read as zeros once the element shape is known. With `clear_after_read`
    (the default) an element can be read once.
    """

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape=True,
                 element_shape=None, colocate_with_first_write_call=True, name=None):
        if handle is not None or flow is not None:
            raise op_error(NotImplementedError, "conveyor's TensorArray takes no handle or flow")
        if size is None:
            raise ValueError("Size must be provided if handle is not provided")
        self._dtype = _dtypes.as_dtype(dtype)
        n = _index(size, "size")
        self._values = [None] * n
        self._dynamic_size = bool(dynamic_size)
        self._clear_after_read = True if clear_after_read is None else bool(clear_after_read)
        self._infer_shape = bool(infer_shape)
        self._element_shape = TensorShape(element_shape)
        self._read = set()

    @property
    def dtype(self):
        return self._dtype

    @property
    def element_shape(self):
        return self._element_shape

    @property
    def dynamic_size(self):
        return self._dynamic_size

    @property
    def flow(self):
        return None

    @property
    def handle(self):
        return None

    def size(self, name=None):
        """The number of elements, an int32 scalar."""
        return as_eager(np.int32(len(self._values)))

    def identity(self):
        return self

    def close(self, name=None):
        return None

    def mark_used(self):
        return None

    def _check_value(self, value):
        if isinstance(value, (Tensor, EagerTensor)) and dtype_of(value) != self._dtype:
            raise op_error(_errors.InvalidArgumentError,
                           f"TensorArray dtype is {self._dtype.name} but Op is trying to write "
                           f"dtype {dtype_of(value).name}")
        x = convert(value, dtype=None if isinstance(value, Tensor) else self._dtype,
                    name="value")
        if not isinstance(x, Tensor):
            x = as_eager(x)
        shape = static_shape(x)
        shape = TensorShape(None if shape is None else list(shape))
        if not self._element_shape.is_compatible_with(shape):
            raise ValueError(f"Incompatible shape for value ({shape}), expected "
                             f"({self._element_shape})")
        if self._infer_shape and shape.rank is not None:
            known = self._element_shape
            self._element_shape = shape if known.rank is None else TensorShape(
                [a if a is not None else b for a, b in zip(known.as_list(), shape.as_list())])
        return x

    def write(self, index, value, name=None):
        """Set element `index` to `value`; returns the array."""
        i = _index(index)
        if i < 0:
            raise op_error(_errors.OutOfRangeError,
                           f"Writing to negative indices (index {i}) is not allowed.")
        if i >= len(self._values):
            if not self._dynamic_size:
                raise op_error(_errors.OutOfRangeError,
                               f"Tried to write to index {i} but array is not resizeable and "
                               f"size is: {len(self._values)}")
            self._values.extend([None] * (i + 1 - len(self._values)))
        self._values[i] = self._check_value(value)
        self._read.discard(i)
        return self

    def _zeros(self):
        from conveyor.ops.array_ops import zeros
        if not self._element_shape.is_fully_defined():
            raise ValueError(f"Cannot convert a partially known TensorShape "
                             f"{self._element_shape} to a Tensor.")
        return zeros(self._element_shape.as_list(), self._dtype)

    def read(self, index, name=None):
        """Element `index` (zeros of the element shape if it was never written)."""
        i = _index(index)
        if not 0 <= i < len(self._values):
            raise op_error(_errors.OutOfRangeError,
                           f"Tried to read from index {i} but array size is: {len(self._values)}")
        if self._clear_after_read and i in self._read:
            raise op_error(_errors.InvalidArgumentError,
                           f"Could not read index {i} twice because it was cleared after a "
                           f"previous read (perhaps try setting clear_after_read = false?)")
        value = self._values[i]
        if self._clear_after_read:
            self._read.add(i)
        return self._zeros() if value is None else value

    def _elements(self, indices):
        values = [self._values[i] for i in indices]
        if any(v is None for v in values):
            zeros = self._zeros()
            values = [zeros if v is None else v for v in values]
        return values

    def _stack(self, values):
        from conveyor.ops.array_ops import stack, zeros
        if not values:
            if not self._element_shape.is_fully_defined():
                return zeros([0], self._dtype)
            return zeros([0] + self._element_shape.as_list(), self._dtype)
        if self._dtype == _dtypes.string and not any(isinstance(v, Tensor) for v in values):
            return as_eager(np.stack([np.asarray(v, dtype=object) for v in values]))
        return stack(values)

    def stack(self, name=None):
        """All elements stacked along a new first dim."""
        return self._stack(self._elements(range(len(self._values))))

    def gather(self, indices, name=None):
        """The elements at `indices`, stacked."""
        if isinstance(indices, Tensor):
            _index(indices, "gather index")
        idx = [int(i) for i in np.asarray(indices).reshape(-1)]
        for i in idx:
            if not 0 <= i < len(self._values):
                raise op_error(_errors.InvalidArgumentError,
                               f"Tried to gather index {i} but array size is: "
                               f"{len(self._values)}")
        return self._stack(self._elements(idx))

    def concat(self, name=None):
        """All elements joined along their first dim."""
        from conveyor.ops.array_ops import concat
        values = self._elements(range(len(self._values)))
        return concat(values, 0) if values else self._stack([])

    def unstack(self, value, name=None):
        """Write the rows of `value` (along its first dim) as elements 0..n-1."""
        from conveyor.ops.array_ops import unstack
        x = convert(value, name="value")
        shape = static_shape(x)
        if shape is None or not shape or shape[0] is None:
            if isinstance(x, Tensor):
                raise x._trace.fail("TensorArray.unstack of a tensor whose first dim is not "
                                    "static is not supported natively")
        n = shape[0]
        if n > len(self._values) and not self._dynamic_size:
            raise ValueError(f"Cannot unstack {n} tensors into a TensorArray of static size "
                             f"{len(self._values)} ")
        for i, row in enumerate(unstack(x, num=n)):
            self.write(i, row)
        return self

    def scatter(self, indices, value, name=None):
        """Write the rows of `value` to elements `indices`."""
        from conveyor.ops.array_ops import unstack
        if isinstance(indices, Tensor):
            _index(indices, "scatter index")
        idx = [int(i) for i in np.asarray(indices).reshape(-1)]
        x = convert(value, name="value")
        for i, row in zip(idx, unstack(x, num=len(idx))):
            self.write(i, row)
        return self

    def split(self, value, lengths, name=None):
        """Write consecutive pieces of `value` of the given `lengths`."""
        from conveyor.ops.array_ops import split
        if isinstance(lengths, Tensor):
            _index(lengths, "split length")
        sizes = [int(v) for v in np.asarray(lengths).reshape(-1)]
        for i, piece in enumerate(split(value, sizes, axis=0)):
            self.write(i, piece)
        return self
