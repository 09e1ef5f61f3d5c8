"""``tf.compat.v1.data``: conveyor.data plus TensorFlow 1's iterator
functions. Without a session they work eagerly: ``get_next()`` returns the
next element (``OutOfRangeError`` at the end), and an initializable
iterator's ``initializer`` (call it or ``.run()`` it) restarts it."""
import types as _types

from conveyor.data import *  # noqa: F401,F403
from conveyor.data import experimental as _experimental
from conveyor.data.dataset import Dataset
# TensorFlow 1's spellings of the readers (tf.compat.v1.data.TFRecordDataset), documented
# with conveyor.data's.
from conveyor.data.readers import FixedLengthRecordDataset, TextLineDataset, TFRecordDataset  # noqa: F401,E501

__all__ = ["make_one_shot_iterator", "make_initializable_iterator", "get_output_types",
           "get_output_shapes", "get_output_classes", "experimental", "Iterator"]


class Iterator:
    """A TensorFlow 1 style iterator over a dataset, without a session."""

    def __init__(self, dataset):
        if not isinstance(dataset, Dataset):
            raise TypeError(f"expected a conveyor dataset, got {type(dataset).__name__}")
        self._dataset = dataset
        self._it = iter(dataset)
        self.initializer = _Initializer(self)

    @property
    def element_spec(self):
        return self._dataset.element_spec

    @property
    def output_types(self):
        return get_output_types(self._dataset)

    @property
    def output_shapes(self):
        return get_output_shapes(self._dataset)

    def get_next(self, name=None):
        """The next element (eager values); ``OutOfRangeError`` after the last."""
        return self._it.get_next()

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._it)


class _Initializer:
    """``iterator.initializer``: restarts the iterator from the first element
    when called or run (what ``sess.run(iterator.initializer)`` did)."""

    def __init__(self, iterator):
        self._iterator = iterator

    def run(self, session=None, feed_dict=None):
        self._iterator._it = iter(self._iterator._dataset)

    __call__ = run


def make_one_shot_iterator(dataset):
    """``tf.compat.v1.data.make_one_shot_iterator``."""
    return Iterator(dataset)


def make_initializable_iterator(dataset, shared_name=None):
    """``tf.compat.v1.data.make_initializable_iterator``: usable at once
    (TensorFlow eager refuses it; TensorFlow 1 needed the initializer run
    first); ``initializer`` restarts it."""
    return Iterator(dataset)


def _map_spec(dataset, fn):
    from conveyor import nest
    return nest.map_structure(fn, dataset.element_spec)


def get_output_types(dataset):
    return _map_spec(dataset, lambda s: s.dtype)


def get_output_shapes(dataset):
    return _map_spec(dataset, lambda s: s.shape)


def get_output_classes(dataset):
    """TensorFlow 1's classes of the components: ``tf.Tensor`` for each
    tensor (a ragged component keeps its spec, as in TensorFlow)."""
    from conveyor.framework.tracing import Tensor
    from conveyor.tensor_spec import TensorSpec
    return _map_spec(dataset, lambda s: Tensor if isinstance(s, TensorSpec) else s)


experimental = _types.SimpleNamespace(**{n: getattr(_experimental, n) for n in
                                         _experimental.__all__})
