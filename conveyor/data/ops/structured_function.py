"""User functions handed to the engine: ``MapFunction`` (map and filter
functions, traced into native programs when they can be) and
``calling_convention`` (how tf.data calls a function on an element: a tuple
is unpacked into positional arguments)."""
import threading

import numpy as np

from conveyor.framework import tracing as _tracing
from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor import nest
from conveyor.framework.convert import to_array
from conveyor.framework.eager import as_eager
from conveyor.data.ops.dataset_base import has_datasets, pack_element, structure_kind
from conveyor.data.rewrites import scaled_decode
from conveyor.tensor_spec import TensorSpec

_ARRAYS = (np.ndarray, np.generic, bytes)  # the components eager_args wraps

__all__ = ["MapFunction", "calling_convention"]


class MapFunction:
    """The engine's view of a user map function.

    It is traced once on symbolic placeholders (conveyor/framework/tracing.py): when
    every output comes from conveyor ops, the engine gets a compiled native
    program (mode "native": no GIL, exact output spec). Otherwise (mode
    "python") the engine calls it per element as fn(epoch, index, *components)
    under the GIL; `convert` turns each result into a flat list of arrays,
    recording the output structure from the first call and checking later
    ones against it. filter's predicate is one too (stage "Dataset.filter").
    """

    def __init__(self, map_func, input_dataset, stage="Dataset.map", what="map function"):
        self.map_func = map_func
        self.input_dataset = input_dataset
        self.stage = stage
        self.what = what  # how messages name it: "map function", "predicate"
        self.spec = None  # nested TensorSpec: from the trace, or from the first Python result
        self.flat_specs = None
        self.mode = None      # "native" or "python", once resolved
        self.reason = None    # why a function runs in Python
        self.eager_args = False  # Python mode: hand it eager tensors (UntraceableError.eager_args)
        self.program = None
        self.base_seed = None
        self._recorded = None  # (trace, result keys): to compile with program passes
        self._variants = {}    # pass keywords -> program
        self._lock = threading.Lock()
        if input_dataset._known_spec() is not None:
            self.resolve()  # trace now, so type errors show where the pipeline is built

    @property
    def name(self):
        return f"{self.stage}({getattr(self.map_func, '__name__', type(self.map_func).__name__)})"

    def _pack(self, spec):
        if structure_kind(spec)[0] in (0, 1):
            return lambda flat: flat  # components are the positional arguments already
        return lambda flat: ((lambda e: e if type(e) is tuple else (e,))(
            pack_element(spec, flat)))

    def resolve(self):
        """Trace the function (once): decide native or Python mode."""
        if self.mode is not None:
            return
        spec = self.input_dataset.element_spec
        if _tracing.debug_mode():
            self.mode, self.reason = "python", "debug mode is on"
            self.base_seed = _tracing.new_base_seed()
            return
        if has_datasets(spec):  # windows: the function gets datasets, which do not trace
            self.mode, self.reason = "python", "its input elements hold datasets"
            self.base_seed = _tracing.new_base_seed()
            return
        try:
            tr, keys, result, specs = _tracing.record(
                self.map_func, nest.flatten(spec), self._pack(spec), self.name)
        except _tracing.UntraceableError as e:
            self.mode, self.reason = "python", str(e)
            self.eager_args = e.eager_args
            self.base_seed = _tracing.new_base_seed()
            if getattr(e, "rearranged", None) is not None:  # inputs rearranged: exact specs
                structure, self.flat_specs = e.rearranged
                self._np_dtypes = [None if s.dtype == _dtypes.string else
                                   np.dtype(s.dtype.as_numpy_dtype) for s in self.flat_specs]
                self._structure_key = nest.structure_key(structure)
                self.spec = nest.pack_sequence_as(structure, self.flat_specs)
            if not e.quiet:
                _tracing.warn_untraceable(self.map_func, self.name, self.reason)
            return
        self.program, self.base_seed = tr.compile(keys), tr.base_seed
        self._recorded = (tr, keys)
        self.flat_specs = specs
        self.spec = nest.pack_sequence_as(result, specs)
        self.mode = "native"

    def function_for_engine(self, jpeg_scaled_decode=False):
        """(fn, with_id): the compiled program, or a Python callable taking
        (epoch, index, *components) whose random ops draw what the traced
        program would. Keywords ask for program passes (conveyor/data/rewrites/
        scaled_decode.py; the build options decide): such a program is compiled once."""
        self.resolve()
        if self.mode == "native":
            if not jpeg_scaled_decode:
                return self.program, False
            with self._lock:
                program = self._variants.get("jpeg_scaled_decode")
                if program is None:
                    tr, keys = self._recorded
                    program = tr.compile(keys, passes=(scaled_decode.rewrite,))
                    self._variants["jpeg_scaled_decode"] = program
            return program, False
        map_func, pack = self.map_func, self._pack(self.input_dataset.element_spec)
        base_seed = self.base_seed
        if self.eager_args:
            # Stopped by an op it cannot trace: written for TensorFlow, it gets
            # eager tensors (.shape.as_list(), get_shape(), tf dtypes), no copy.
            def call(epoch, index, *flat):
                flat = [as_eager(v) if isinstance(v, _ARRAYS) else v for v in flat]
                with _tracing.element_scope(base_seed, epoch, index):
                    return map_func(*pack(flat))
            return call, True

        def call(epoch, index, *flat):
            with _tracing.element_scope(base_seed, epoch, index):
                return map_func(*pack(flat))
        return call, True

    def convert(self, result):
        if type(result) is list:
            result = tuple(result)
        flat = nest.flatten(result)
        arrays = [to_array(x) for x in flat]
        if self.spec is None:
            with self._lock:
                if self.spec is None:
                    # A Python function's output shapes are not static: only the rank and
                    # dtype of its first result are taken (dims unknown), so the spec
                    # never claims more than later elements keep.
                    self.flat_specs = [TensorSpec([None] * a.ndim, _dtypes.as_dtype(a.dtype))
                                       for a in arrays]
                    self._np_dtypes = [a.dtype if a.dtype != object else None for a in arrays]
                    self._structure_key = nest.structure_key(result)
                    self.spec = nest.pack_sequence_as(result, self.flat_specs)
                    return arrays
        if nest.structure_key(result) != self._structure_key:
            raise _errors.InvalidArgumentError(
                f"the {self.what} returned an element whose structure differs from its first "
                f"result: expected {self.spec}, got {result!r}")
        for i, (expected, arr) in enumerate(zip(self._np_dtypes, arrays)):
            if arr.dtype != expected and (expected is not None or arr.dtype != object):
                raise _errors.InvalidArgumentError(
                    f"the {self.what} returned {_dtypes.as_dtype(arr.dtype).name} for component "
                    f"{i}, but its first result had {self.flat_specs[i].dtype.name}; return a "
                    f"consistent dtype (e.g. with np.asarray(x, dtype=...)).")
        return arrays


def calling_convention(map_func, input_dataset):
    """A callable taking the flat components of an element and calling `map_func`
    as tf.data does: a tuple element is unpacked into positional arguments; a
    dict, namedtuple or single tensor is passed as one argument."""
    spec = input_dataset._known_spec()
    if spec is not None and structure_kind(spec)[0] in (0, 1):
        return map_func  # components are the positional arguments already

    def call(*flat):
        element = pack_element(input_dataset.element_spec, flat)
        return map_func(*element) if type(element) is tuple else map_func(element)
    return call
