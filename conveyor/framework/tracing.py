"""Tracing: how a map function becomes a native element program.

``Dataset.map(fn)`` calls ``fn`` once on symbolic :class:`Tensor` placeholders
built from the element spec (as tf.data traces a function into a graph).
Every conveyor op (``conveyor.image.resize``, ``conveyor.cast``, ``+``...)
called on a placeholder records a node instead of computing; the recorded
straight-line program is compiled by the engine and runs on the map's worker
threads without the GIL. The same op functions called on NumPy arrays run
the same C code at once (eager mode).

A function that does something only Python can run (NumPy on a placeholder,
``if`` on a value, an op conveyor does not have) stops the trace with
:class:`UntraceableError`; the map then calls the function per element with
NumPy arrays under the GIL, and says why once.

Random ops draw from a stream keyed by (seed, op seed, position of the op in
the function, element id), so a traced program, its Python twin and any
thread count give the same values (see ``element_scope``).
"""
import array
import os
import sys
import threading
import warnings

import numpy as np

from conveyor import _engine
from conveyor.framework import random_seed as _seed
from conveyor import dtypes as _dtypes
from conveyor import nest
from conveyor.framework.convert import to_array
from conveyor.framework.eager import EagerTensor, as_eager, attr_text, eager_result
from conveyor.tensor_spec import TensorShape, TensorSpec

__all__ = ["Tensor", "UntraceableError", "apply", "convert", "op_error", "static_shape", "dtype_of"]


class UntraceableError(Exception):
    """The traced function did something that only Python can run."""

    quiet = False  # a deliberate choice of Python (no warning)
    # True when a conveyor op stopped the trace (not a NumPy use of a value:
    # len(), if, np.* on a tensor): the function is written for TensorFlow,
    # so its Python path hands it eager tensors.
    eager_args = False


class _PlainPython(UntraceableError):
    quiet = True
    # (result structure, flat specs) when the function only returns its
    # inputs rearranged (no op, no constant): its element spec is exact.
    rearranged = None


_local = threading.local()  # .trace: the _Trace being recorded; .scope: an _ElementScope


def _current(name):
    return getattr(_local, name, None)


class Tensor:
    """A symbolic value inside a traced map function (tf.Tensor's role).

    It has a static ``shape`` (dims may be None) and a ``dtype``, supports
    the arithmetic operators, and can be passed to any conveyor op. It has
    no value: converting it to NumPy or branching on it stops the trace, and
    the function runs in Python instead.
    """

    __slots__ = ("_trace", "_key", "shape", "dtype", "_name", "__weakref__")
    __array_priority__ = 100  # NumPy defers its operators to ours

    def __init__(self, trace, key, shape, dtype, name):
        self._trace = trace
        self._key = key
        self.shape = TensorShape(shape)
        self.dtype = _dtypes.as_dtype(dtype)
        self._name = name

    @property
    def ndim(self):
        return self.shape.rank

    def get_shape(self):
        return self.shape

    def set_shape(self, shape):
        """Merge `shape` into the static shape (``Tensor.set_shape`` in a
        graph): it fills in unknown dims and, as in TensorFlow, is not
        checked per element; a known dim that differs is a ValueError."""
        shape = TensorShape(shape)
        if not self.shape.is_compatible_with(shape):
            raise ValueError(f"Tensor's shape {self.shape} is not compatible with supplied "
                             f"shape {shape}.")
        if self.shape.rank is None:
            self.shape = shape
        elif shape.rank is not None:
            self.shape = TensorShape([a if a is not None else b
                                      for a, b in zip(self.shape.dims, shape.dims)])

    def __repr__(self):
        return f"<conveyor.Tensor '{self._name}' shape={self.shape} dtype={self.dtype.name}>"

    def _refuse(self, what):
        raise self._trace.fail(f"{what} needs the value of a tensor, which a traced "
                               f"function does not have", numpy_use=True)

    def __bool__(self):
        raise self._trace.fail(BRANCH_REASON, numpy_use=True)

    def __array__(self, dtype=None, copy=None):
        self._refuse("a NumPy function")

    def __len__(self):
        self._refuse("len()")

    def __iter__(self):
        self._refuse("iterating over a tensor")

    def __int__(self):
        self._refuse("int()")

    def __float__(self):
        self._refuse("float()")

    def __index__(self):
        self._refuse("using a tensor as an index")

    def numpy(self):
        self._refuse(".numpy()")

    __hash__ = object.__hash__

    # The operators (+ - * / // % ** < <= > >= == != & | ^, unary - abs ~,
    # and [] indexing) are installed by conveyor.ops.math_ops, which defines the ops
    # they run (as TensorFlow's math_ops overrides tf.Tensor's operators).


class _Trace:
    """The program being recorded for one function."""

    def __init__(self, name, base_seed):
        self.name = name
        self.base_seed = base_seed  # (s0, s1) for ops without their own seed
        self.num_args = 0
        self.constants = []   # arrays
        self.nodes = []       # [op, input keys, attrs, string, obj, num_outputs, op_seed]
        self.failure = None   # the first reason the trace cannot run natively
        self.quiet = False    # ... when it is a deliberate one (numpy_function)
        self.random_ops = 0   # random ops recorded so far (their ordinal keys them)
        self.made_constants = False  # tf.constant / fill / zeros ... ran inside it
        # key -> NumPy value a node is known to have whatever the element
        # (tf.shape of a fully known shape), as TensorFlow's constant folding
        # knows it: lets an op take it where it needs a static argument.
        self.known = {}
        # key of a BroadcastTo result -> its input: an elementwise op whose
        # result has the same shape either way takes the input instead (the
        # same values without the materialized copy; the unused BroadcastTo
        # is then left out of the program, see compile).
        self.broadcast_inputs = {}

    def fail(self, reason, quiet=False, numpy_use=False):
        """The error that stops the trace; `numpy_use`: the function used a
        value as NumPy code does (len, if, a NumPy function)."""
        if self.failure is None:
            self.failure, self.quiet = reason, quiet
        error = (_PlainPython if quiet else UntraceableError)(reason)
        error.eager_args = not quiet and not numpy_use
        return error

    def placeholder(self, spec, label):
        key = ("arg", self.num_args)
        self.num_args += 1
        return Tensor(self, key, spec.shape, spec.dtype, label)

    def _key(self, value):
        if isinstance(value, Tensor):
            if value._trace is not self:
                raise ValueError(f"{value!r} belongs to another traced function")
            return value._key
        self.constants.append(value)
        return ("const", len(self.constants) - 1)

    def constant(self, arr, shape, dtype):
        """A constant of the program made by a conveyor op (tf.constant):
        a Tensor, so that a function that only builds constants is traced."""
        self.made_constants = True
        self.constants.append(arr)
        return Tensor(self, ("const", len(self.constants) - 1), shape, dtype, "Const")

    def add(self, op, inputs, outputs, attrs, string, obj, op_seed):
        keys = [self._key(v) for v in inputs]
        n = len(self.nodes)
        self.nodes.append((op, keys, dict(attrs), string, obj, len(outputs), op_seed))
        return [Tensor(self, ("node", n, j), shape, dtype, f"{op}:{j}" if len(outputs) > 1 else op)
                for j, (shape, dtype) in enumerate(outputs)]

    def result_keys(self, results):
        """The keys of `results` (placeholders, node outputs or constants)."""
        return [self._key(v) for v in results]

    def compile(self, result_keys, passes=()):
        """The engine program computing the values `result_keys`, after the
        program passes `passes`: functions (nodes, result_keys) -> nodes that
        change node attributes only (conveyor/data/rewrites/scaled_decode.py)."""
        recorded = self.nodes
        for program_pass in passes:
            recorded = program_pass(recorded, result_keys)
        ids = {("arg", i): i for i in range(self.num_args)}
        for k in range(len(self.constants)):
            ids[("const", k)] = self.num_args + k
        next_id = self.num_args + len(self.constants)
        nodes = []
        dead = _unused_pure_nodes(recorded, result_keys)
        for n, (op, keys, attrs, string, obj, num_out, op_seed) in enumerate(recorded):
            if n in dead:
                continue
            nodes.append((op, array.array("i", [ids[k] for k in keys]), attr_text(attrs), string,
                          obj, num_out, op_seed))
            for j in range(num_out):
                ids[("node", n, j)] = next_id
                next_id += 1
        return _engine.program(self.name, self.num_args, self.constants, nodes,
                               array.array("i", [ids[k] for k in result_keys]), 0, 0)


# Ops without effects or errors once traced (their arguments were checked
# against static shapes): one whose results nothing uses is left out.
_PURE_OPS = frozenset({"BroadcastTo", "Shape"})


def _unused_pure_nodes(nodes, result_keys):
    """Indices of the _PURE_OPS nodes whose outputs no kept node and no
    result uses (last to first, so a chain of them goes at once)."""
    used = {k for k in result_keys if k[0] == "node"}
    dead = set()
    for n in range(len(nodes) - 1, -1, -1):
        op, keys, *_, num_out, _seed = nodes[n]
        if op in _PURE_OPS and not any(("node", n, j) in used for j in range(num_out)):
            dead.add(n)
            continue
        used.update(k for k in keys if k[0] == "node")
    return dead


class _ElementScope:
    """While a Python map function runs on one element: the keys its random
    ops use, so they draw what the traced program would."""

    __slots__ = ("base_seed", "epoch", "index", "node")  # node: random ops run so far

    def __init__(self, base_seed, epoch, index):
        self.base_seed, self.epoch, self.index, self.node = base_seed, epoch, index, 0


class element_scope:
    """Context manager: ops called inside are the function's ops for element
    (epoch, index) of a map whose random base seed is `base_seed`."""

    def __init__(self, base_seed, epoch, index):
        self._scope = _ElementScope(base_seed, epoch, index)

    def __enter__(self):
        self._saved = _current("scope")
        _local.scope = self._scope

    def __exit__(self, *exc):
        _local.scope = self._saved


new_base_seed = _seed.map_base_seed


def _op_seed(op_seed, base_seed, ordinal):
    """The key of the `ordinal`-th random op of a function (an int64):
    TensorFlow's seed rules decide the seed pair; the ordinal tells apart
    random ops that share it. Only random ops are counted, so a function's
    Python twin (where NumPy operators run without conveyor) keys alike."""
    pair = base_seed if op_seed is None else _seed.op_seed_pair(op_seed)
    key = ((pair[0] << 31) | pair[1]) ^ (ordinal * 0x9E3779B97F4A7C15)
    key &= (1 << 64) - 1
    return key - (1 << 64) if key >= 1 << 63 else key


_eager_counter = [0]


def convert(value, dtype=None, name="value"):
    """A conveyor op's input: a traced Tensor as is, anything else as a NumPy
    array with TensorFlow's conversion rules (`dtype` forces one)."""
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype != _dtypes.as_dtype(dtype):
            raise TypeError(f"`{name}` must be {_dtypes.as_dtype(dtype).name}, got "
                            f"{value.dtype.name} ({value!r})")
        return value
    try:
        return to_array(value, dtype)
    except (TypeError, ValueError, OverflowError) as e:
        raise TypeError(f"Cannot convert `{name}` ({value!r:.80}) to a tensor: {e}") from None


def op_error(exc_type, message):
    """An exception for an op's invalid arguments or input types. Inside a
    trace it is raised when the pipeline is built (tracing does not fall
    back to Python for it): raise the returned exception."""
    e = exc_type(message)
    e._conveyor_op_error = True
    return e


def known_value(tensor):
    """The NumPy value a traced tensor has whatever the element, known when
    traced: a constant of the program (tf.constant inside the function) or
    ``Trace.known`` (tf.shape of a fully known shape); else None. Not a copy."""
    if tensor._key[0] == "const":
        return np.asarray(tensor._trace.constants[tensor._key[1]])
    return tensor._trace.known.get(tensor._key)


def static_shape(x):
    """The shape of a converted value as a tuple (None for unknown dims)."""
    if isinstance(x, Tensor):
        return tuple(x.shape.as_list()) if x.shape.rank is not None else None
    return tuple(x.shape)


def dtype_of(x):
    return x.dtype if isinstance(x, Tensor) else _dtypes.as_dtype(x.dtype)


def current_trace():
    """The _Trace of the function being traced on this thread, or None."""
    return _current("trace")


def in_element_scope():
    """Whether a Python map function is running on one element here
    (:class:`element_scope`): random ops then draw that element's values."""
    return _current("scope") is not None


def is_symbolic(x):
    return isinstance(x, Tensor)


# The ops that take bfloat16 inputs: casts, and those that only move values
# (ImageColor: grayscale_to_rgb; rgb_to_grayscale casts to float32 first).
# Arithmetic, reductions and image ops cast bfloat16 to float32 in Python
# and round the result back, as TensorFlow does; any other op would read its
# bits as another type, so it is refused.
_BFLOAT16_OPS = frozenset({"Cast", "ConvertImageDtype", "Reshape", "ConcatV2", "GatherV2",
                           "ReverseV2", "CropOrPad", "Squeeze", "Shape", "EnsureShape",
                           "BroadcastTo", "SplitV", "SelectV2", "StridedSlice", "Transpose",
                           "Tile", "Pad", "ResizeNearestNeighbor", "Rot90", "ImageColor"})
_BFLOAT16_NP = None if _dtypes._ml_dtypes is None else np.dtype(_dtypes._ml_dtypes.bfloat16)


def _refuse_bfloat16(op, inputs):
    for x in inputs:
        if x.dtype == _dtypes.bfloat16 if isinstance(x, Tensor) else x.dtype == _BFLOAT16_NP:
            raise op_error(TypeError, f"{op}: conveyor does not take bfloat16 inputs here yet; "
                                      f"cast them to float32 first")


def apply(op, inputs, outputs, attrs=None, string=None, obj=None, random=False,
          op_seed=None):
    """Run or record element op `op` on converted `inputs`.

    outputs: one (shape, dtype) per output, the static spec of a traced
    result (shape entries None when unknown). attrs: the op's attributes by
    the names its C file declares (CvOp.int_attrs, .float_attrs): a dict of
    ints, floats, and lists of ints for "name[]" attributes; the engine
    refuses unknown, missing and repeated names. Returns one value or a list.
    """
    attrs = {} if attrs is None else attrs
    if _BFLOAT16_NP is not None and op not in _BFLOAT16_OPS:
        _refuse_bfloat16(op, inputs)
    trace = next((x._trace for x in inputs if isinstance(x, Tensor)), None)
    if trace is None:
        # Inside a function being traced, an op on constants is part of the
        # program too (as in a tf.function): it captures the values the
        # function sees now (a loop variable), and a random op draws per element.
        trace = _current("trace")
    if trace is not None:
        key = 0
        if random:
            key = _op_seed(op_seed, trace.base_seed, trace.random_ops)
            trace.random_ops += 1
        results = trace.add(op, inputs, outputs, attrs, string, obj, key)
    else:
        key, epoch, index = 0, 0, 0
        if random:
            scope = _current("scope")
            if scope is not None:
                key = _op_seed(op_seed, scope.base_seed, scope.node)
                scope.node += 1
                epoch, index = scope.epoch, scope.index
            else:  # a stateful op outside any map: a new draw per call
                _eager_counter[0] += 1
                key, index = _op_seed(op_seed, new_base_seed(), 0), _eager_counter[0]
        results = [eager_result(r) for r in _engine.run_op(
            op, list(inputs), attr_text(attrs), (), string, obj, len(outputs), (0, 0, key, 0, epoch, index))]
    return results[0] if len(outputs) == 1 else list(results)


def trace(fn, flat_specs, pack, name):
    """Trace `fn` on placeholders for `flat_specs`; `pack(flat)` builds its
    arguments. Returns (program, result structure, flat result specs, base
    seed), or raises UntraceableError with the reason."""
    tr, keys, result, specs = record(fn, flat_specs, pack, name)
    return tr.compile(keys), result, specs, tr.base_seed


def record(fn, flat_specs, pack, name):
    """What `trace` compiles: (the _Trace, its result keys, the result
    structure, the flat result specs); `tr.compile(keys, passes)` makes a
    program, with the program passes it is given."""
    tr = _Trace(name, new_base_seed())
    placeholders = [tr.placeholder(s, f"component {i}") for i, s in enumerate(flat_specs)]
    saved = _current("trace")
    _local.trace = tr
    try:
        result = fn(*pack(placeholders))
    except UntraceableError:
        raise
    except Exception as e:  # noqa: BLE001 - sorted below
        if getattr(e, "_conveyor_op_error", False):
            raise  # an op's argument or type error: the pipeline is wrong, say so now
        if tr.failure is not None:
            raise (_PlainPython if tr.quiet else UntraceableError)(tr.failure) from e
        raise UntraceableError(f"{type(e).__name__}: {e}") from e
    finally:
        _local.trace = saved
    if tr.failure is not None:
        raise (_PlainPython if tr.quiet else UntraceableError)(tr.failure)
    if not tr.nodes and not tr.made_constants:
        # No conveyor op ran: the function only rearranges its inputs or works
        # through side effects (a counter, a sleep, I/O), which must happen per
        # element, so it stays plain Python.
        plain = _PlainPython("it calls no conveyor op")
        flat = nest.flatten(tuple(result) if type(result) is list else result)
        if flat and all(isinstance(v, Tensor) and v._trace is tr for v in flat):
            # It only rearranges its inputs: each result is an input, whose
            # spec is exact (TensorFlow's, from its trace).
            plain.rearranged = (tuple(result) if type(result) is list else result,
                                [TensorSpec(v.shape, v.dtype) for v in flat])
        raise plain
    if type(result) is list:
        result = tuple(result)
    flat = nest.flatten(result)
    specs, values = [], []
    for v in flat:
        if isinstance(v, Tensor):
            if v._trace is not tr:
                raise UntraceableError(f"the function returned {v!r}, a tensor of another trace")
            specs.append(TensorSpec(v.shape, v.dtype))
            values.append(v)
        else:
            try:
                arr = to_array(v)
            except (TypeError, ValueError) as e:
                raise UntraceableError(f"the function returned {type(v).__name__} values "
                                       f"({e})") from None
            specs.append(TensorSpec(arr.shape, _dtypes.as_dtype(arr.dtype)))
            values.append(arr)
    return tr, tr.result_keys(values), result, specs


# -- debug mode and warnings ----------------------------------------------------

_debug = [False]


def debug_mode():
    return _debug[0]


def set_debug_mode(enabled):
    _debug[0] = bool(enabled)


class TracingWarning(UserWarning):
    """A map function could not be compiled and runs in Python, under the GIL."""


# Why a function that branches on a tensor runs in Python, in plain words, with the way out.
BRANCH_REASON = ("it branches on a tensor with Python control flow (if, while, and, or, not), "
                 "but a tensor has no value while the function is traced; write the choice as "
                 "tf.where(condition, x, y) (element by element) or tf.cond(condition, "
                 "true_fn, false_fn), which run natively")

_warned = set()  # code objects (or callables) already warned about
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # conveyor/


def _user_stacklevel():
    """The ``stacklevel`` that makes a warning raised by our caller point at
    the innermost frame outside the conveyor package: the user's
    ``Dataset.map`` call (or the loop that first iterates the pipeline, when
    the function is traced then)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level


def warn_untraceable(fn, stage, reason):
    """Warn once per function that it runs in Python, saying why."""
    key = getattr(fn, "__code__", None) or id(fn)
    if key in _warned:
        return
    _warned.add(key)
    advice = "" if reason == BRANCH_REASON else (
        " Use conveyor ops (conveyor.image, conveyor.io, conveyor.cast, + - * /, tf.where, "
        "tf.cond) on its arguments to run it natively.")
    warnings.warn(f"{stage} runs in Python per element (under the GIL, so parallel calls do "
                  f"not scale): {reason}.{advice}", TracingWarning, stacklevel=_user_stacklevel())


def _decorator(wrapper, func, inp, Tout, **kwargs):
    """``@tf.py_function(Tout=...)`` / ``@tf.numpy_function(Tout=...)``:
    with no `func`, a decorator whose function is then called with its
    arguments as `inp` (TensorFlow 2's form)."""
    import functools

    def decorate(fn):
        @functools.wraps(fn)
        def call(*args):
            return wrapper(fn, list(args), Tout, **kwargs)
        return call

    if inp is not None:
        raise TypeError("`inp` without `func`: pass the function, or use the decorator form "
                        "without `inp`")
    return decorate


def numpy_function(func=None, inp=None, Tout=None, stateful=True, name=None):
    """Call a Python function on NumPy arrays (``tf.numpy_function``); with
    no `func`, a decorator (``@tf.numpy_function(Tout=tf.float32)``).

    Outside a map it calls ``func(*inp)`` at once. Inside a map function it
    marks the function as Python: the map then calls it per element with
    NumPy arrays under the GIL (no warning: the choice is deliberate), as
    ``tf.numpy_function`` runs its function in Python inside a graph. Results
    are converted to `Tout` (a dtype or a list of dtypes).
    """
    if func is None:
        return _decorator(numpy_function, func, inp, Tout, stateful=stateful)
    trace = _current("trace") or next((x._trace for x in inp if isinstance(x, Tensor)), None)
    if trace is not None:
        raise trace.fail(f"it calls {getattr(func, '__name__', 'a function')} through "
                         f"numpy_function", quiet=True)
    # Plain NumPy values, as TensorFlow's: a map's Python path hands eager tensors.
    return _call_numpy(func, [x.numpy() if isinstance(x, EagerTensor) else
                              x if isinstance(x, np.ndarray) else to_array(x) for x in inp], Tout)


def py_function(func=None, inp=None, Tout=None, name=None):
    """Call a Python function on eager tensors (``tf.py_function``); with no
    `func`, a decorator (``@tf.py_function(Tout=tf.int64)``).

    As :func:`numpy_function`, except that `func` gets ``conveyor.EagerTensor``
    arguments (NumPy arrays, shared not copied, that also answer ``numpy()``),
    as TensorFlow's py_function passes eager tensors."""
    if func is None:
        return _decorator(py_function, func, inp, Tout)
    trace = _current("trace") or next((x._trace for x in inp if isinstance(x, Tensor)), None)
    if trace is not None:
        raise trace.fail(f"it calls {getattr(func, '__name__', 'a function')} through "
                         f"py_function", quiet=True)
    result = _call_numpy(func, [as_eager(x if isinstance(x, np.ndarray) else to_array(x))
                                for x in inp], Tout)
    if isinstance(result, list):
        return [as_eager(r) for r in result]
    return as_eager(result)


def _call_numpy(func, args, Tout):
    result = func(*args)
    if isinstance(Tout, (list, tuple)):
        # as TensorFlow: None for no outputs, a bare value for a list of one
        if result is None and not Tout:
            return []
        if len(Tout) == 1 and not isinstance(result, (list, tuple)):
            result = [result]
        if not isinstance(result, (list, tuple)) or len(result) != len(Tout):
            raise ValueError(f"numpy_function: expected {len(Tout)} results, got {result!r:.80}")
        return [to_array(r, t) for r, t in zip(result, Tout)]
    return to_array(result, Tout)
