"""``conveyor.Variable``: a mutable tensor value, as ``tf.Variable`` where input
code uses one, chiefly a step counter saved beside an iterator by
``tf.train.Checkpoint(step=tf.Variable(0), iterator=it)``.

The value is a NumPy array of fixed dtype and shape; ``assign`` and friends
replace it in place. Reading gives an ``EagerTensor``; operators work on the
value. A traced map function that reads a Variable captures its value at
trace time (TensorFlow reads it at every call): read it outside the map.
"""
import struct

import numpy as np

from conveyor import dtypes as _dtypes
from conveyor.framework.convert import to_array
from conveyor.framework.eager import as_eager

__all__ = ["Variable"]


class Variable:
    """A named, assignable value (``tf.Variable``): ``assign``, ``assign_add``,
    ``assign_sub``, ``numpy()``, ``read_value()``, ``dtype``, ``shape``;
    checkpointed by ``tf.train.Checkpoint``."""

    def __init__(self, initial_value=None, trainable=None, validate_shape=True,
                 caching_device=None, name=None, variable_def=None, dtype=None,
                 import_scope=None, constraint=None, synchronization=None, aggregation=None,
                 shape=None, experimental_enable_variable_lifting=True):
        if initial_value is None:
            raise ValueError("The `initial_value` arg (None) must be specified.")
        if callable(initial_value):
            initial_value = initial_value()
        value = np.array(to_array(initial_value, dtype), copy=True)
        self._value = value
        self._validate_shape = validate_shape and shape is None
        self.name = f"{name or 'Variable'}:0"
        self.trainable = True if trainable is None else bool(trainable)

    @property
    def dtype(self):
        return _dtypes.as_dtype(self._value.dtype)

    @property
    def shape(self):
        from conveyor.tensor_spec import TensorShape
        return TensorShape(self._value.shape)

    def numpy(self):
        return as_eager(self._value.copy()).numpy()

    def read_value(self):
        return as_eager(self._value.copy())

    value = read_value

    def _converted(self, value):
        new = to_array(value, self.dtype)
        if self._validate_shape and new.shape != self._value.shape:
            raise ValueError(f"Cannot assign value to variable '{self.name}': Shape mismatch. "
                             f"The variable shape {list(self._value.shape)}, and the assigned "
                             f"value shape {list(new.shape)} are incompatible.")
        return new

    def assign(self, value, use_locking=False, name=None, read_value=True):
        self._value = np.array(self._converted(value), copy=True)
        return self if read_value else None

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        return self.assign(self._value + self._converted(delta), read_value=read_value)

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        return self.assign(self._value - self._converted(delta), read_value=read_value)

    def __array__(self, dtype=None, copy=None):
        return self._value.astype(dtype) if dtype is not None else self._value.copy()

    def __int__(self):
        return int(self._value)

    def __float__(self):
        return float(self._value)

    def __index__(self):
        return self._value.__index__()

    def __bool__(self):
        return bool(self._value)

    def __repr__(self):
        value = self._value.item() if self._value.ndim == 0 else self._value
        return (f"<tf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}, "
                f"numpy={value!r}>")

    # -- tf.train.Checkpoint (conveyor/train.py) --------------------------------

    def _checkpoint_state(self):
        if self._value.dtype == object:
            raise TypeError(f"Checkpoint: string Variable {self.name} cannot be saved")
        dtype = self._value.dtype.str.encode()
        header = struct.pack("<B", len(dtype)) + dtype + struct.pack(
            "<B", self._value.ndim) + struct.pack(f"<{self._value.ndim}q", *self._value.shape)
        return header + np.ascontiguousarray(self._value).tobytes()

    def _restore_checkpoint_state(self, data):
        n = data[0]
        dtype = np.dtype(bytes(data[1:1 + n]).decode())
        rank = data[1 + n]
        shape = struct.unpack_from(f"<{rank}q", data, 2 + n)
        start = 2 + n + 8 * rank
        self.assign(np.frombuffer(bytes(data[start:]), dtype).reshape(shape))


def _binary(op):
    def method(self, other):
        return as_eager(np.asarray(op(self._value, np.asarray(other))))
    return method


def _reflected(op):
    def method(self, other):
        return as_eager(np.asarray(op(np.asarray(other), self._value)))
    return method


for _name, _op in [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                   ("truediv", np.true_divide), ("floordiv", np.floor_divide),
                   ("mod", np.mod), ("pow", np.power)]:
    setattr(Variable, f"__{_name}__", _binary(_op))
    setattr(Variable, f"__r{_name}__", _reflected(_op))
for _name, _op in [("lt", np.less), ("le", np.less_equal), ("gt", np.greater),
                   ("ge", np.greater_equal), ("eq", np.equal), ("ne", np.not_equal)]:
    setattr(Variable, f"__{_name}__", _binary(_op))
Variable.__hash__ = object.__hash__
Variable.__neg__ = lambda self: as_eager(-self._value)
