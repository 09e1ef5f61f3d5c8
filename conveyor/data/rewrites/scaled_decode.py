"""JPEG decode + resize in one pass (``options.experimental_optimization.
jpeg_scaled_decode``, conveyor's own, opt-in): a program pass.

Unlike the other rewrites it works on a map function's recorded program
(the nodes of a ``framework.tracing._Trace``), not on datasets: ``MapFunction.
function_for_engine`` (conveyor/data/ops/structured_function.py) compiles
the map's recording once more with ``passes=(rewrite,)`` when a build
context asks for it. A pass takes the recorded nodes and the result keys
and returns new nodes; values keep their ids, so a pass changes attributes
only. A node is ``(op, input keys, ints, floats, string, obj, num_outputs,
op_seed)``; its ints are read here by name (``_named_ints``).
"""
import collections

__all__ = ["rewrite"]

# The names of the ints of the ops this pass reads, in the order their
# wrappers record them: conveyor/io/image_ops.py (decode_jpeg, decode_image)
# and conveyor/image/_resize.py (resize). The decoders listed take a resize
# hint: two more ints, (hint_height, hint_width) (ops/decode_jpeg.c).
_DECODER_INTS = {
    "DecodeJpeg": ("channels", "ratio", "fancy_upscaling", "try_recover_truncated",
                   "dct_method", "pixel_limit"),
    "DecodeImage": ("channels", "dtype", "expand_animations", "pixel_limit"),
}
_RESIZE_INTS = ("height", "width", "preserve_aspect_ratio")  # ScaleAndTranslate: + antialias
# The resize ops that filter. Not "nearest": it is chosen when values must not
# be blended (label masks), and the scaled IDCT blends.
_RESIZES = frozenset({"ResizeBilinear", "ResizeBicubic", "ResizeArea", "ScaleAndTranslate"})


def _named_ints(names, ints):
    """A node's ints as {name: value} (the first len(names) of them)."""
    return dict(zip(names, ints))


def rewrite(nodes, result_keys):
    """options.experimental_optimization.jpeg_scaled_decode: decode+resize in one pass.

    A JPEG decode (``decode_jpeg`` with ``ratio=1``, or ``decode_image``) whose
    image is used by one resize and nothing else (no other op, not a
    result), a resize to a fixed size (no ``preserve_aspect_ratio``, whose
    size would follow the decoded image's) with any method but ``nearest``,
    gets that size as a hint: two more ints. At run time the decoder reads
    the JPEG header and, when the size is under half the image's in both
    dimensions, decodes at libjpeg's smallest scale of 1/8, 1/4 and 1/2
    that still covers it (ops/jpeg.c); the resize, unchanged, then resizes
    the smaller image to the exact size. The output's shape and dtype are
    the same; its pixels are close to, not equal to, TensorFlow's.
    """
    uses = collections.Counter(k for node in nodes for k in node[1])
    uses.update(result_keys)
    out = list(nodes)
    for op, keys, ints, *_ in nodes:
        if op not in _RESIZES:
            continue
        resize = _named_ints(_RESIZE_INTS, ints)
        if resize["preserve_aspect_ratio"] or resize["height"] <= 0 or resize["width"] <= 0:
            continue
        source = keys[0]
        if source[0] != "node" or uses[source] != 1:
            continue
        decoder = out[source[1]]
        name, decoder_ints = decoder[0], decoder[2]
        names = _DECODER_INTS.get(name)
        if names is None or len(decoder_ints) != len(names):  # not a decoder, or hinted
            continue
        if name == "DecodeJpeg" and _named_ints(names, decoder_ints)["ratio"] != 1:
            continue  # an explicit ratio
        hint = (resize["height"], resize["width"])
        out[source[1]] = (name, decoder[1], decoder_ints + hint) + decoder[3:]
    return out
