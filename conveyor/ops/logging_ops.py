"""``tf.print`` (``conveyor.print``)."""
import logging
import sys

import numpy as np

from conveyor.framework.tracing import Tensor, _PlainPython, current_trace

__all__ = ["print_", "get_logger"]


def print_(*inputs, output_stream=None, summarize=3, sep=" ", end="\n", name=None):
    """``tf.print``: prints its inputs. Inside a traced map function it makes
    the function run in Python per element (a print is a side effect per
    element), as ``tf.print`` runs at every call of a graph."""
    if any(isinstance(v, Tensor) for v in inputs) or current_trace() is not None:
        raise _PlainPython("it calls tf.print")
    if output_stream is None or output_stream in ("stderr", "sys.stderr"):
        output_stream = sys.stderr
    elif output_stream in ("stdout", "sys.stdout"):
        output_stream = sys.stdout
    text = sep.join(_format(v, summarize) for v in inputs)
    print(text, end=end, file=output_stream)


def _format(value, summarize):
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    arr = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
    if arr.dtype.kind in "SO":
        decode = np.vectorize(
            lambda b: b.decode("utf-8", "replace") if isinstance(b, bytes) else b, otypes=[object])
        arr = decode(arr) if arr.size else arr.astype(object)
        if arr.ndim == 0:
            return str(arr[()])
    with np.printoptions(threshold=summarize * 2 if summarize > 0 else sys.maxsize,
                         edgeitems=max(summarize, 1)):
        return str(arr)


def get_logger():
    """``tf.get_logger``: the ``logging`` logger named "tensorflow", the one
    ``tf.compat.v1.logging`` writes to, as in TensorFlow. conveyor's own
    warnings are Python warnings (``warnings``), not log records."""
    return logging.getLogger("tensorflow")
