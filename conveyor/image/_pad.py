"""``tf.image.resize_with_pad``, composed from conveyor's resize and
pad_to_bounding_box ops (no C op of its own)."""
import builtins

import numpy as np

from conveyor import dtypes as _dtypes
from conveyor.image._resize import resize
from conveyor.image._transform import pad_to_bounding_box
from conveyor.framework.tracing import convert, op_error, static_shape
from conveyor.ops.array_ops import shape as shape_of, stack
from conveyor.ops.math_ops import cast, floor, maximum

__all__ = ["resize_with_pad"]


def resize_with_pad(image, target_height, target_width, method="bilinear", antialias=False):
    """`image` resized to fit `target_height` x `target_width` keeping its
    aspect ratio, then padded with zeros to that size, centered
    (``tf.image.resize_with_pad``). The scale and offsets are computed in
    float32 as TensorFlow does; an image whose height or width is known only
    per element stays native (the resize takes its size as an input)."""
    x = convert(image, name="image")
    shape = static_shape(x)
    if shape is None or len(shape) not in (3, 4):
        raise op_error(ValueError, "'image' (shape "
                                   f"{None if shape is None else list(shape)}) must have either 3 "
                                   "or 4 dimensions.")
    th, tw = int(target_height), int(target_width)
    if th <= 0:
        raise op_error(ValueError, "target_height must be > 0.")
    if tw <= 0:
        raise op_error(ValueError, "target_width must be > 0.")
    h, w = shape[-3], shape[-2]
    if h is None or w is None:  # known per element: the same float32 steps as traced ops
        return _resize_with_pad_traced(x, th, tw, method, antialias)
    f32 = np.float32
    ratio = builtins.max(f32(w) / f32(tw), f32(h) / f32(th))
    rh, rw = f32(h) / ratio, f32(w) / ratio
    new_h, new_w = int(np.floor(rh)), int(np.floor(rw))
    ph = builtins.max(0, int(np.floor((f32(th) - rh) / f32(2))))
    pw = builtins.max(0, int(np.floor((f32(tw) - rw) / f32(2))))
    resized = resize(x, [new_h, new_w], method=method, antialias=antialias)
    return pad_to_bounding_box(resized, ph, pw, th, tw)


def _resize_with_pad_traced(x, th, tw, method, antialias):
    """resize_with_pad of an image whose height or width is known per element:
    the resize's size and the offsets are traced (the resize op's size input)."""
    f32 = _dtypes.float32
    dims = shape_of(x)
    f_h, f_w = cast(dims[-3], f32), cast(dims[-2], f32)
    ratio = maximum(f_w / np.float32(tw), f_h / np.float32(th))
    rh, rw = f_h / ratio, f_w / ratio
    size = cast(floor(stack([rh, rw])), _dtypes.int32)
    ph = maximum(cast(floor((np.float32(th) - rh) / np.float32(2)), _dtypes.int32), np.int32(0))
    pw = maximum(cast(floor((np.float32(tw) - rw) / np.float32(2)), _dtypes.int32), np.int32(0))
    resized = resize(x, size, method=method, antialias=antialias)
    return pad_to_bounding_box(resized, ph, pw, th, tw)
