"""Sequence pipelines in the style of seqio's and T5's preprocessors
(trim, pad, append EOS, bucket by length, padded batches with padding values,
dense_to_ragged_batch, packing two examples into one row): our own code,
the same calls."""
import numpy as np

from tf_snippets._compare import to_numpy


def _token_dataset(tf, n=12, seed=3):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 14, n)
    seqs = [rng.integers(3, 50, int(k)).astype(np.int32) for k in lengths]

    def gen():
        for s in seqs:
            yield {"inputs": s, "targets": s[::-1].copy()}
    spec = {"inputs": tf.TensorSpec([None], tf.int32), "targets": tf.TensorSpec([None], tf.int32)}
    return tf.data.Dataset.from_generator(gen, output_signature=spec)


def snippet_trim_and_append_eos(tf, tmp_path):
    eos_id = 1
    sequence_length = {"inputs": 8, "targets": 6}

    def trim_and_append_eos(features):
        out = {}
        for k, v in features.items():
            v = v[:sequence_length[k] - 1]
            out[k] = tf.concat([v, [eos_id]], axis=0)
        return out

    ds = _token_dataset(tf).map(trim_and_append_eos, num_parallel_calls=tf.data.AUTOTUNE)
    return to_numpy(list(ds)), str(ds.element_spec)


def snippet_trim_and_pad_fixed_length(tf, tmp_path):
    length = 10

    def trim_and_pad(features):
        out = {}
        for k, v in features.items():
            v = v[:length]
            out[k] = tf.pad(v, [[0, length - tf.shape(v)[0]]], constant_values=0)
            out[k + "_mask"] = tf.cast(tf.not_equal(out[k], 0), tf.int32)
        return out

    ds = _token_dataset(tf).map(trim_and_pad).batch(4)
    return to_numpy(list(ds))


def snippet_padded_batch_padding_values(tf, tmp_path):
    ds = _token_dataset(tf).padded_batch(
        5, padded_shapes={"inputs": [16], "targets": [None]},
        padding_values={"inputs": -1, "targets": 0}, drop_remainder=False)
    return to_numpy(list(ds)), str(ds.element_spec)


def snippet_bucket_by_sequence_length_tokens(tf, tmp_path):
    ds = _token_dataset(tf, n=30, seed=5).map(lambda f: (f["inputs"], tf.size(f["inputs"])))
    ds = ds.bucket_by_sequence_length(
        element_length_func=lambda tokens, n: n,
        bucket_boundaries=[4, 8, 12],
        bucket_batch_sizes=[4, 3, 2, 2],
        padded_shapes=([None], []),
        padding_values=(np.int32(0), np.int32(-1)),
        pad_to_bucket_boundary=False)
    return to_numpy(list(ds))


def snippet_dense_to_ragged_batch_tokens(tf, tmp_path):
    ds = _token_dataset(tf).map(lambda f: f["inputs"])
    ds = ds.apply(tf.data.experimental.dense_to_ragged_batch(batch_size=5))
    out = []
    for batch in ds:
        out.append((batch.to_list(), batch.row_lengths().numpy()))
    return to_numpy(out)


def snippet_pack_two_into_one_row(tf, tmp_path):
    """Pairs of examples packed into one fixed row with segment ids and
    positions (a simple form of seqio's packing)."""
    length = 20

    def pack(a, b):
        la, lb = tf.shape(a)[0], tf.shape(b)[0]
        tokens = tf.concat([a, b], 0)[:length]
        segments = tf.concat([tf.ones([la], tf.int32), 2 * tf.ones([lb], tf.int32)], 0)[:length]
        positions = tf.concat([tf.range(la), tf.range(lb)], 0)[:length]
        pad = length - tf.shape(tokens)[0]
        return {"tokens": tf.pad(tokens, [[0, pad]]),
                "segment_ids": tf.pad(segments, [[0, pad]]),
                "positions": tf.pad(positions, [[0, pad]])}

    ds = _token_dataset(tf).map(lambda f: f["inputs"])
    paired = tf.data.Dataset.zip((ds.shard(2, 0), ds.shard(2, 1))).map(pack)
    return to_numpy(list(paired))
