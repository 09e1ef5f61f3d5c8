"""tf.data's iterator, ``iter(dataset)``: the engine's Iterator
(csrc/python/iterator_type.c: ``next()``, ``close()``, ``stats()``) with the
methods that are plain Python, as tf.data's ``OwnedIterator`` is Python over
its ops: ``get_next`` and exact resume (conveyor.data.checkpoint)."""
from conveyor import _engine, errors
from conveyor.data import checkpoint

_END = object()


class OwnedIterator(_engine.Iterator):
    """An iterator over a conveyor dataset; yields NumPy arrays."""
    __slots__ = ()

    def get_next(self):
        """The next element; raises conveyor.errors.OutOfRangeError at the end (as tf.data's)."""
        element = next(self, _END)
        if element is _END:
            raise errors.OutOfRangeError("End of sequence")
        return element

    def save(self):
        """save() -> bytes: this iterator's position (after the last element returned), to resume
        from with restore() on a new iterator of the same pipeline, in this or another process."""
        return checkpoint.save(self, self._owner)

    def restore(self, data):
        """restore(data): continue from a position that save() returned (on a new iterator of the
        same pipeline, before its first element)."""
        return checkpoint.restore(self, self._owner, data)

    def state_dict(self):
        """state_dict() -> dict: save() as a dict for a PyTorch checkpoint (torchdata's naming)."""
        return checkpoint.state_dict(self, self._owner)

    def load_state_dict(self, state):
        """load_state_dict(state): restore() from what state_dict() returned."""
        return checkpoint.load_state_dict(self, self._owner, state)


_engine.set_iterator_type(OwnedIterator)
