"""JAX hand-off: a conveyor pipeline's elements as ``jax.Array`` values.

::

    import conveyor as tf
    import conveyor.jax

    ds = conveyor.jax.shard_for_process(make_dataset())   # this process's shard
    for batch in conveyor.jax.as_jax_iterator(ds.batch(128).prefetch(tf.data.AUTOTUNE)):
        state = train_step(state, batch)

Numeric and boolean arrays cross by DLPack (``jax.numpy.from_dlpack``: on the
CPU the ``jax.Array`` uses the engine's buffer without a copy); where DLPack
cannot take an array (a dtype or layout it does not support) it is copied
with ``jax.numpy.asarray``. JAX's dtype rules apply: without
``jax_enable_x64``, 64-bit values become 32-bit, as ``jnp.asarray`` makes
them. Strings stay ``bytes`` (lists of ``bytes`` for string tensors); the
element structure (tuples, dicts, namedtuples) is kept. See
docs/frameworks.md.
"""
import numpy as np

try:
    import jax as _jax
    import jax.numpy as _jnp
except ImportError as _e:  # pragma: no cover - depends on the environment
    raise ImportError("conveyor.jax needs JAX, which is not installed: "
                      "pip install conveyor[jax]") from _e

from conveyor import nest
from conveyor import sharding as _sharding

__all__ = ["as_jax_iterator", "to_jax", "shard_for_process"]


def _array(x):
    try:
        return _jnp.from_dlpack(x)
    except Exception:  # noqa: BLE001 - dtype, strides or alignment DLPack refuses
        return _jnp.asarray(x)


def _leaf(x, sharding):
    if isinstance(x, np.generic):
        if isinstance(x, (np.bytes_, np.str_)):
            return x.item()
        x = np.asarray(x)
    if isinstance(x, np.ndarray):
        if x.dtype.kind in "OSU":
            return x.tolist()
        if sharding is not None:
            return _jax.make_array_from_process_local_data(sharding, x)
        return _array(x)
    return x


def to_jax(element, sharding=None):
    """One element (NumPy arrays, NumPy scalars and ``bytes``, as
    ``Dataset.as_numpy_iterator()`` yields) with ``jax.Array`` leaves.

    With `sharding` (a ``jax.sharding.Sharding``, e.g. a ``NamedSharding``
    over the batch axis of a mesh), each array is this process's part of a
    global array: ``jax.make_array_from_process_local_data(sharding, array)``.
    """
    return nest.map_structure(lambda x: _leaf(x, sharding), element)


def as_jax_iterator(dataset, sharding=None):
    """An iterator over `dataset`'s elements with ``jax.Array`` leaves (see
    :func:`to_jax`), as ``Dataset.as_numpy_iterator()`` is for NumPy. The
    pipeline runs ahead on conveyor's threads; end with ``prefetch`` to
    overlap it with the training step."""
    for element in dataset.as_numpy_iterator():
        yield to_jax(element, sharding)


def shard_for_process(dataset, *, policy="auto", equal=None, num_elements=None):
    """This JAX process's shard of `dataset`: ``conveyor.sharding.shard`` with
    ``num_shards=jax.process_count()`` and ``index=jax.process_index()``
    (one process: the dataset as it is, or equalized if `equal`). `policy`,
    `equal` and `num_elements` are those of ``conveyor.sharding.shard``: use
    ``equal="truncate"`` or ``"pad"`` so that every process runs the same
    number of steps, as a collective across processes needs."""
    return _sharding.shard(dataset, int(_jax.process_count()), int(_jax.process_index()),
                           policy=policy, equal=equal, num_elements=num_elements)
