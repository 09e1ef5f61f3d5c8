"""Random crop windows (``tf.image.sample_distorted_bounding_box`` and its
stateless twin): TensorFlow's algorithm and random streams, so the same seed
gives TensorFlow's windows, eagerly and traced in ``Dataset.map`` (ops
``SampleDistortedBoundingBoxV2`` and ``StatelessSampleDistortedBoundingBox``,
csrc/ops/distorted_box.c).

The stateful op's stream is TensorFlow's: a non-zero `seed` gives the seed
pair of ``tf.random.set_seed``'s rules, and the n-th element of a map (from
any fresh iterator) gets TensorFlow's n-th window. Eagerly, calls with the
same arguments count as TensorFlow's cached kernel does. One difference: a
``repeat`` after the map draws the same windows on every pass (TensorFlow's
kernel goes on where the last pass stopped); repeat before the map, as the
ImageNet recipes do, or leave `seed` at 0 for fresh windows.
"""
import numpy as np

from conveyor import _engine
from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor.framework import random_seed as _seed
from conveyor.framework import tracing as _tracing
from conveyor.framework.eager import attr_text, eager_result
from conveyor.framework.tracing import Tensor, apply, convert, dtype_of, op_error, static_shape

__all__ = ["sample_distorted_bounding_box", "stateless_sample_distorted_bounding_box"]

_INT_TYPES = (_dtypes.uint8, _dtypes.int8, _dtypes.int16, _dtypes.int32, _dtypes.int64)


def _invalid(message):
    return op_error(_errors.InvalidArgumentError, message)


def _pair(value, what):
    if isinstance(value, Tensor):
        raise op_error(TypeError, f"conveyor needs a Python pair for `{what}`, not a tensor")
    values = [float(v) for v in np.asarray(value, dtype=np.float64).reshape(-1)]
    return values


def _common(image_size, bounding_boxes, min_object_covered, aspect_ratio_range, area_range,
            max_attempts, use_image_if_no_bounding_boxes):
    """The converted inputs and attributes both ops share."""
    size = convert(image_size, name="image_size")
    if dtype_of(size) not in _INT_TYPES:
        raise _invalid(f"Value for attr 'T' of {dtype_of(size).name} is not in the list of allowed "
                       f"values: uint8, int8, int16, int32, int64")
    shape = static_shape(size)
    if shape is not None and len(shape) != 1:
        raise _invalid(f"image_size must be 1-dimensional{list(shape)}")
    if shape is not None and shape[0] not in (None, 3):
        raise _invalid(f"image_size must contain 3 elements{list(shape)}")
    boxes = convert(bounding_boxes, dtype=_dtypes.float32, name="bounding_boxes")
    bshape = static_shape(boxes)
    if bshape is not None and len(bshape) != 3:
        raise _invalid(f"input boxes must be 3-dimensional [batch, num_boxes, coords]: "
                       f"{list(bshape)}")
    if bshape is not None and bshape[2] not in (None, 4):
        raise _invalid(f"bounding boxes must have shape [4] or [*, 4], got {list(bshape)}")
    covered = convert(min_object_covered, dtype=_dtypes.float32, name="min_object_covered")
    cshape = static_shape(covered)
    if cshape is not None and len(cshape) != 0:
        raise _invalid(f"min_object_covered must be 0-D, got shape {list(cshape)}")
    aspect = _pair(aspect_ratio_range, "aspect_ratio_range")
    if len(aspect) != 2:
        raise _invalid("Aspect ratio range field must specify 2 dimensions")
    area = _pair(area_range, "area_range")
    if len(area) != 2:
        raise _invalid("Area range field must specify 2 dimensions")
    f32 = [float(np.float32(v)) for v in aspect + area]
    if not (f32[0] > 0 and f32[1] > 0):
        raise _invalid(f"Aspect ratio range must be non-negative: [{aspect[0]:g}, {aspect[1]:g}]")
    if not (f32[2] > 0 and f32[3] > 0):
        raise _invalid(f"Area range must be non-negative: [{area[0]:g}, {area[1]:g}]")
    if f32[2] > 1 or f32[3] > 1:
        raise _invalid(f"Area range must be less then or equal to 1.0: [{area[0]:g}, {area[1]:g}]")
    if isinstance(max_attempts, Tensor):
        raise op_error(TypeError, "conveyor needs a Python int for `max_attempts`")
    max_attempts = int(max_attempts)
    if max_attempts <= 0:
        raise _invalid(f"Max attempts must be non-negative: {max_attempts}")
    attrs = {"max_attempts": max_attempts,
             "use_image_if_no_bounding_boxes": int(bool(use_image_if_no_bounding_boxes)),
             "aspect_ratio_min": f32[0], "aspect_ratio_max": f32[1],
             "area_min": f32[2], "area_max": f32[3]}
    outputs = [((3,), dtype_of(size)), ((3,), dtype_of(size)), ((1, 1, 4), _dtypes.float32)]
    return [size, boxes, covered], attrs, outputs


# Eager calls of the stateful op by arguments: TensorFlow caches one kernel
# per set of attributes, whose generator each call advances.
_eager_calls = {}


def sample_distorted_bounding_box(image_size, bounding_boxes, seed=0, min_object_covered=0.1,
                                  aspect_ratio_range=None, area_range=None, max_attempts=None,
                                  use_image_if_no_bounding_boxes=None, name=None):
    """A random crop window of an image that covers enough of one of its
    bounding boxes (``tf.image.sample_distorted_bounding_box``).

    Returns ``(begin, size, bboxes)``: ``begin = [y, x, 0]`` and ``size =
    [height, width, -1]`` (of `image_size`'s dtype) for ``tf.slice``, and
    the window as a float32 ``[1, 1, 4]`` box. Up to `max_attempts` windows
    are drawn (aspect ratio in `aspect_ratio_range`, area a fraction of the
    image in `area_range`); the first that covers at least
    `min_object_covered` of a box wins, else the whole image.

    `seed` 0 draws unseeded windows; a non-zero seed follows
    ``tf.random.set_seed``'s rules and gives TensorFlow's windows (see the
    module's doc for the one difference, later epochs of a map).
    """
    aspect_ratio_range = (0.75, 1.33) if aspect_ratio_range is None else aspect_ratio_range
    area_range = (0.05, 1.0) if area_range is None else area_range
    max_attempts = 100 if max_attempts is None else max_attempts
    use_image = bool(use_image_if_no_bounding_boxes)
    inputs, attrs, outputs = _common(image_size, bounding_boxes, min_object_covered,
                                     aspect_ratio_range, area_range, max_attempts, use_image)
    seed1, seed2 = _seed.get_seed(seed) if seed else (0, 0)
    attrs = {"seed": seed1, "seed2": seed2, **attrs}
    traced = any(isinstance(x, Tensor) for x in inputs) or _tracing.current_trace() is not None
    if traced or seed1 == seed2 == 0 or _tracing.in_element_scope():
        return tuple(apply("SampleDistortedBoundingBoxV2", inputs, outputs, attrs=attrs,
                           random=True))
    key = tuple(sorted(attrs.items())) + (dtype_of(inputs[0]).name,)
    n = _eager_calls.get(key, 0)
    _eager_calls[key] = n + 1
    # The n-th call of TensorFlow's kernel: the n-th element's window.
    return tuple(eager_result(r) for r in _engine.run_op(
        "SampleDistortedBoundingBoxV2", list(inputs), attr_text(attrs), (), None, None, len(outputs),
        (0, 0, 0, 0, 0, n)))


def stateless_sample_distorted_bounding_box(image_size, bounding_boxes, seed,
                                            min_object_covered=0.1, aspect_ratio_range=None,
                                            area_range=None, max_attempts=None,
                                            use_image_if_no_bounding_boxes=None, name=None):
    """``sample_distorted_bounding_box`` whose window depends only on `seed`
    (a shape [2] int32 or int64 tensor), as
    ``tf.image.stateless_sample_distorted_bounding_box``: TensorFlow's
    window for the same seed."""
    from conveyor.ops.stateless_random_ops import _seed as _seed_tensor
    aspect_ratio_range = (0.75, 1.33) if aspect_ratio_range is None else aspect_ratio_range
    area_range = (0.05, 1.0) if area_range is None else area_range
    max_attempts = 100 if max_attempts is None else max_attempts
    use_image = bool(use_image_if_no_bounding_boxes)
    inputs, attrs, outputs = _common(image_size, bounding_boxes, min_object_covered,
                                     aspect_ratio_range, area_range, max_attempts, use_image)
    return tuple(apply("StatelessSampleDistortedBoundingBox", inputs + [_seed_tensor(seed)],
                       outputs, attrs=attrs))
