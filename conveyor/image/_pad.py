"""``tf.image.resize_with_pad``, composed from conveyor's resize and
pad_to_bounding_box ops (no C op of its own)."""
import builtins

import numpy as np

from conveyor.image._resize import resize
from conveyor.image._transform import pad_to_bounding_box
from conveyor.framework.tracing import convert, op_error, static_shape

__all__ = ["resize_with_pad"]


def resize_with_pad(image, target_height, target_width, method="bilinear", antialias=False):
    """`image` resized to fit `target_height` x `target_width` keeping its
    aspect ratio, then padded with zeros to that size, centered
    (``tf.image.resize_with_pad``). The scale and offsets are computed in
    float32 as TensorFlow does; the image's height and width must be known."""
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
    if h is None or w is None:
        raise x._trace.fail("resize_with_pad of an image of unknown size is not supported "
                            "natively")
    f32 = np.float32
    ratio = builtins.max(f32(w) / f32(tw), f32(h) / f32(th))
    rh, rw = f32(h) / ratio, f32(w) / ratio
    new_h, new_w = int(np.floor(rh)), int(np.floor(rw))
    ph = builtins.max(0, int(np.floor((f32(th) - rh) / f32(2))))
    pw = builtins.max(0, int(np.floor((f32(tw) - rw) / f32(2))))
    resized = resize(x, [new_h, new_w], method=method, antialias=antialias)
    return pad_to_bounding_box(resized, ph, pw, th, tw)
