#!/usr/bin/env python3
"""Train a small MLP in plain JAX on batches from a conveyor pipeline.

What it shows: a tf.data pipeline (``import conveyor as tf``) feeding a JAX
training loop with no framework on top: ``jax.grad`` and SGD by hand, one
``jax.jit``-compiled step. The data is a synthetic classification problem
(points around class centres, pushed through a fixed nonlinearity, so a
linear model is not enough) held in NumPy arrays:

    from_tensor_slices((features, labels)) -> shuffle (new order each epoch)
        -> batch(drop_remainder) -> map(standardise, one_hot) -> prefetch(AUTOTUNE)

Each batch arrives as NumPy arrays; ``jnp.asarray`` hands it to JAX (on an
accelerator that is the host-to-device copy). ``--dlpack`` uses
``jax.dlpack.from_dlpack(array)`` instead, which on CPU shares the array's
memory rather than copying it.

Run it:

    python examples/jax_mlp.py
    python examples/jax_mlp.py --epochs 2 --samples 2000 --batch-size 64 --dlpack

Needs JAX (CPU is fine); no flax or optax.
"""
import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import conveyor as tf


def make_data(n, features, classes, seed=0):
    """n points in `features` dimensions, `classes` classes, not linearly separable:
    two clusters per class, overlapping, pushed through a fixed nonlinear warp."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 1.0, (2 * classes, features))
    cluster = rng.integers(0, 2 * classes, n)
    x = centres[cluster] + rng.normal(0, 1.0, (n, features))
    mix = rng.normal(0, 1, (features, features)) / np.sqrt(features)
    x = np.tanh(x @ mix) * 3 + x ** 2 / 4
    return x.astype(np.float32), (cluster % classes).astype(np.int64)


def pipeline(x, y, batch_size, classes, mean, std, training, seed=0):
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if training:
        ds = ds.shuffle(len(x), seed=seed, reshuffle_each_iteration=True)
    ds = ds.batch(batch_size, drop_remainder=training)
    # a batched map: one call per batch, traced into a native program
    ds = ds.map(lambda f, l: ((f - mean) / std, tf.one_hot(l, classes)),
                num_parallel_calls=tf.data.AUTOTUNE)
    return ds.prefetch(tf.data.AUTOTUNE)


def init_params(key, sizes):
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        key, sub = jax.random.split(key)
        params.append((jax.random.normal(sub, (n_in, n_out)) * jnp.sqrt(2.0 / n_in),
                       jnp.zeros(n_out)))
    return params


def forward(params, x):
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def loss_fn(params, x, y_onehot):
    logits = forward(params, x)
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y_onehot, axis=-1))


@jax.jit
def train_step(params, x, y_onehot, lr):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y_onehot)
    params = jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
    return params, loss


@jax.jit
def count_correct(params, x, y_onehot):
    return jnp.sum(jnp.argmax(forward(params, x), -1) == jnp.argmax(y_onehot, -1))


def evaluate(params, ds, to_jax):
    correct = total = 0
    for x, y in ds:
        correct += int(count_correct(params, to_jax(x), to_jax(y)))
        total += len(x)
    return correct / total


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--samples", type=int, default=20000, help="training points")
    p.add_argument("--features", type=int, default=16)
    p.add_argument("--classes", type=int, default=8)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--dlpack", action="store_true",
                   help="hand batches to JAX with jax.dlpack.from_dlpack, not jnp.asarray")
    args = p.parse_args(argv)
    to_jax = jax.dlpack.from_dlpack if args.dlpack else jnp.asarray

    n_test = max(args.samples // 5, args.classes)
    x, y = make_data(args.samples + n_test, args.features, args.classes)
    x_train, y_train, x_test, y_test = x[n_test:], y[n_test:], x[:n_test], y[:n_test]
    mean, std = x_train.mean(0), x_train.std(0) + 1e-6  # statistics of the training split
    train_ds = pipeline(x_train, y_train, args.batch_size, args.classes, mean, std, True)
    test_ds = pipeline(x_test, y_test, 1024, args.classes, mean, std, False)

    params = init_params(jax.random.PRNGKey(0),
                         [args.features, args.hidden, args.hidden, args.classes])
    print(f"MLP {args.features}-{args.hidden}-{args.hidden}-{args.classes}, "
          f"{len(x_train)} training points, batch {args.batch_size}")
    print(f"epoch  0  test accuracy {evaluate(params, test_ds, to_jax):.3f}  "
          f"(chance {1 / args.classes:.3f})")
    for epoch in range(1, args.epochs + 1):
        start, losses = time.perf_counter(), []
        for x, y in train_ds:  # a new shuffle order every epoch
            params, loss = train_step(params, to_jax(x), to_jax(y), args.lr)
            losses.append(loss)
        mean_loss = float(jnp.mean(jnp.stack(losses)))
        seconds = time.perf_counter() - start
        # (epoch 1's steps/s includes compiling train_step)
        print(f"epoch {epoch:2d}  loss {mean_loss:.4f}  test accuracy "
              f"{evaluate(params, test_ds, to_jax):.3f}  ({len(losses) / seconds:.0f} steps/s)")


if __name__ == "__main__":
    main()
