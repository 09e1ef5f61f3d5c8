"""The pipeline users start from (issue: files and records), end to end on real files:

    Dataset.from_tensor_slices(files)
      .interleave(lambda f: TFRecordDataset(f).map(parse, num_parallel_calls=AUTOTUNE),
                  cycle_length=4, num_parallel_calls=AUTOTUNE, deterministic=False)
      .shuffle(...).batch(32).prefetch(AUTOTUNE)
"""
import numpy as np
import pytest

import conveyor as tf  # the point: tf.data code, unchanged

N_FILES, PER_FILE = 6, 50


@pytest.fixture
def record_files(tmp_path):
    files = []
    for f in range(N_FILES):
        path = str(tmp_path / f"part-{f}.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            for i in range(PER_FILE):
                uid = f * PER_FILE + i
                writer.write(tf.io.serialize_example({
                    "id": uid,
                    "image": np.full((4, 4), uid % 255, np.uint8).tobytes(),
                    "label": float(uid % 10),
                }))
        files.append(path)
    return files


FEATURES = {
    "id": tf.io.FixedLenFeature([], tf.int64),
    "image": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.float32),
}


def parse(serialized):
    example = tf.io.parse_single_example(serialized, FEATURES)
    image = np.frombuffer(example["image"], np.uint8).reshape(4, 4)
    return image, example["id"], example["label"]


@pytest.mark.parametrize("deterministic", [False, True])
def test_the_standard_pipeline_runs_and_loses_nothing(record_files, deterministic):
    ds = (tf.data.Dataset.from_tensor_slices(record_files)
          .interleave(lambda f: tf.data.TFRecordDataset(f).map(parse,
                                                               num_parallel_calls=tf.data.AUTOTUNE),
                      cycle_length=4, num_parallel_calls=tf.data.AUTOTUNE,
                      deterministic=deterministic)
          .shuffle(64, seed=1)
          .batch(32)
          .prefetch(tf.data.AUTOTUNE))
    ids = []
    for images, uid, label in ds:
        assert images.dtype == np.uint8 and images.shape[1:] == (4, 4)
        assert uid.dtype == np.int64 and label.dtype == np.float32
        np.testing.assert_array_equal(images[:, 0, 0], uid % 255)
        np.testing.assert_array_equal(label, (uid % 10).astype(np.float32))
        ids.extend(uid.tolist())
    assert sorted(ids) == list(range(N_FILES * PER_FILE))


def test_deterministic_parallel_equals_sequential(record_files):
    def build(parallel):
        return (tf.data.Dataset.from_tensor_slices(record_files)
                .interleave(lambda f: tf.data.TFRecordDataset(f).map(parse), cycle_length=4,
                            num_parallel_calls=parallel)
                .shuffle(64, seed=3).batch(32))
    seq = [b[1].tolist() for b in build(None)]
    par = [b[1].tolist() for b in build(tf.data.AUTOTUNE).prefetch(2)]
    assert seq == par
