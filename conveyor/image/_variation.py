"""``tf.image.total_variation`` and ``tf.image.image_gradients`` (differences
of neighbouring pixels), composed from conveyor's elementwise, reduction and
pad ops (no C op of their own): traced natively inside a map."""
from conveyor.framework.tracing import convert, op_error, static_shape
from conveyor.ops.array_ops import pad
from conveyor.ops.math_ops import abs as _abs
from conveyor.ops.math_ops import add, reduce_sum, subtract

__all__ = ["total_variation", "image_gradients"]


def total_variation(images, name=None):
    """The sum of absolute differences between neighbouring pixels, down and
    across (``tf.image.total_variation``): a scalar for a 3-D image, one value
    per image for a 4-D batch, in the images' dtype (integers wrap, as in
    TensorFlow)."""
    del name
    x = convert(images, name="images")
    shape = static_shape(x)
    if shape is None or len(shape) not in (3, 4):
        raise op_error(ValueError, "'images' must be either 3 or 4-dimensional.")
    if len(shape) == 3:
        down = subtract(x[1:, :, :], x[:-1, :, :])
        across = subtract(x[:, 1:, :], x[:, :-1, :])
        axis = None
    else:
        down = subtract(x[:, 1:, :, :], x[:, :-1, :, :])
        across = subtract(x[:, :, 1:, :], x[:, :, :-1, :])
        axis = [1, 2, 3]
    return add(reduce_sum(_abs(down), axis=axis), reduce_sum(_abs(across), axis=axis))


def image_gradients(image):
    """(dy, dx) of a 4-D batch (``tf.image.image_gradients``): each pixel's
    difference with the one below (dy) and to its right (dx), 0 on the last
    row (column)."""
    x = convert(image, name="image")
    shape = static_shape(x)
    if shape is None or len(shape) != 4:
        raise op_error(ValueError, "image_gradients expects a 4D tensor [batch_size, h, w, d], "
                                   f"not {shape}.")
    dy = pad(subtract(x[:, 1:, :, :], x[:, :-1, :, :]), [[0, 0], [0, 1], [0, 0], [0, 0]])
    dx = pad(subtract(x[:, :, 1:, :], x[:, :, :-1, :]), [[0, 0], [0, 0], [0, 1], [0, 0]])
    return dy, dx
