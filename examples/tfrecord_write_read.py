#!/usr/bin/env python3
"""Write a CSV table to sharded, GZIP-compressed TFRecord files and read it back.

What it shows, with ``import conveyor as tf`` and no TensorFlow:

* writing: each CSV row becomes a ``tf.train.Example`` with several feature
  types (int64, float, bytes, a fixed-length float vector, a variable-length
  list of strings, an optional field), written round-robin to ``--shards``
  files with ``tf.io.TFRecordWriter(path, options="GZIP")``;
* reading: the usual sharded-input pipeline

      list_files -> interleave(TFRecordDataset(compression_type="GZIP"))
                 -> batch -> map(parse_example) -> prefetch(AUTOTUNE)

  parsing a whole batch of records in one ``tf.io.parse_example`` call;
* checking: the counts and column sums read back equal what was written.

Run it:

    python examples/tfrecord_write_read.py                 # generated CSV
    python examples/tfrecord_write_read.py --rows 100000 --shards 8
    python examples/tfrecord_write_read.py --csv my.csv --out /tmp/records

A ``--csv`` file needs the columns of the generated one: id, name, price,
rating_1, rating_2, rating_3, tags (";"-separated, may be empty) and
discount (may be empty: the feature is then left out and parsing fills in
the default).
"""
import argparse
import csv
import os
import tempfile
import time

import numpy as np

import conveyor as tf

COLUMNS = ["id", "name", "price", "rating_1", "rating_2", "rating_3", "tags", "discount"]
FEATURES = {
    "id": tf.io.FixedLenFeature([], tf.int64),
    "name": tf.io.FixedLenFeature([], tf.string),
    "price": tf.io.FixedLenFeature([], tf.float32),
    "ratings": tf.io.FixedLenFeature([3], tf.float32),
    "tags": tf.io.VarLenFeature(tf.string),  # -> a SparseTensor per batch
    "discount": tf.io.FixedLenFeature([], tf.float32, default_value=0.0),  # optional
}


def generate_csv(path, rows, seed=0):
    rng = np.random.default_rng(seed)
    words = ["red", "blue", "green", "large", "small", "new", "used", "sale"]
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(COLUMNS)
        for i in range(rows):
            tags = ";".join(rng.choice(words, rng.integers(0, 4), replace=False))
            discount = f"{rng.uniform(0, 0.5):.2f}" if rng.random() < 0.3 else ""
            out.writerow([i, f"item-{i:06d}", f"{rng.uniform(1, 100):.2f}",
                          *(f"{r:.1f}" for r in rng.uniform(0, 5, 3)), tags, discount])


def to_example(row):
    """One CSV row (a dict of strings) as a tf.train.Example."""
    def floats(*values):
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))

    def strings(*values):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[v.encode() for v in values]))
    feature = {
        "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(row["id"])])),
        "name": strings(row["name"]),
        "price": floats(float(row["price"])),
        "ratings": floats(*(float(row[f"rating_{k}"]) for k in (1, 2, 3))),
        "tags": strings(*(t for t in row["tags"].split(";") if t)),
    }
    if row["discount"]:
        feature["discount"] = floats(float(row["discount"]))
    return tf.train.Example(features=tf.train.Features(feature=feature))


def write_shards(csv_path, out_dir, shards):
    """Rows round-robin into `shards` GZIP TFRecord files; returns paths and what was written."""
    paths = [os.path.join(out_dir, f"data-{k:05d}-of-{shards:05d}.tfrecord.gz")
             for k in range(shards)]
    writers = [tf.io.TFRecordWriter(p, options="GZIP") for p in paths]
    written = {"rows": 0, "id_sum": 0, "tags": 0, "discounted": 0}
    try:
        with open(csv_path, newline="") as f:
            for i, row in enumerate(csv.DictReader(f)):
                writers[i % shards].write(to_example(row).SerializeToString())
                written["rows"] += 1
                written["id_sum"] += int(row["id"])
                written["tags"] += len([t for t in row["tags"].split(";") if t])
                written["discounted"] += bool(row["discount"] and float(row["discount"]))
    finally:
        for w in writers:
            w.close()
    return paths, written


def read_shards(pattern, shards, batch_size):
    files = tf.data.Dataset.list_files(pattern, shuffle=False)
    ds = files.interleave(lambda path: tf.data.TFRecordDataset(path, compression_type="GZIP"),
                          cycle_length=shards, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.batch(batch_size)
    ds = ds.map(lambda records: tf.io.parse_example(records, FEATURES),  # a batch at a time
                num_parallel_calls=tf.data.AUTOTUNE)
    return ds.prefetch(tf.data.AUTOTUNE)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--csv", help="input CSV (default: generate one)")
    p.add_argument("--rows", type=int, default=20000, help="rows to generate")
    p.add_argument("--shards", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--out", help="folder for the TFRecord files (default: a temporary one)")
    args = p.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        out_dir = args.out or tmp
        os.makedirs(out_dir, exist_ok=True)
        csv_path = args.csv
        if not csv_path:
            csv_path = os.path.join(tmp, "items.csv")
            generate_csv(csv_path, args.rows)

        t = time.perf_counter()
        paths, written = write_shards(csv_path, out_dir, args.shards)
        size = sum(os.path.getsize(p) for p in paths)
        print(f"wrote {written['rows']} records to {len(paths)} GZIP shards "
              f"({size / 1e6:.2f} MB) in {time.perf_counter() - t:.2f} s")

        t = time.perf_counter()
        read = {"rows": 0, "id_sum": 0, "tags": 0, "discounted": 0}
        first = None
        for batch in read_shards(os.path.join(out_dir, "data-*.tfrecord.gz"), args.shards,
                                 args.batch_size):
            first = first or batch
            read["rows"] += len(batch["id"])
            read["id_sum"] += int(batch["id"].sum())
            read["tags"] += len(batch["tags"].values)
            read["discounted"] += int(np.count_nonzero(batch["discount"]))
        seconds = time.perf_counter() - t
        print(f"read {read['rows']} records in {seconds:.2f} s "
              f"({read['rows'] / seconds:.0f} records/s)")
        if first is not None:
            print("first batch shapes:", {k: tuple(v.shape) for k, v in first.items()
                                          if k != "tags"},
                  f"tags: sparse, dense_shape {[int(d) for d in first['tags'].dense_shape]}")
            print(f"  id {first['id'].numpy()[:3]}, name {first['name'].numpy()[:3]}, "
                  f"ratings[0] {first['ratings'].numpy()[0]}, "
                  f"tags {first['tags'].values.numpy()[:3]}")
        for key in written:
            print(f"{key}: written {written[key]}, read {read[key]}")
        if read != written:
            raise SystemExit("MISMATCH between the records written and read")
        print("counts equal: ok")


if __name__ == "__main__":
    main()
