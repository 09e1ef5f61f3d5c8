"""``tf.io.matching_files`` and the base64 codecs' place in ``tf.io``."""
import numpy as np

from conveyor.framework.eager import as_eager
from conveyor.framework.tracing import Tensor
from conveyor.io import gfile
from conveyor.ops.string_ops import decode_base64, encode_base64

__all__ = ["matching_files", "encode_base64", "decode_base64"]


def matching_files(pattern, name=None):
    """The paths matching `pattern` (a glob, or a list of them), as a 1-D
    string tensor, all sorted together (``tf.io.matching_files``);
    no match gives an empty tensor. It lists directories eagerly (through
    the file systems of ``tf.io.gfile``): inside a map it makes the function
    run in Python (a TracingWarning names it); ``Dataset.list_files`` lists
    files natively."""
    if isinstance(pattern, Tensor):
        raise pattern._trace.fail("tf.io.matching_files lists directories eagerly in conveyor, "
                                  "not natively")
    values = np.asarray(pattern.numpy() if hasattr(pattern, "numpy") else pattern, dtype=object)
    paths = []
    for p in values.reshape(-1):
        text = p.decode() if isinstance(p, bytes) else str(p)
        paths += gfile.glob(text)
    out = np.empty(len(paths), dtype=object)
    out[:] = sorted(x.encode() for x in paths)
    return as_eager(out)
