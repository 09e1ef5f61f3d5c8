"""tf.data's iterator, ``iter(dataset)``: the engine's Iterator
(csrc/python/iterator_type.c: ``next()``, ``close()``, ``stats()``) with the
methods that are plain Python, as tf.data's ``OwnedIterator`` is Python over
its ops: ``get_next`` and exact resume (conveyor.data.checkpoint)."""
import weakref

from conveyor import _engine, errors
from conveyor.data import checkpoint

_END = object()

# iter(dataset) -> a weak reference to the dataset, for element_spec after
# the end (the iterator holds its dataset, ``_owner``, only while it runs).
# Weak keys, so an entry goes with its iterator; a weak value, as a dataset
# may reach its iterator through a map function (a strong one in this global
# table would keep that cycle alive); the spec is derived only when asked
# (deriving it may run a Python map function on a first element).
_DATASETS = weakref.WeakKeyDictionary()


def remember_dataset(iterator, dataset):
    """Record that `iterator` is ``iter(dataset)``."""
    _DATASETS[iterator] = weakref.ref(dataset)


def element_spec_of(iterator):
    """The element spec of the dataset `iterator` came from, or None for an
    object that is not such an iterator (or whose dataset is gone)."""
    dataset = getattr(iterator, "_owner", None)
    if not hasattr(dataset, "element_spec"):  # finished: the owner is a fingerprint
        try:
            ref = _DATASETS.get(iterator)
        except TypeError:  # not weakly referenceable: none of ours
            return None
        dataset = None if ref is None else ref()
    return None if dataset is None else dataset.element_spec


class OwnedIterator(_engine.Iterator):
    """An iterator over a conveyor dataset; yields NumPy arrays."""
    __slots__ = ()

    @property
    def element_spec(self):
        """The type specification of an element of this iterator (tf.data's
        ``Iterator.element_spec``): its dataset's ``element_spec``."""
        spec = element_spec_of(self)
        if spec is None:
            raise errors.FailedPreconditionError(
                "element_spec: this iterator has finished and its dataset is gone; "
                "read element_spec from the dataset")
        return spec

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
