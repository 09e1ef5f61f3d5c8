"""The workloads of benchmarks/results/run.py: one input pipeline each, built
three ways on the same files or arrays.

  conveyor, tf.data  the pipelines of the other benchmarks, imported from them
                     (images.py, records.py, csv_reading.py's call, text.py, map_batch.py's
                     "small vector", shuffle.py), built with `lib` = conveyor or
                     tensorflow
  DataLoader         torch.utils.data.DataLoader(batch_size=B, num_workers=CPUs,
                     persistent_workers=True) over a Dataset / IterableDataset that
                     does the same work per element in Python, the way a PyTorch
                     user writes it: PIL for JPEG (loaders.py's recipe), a struct
                     TFRecord reader and a small protobuf decoder for
                     tf.train.Example, the csv module, str methods and re

A workload also says how to make its data (in the parent process, once) and
how to digest an epoch's output (element count, sums of numbers, CRCs of
strings) so that the three outputs are checked equal, or equivalent where the
libraries differ on purpose (JPEG resize: PIL antialiases), before timing.

This module imports neither conveyor, tensorflow nor torch at the top: each
child process imports only its own framework.
"""
import csv
import importlib.util
import itertools
import os
import re
import struct
import sys
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
REPO = os.path.dirname(BENCH)


def bench_module(name):
    """benchmarks/<name>.py, loaded under a private name (by path: this
    folder is not on the import path)."""
    key = "_bench_" + name
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, os.path.join(BENCH, name + ".py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[key] = mod
        spec.loader.exec_module(mod)
    return sys.modules[key]


def cpus():
    return os.cpu_count() or 1


# --------------------------------------------------------------------------- #
# sizes

SIZES = {
    #               full       quick
    "jpeg": (512, 32),                  # files
    "tfrecord": (100_000, 4_000),       # 1 KB records
    "parse_example": (50_000, 2_000),   # tf.train.Example records
    "csv": (100_000, 2_000),            # rows
    "text": (40_000, 2_000),            # lines
    "map_batch": (200_000, 8_000),      # rows of float32[32]
    "shuffle": (200_000, 8_000),        # rows of float32[32]
}

TITLES = {
    "jpeg": "JPEG read + decode + resize 224 + /255, batch 64",
    "tfrecord": "TFRecord, 1 KB records, 8 shards, batch 256",
    "parse_example": "TFRecord + parse tf.train.Example (10 features), batch 256",
    "csv": "CSV, 10 mixed columns, make_csv_dataset, batch 256",
    "text": "text lines: lower, regex_replace, strip, filter, batch 256",
    "map_batch": "float32[32] rows: map(v * 2 + 1), batch 256",
    "shuffle": "float32[32] rows: cache, shuffle(10,000), batch 256",
}

WORKLOADS = list(SIZES)
SHUFFLE_BUFFER = 10_000
PUNCTUATION = r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]"


def prepare(folder, quick):
    """Write every workload's files once under `folder`; returns the spec the
    children read: {workload: {"n": elements, ...paths}}. Uses conveyor (JPEG
    encoding, TFRecord writing: the same bytes as TensorFlow's writer)."""
    import conveyor as cv
    k = 1 if quick else 0
    spec = {}
    os.makedirs(folder, exist_ok=True)

    n = SIZES["jpeg"][k]
    paths, _ = bench_module("images").make_files(os.path.join(folder, f"jpeg-{n}"), n)
    spec["jpeg"] = {"n": n, "pattern": os.path.join(os.path.dirname(paths[0]), "*.jpg")}

    records = bench_module("records")
    n = SIZES["tfrecord"][k]
    paths = records.write_shards(os.path.join(folder, f"tfrecord-{n}"), "rec",
                                 records.record_payloads(n, 1024, seed=1), "", None)
    spec["tfrecord"] = {"n": n, "pattern": os.path.join(os.path.dirname(paths[0]), "*.tfrecord")}

    n = SIZES["parse_example"][k]
    ex_folder = os.path.join(folder, f"examples-{n}")
    if not os.path.exists(os.path.join(ex_folder, f"ex-{records.SHARDS - 1:02d}.tfrecord")):
        rng = np.random.default_rng(2)  # as records.py's examples
        examples = [cv.io.serialize_example(dict(
            {f"f{j}": rng.random(4, dtype=np.float32) for j in range(8)},
            label=int(i % 1000), name=f"example-{i}".encode())) for i in range(n)]
        records.write_shards(ex_folder, "ex", examples, "", None)
    spec["parse_example"] = {"n": n, "pattern": os.path.join(ex_folder, "*.tfrecord")}

    n = SIZES["csv"][k]
    path = os.path.join(folder, f"mixed-{n}.csv")
    if not os.path.exists(path):
        bench_module("csv_reading").write_file(path + ".tmp", n)
        os.replace(path + ".tmp", path)
    spec["csv"] = {"n": n, "path": path}

    n = SIZES["text"][k]
    path = os.path.join(folder, f"lines-{n}.txt")
    if not os.path.exists(path):
        bench_module("text").write_text(path + ".tmp", n)
        os.replace(path + ".tmp", path)
    # text.py's lines: every 20th empty, every 20th only punctuation, so filtered out
    kept = sum(1 for line in open(path) if re.sub(PUNCTUATION, "", line.lower()).strip())
    spec["text"] = {"n": kept, "lines": n, "path": path}

    for name in ("map_batch", "shuffle"):
        spec[name] = {"n": SIZES[name][k]}
    return spec


def rows(n, seed=0):
    return np.random.default_rng(seed).random((n, 32), dtype=np.float32)


# --------------------------------------------------------------------------- #
# conveyor and tf.data: the other benchmarks' pipelines

def example_spec(lib):
    spec = {f"f{i}": lib.io.FixedLenFeature([4], lib.float32) for i in range(8)}
    spec.update(label=lib.io.FixedLenFeature([], lib.int64),
                name=lib.io.FixedLenFeature([], lib.string))
    return spec


def tf_like(lib, name, s):
    """The dataset for workload `name` in conveyor or tf.data (`lib`)."""
    if name == "jpeg":
        return bench_module("images").pipeline(lib, s["pattern"], True)
    if name == "tfrecord":
        return bench_module("records").pipeline(lib, s["pattern"], "")
    if name == "parse_example":
        return bench_module("records").pipeline(lib, s["pattern"], "", example_spec(lib))
    if name == "csv":
        return lib.data.experimental.make_csv_dataset(s["path"], 256, num_epochs=1,
                                                      shuffle=False)
    if name == "text":
        return bench_module("text").pipeline(lib, s["path"])
    if name == "map_batch":  # map_batch.py's "small vector"
        return (lib.data.Dataset.from_tensor_slices(rows(s["n"]))
                .map(lambda v: v * 2.0 + 1.0, num_parallel_calls=lib.data.AUTOTUNE).batch(256))
    if name == "shuffle":  # shuffle.py's pipeline
        return (lib.data.Dataset.from_tensor_slices(rows(s["n"])).cache()
                .shuffle(SHUFFLE_BUFFER, seed=1).batch(256))
    raise KeyError(name)


# --------------------------------------------------------------------------- #
# PyTorch: the same work per element in Python

def read_tfrecords(path):
    """The records of one TFRecord file: 8-byte length, 4-byte CRC, data,
    4-byte CRC (the CRCs are not checked: the usual pure-Python reader)."""
    with open(path, "rb") as f:
        while True:
            head = f.read(12)
            if len(head) < 12:
                return
            (length,) = struct.unpack("<Q", head[:8])
            data = f.read(length)
            f.read(4)
            yield data


def _varint(b, i):
    shift = value = 0
    while True:
        c = b[i]
        i += 1
        value |= (c & 0x7F) << shift
        if c < 0x80:
            return value, i
        shift += 7


def _fields(b, start, end):
    """(field number, wire type, value or (start, end)) of a protobuf message."""
    i = start
    while i < end:
        key, i = _varint(b, i)
        wire = key & 7
        if wire == 2:
            n, i = _varint(b, i)
            yield key >> 3, 2, (i, i + n)
            i += n
        elif wire == 0:
            v, i = _varint(b, i)
            yield key >> 3, 0, v
        elif wire == 5:
            yield key >> 3, 5, (i, i + 4)
            i += 4
        elif wire == 1:
            yield key >> 3, 1, (i, i + 8)
            i += 8
        else:
            raise ValueError(f"unsupported wire type {wire}")


def parse_example(b):
    """A serialized tf.train.Example as {name: bytes list | float32 array |
    int64 array}, decoded in Python (what the `tfrecord` package does with
    protobuf's classes; with protobuf 7's upb parser and the same conversion to
    NumPy, records/s came out the same here: the conversion dominates)."""
    out = {}
    for fn, _, (s, e) in _fields(b, 0, len(b)):          # Example.features
        if fn != 1:
            continue
        for fn2, _, (s2, e2) in _fields(b, s, e):          # Features.feature (map entry)
            if fn2 != 1:
                continue
            key, feature = None, None
            for fn3, _, (s3, e3) in _fields(b, s2, e2):
                if fn3 == 1:
                    key = b[s3:e3].decode()
                elif fn3 == 2:
                    feature = (s3, e3)
            for kind, _, (s4, e4) in _fields(b, *feature):  # Feature oneof
                values = []
                for _, wire, v in _fields(b, s4, e4):
                    if kind == 1:
                        values.append(b[v[0]:v[1]])
                    elif kind == 2:
                        values.append(np.frombuffer(b, "<f4", (v[1] - v[0]) // 4, v[0]))
                    elif wire == 0:
                        values.append(np.array([v - (1 << 64) if v >= 1 << 63 else v]))
                    else:  # packed int64
                        j, ints = v[0], []
                        while j < v[1]:
                            x, j = _varint(b, j)
                            ints.append(x - (1 << 64) if x >= 1 << 63 else x)
                        values.append(np.array(ints, np.int64))
                if kind == 1:
                    out[key] = values
                else:
                    out[key] = np.concatenate(values) if values else np.zeros(0)
    return out


CSV_TYPES = {"id": int, "a": int, "b": float, "word": str, "d": float, "e": int, "f": int,
             "g": float, "h": int, "tag": str}


def torch_loader(name, s):
    """The DataLoader for workload `name`: a Dataset doing the work per element."""
    import glob
    import torch
    from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info

    def shard():
        info = get_worker_info()
        return (0, 1) if info is None else (info.id, info.num_workers)

    def loader(ds, batch, **kw):
        return DataLoader(ds, batch_size=batch, num_workers=cpus(), persistent_workers=True,
                          **kw)

    if name == "jpeg":
        return bench_module("loaders").torch_loader(sorted(glob.glob(s["pattern"])), 64)

    if name in ("tfrecord", "parse_example"):
        files = sorted(glob.glob(s["pattern"]))
        parse = name == "parse_example"

        class Records(IterableDataset):
            def __iter__(self):
                wid, nw = shard()
                for path in files[wid::nw]:  # each worker its own shards
                    for rec in read_tfrecords(path):
                        if not parse:
                            yield rec
                            continue
                        ex = parse_example(rec)
                        item = {f"f{j}": torch.from_numpy(ex[f"f{j}"].astype(np.float32))
                                for j in range(8)}
                        item["label"] = int(ex["label"][0])
                        item["name"] = ex["name"][0]
                        yield item
        return loader(Records(), 256)

    if name == "csv":
        path = s["path"]

        class Rows(IterableDataset):
            def __iter__(self):
                wid, nw = shard()
                with open(path, newline="") as f:
                    reader = csv.reader(f)
                    header = next(reader)
                    types = [CSV_TYPES[h] for h in header]
                    for row in itertools.islice(reader, wid, None, nw):
                        yield {h: (t(v) if v else t()) for h, t, v in zip(header, types, row)}
        return loader(Rows(), 256)

    if name == "text":
        path = s["path"]
        punct = re.compile(PUNCTUATION)

        class Lines(IterableDataset):
            def __iter__(self):
                wid, nw = shard()
                with open(path) as f:
                    for line in itertools.islice(f, wid, None, nw):
                        line = punct.sub("", line.rstrip("\n").lower()).strip()
                        if line:
                            yield line
        return loader(Lines(), 256)

    if name == "map_batch":
        x = torch.from_numpy(rows(s["n"]))

        class Rows2(Dataset):
            def __len__(self):
                return len(x)

            def __getitem__(self, i):
                return x[i] * 2.0 + 1.0
        return loader(Rows2(), 256)

    if name == "shuffle":
        x = torch.from_numpy(rows(s["n"]))
        g = torch.Generator()
        g.manual_seed(1)
        return loader(torch.utils.data.TensorDataset(x), 256, shuffle=True, generator=g)
    raise KeyError(name)


# --------------------------------------------------------------------------- #
# checking outputs: a digest of one epoch, the same for every framework

def _plain(x):
    """A batch as NumPy arrays / lists (tf, conveyor and torch tensors all have .numpy())."""
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        if len(x) == 1 and hasattr(x[0], "numpy"):  # TensorDataset yields [tensor]
            return _plain(x[0])
        return np.array([v.encode() if isinstance(v, str) else v for v in x], dtype=object)
    if hasattr(x, "numpy"):
        x = x.numpy()
    return np.asarray(x)


def count(batch):
    """Elements in a batch: an array, a dict of them, a list of strings, or
    TensorDataset's [tensor]."""
    if isinstance(batch, dict):
        batch = next(iter(batch.values()))
    elif isinstance(batch, (list, tuple)) and batch and hasattr(batch[0], "shape"):
        batch = batch[0]
    return len(batch)


class Digest:
    """Order-independent summary of an epoch: element count; per column, the
    sum of |x| (numbers) or of CRC32s and lengths (strings)."""

    def __init__(self):
        self.d = {"n": 0}

    def add(self, batch):
        batch = _plain(batch)
        cols = batch if isinstance(batch, dict) else {"": batch}
        self.d["n"] += count(batch)
        for k, a in cols.items():
            if a.dtype == object:
                self.d["crc:" + k] = self.d.get("crc:" + k, 0) + sum(
                    zlib.crc32(v.encode() if isinstance(v, str) else v) for v in a.ravel())
                self.d["len:" + k] = self.d.get("len:" + k, 0) + sum(len(v) for v in a.ravel())
            else:
                self.d["sum:" + k] = self.d.get("sum:" + k, 0.0) + float(
                    np.abs(a.astype(np.float64)).sum())
                self.d["size:" + k] = self.d.get("size:" + k, 0) + int(a.size)


def compare(ref, other, tol):
    """'' if `other` matches `ref` (sums within relative `tol`), else what differs."""
    diffs = []
    for k in sorted(set(ref) | set(other)):
        a, b = ref.get(k), other.get(k)
        if a is None or b is None:
            diffs.append(f"{k}: {a} vs {b}")
        elif k.startswith("sum:"):
            if abs(a - b) > tol * max(abs(a), abs(b), 1e-12):
                diffs.append(f"{k}: {a:.6g} vs {b:.6g}")
        elif a != b:
            diffs.append(f"{k}: {a} vs {b}")
    return "; ".join(diffs)


# PIL's bilinear resize antialiases when it shrinks, TensorFlow's does not:
# the DataLoader's images are the same pictures, not the same floats.
TOLERANCE = {"jpeg": {"tf.data": 1e-5, "DataLoader": 2e-2}}
DEFAULT_TOLERANCE = 1e-5
