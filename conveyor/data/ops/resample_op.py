"""``Dataset.rejection_resample`` (and ``tf.data.experimental.rejection_resample``):
resample a dataset towards a target class distribution, built as tf.data
builds it from other datasets.

Each element's class comes from ``class_func``. An element of class i is
kept with probability ``a_i``, from the ratios ``r_i = target_i / initial_i``:
with a known `initial_dist`, a fraction ``m = min(r)`` of the output is drawn
from the input unfiltered and the rest from the filtered input, with
``a_i = (r_i - m) / (max(r) - m)`` (tf.data's mixing, so that as few
elements as possible are thrown away); without it, the initial distribution
is estimated from the classes seen so far (in batches of 32, as tf.data) and
``a_i = r_i / max(r)``. Outputs are ``(class, element)`` pairs; the mixed
output ends when either side does, as tf.data's.

The accept draws are conveyor's per-element random stream (seeded by
`seed`), so the kept elements are reproducible but not tf.data's
(docs/differences.md); the structure, dtypes, mixing and proportions are.
"""
import warnings

import numpy as np

from conveyor.ops import array_ops, math_ops
from conveyor import dtypes as _dtypes
from conveyor import random as _random
from conveyor.data.ops.dataset_base import Dataset

__all__ = ["rejection_resample"]

_ESTIMATION_BATCH = 32


def _probabilities(values, what):
    probs = np.asarray(values, dtype=np.float32)
    if probs.ndim != 1 or not len(probs):
        raise ValueError(f"`{what}` must be a non-empty vector of probabilities, got {values!r}")
    if (probs < 0).any():
        raise ValueError(f"`{what}` must not have negative entries, got {values!r}")
    return probs


def _mixing(initial, target):
    """(acceptance probabilities, probability of drawing unfiltered)."""
    ratio = np.where(initial > 0, target / np.where(initial > 0, initial, 1), 0).astype(np.float32)
    high, low = ratio.max(), ratio.min()
    if high == low:
        return np.zeros_like(ratio), np.float32(low)
    return ((ratio - low) / (high - low)).astype(np.float32), np.float32(low)


def _warn_on_large_rejection(accept, initial):
    rejected = float(np.sum(initial * (1 - accept)))
    if rejected > 0.5:
        warnings.warn(f"rejection_resample: the proportion of examples rejected by the sampler "
                      f"is high ({rejected:.2f}); consider a target closer to the data's "
                      f"distribution", RuntimeWarning, stacklevel=4)


def rejection_resample(dataset, class_func, target_dist, initial_dist=None, seed=None):
    """``dataset.rejection_resample(...)``; see the module's doc."""
    target = _probabilities(target_dist, "target_dist")
    classes = dataset.map(class_func)
    spec = classes.element_spec
    if not (_dtypes.as_dtype(spec.dtype).is_integer and spec.shape.rank in (0, None)):
        raise ValueError(f"`class_func` must return a scalar integer tensor, got {spec}.")

    if initial_dist is not None:
        initial = _probabilities(initial_dist, "initial_dist")
        if initial.shape != target.shape:
            raise ValueError(f"`initial_dist` and `target_dist` must have the same length, got "
                             f"{len(initial)} and {len(target)}.")
        accept, prob_of_original = _mixing(initial, target)
        _warn_on_large_rejection(accept, initial)
        accept_ds = Dataset.from_tensors(accept).repeat()
    else:
        prob_of_original = np.float32(0)
        num_classes = len(target)

        def estimate(seen, batch):
            counts = seen + math_ops.reduce_sum(
                array_ops.one_hot(math_ops.cast(batch, _dtypes.int64), num_classes,
                                  dtype=_dtypes.int64),
                axis=0)
            dist = math_ops.cast(counts, _dtypes.float32) / math_ops.cast(
                math_ops.reduce_sum(counts), _dtypes.float32)
            ratio = array_ops.where(dist > 0, target / array_ops.where(dist > 0, dist, 1.0),
                                    array_ops.zeros_like(dist))
            probs = ratio / math_ops.reduce_max(ratio)
            rows = array_ops.expand_dims(probs, 0) + array_ops.zeros_like(
                math_ops.cast(array_ops.expand_dims(batch, 1), _dtypes.float32))
            return counts, rows
        accept_ds = classes.batch(_ESTIMATION_BATCH).scan(
            np.zeros([num_classes], np.int64), estimate).unbatch()

    def keep(accept_probs, element):
        element_class = class_func(*element) if type(element) is tuple else class_func(element)
        p = array_ops.gather(accept_probs, element_class)
        return _random.uniform([], seed=seed) < p

    filtered = Dataset.zip((accept_ds, dataset)).filter(keep).map(
        lambda accept_probs, element: (
            class_func(*element) if type(element) is tuple else class_func(element), element))
    if prob_of_original >= 1:
        return Dataset.zip((classes, dataset))
    if prob_of_original <= 0:
        return filtered
    weights = np.array([prob_of_original, 1 - prob_of_original], np.float32)
    return Dataset.sample_from_datasets([Dataset.zip((classes, dataset)), filtered],
                                        weights=weights, seed=seed, stop_on_empty_dataset=True)
