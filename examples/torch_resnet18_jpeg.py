#!/usr/bin/env python3
"""Train a ResNet-18 in PyTorch on a folder of JPEG images read by conveyor.

What it shows: the classic tf.data image pipeline, written with
``import conveyor as tf`` and feeding a PyTorch training loop:

    list_files -> map(read_file, decode_jpeg, resize, random flip, normalise,
                      label from the folder name)
               -> shuffle -> batch -> prefetch(AUTOTUNE)

Each batch arrives as NumPy arrays and becomes a torch tensor with
``torch.from_numpy`` (no copy: the tensor shares the array's memory). The
loop prints the loss, images/s and the fraction of time it waited for input.

Run it:

    python examples/torch_resnet18_jpeg.py                     # generated data
    python examples/torch_resnet18_jpeg.py --data /path/to/images --steps 200
    python examples/torch_resnet18_jpeg.py --steps 2 --batch-size 4 --image-size 32 --width 8

On a machine with few cores, ``--torch-threads 1`` can be much faster: torch's
intra-op threads and the pipeline's worker threads share the cores, and
oversubscribed torch threads spin waiting for each other.

``--data`` is a folder with one subfolder of ``.jpg``/``.jpeg`` files per class
(``data/cat/1.jpg``, ``data/dog/2.jpg``, ...). Without it the script writes a
small generated data set (coloured shapes, one class per shape) to a
temporary folder. ResNet-18 is written out below in plain ``torch.nn``, so
torchvision is not needed. Needs PyTorch (CPU is fine).
"""
import argparse
import os
import tempfile
import time

import numpy as np
import torch
from torch import nn

import conveyor as tf

MEAN, STD = 0.45, 0.25


# ---- ResNet-18 in plain torch.nn -------------------------------------------------

class BasicBlock(nn.Module):
    """Two 3x3 convolutions with a shortcut (a 1x1 projection when the shape changes)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + self.shortcut(x))


class ResNet18(nn.Module):
    """ResNet-18 (He et al., 2015): a 7x7 stem, four stages of two basic blocks, a linear head.

    width=64 is the standard network; a smaller width keeps the layers and
    shrinks the channels (8 makes a quick smoke test)."""

    def __init__(self, num_classes, width=64):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 7, 2, 3, bias=False),
                                  nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        layers, cin = [], width
        for mult, stride in [(1, 1), (2, 2), (4, 2), (8, 2)]:
            cout = width * mult
            layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(self.pool(x), 1))


# ---- data -------------------------------------------------------------------------

def make_dataset(folder, classes=("circle", "square", "stripes"), per_class=16, size=64, seed=0):
    """Write per_class JPEGs of each class into folder/<class>/ (conveyor's JPEG encoder)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:size, 0:size].astype(np.float32) / size
    for name in classes:
        os.makedirs(os.path.join(folder, name), exist_ok=True)
        for i in range(per_class):
            background = rng.uniform(0, 120, 3)
            colour = rng.uniform(130, 255, 3)
            cy, cx, r = rng.uniform(0.3, 0.7, 3) * [1, 1, 0.5]
            if name == "circle":
                mask = (y - cy) ** 2 + (x - cx) ** 2 < r * r
            elif name == "square":
                mask = (abs(y - cy) < r) & (abs(x - cx) < r)
            else:
                mask = np.sin(x * rng.uniform(15, 30)) > 0
            image = np.where(mask[..., None], colour, background)
            image = image + rng.normal(0, 8, image.shape)
            image = np.clip(image, 0, 255).astype(np.uint8)
            with open(os.path.join(folder, name, f"{i:04d}.jpg"), "wb") as f:
                f.write(tf.io.encode_jpeg(image, quality=90).numpy())


def input_pipeline(folder, batch_size, image_size, seed=0):
    """The tf.data pipeline, unchanged: it would also run with `import tensorflow as tf`."""
    classes = sorted(d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d)))
    class_names = np.array([c.encode() for c in classes])
    patterns = [os.path.join(folder, "*", "*.jpg"), os.path.join(folder, "*", "*.jpeg")]
    patterns = [p for p in patterns if tf.io.gfile.glob(p)]

    def load(path):
        parts = tf.strings.split(path, os.sep)
        label = tf.argmax(tf.cast(parts[-2] == class_names, tf.int32))
        image = tf.io.decode_jpeg(tf.io.read_file(path), channels=3)
        image = tf.image.resize(image, [image_size, image_size])
        image = tf.image.random_flip_left_right(image)
        image = (image / 255.0 - MEAN) / STD
        return tf.transpose(image, [2, 0, 1]), label  # channels first, as torch wants

    ds = tf.data.Dataset.list_files(patterns, shuffle=True, seed=seed)
    ds = ds.map(load, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.shuffle(256, seed=seed).repeat()
    ds = ds.batch(batch_size, drop_remainder=True)
    return ds.prefetch(tf.data.AUTOTUNE), classes


# ---- training ---------------------------------------------------------------------

def train(folder, steps, batch_size, image_size, lr, log_every, width=64):
    torch.manual_seed(0)
    tf.random.set_seed(0)  # the random flips: the same ones in every run
    ds, classes = input_pipeline(folder, batch_size, image_size)
    model = ResNet18(len(classes), width)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    print(f"classes: {classes}; ResNet-18, {sum(p.numel() for p in model.parameters()):,} "
          f"parameters; batch {batch_size} of {image_size}x{image_size}")

    model.train()
    batches = iter(ds)
    waited = 0.0
    losses = []
    start = time.perf_counter()
    for step in range(1, steps + 1):
        t = time.perf_counter()
        images, labels = next(batches)  # NumPy arrays, ready
        waited += time.perf_counter() - t
        images = torch.from_numpy(images)  # zero-copy: shares the array's memory
        labels = torch.from_numpy(labels)

        optimizer.zero_grad()
        loss = loss_fn(model(images), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % log_every == 0 or step == 1 or step == steps:
            print(f"step {step:4d}  loss {losses[-1]:.4f}")
    elapsed = time.perf_counter() - start

    k = max(1, min(5, steps // 2))
    print(f"mean loss of the first {k} steps {np.mean(losses[:k]):.4f}, "
          f"of the last {k} steps {np.mean(losses[-k:]):.4f}")
    print(f"images/s: {steps * batch_size / elapsed:.1f}")
    print(f"input wait: {waited / elapsed:.1%} of the loop")
    return losses


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", help="folder of <class>/*.jpg (default: generate a small one)")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--torch-threads", type=int,
                   help="torch.set_num_threads (default: torch's choice); on a few busy cores, "
                        "fewer torch threads leave room for the input pipeline's workers")
    p.add_argument("--width", type=int, default=64,
                   help="channels of the first stage (64: ResNet-18; smaller: a quick test)")
    args = p.parse_args(argv)
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)

    if args.data:
        train(args.data, args.steps, args.batch_size, args.image_size, args.lr, args.log_every,
              args.width)
        return
    with tempfile.TemporaryDirectory() as folder:
        make_dataset(folder, size=max(args.image_size, 32))
        train(folder, args.steps, args.batch_size, args.image_size, args.lr, args.log_every,
              args.width)


if __name__ == "__main__":
    main()
