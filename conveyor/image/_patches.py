"""``tf.image.extract_patches`` composed from conveyor's ops: one strided
slice per position inside the patch, joined along the last axis (the
layout of TensorFlow's ExtractImagePatches: patch row, patch column, depth).
Traced natively inside a map; height and width must be known when traced."""
from conveyor import errors
from conveyor.framework.tracing import Tensor, convert, op_error, static_shape
from conveyor.ops.array_ops import concat, pad

__all__ = ["extract_patches"]


def _four(values, what):
    v = [int(x) for x in values]
    if len(v) != 4 or v[0] != 1 or v[3] != 1:
        raise op_error(ValueError, f"{what} must be [1, a, b, 1], got {v}")
    if min(v) < 1:
        raise op_error(ValueError, f"{what} must be positive, got {v}")
    return v[1], v[2]


def extract_patches(images, sizes, strides, rates, padding, name=None):
    """The `sizes` patches of a 4-D `images` batch, `strides` apart, their
    pixels `rates` apart, as the last axis of
    ``[batch, out_rows, out_cols, size_rows * size_cols * depth]``
    (``tf.image.extract_patches``); `padding` "VALID" or "SAME" (zeros)."""
    del name
    x = convert(images, name="images")
    traced = isinstance(x, Tensor)
    shape = static_shape(x)
    if shape is None or len(shape) != 4:
        raise op_error(ValueError if traced else errors.InvalidArgumentError,
                       f"input must be 4-dimensional{list(shape) if shape else shape}")
    (kh, kw), (sh, sw), (rh, rw) = (_four(sizes, "ksizes"), _four(strides, "strides"),
                                    _four(rates, "rates"))
    padding = str(padding).upper()
    if padding not in ("VALID", "SAME"):
        raise op_error(ValueError, f"padding must be 'VALID' or 'SAME', got {padding!r}")
    h, w = shape[1], shape[2]
    if h is None or w is None:
        raise x._trace.fail("extract_patches of images of unknown height or width is not "
                            "supported natively")
    eh, ew = (kh - 1) * rh + 1, (kw - 1) * rw + 1  # the patch's extent with its rates
    if padding == "VALID":
        out_h, out_w = max((h - eh) // sh + 1, 0), max((w - ew) // sw + 1, 0)
    else:
        out_h, out_w = -(-h // sh), -(-w // sw)
        ph = max((out_h - 1) * sh + eh - h, 0)
        pw = max((out_w - 1) * sw + ew - w, 0)
        if ph or pw:
            x = pad(x, [[0, 0], [ph // 2, ph - ph // 2], [pw // 2, pw - pw // 2], [0, 0]])
    def axis(start, out, stride):  # the out positions start, start + stride, ...
        return slice(start, start + (out - 1) * stride + 1, stride) if out else slice(0, 0)

    parts = [x[:, axis(i * rh, out_h, sh), axis(j * rw, out_w, sw), :]
             for i in range(kh) for j in range(kw)]
    return concat(parts, axis=3)
