"""Augmentation- and feature-style input pipelines (our own code, written the
way RandAugment/AutoAugment-style image policies and JAX/Flax input
pipelines use tf.* ops): seeded with the stateless random ops, so the values
are comparable with TensorFlow's."""
import numpy as np

from tf_snippets._compare import to_numpy

_YIQ = [[0.299, 0.587, 0.114], [0.596, -0.274, -0.322], [0.211, -0.523, 0.312]]


def _images():
    return np.random.default_rng(5).integers(0, 256, size=(6, 8, 8, 3)).astype(np.uint8)


def snippet_policy_with_switch_case(tf, tmp_path):
    tf.config.experimental.set_visible_devices([], "GPU")  # the JAX/Flax preamble

    def equalize(image):
        channel = tf.cast(image[..., 0], tf.int32)
        hist = tf.histogram_fixed_width(channel, [0, 255], nbins=256)
        cdf = tf.cumsum(hist)
        lut = tf.clip_by_value(cdf * 255 // tf.maximum(cdf[-1], 1), 0, 255)
        out = tf.cast(tf.gather(lut, channel), tf.float32)
        return tf.stack([out, out, out], axis=-1)

    def color(image):
        flat = tf.reshape(tf.cast(image, tf.float32) / 255.0, [-1, 3])
        yiq = tf.matmul(flat, tf.constant(_YIQ), transpose_b=True)
        return tf.reshape(yiq, [8, 8, 3]) * 255.0

    def noise(image, seed):
        jitter = tf.random.stateless_truncated_normal([8, 8, 3], seed=seed, stddev=4.0)
        return tf.cast(image, tf.float32) + jitter

    def augment(i, image):
        seed = tf.stack([i, i * 7 + 1])
        choice = tf.random.stateless_categorical(tf.math.log([[0.4, 0.3, 0.3]]), 1, seed=seed)
        which = tf.cast(choice[0, 0], tf.int32)
        out = tf.switch_case(which, [lambda: equalize(image), lambda: color(image),
                                     lambda: noise(image, seed)])
        return which, tf.cast(tf.round(tf.clip_by_value(out, 0.0, 255.0)), tf.uint8)

    ds = tf.data.Dataset.from_tensor_slices(_images()).enumerate().map(
        augment, num_parallel_calls=tf.data.AUTOTUNE).batch(3)
    return to_numpy(list(ds))


def snippet_features_jax_style(tf, tmp_path):
    tf.config.experimental.set_visible_devices([], "GPU")
    rng = np.random.default_rng(11)
    positions = rng.uniform(0, 100, size=(5, 6)).astype(np.float32)
    labels = rng.integers(0, 4, size=(5, 6)).astype(np.int32)

    def features(pos, label):
        angles = pos / tf.pow(10000.0, tf.linspace(0.0, 1.0, 6))
        embedding = tf.concat([tf.sin(angles), tf.cos(angles)], axis=0)
        embedding = tf.math.l2_normalize(embedding, axis=0)
        standardized = (pos - tf.reduce_mean(pos)) / tf.math.reduce_std(pos)
        order = tf.argsort(pos, direction="DESCENDING")
        buckets = tf.searchsorted(tf.constant([25.0, 50.0, 75.0]), pos, side="right")
        vocab, ids = tf.unique(label)
        return {"embedding": embedding, "standardized": tf.sigmoid(standardized),
                "top": tf.gather(pos, order[:3]), "buckets": buckets,
                "vocab_size": tf.size(vocab), "ids": ids,
                "logsumexp": tf.reduce_logsumexp(pos / 50.0)}

    ds = tf.data.Dataset.from_tensor_slices((positions, labels)).map(features)
    return to_numpy(list(ds))
