"""Boxes on images: ``tf.image.crop_and_resize`` (crops of boxes sampled to
one size, op CropAndResize, csrc/ops/crop_and_resize.c) and
``tf.image.draw_bounding_boxes`` (op DrawBoundingBoxesV2,
csrc/ops/draw_bounding_boxes.c) and ``tf.image.non_max_suppression`` (op
NonMaxSuppression), eagerly and traced in ``Dataset.map``."""
import numpy as np

from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor.framework.eager import EagerTensor
from conveyor.framework.tracing import Tensor, apply, convert, dtype_of, op_error, static_shape

__all__ = ["crop_and_resize", "draw_bounding_boxes", "non_max_suppression"]

_REAL = (_dtypes.uint8, _dtypes.uint16, _dtypes.int8, _dtypes.int16, _dtypes.int32,
         _dtypes.int64, _dtypes.float16, _dtypes.float32, _dtypes.float64)


def _invalid(message):
    return op_error(_errors.InvalidArgumentError, message)


def _rank(shape, rank, what):
    if shape is not None and len(shape) != rank:
        raise _invalid(f"{what} must be {rank}-D, got shape {list(shape)}")


def crop_and_resize(image, boxes, box_indices, crop_size, method="bilinear",
                    extrapolation_value=0.0, name=None):
    """Crops of `image` at `boxes`, each resized to `crop_size`
    (``tf.image.crop_and_resize``).

    Args:
      image: ``[batch, height, width, depth]`` of a real dtype.
      boxes: float32 ``[num_boxes, 4]``, each ``[y1, x1, y2, x2]`` in
        normalized coordinates (0 and 1 are the first and last pixel; y1 > y2
        flips the crop; coordinates outside [0, 1] extrapolate).
      box_indices: int32 ``[num_boxes]``, the image of `image` each box crops.
      crop_size: int32 ``[crop_height, crop_width]``, both positive.
      method: ``"bilinear"`` or ``"nearest"``.
      extrapolation_value: the value of samples outside the image.

    Returns a float32 tensor ``[num_boxes, crop_height, crop_width, depth]``
    with TensorFlow's values.
    """
    if method not in ("bilinear", "nearest"):
        raise op_error(ValueError, f"method must be 'bilinear' or 'nearest', got {method!r}")
    if isinstance(extrapolation_value, Tensor):
        raise op_error(TypeError, "conveyor needs a Python float for `extrapolation_value`")
    x = convert(image, name="image")
    if dtype_of(x) not in _REAL:
        raise op_error(TypeError, f"Value for attr 'T' of {dtype_of(x).name} is not in the list "
                                  f"of allowed values for crop_and_resize's image")
    b = convert(boxes, dtype=_dtypes.float32, name="boxes")
    i = convert(box_indices, dtype=_dtypes.int32, name="box_indices")
    size = convert(crop_size, dtype=_dtypes.int32, name="crop_size")
    shape, bshape, ishape = static_shape(x), static_shape(b), static_shape(i)
    _rank(shape, 4, "input image")
    _rank(bshape, 2, "boxes")
    _rank(ishape, 1, "box_index")
    if bshape is not None and bshape[1] not in (None, 4):
        raise _invalid(f"boxes must have 4 columns, got shape {list(bshape)}")
    sshape = static_shape(size)
    if sshape is not None and (len(sshape) != 1 or sshape[0] not in (None, 2)):
        raise _invalid(f"crop_size must have two elements, got shape {list(sshape)}")
    crop = [None, None]
    if not isinstance(size, Tensor):
        crop = [int(v) for v in np.asarray(size).reshape(-1)]
        if min(crop) <= 0:
            raise _invalid("crop dimensions must be positive")
    n = bshape[0] if bshape is not None else (ishape[0] if ishape is not None else None)
    depth = shape[3] if shape is not None else None
    return apply("CropAndResize", [x, b, i, size],
                 [((n, crop[0], crop[1], depth), _dtypes.float32)],
                 attrs={"method": 1 if method == "nearest" else 0,
                        "extrapolation_value": float(extrapolation_value)})


def draw_bounding_boxes(images, boxes, colors, name=None):
    """`images` with the outline of each box drawn (``tf.image.draw_bounding_boxes``).

    Args:
      images: float32 or float16 ``[batch, height, width, depth]``, depth 1,
        3 or 4 (a NumPy array of another real dtype is converted to float32,
        as TensorFlow converts it; a tensor of one is an error).
      boxes: float32 ``[batch, num_boxes, 4]``, each ``[y1, x1, y2, x2]`` in
        normalized coordinates.
      colors: float32 ``[num_colors, >= depth]``: box ``i`` is drawn in
        ``colors[i % num_colors]``; None (or no rows) uses TensorFlow's table
        of ten colors (white for gray images). Required, as in TensorFlow 2
        (``tf.compat.v1.image.draw_bounding_boxes`` defaults it to None).

    Returns a tensor like `images`. Each edge is one pixel wide at the
    truncated pixel coordinate, as TensorFlow draws it.
    """
    x = convert(images, name="images")
    if (dtype_of(x) not in (_dtypes.float32, _dtypes.float16) and
            not isinstance(images, (Tensor, EagerTensor)) and dtype_of(x) in _REAL):
        # TensorFlow converts a NumPy array or list to the op's float32
        x = convert(np.asarray(x, np.float32), name="images")
    if dtype_of(x) not in (_dtypes.float32, _dtypes.float16):
        raise _invalid(f"Value for attr 'T' of {dtype_of(x).name} is not in the list of allowed "
                       f"values: float, half")
    b = convert(boxes, dtype=_dtypes.float32, name="boxes")
    c = convert(np.zeros([0, 4], np.float32) if colors is None else colors,
                dtype=_dtypes.float32, name="colors")
    shape = static_shape(x)
    _rank(shape, 4, "images")
    if shape is not None and shape[3] not in (None, 1, 3, 4):
        raise _invalid("Channel depth should be either 1 (GRY), 3 (RGB), or 4 (RGBA)")
    _rank(static_shape(b), 3, "boxes")
    cshape = static_shape(c)
    if cshape is not None and len(cshape) != 2:
        raise _invalid(f"colors must be a 2-D matrix{list(cshape)}")
    return apply("DrawBoundingBoxesV2", [x, b, c], [(shape, dtype_of(x))])


def non_max_suppression(boxes, scores, max_output_size, iou_threshold=0.5,
                        score_threshold=float("-inf"), name=None):
    """The int32 indices of up to `max_output_size` boxes, highest score
    first, none overlapping an earlier choice by an IoU above
    `iou_threshold`, none scoring `score_threshold` or less
    (``tf.image.non_max_suppression``). `boxes` [N, 4] float32 (y1, x1, y2,
    x2), `scores` [N]; `max_output_size` a static int. Equal scores are taken
    lower index first."""
    del name
    b = convert(boxes, name="boxes")
    sc = convert(scores, name="scores")
    traced = isinstance(b, Tensor) or isinstance(sc, Tensor)
    for v, what in ((b, "boxes"), (sc, "scores")):
        if dtype_of(v) != _dtypes.float32:
            raise op_error(TypeError, f"non_max_suppression: {what} must be float32, got "
                                      f"{dtype_of(v).name}")
    bs, ss = static_shape(b), static_shape(sc)
    if bs is not None and (len(bs) != 2 or bs[1] not in (None, 4)):
        raise op_error(ValueError if traced else _errors.InvalidArgumentError,
                       f"boxes must be 2-D [num_boxes, 4], got shape {list(bs)}")
    if ss is not None and len(ss) != 1:
        raise op_error(ValueError if traced else _errors.InvalidArgumentError,
                       f"scores must be 1-D, got shape {list(ss)}")
    if isinstance(max_output_size, Tensor):
        raise max_output_size._trace.fail("non_max_suppression with a traced max_output_size "
                                          "is not supported natively")
    limit = int(np.asarray(max_output_size))
    if limit < 0:
        raise _invalid("max_output_size must be non-negative")
    iou = float(np.float32(iou_threshold))
    if not 0.0 <= iou <= 1.0:
        raise _invalid("iou_threshold must be in [0, 1]")
    return apply("NonMaxSuppression", [b, sc], [((None,), _dtypes.int32)],
                 attrs={"max_output_size": limit, "iou_threshold": iou,
                        "score_threshold": float(np.float32(score_threshold))})
