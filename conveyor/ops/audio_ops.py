"""``tf.audio``'s ops: 16-bit PCM WAV files to float32 audio and back
(native ops DecodeWav and EncodeWav, csrc/ops/decode_wav.c and encode_wav.c),
eagerly and traced in ``Dataset.map``."""
from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor.framework.eager import as_eager
from conveyor.framework.tracing import Tensor, apply, convert, dtype_of, op_error, static_shape

__all__ = ["decode_wav", "encode_wav"]


def _int_attr(value, what):
    if isinstance(value, Tensor):
        raise op_error(TypeError, f"conveyor needs a Python int for `{what}`, not a tensor")
    return int(value)


def decode_wav(contents, desired_channels=-1, desired_samples=-1, name=None):
    """Decode a 16-bit PCM WAV file (``tf.audio.decode_wav``).

    Returns ``(audio, sample_rate)``: float32 ``audio`` of shape ``[samples,
    channels]`` with values in [-1.0, 1.0) (each sample / 32768), and the
    int32 scalar ``sample_rate``. `desired_channels` (-1: the file's) keeps
    the first channels or repeats the last one; `desired_samples` (-1: all)
    truncates or pads with zeros.

    Raises ``InvalidArgumentError`` for data that is not such a file.
    """
    desired_channels = _int_attr(desired_channels, "desired_channels")
    desired_samples = _int_attr(desired_samples, "desired_samples")
    x = convert(contents, dtype=_dtypes.string, name="contents")
    shape = static_shape(x)
    if shape is not None and len(shape) != 0:
        raise op_error(_errors.InvalidArgumentError,
                       f"contents must be scalar, got shape {list(shape)}")
    samples = None if desired_samples < 0 else desired_samples
    channels = None if desired_channels < 0 else desired_channels
    audio, rate = apply("DecodeWav", [x], [((samples, channels), _dtypes.float32),
                                           ((), _dtypes.int32)],
                        attrs={"desired_channels": desired_channels,
                               "desired_samples": desired_samples})
    return audio, rate


def encode_wav(audio, sample_rate, name=None):
    """Encode float32 ``audio`` of shape ``[samples, channels]`` as a 16-bit
    PCM WAV file, a scalar string (``tf.audio.encode_wav``): each value is
    scaled by 32768, rounded and clamped to int16."""
    a = convert(audio, dtype=_dtypes.float32, name="audio")
    shape = static_shape(a)
    if shape is not None and len(shape) != 2:
        raise op_error(_errors.InvalidArgumentError, f"audio must be 2-dimensional{list(shape)}")
    rate = convert(sample_rate, dtype=_dtypes.int32, name="sample_rate")
    rshape = static_shape(rate)
    if rshape is not None and len(rshape) != 0:
        raise op_error(_errors.InvalidArgumentError,
                       f"Input sample_rate should be a scalar tensor, got {list(rshape)} instead.")
    result = apply("EncodeWav", [a, rate], [((), _dtypes.string)])
    # Eagerly a scalar string tensor with numpy(), as TensorFlow returns.
    return as_eager(result) if isinstance(result, bytes) else result
