"""``conveyor.audio``: ``tf.audio``'s WAV decoder and encoder (16-bit PCM),
eager and traced in ``Dataset.map``."""
from conveyor.ops.audio_ops import decode_wav, encode_wav  # noqa: F401

__all__ = ["decode_wav", "encode_wav"]
