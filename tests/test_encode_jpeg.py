"""tf.io.encode_jpeg: round trips through TensorFlow's decoder, options, errors."""
import numpy as np
import pytest

import conveyor as cv

Y, X = np.mgrid[0:48, 0:64]
SMOOTH = np.stack([X * 3, Y * 5, (X + Y) * 2], -1).astype(np.uint8)


def test_encodes_a_jpeg_eagerly_and_traced_alike():
    # a scalar string tensor, as TensorFlow's: numpy() is the bytes
    data = cv.io.encode_jpeg(SMOOTH, quality=92).numpy()
    assert isinstance(data, bytes) and data[:3] == b"\xff\xd8\xff" and data[-2:] == b"\xff\xd9"
    ds = cv.data.Dataset.from_tensors(SMOOTH).map(lambda i: cv.io.encode_jpeg(i, quality=92))
    assert "mode=native" in repr(ds)
    assert next(iter(ds)) == data


@pytest.mark.parametrize("kw", [{}, {"quality": 50}, {"progressive": True},
                                {"optimize_size": True}, {"chroma_downsampling": False}])
def test_round_trip_through_tensorflow(kw):
    tf = pytest.importorskip("tensorflow")
    for image in (SMOOTH, SMOOTH[:, :, :1]):
        decoded = tf.io.decode_jpeg(cv.io.encode_jpeg(image, **kw)).numpy()
        assert decoded.shape == image.shape
        assert np.abs(decoded.astype(int) - image).mean() < (6 if kw.get("quality") else 3)


def test_bad_images():
    with pytest.raises(TypeError, match="uint8"):
        cv.io.encode_jpeg(SMOOTH.astype(np.float32))
    with pytest.raises(ValueError, match="height, width"):
        cv.io.encode_jpeg(SMOOTH[..., :2])
    with pytest.raises(ValueError, match="quality"):
        cv.io.encode_jpeg(SMOOTH, quality=101)
    with pytest.raises(cv.errors.InvalidArgumentError, match="dimensions"):
        cv.io.encode_jpeg(np.zeros((0, 4, 3), np.uint8))
