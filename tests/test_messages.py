"""Messages a newcomer meets first: they say what happened and where, in plain words."""
import os
import warnings

import numpy as np
import pytest

import conveyor as tf
from conveyor.framework import tracing


def test_branching_on_a_tensor_suggests_where_and_cond():
    def pick(x):
        if x == 3:
            return x
        return x * 2

    tracing._warned.discard(pick.__code__)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = tf.data.Dataset.range(5).map(pick)
    messages = [str(w.message) for w in caught if issubclass(w.category, tracing.TracingWarning)]
    assert len(messages) == 1, messages
    text = messages[0]
    assert "tf.where" in text and "tf.cond" in text and "run natively" in text
    assert "bool()" not in text and "Elementwise" not in text
    assert [int(v) for v in ds] == [0, 2, 4, 3, 8]  # it still runs, in Python


def test_where_and_cond_run_natively():
    for fn in (lambda x: tf.where(x == 3, x, x * 2),
               lambda x: tf.cond(x == 3, lambda: x, lambda: x * 2)):
        with warnings.catch_warnings():
            warnings.simplefilter("error", tracing.TracingWarning)
            ds = tf.data.Dataset.range(5).map(fn)
        assert "native" in repr(ds)
        assert [int(v) for v in ds] == [0, 2, 4, 3, 8]


def test_a_batch_of_strings_prints_as_numpy_prints_it():
    (batch,) = list(tf.data.Dataset.from_tensor_slices([b"goat", b"dog", b"cat"]).batch(3))
    assert str(batch) == str(np.array([b"goat", b"dog", b"cat"], dtype=object))
    assert str(batch) == "[b'goat' b'dog' b'cat']"
    assert repr(batch) == "EagerTensor([b'goat', b'dog', b'cat'], dtype=object)"
    assert repr(batch[0]) == "EagerTensor(b'goat', dtype=object)"  # one string: a scalar tensor
    nested = tf.constant([[b"a", b"b"], [b"c", b"d"]])
    assert "EagerTensor(b" not in repr(nested) and "EagerTensor(b" not in str(nested)
    assert repr(tf.constant([1, 2, 3])) == "EagerTensor([1, 2, 3], dtype=int32)"  # numbers as before


@pytest.mark.parametrize("parallel", [None, 2])
def test_an_error_in_a_python_map_names_the_element(parallel):
    def boom(v):
        if v == 3:
            raise KeyError("no label for this one")
        return v

    ds = tf.data.Dataset.range(6).map(lambda x: tf.numpy_function(boom, [x], tf.int64),
                                      num_parallel_calls=parallel)
    with pytest.raises(KeyError) as info:
        list(ds)
    notes = getattr(info.value, "__notes__", [])
    assert any("Dataset.map(" in n and "(element 3)" in n for n in notes), notes


@pytest.mark.parametrize("parallel", [None, 2])
def test_a_missing_file_inside_an_interleave_names_the_stage(tmp_path, parallel):
    gone = str(tmp_path / "gone.tfrecord")
    files = tf.data.Dataset.from_tensor_slices([gone])
    ds = files.interleave(lambda f: tf.data.TFRecordDataset(f), cycle_length=2,
                          num_parallel_calls=parallel)
    with pytest.raises(tf.errors.NotFoundError) as info:
        list(ds)
    text = str(info.value)
    assert "TFRecordDataset inside interleave" in text and os.path.basename(gone) in text
