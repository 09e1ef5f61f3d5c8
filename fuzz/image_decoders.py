"""Fuzz target: decode_jpeg and decode_image on mutated images.

(TensorFlow's ``extract_jpeg_shape`` would belong here; conveyor has no such
op yet.)

Input layout: byte 0 and byte 1 are flags, the rest is the encoded image.

  byte 0 bits 0-1  channels: 0, 1, 3, 4
  byte 0 bits 2-3  decode_jpeg ratio: 1, 2, 4, 8
  byte 0 bit 4     decode_image (uint8, or float32 with bit 5) instead of decode_jpeg
  byte 0 bit 6     try_recover_truncated
  byte 0 bit 7     acceptable_fraction 0.5 (else 1)
  byte 1 bit 0     fancy_upscaling off
  byte 1 bit 1     dct_method INTEGER_ACCURATE
  byte 1 bit 2     decode inside Dataset.map (the traced native program) as well

A pixel limit of 2**21 keeps forged headers from asking for huge images.
Checks besides "no crash, only conveyor.errors": the result is
[height, width, channels] with the requested channels (1 or 3 when 0 was
asked), the dtype asked for, at most the pixel limit; the traced decode
equals the eager one.
"""
import numpy as np

import _harness
from _harness import check, outcome, signal

import conveyor as cv
from conveyor.io.image_ops import decode_image, decode_jpeg, set_max_image_pixels

MAX_PIXELS = 1 << 21
set_max_image_pixels(MAX_PIXELS)

CHANNELS = (0, 1, 3, 4)
RATIOS = (1, 2, 4, 8)


def one_input(data):
    if len(data) < 2:
        return
    f0, f1, body = data[0], data[1], data[2:]
    channels = CHANNELS[f0 & 3]
    if f0 & 16:
        dtype = cv.float32 if f0 & 32 else cv.uint8

        def decode(x):
            return decode_image(x, channels=channels, dtype=dtype, expand_animations=False)
    else:
        dtype = cv.uint8
        kwargs = dict(channels=channels, ratio=RATIOS[(f0 >> 2) & 3],
                      try_recover_truncated=bool(f0 & 64),
                      acceptable_fraction=0.5 if f0 & 128 else 1,
                      fancy_upscaling=not (f1 & 1),
                      dct_method="INTEGER_ACCURATE" if f1 & 2 else "")

        def decode(x):
            return decode_jpeg(x, **kwargs)

    image, error = outcome(lambda: decode(body))
    if error is not None:
        check(isinstance(error, (cv.errors.InvalidArgumentError, cv.errors.UnimplementedError)),
              f"{type(error).__name__}: {error}")
    else:
        image = np.asarray(image)
        signal(f"ok {image.ndim} {image.shape[-1] if image.ndim else ''} {image.dtype}")
        check(image.ndim == 3, f"shape {image.shape}")
        check(image.dtype == np.dtype(dtype.as_numpy_dtype if hasattr(dtype, "as_numpy_dtype")
                                      else str(dtype)), f"dtype {image.dtype}")
        h, w, c = image.shape
        check(c == channels if channels else c in (1, 3), f"{c} channels for channels={channels}")
        check(h * w <= MAX_PIXELS and h > 0 and w > 0, f"size {h}x{w}")

    if f1 & 4:
        ds = cv.data.Dataset.from_tensors(np.array(body, dtype=object)).map(decode)
        got, terror = outcome(lambda: next(iter(ds)))
        check((terror is None) == (error is None),
              f"eager and traced decodes disagree: {error!r} / {terror!r}")
        if error is None:
            check(np.array_equal(np.asarray(got), image, equal_nan=True),
                  "traced decode differs from eager")


if __name__ == "__main__":
    _harness.main(one_input)
