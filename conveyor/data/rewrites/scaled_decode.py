"""JPEG decode + resize in one pass (``options.experimental_optimization.
jpeg_scaled_decode``, conveyor's own, opt-in): a program pass.

Unlike the other rewrites it works on a map function's recorded program
(the nodes of a ``framework.tracing._Trace``), not on datasets: ``MapFunction.
function_for_engine`` (conveyor/data/ops/structured_function.py) compiles
the map's recording once more with ``passes=(rewrite,)`` when a build
context asks for it. A pass takes the recorded nodes and the result keys
and returns new nodes; values keep their ids, so a pass changes attributes
only. A node is ``(op, input keys, attrs, string, obj, num_outputs,
op_seed)``, its attributes a dict by name (csrc/ops/op.h).
"""
import collections

__all__ = ["rewrite"]

# The JPEG decoders that take a resize hint (ops/decode_jpeg.c: the optional
# attributes min_height, min_width), and the resize ops that filter
# (attributes height, width, preserve_aspect_ratio; conveyor/image/_resize.py).
# Not "nearest": it is chosen when values must not be blended (label masks),
# and the scaled IDCT blends.
_HINTED_DECODERS = frozenset({"DecodeJpeg", "DecodeImage"})
_RESIZES = frozenset({"ResizeBilinear", "ResizeBicubic", "ResizeArea", "ScaleAndTranslate"})


def rewrite(nodes, result_keys):
    """options.experimental_optimization.jpeg_scaled_decode: decode+resize in one pass.

    A JPEG decode (``decode_jpeg`` with ``ratio=1``, or ``decode_image``) whose
    image is used by one resize and nothing else (no other op, not a
    result), a resize to a fixed size (no ``preserve_aspect_ratio``, whose
    size would follow the decoded image's) with any method but ``nearest``,
    gets that size as a hint: the attributes min_height and min_width. At run time the decoder reads
    the JPEG header and, when the size is under half the image's in both
    dimensions, decodes at libjpeg's smallest scale of 1/8, 1/4 and 1/2
    that still covers it (ops/jpeg.c); the resize, unchanged, then resizes
    the smaller image to the exact size. The output's shape and dtype are
    the same; its pixels are close to, not equal to, TensorFlow's.
    """
    uses = collections.Counter(k for node in nodes for k in node[1])
    uses.update(result_keys)
    out = list(nodes)
    for op, keys, attrs, *_ in nodes:
        if op not in _RESIZES or attrs["preserve_aspect_ratio"] or len(keys) != 1:
            continue  # a size that follows the image, or one read per element
        height, width = attrs["height"], attrs["width"]
        if height <= 0 or width <= 0:
            continue
        source = keys[0]
        if source[0] != "node" or uses[source] != 1:
            continue
        decoder = out[source[1]]
        name, decoder_attrs = decoder[0], decoder[2]
        if name not in _HINTED_DECODERS or "min_height" in decoder_attrs:  # not a decoder, or hinted
            continue
        if name == "DecodeJpeg" and decoder_attrs["ratio"] != 1:
            continue  # an explicit ratio
        hinted = {**decoder_attrs, "min_height": height, "min_width": width}
        out[source[1]] = (name, decoder[1], hinted) + decoder[3:]
    return out
