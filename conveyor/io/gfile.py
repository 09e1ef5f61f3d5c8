"""``conveyor.io.gfile``: the parts of ``tf.io.gfile`` that apply to local files."""
__all__ = []
