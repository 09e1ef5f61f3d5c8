"""Load CSV data tutorial (tensorflow.org/tutorials/load_data/csv), on a small titanic-like file."""
import csv
import os

import numpy as np

from tf_snippets._compare import to_numpy

TITANIC = """survived,sex,age,n_siblings_spouses,parch,fare,class,deck,embark_town,alone
0,male,22.0,1,0,7.25,Third,unknown,Southampton,n
1,female,38.0,1,0,71.2833,First,C,Cherbourg,n
1,female,26.0,0,0,7.925,Third,unknown,Southampton,y
1,female,35.0,1,0,53.1,First,C,Southampton,n
0,male,28.0,0,0,8.4583,Third,unknown,Queenstown,y
0,male,2.0,3,1,21.075,Third,unknown,Southampton,n
1,female,27.0,0,2,11.1333,Third,unknown,Southampton,n
1,female,14.0,1,0,30.0708,Second,unknown,Cherbourg,n
"""

# Quotes, an embedded comma and missing values, as real exports have.
MESSY = '''id,name,score,city
1,"Smith, John",3.5,Paris
2,Ann,,"New York"
3,"Bob ""the builder""",4.25,
4,Eve,1.0,Rome
'''


def _write(tmp_path, name, text):
    path = os.path.join(tmp_path, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def snippet_make_csv_dataset_basic(tf, tmp_path):
    train_file_path = _write(tmp_path, "train.csv", TITANIC)
    dataset = tf.data.experimental.make_csv_dataset(
        train_file_path, batch_size=5, label_name="survived", num_epochs=1, shuffle=False)
    features, labels = next(iter(dataset))
    return to_numpy(({k: v.numpy() for k, v in features.items()}, labels.numpy()))


def snippet_make_csv_dataset_select_columns(tf, tmp_path):
    train_file_path = _write(tmp_path, "train.csv", TITANIC)
    temp_dataset = tf.data.experimental.make_csv_dataset(
        train_file_path, batch_size=4, label_name="survived",
        select_columns=["survived", "age", "n_siblings_spouses", "class"],
        num_epochs=1, shuffle=False)
    return to_numpy(list(temp_dataset.as_numpy_iterator()))


def snippet_make_csv_dataset_column_defaults(tf, tmp_path):
    train_file_path = _write(tmp_path, "train.csv", TITANIC)
    select_columns = ["survived", "age", "n_siblings_spouses", "parch", "fare"]
    defaults = [0, 0.0, 0.0, 0.0, 0.0]
    temp_dataset = tf.data.experimental.make_csv_dataset(
        train_file_path, batch_size=3, select_columns=select_columns,
        column_defaults=defaults, num_epochs=1, shuffle=False)
    return to_numpy(list(temp_dataset.as_numpy_iterator()))


def snippet_make_csv_dataset_pack(tf, tmp_path):
    train_file_path = _write(tmp_path, "train.csv", TITANIC)
    select_columns = ["survived", "age", "n_siblings_spouses", "parch", "fare"]
    dataset = tf.data.experimental.make_csv_dataset(
        train_file_path, batch_size=4, label_name="survived", select_columns=select_columns,
        column_defaults=[0, 0.0, 0.0, 0.0, 0.0], num_epochs=1, shuffle=False)

    def pack(features, label):
        return tf.stack(list(features.values()), axis=-1), label

    packed_dataset = dataset.map(pack)
    return to_numpy(list(packed_dataset.as_numpy_iterator()))


def snippet_make_csv_dataset_shuffle_seed(tf, tmp_path):
    train_file_path = _write(tmp_path, "train.csv", TITANIC)
    dataset = tf.data.experimental.make_csv_dataset(
        train_file_path, batch_size=8, num_epochs=1, shuffle=True, shuffle_seed=1,
        select_columns=["age"])
    return to_numpy(sorted(next(iter(dataset))["age"].numpy().tolist()))


def snippet_make_csv_dataset_file_pattern(tf, tmp_path):
    for i in range(3):
        rows = "\n".join(f"{i * 10 + j},{(i * 10 + j) * 0.5}" for j in range(4))
        _write(tmp_path, f"part_{i}.csv", "x,y\n" + rows + "\n")
    dataset = tf.data.experimental.make_csv_dataset(
        file_pattern=os.path.join(tmp_path, "part_*.csv"), batch_size=6, num_epochs=1,
        num_parallel_reads=3, shuffle=False)
    xs = sorted(x for batch in dataset for x in batch["x"].numpy().tolist())
    return to_numpy(xs)


def snippet_csv_dataset_record_defaults(tf, tmp_path):
    path = _write(tmp_path, "train.csv", TITANIC)
    titanic_types = [tf.int32, tf.string, tf.float32, tf.int32, tf.int32, tf.float32,
                     tf.string, tf.string, tf.string, tf.string]
    dataset = tf.data.experimental.CsvDataset(path, titanic_types, header=True)
    return to_numpy([tuple(x.numpy() for x in line) for line in dataset.take(3)])


def snippet_csv_dataset_select_cols(tf, tmp_path):
    path = _write(tmp_path, "train.csv", TITANIC)
    dataset = tf.data.experimental.CsvDataset(
        path, record_defaults=[tf.float32, tf.float32], header=True, select_cols=[2, 5])
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_csv_dataset_missing_defaults(tf, tmp_path):
    path = _write(tmp_path, "messy.csv", MESSY)
    dataset = tf.data.experimental.CsvDataset(
        path, record_defaults=[tf.constant([0], dtype=tf.int64), tf.constant([""]),
                               tf.constant([-1.0]), tf.constant(["nowhere"])],
        header=True)
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_csv_dataset_na_value(tf, tmp_path):
    path = _write(tmp_path, "na.csv", "a,b\n1,NA\nNA,2.5\n3,4\n")
    dataset = tf.data.experimental.CsvDataset(
        path, record_defaults=[[0.0], [0.0]], header=True, na_value="NA")
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_textline_decode_csv(tf, tmp_path):
    path = _write(tmp_path, "train.csv", TITANIC)
    defaults = [[0], [""], [0.0], [0], [0], [0.0], [""], [""], [""], [""]]

    def parse(line):
        fields = tf.io.decode_csv(line, record_defaults=defaults)
        return fields[0], fields[2], fields[6]

    ds = tf.data.TextLineDataset(path).skip(1).map(parse)
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_decode_csv_quotes(tf, tmp_path):
    path = _write(tmp_path, "messy.csv", MESSY)
    ds = tf.data.TextLineDataset(path).skip(1)
    ds = ds.map(lambda line: tf.io.decode_csv(line, [[0], [""], [0.0], [""]]))
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_decode_csv_batched_lines(tf, tmp_path):
    path = _write(tmp_path, "train.csv", TITANIC)
    ds = tf.data.TextLineDataset(path).skip(1).batch(4)
    ds = ds.map(lambda lines: tf.io.decode_csv(lines, record_defaults=[[0]] + [[""]] * 9)[:2])
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_dict_of_columns_slices(tf, tmp_path):
    path = _write(tmp_path, "train.csv", TITANIC)
    with open(path) as f:
        rows = list(csv.DictReader(f))
    titanic_features = {"age": np.array([float(r["age"]) for r in rows], dtype=np.float32),
                        "sex": np.array([r["sex"] for r in rows]),
                        "fare": np.array([float(r["fare"]) for r in rows])}
    target = np.array([int(r["survived"]) for r in rows])
    features_ds = tf.data.Dataset.from_tensor_slices((titanic_features, target))
    out = []
    for example, label in features_ds.take(2):
        out.append(({name: value.numpy() for name, value in example.items()}, label.numpy()))
    return to_numpy(out)


def snippet_numeric_features_normalize(tf, tmp_path):
    path = _write(tmp_path, "train.csv", TITANIC)
    with open(path) as f:
        rows = list(csv.DictReader(f))
    numeric = np.array([[float(r["age"]), float(r["fare"])] for r in rows], dtype=np.float32)
    mean, std = numeric.mean(axis=0), numeric.std(axis=0)
    ds = tf.data.Dataset.from_tensor_slices(numeric)
    ds = ds.map(lambda x: (x - mean) / std).batch(3)
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_interleave_csv_files_skip_header(tf, tmp_path):
    for i in range(3):
        _write(tmp_path, f"font_{i}.csv", "h\n" + "".join(f"f{i}-{j}\n" for j in range(3)))
    font_csvs = sorted(os.path.join(tmp_path, f) for f in os.listdir(tmp_path))
    files = tf.data.Dataset.from_tensor_slices(font_csvs)
    lines = files.interleave(lambda fname: tf.data.TextLineDataset(fname).skip(1),
                             cycle_length=3)
    return to_numpy([line.numpy() for line in lines])


def snippet_list_files_csv_sorted(tf, tmp_path):
    for i in range(4):
        _write(tmp_path, f"fonts_{i}.csv", "a\n1\n")
    font_files = tf.data.Dataset.list_files(os.path.join(tmp_path, "fonts_*.csv"), shuffle=False)
    return to_numpy([os.path.basename(f.numpy().decode()) for f in font_files])


def snippet_generator_from_csv_module(tf, tmp_path):
    path = _write(tmp_path, "messy.csv", MESSY)

    def rows():
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                yield r["name"], float(r["score"] or "nan")

    ds = tf.data.Dataset.from_generator(
        rows, output_signature=(tf.TensorSpec((), tf.string), tf.TensorSpec((), tf.float32)))
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_string_to_number_columns(tf, tmp_path):
    path = _write(tmp_path, "nums.csv", "1.5,2,3\n4,5.25,6\n")
    ds = tf.data.TextLineDataset(path)
    ds = ds.map(lambda line: tf.strings.to_number(tf.strings.split(line, ","), tf.float32))
    return to_numpy(list(ds.as_numpy_iterator()))
