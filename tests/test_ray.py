"""conveyor.ray: conveyor pipelines as a Ray Data datasource, and Ray Data into conveyor.

One local Ray cluster (2 CPUs) serves the whole module. Each read through
Ray is compared with the same pipeline run locally in this process: the same
multiset of elements, for several shard counts. The file runs under
.ci/sanitize as well: Ray's processes inherit the ASan preload and the
workers import the sanitized build (ROOT below is that build's folder).
"""
import collections
import glob
import os
import pickle
import sys

import numpy as np
import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")

from ray import cloudpickle  # noqa: E402 - the pickler Ray ships tasks with

import conveyor as tf  # noqa: E402
import conveyor.ray as cray  # noqa: E402

# Ray Data's DataContext warns about its own deprecated settings on every copy.
pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated.*:DeprecationWarning")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(tf.__file__)))
JPEG_DIR = "/work/shared/testdata/jpeg"
if not os.path.isdir(JPEG_DIR):
    JPEG_DIR = os.path.join(ROOT, "shared", "testdata", "jpeg")
GOOD_JPEGS = sorted(f for f in glob.glob(os.path.join(JPEG_DIR, "*.jpg"))
                    if "truncated" not in os.path.basename(f))
TRUNCATED_JPEG = os.path.join(JPEG_DIR, "truncated_jpeg.jpg")


def _start_ray():
    """ray.init, tried twice: Ray gives its node a fixed 30 s to start, which
    its C++ servers can miss on a loaded machine, above all with the ASan
    preload of .ci/sanitize. There, a node that misses it twice skips the
    module (Ray's start-up, not conveyor, is what failed)."""
    for attempt in range(2):
        try:
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                     logging_level="ERROR", configure_logging=False)
            return
        except Exception as e:  # Ray raises a bare Exception for this
            if "timed out during startup" not in str(e):
                raise
            ray.shutdown()
            if attempt == 1:
                if os.environ.get("CV_SANITIZED") == "1":
                    pytest.skip(f"Ray's node did not start under the sanitizer preload: {e}")
                raise


@pytest.fixture(scope="module")
def cluster():
    # Workers inherit the driver's environment: give them this conveyor build.
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = ROOT + (os.pathsep + old if old else "")
    # The pipeline factories below are defined in this test module, which the
    # workers cannot import: ship them by value.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    _start_ray()
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    try:
        yield
    finally:
        ray.shutdown()
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


# -- pipeline factories (shipped to the read tasks) ---------------------------------

def record_pipeline(files):
    ds = tf.data.TFRecordDataset(files)
    return ds.map(lambda r: (r, tf.strings.length(r)), num_parallel_calls=2)


def jpeg_pipeline(files):
    ds = tf.data.Dataset.from_tensor_slices(files)
    return ds.map(lambda f: {"name": f,
                             "image": tf.io.decode_jpeg(tf.io.read_file(f), channels=3)})


def small_jpeg_batches(files):
    def load(f):
        image = tf.io.decode_jpeg(tf.io.read_file(f), channels=3)
        return {"name": f, "image": tf.cast(tf.image.resize(image, [16, 24]), tf.uint8)}
    return tf.data.Dataset.from_tensor_slices(files).map(load).batch(3)


def text_pipeline(files):
    return tf.data.TextLineDataset(files)


def not_a_dataset(files):
    return files


# -- helpers -------------------------------------------------------------------------

def _local(make_pipeline, files):
    """Rows of the pipeline over all files, run here, as Ray would name them."""
    spec = make_pipeline(list(files)).element_spec
    names = [name for name, _ in cray._column_paths(spec)]
    return [dict(zip(names, tf.nest.flatten(e)))
            for e in make_pipeline(list(files)).as_numpy_iterator()]


def _key(row):
    return tuple(sorted((k, v.tobytes() + str(v.shape).encode() if isinstance(v, np.ndarray)
                         else v if isinstance(v, bytes) else np.asarray(v).item())
                        for k, v in row.items()))


def _multiset(rows):
    return collections.Counter(_key(r) for r in rows)


@pytest.fixture(scope="module")
def record_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("records")
    files = []
    for i in range(5):
        path = str(folder / f"part-{i}.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            for j in range(7 + i):
                writer.write(f"file {i} record {j} ".encode() * (j + 1))
        files.append(path)
    return files


@pytest.fixture(scope="module")
def text_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("text")
    for i in range(3):
        lines = [f"line {j} of file {i} \u00e9" for j in range(10 * (i + 1))]
        (folder / f"t{i}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(folder / "t*.txt")


# -- without a cluster ---------------------------------------------------------------

def test_import_conveyor_does_not_import_ray(run_python):
    result = run_python("""
        import sys, conveyor
        assert "ray" not in sys.modules, "import conveyor imported ray"
        print("ok")
    """)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr


def test_without_ray_the_import_error_says_how_to_install(run_python):
    result = run_python("""
        import sys
        sys.modules["ray"] = None  # as if Ray were not installed
        try:
            import conveyor.ray
        except ImportError as e:
            print("ImportError:", e)
    """)
    assert "pip install conveyor[ray]" in result.stdout, result.stdout + result.stderr


def test_conveyor_datasets_do_not_pickle_so_the_factory_travels():
    with pytest.raises(TypeError):
        pickle.dumps(tf.data.Dataset.range(3).map(lambda x: x + 1))
    cloudpickle.loads(cloudpickle.dumps(cray.ConveyorDatasource(GOOD_JPEGS, jpeg_pipeline)))


def test_read_tasks_are_contiguous_shards_one_per_file_at_most(record_files):
    source = cray.ConveyorDatasource(record_files, record_pipeline)
    for n, sizes in [(1, [5]), (2, [3, 2]), (3, [2, 2, 1]), (5, [1] * 5), (64, [1] * 5)]:
        tasks = source.get_read_tasks(n)
        shards = [list(t.metadata.input_files) for t in tasks]
        assert [len(s) for s in shards] == sizes
        assert sum(shards, []) == record_files
        assert sum(t.metadata.size_bytes for t in tasks) == source.estimate_inmemory_data_size()


def test_files_from_a_glob_and_bad_arguments(text_files, record_files):
    assert cray.ConveyorDatasource(text_files, text_pipeline).files == sorted(glob.glob(text_files))
    with pytest.raises(FileNotFoundError, match="no files matched"):
        cray.ConveyorDatasource(text_files + ".missing*", text_pipeline)
    with pytest.raises(TypeError, match="callable"):
        cray.ConveyorDatasource(record_files, "not callable")
    with pytest.raises(ValueError, match="rows_per_block"):
        cray.ConveyorDatasource(record_files, record_pipeline, rows_per_block=0)
    with pytest.raises(TypeError, match="ray.data.Dataset or DataIterator"):
        cray.from_ray([1, 2, 3])


def test_column_names_follow_the_element_structure():
    spec = {"b": tf.TensorSpec((), tf.int64),
            "a": (tf.TensorSpec((2,), tf.float32), {"z": tf.TensorSpec((), tf.string)})}
    assert [n for n, _ in cray._column_paths(spec)] == ["a/0", "a/1/z", "b"]
    assert [n for n, _ in cray._column_paths(tf.TensorSpec((), tf.int64))] == ["item"]


def test_a_read_task_yields_arrow_blocks_of_rows_per_block(record_files):
    # A read task is a plain callable: run it here, without the cluster.
    source = cray.ConveyorDatasource(record_files[:2], record_pipeline, rows_per_block=4)
    (task,) = source.get_read_tasks(1)
    blocks = list(task())
    assert [b.num_rows for b in blocks] == [4, 4, 4, 3]  # 7 + 8 records
    assert str(blocks[0].schema.field("0").type) == "binary"
    assert str(blocks[0].schema.field("1").type) == "int32"
    with pytest.raises(ValueError, match="are scalars") as info:
        list(cray.ConveyorDatasource(record_files[:1], record_pipeline,
                                     batched=True).get_read_tasks(1)[0]())
    if sys.version_info >= (3, 11):  # exception notes
        assert any(record_files[0] in note for note in info.value.__notes__)


# -- the datasource ------------------------------------------------------------------

@pytest.mark.parametrize("shards", [1, 2, 5])
def test_tfrecords_through_ray_match_the_local_pipeline(cluster, record_files, shards):
    ds = cray.read_conveyor(record_files, record_pipeline, override_num_blocks=shards,
                            rows_per_block=4)
    rows = ds.take_all()
    assert set(rows[0]) == {"0", "1"}
    expected = _local(record_pipeline, record_files)
    assert len(rows) == len(expected) == sum(7 + i for i in range(5))
    assert _multiset(rows) == _multiset(expected)


def test_jpegs_become_variable_shaped_tensor_columns(cluster):
    ds = cray.read_conveyor(GOOD_JPEGS, jpeg_pipeline, override_num_blocks=3)
    rows = ds.take_all()
    expected = _local(jpeg_pipeline, GOOD_JPEGS)
    assert len(rows) == len(GOOD_JPEGS)
    assert {r["image"].shape for r in rows} == {e["image"].shape for e in expected}
    assert len({r["image"].shape for r in rows}) > 1
    assert _multiset(rows) == _multiset(expected)


def test_a_batched_pipeline_gives_one_block_per_batch(cluster):
    ds = cray.read_conveyor(GOOD_JPEGS, small_jpeg_batches, batched=True,
                            override_num_blocks=2)
    schema = ds.schema()
    assert schema.names == ["image", "name"]
    rows = ds.take_all()
    expected = [dict(name=n, image=i) for b in small_jpeg_batches(GOOD_JPEGS).as_numpy_iterator()
                for n, i in zip(b["name"], b["image"])]
    assert len(rows) == len(GOOD_JPEGS)
    assert all(r["image"].shape == (16, 24, 3) and r["image"].dtype == np.uint8 for r in rows)
    assert _multiset(rows) == _multiset(expected)


def test_text_lines_single_column_item(cluster, text_files):
    ds = cray.read_conveyor(text_files, text_pipeline, override_num_blocks=8, rows_per_block=7)
    assert ds.schema().names == ["item"]
    rows = ds.take_all()
    lines = [line.encode() for f in sorted(glob.glob(text_files))
             for line in open(f, encoding="utf-8").read().splitlines()]
    assert len(rows) == 60
    assert collections.Counter(r["item"] for r in rows) == collections.Counter(lines)


def test_an_error_in_a_read_task_names_the_file(cluster):
    files = GOOD_JPEGS[:2] + [TRUNCATED_JPEG]
    ds = cray.read_conveyor(files, jpeg_pipeline, override_num_blocks=3)
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        ds.take_all()
    text = str(info.value)
    assert "truncated_jpeg.jpg" in text
    assert f"conveyor.ray: in the read task over file(s) {TRUNCATED_JPEG}" in text


def test_a_factory_that_returns_no_dataset_is_a_type_error(cluster, record_files):
    ds = cray.read_conveyor(record_files[:1], not_a_dataset)
    with pytest.raises(TypeError, match="make_pipeline must return a conveyor Dataset"):
        ds.take_all()


# -- the reverse: Ray Data into conveyor -----------------------------------------------

def _ray_rows(n=12):
    return [{"id": k, "label": f"class {k % 3}", "score": k / 4,
             "pixels": np.full((2, 3), k, np.uint8), "tokens": np.arange(k % 4 + 1)}
            for k in range(n)]


def test_from_ray_round_trip_equals_the_ray_rows(cluster):
    source = ray.data.from_items(_ray_rows())
    ds = cray.from_ray(source)
    spec = ds.element_spec
    assert spec["id"] == tf.TensorSpec((), tf.int64)
    assert spec["label"] == tf.TensorSpec((), tf.string)
    assert spec["score"] == tf.TensorSpec((), tf.float64)
    assert spec["pixels"] == tf.TensorSpec((2, 3), tf.uint8)
    assert spec["tokens"] == tf.TensorSpec((None,), tf.int64)
    got = list(ds.as_numpy_iterator())
    want = source.take_all()
    assert len(got) == len(want) == 12
    for g, w in zip(sorted(got, key=lambda r: r["id"]), sorted(want, key=lambda r: r["id"])):
        assert g["id"] == w["id"] and g["label"] == w["label"].encode()
        assert g["score"] == w["score"]
        np.testing.assert_array_equal(g["pixels"], w["pixels"])
        np.testing.assert_array_equal(g["tokens"], w["tokens"])


def test_from_ray_batches_and_epochs(cluster):
    source = ray.data.range(10).map(lambda r: {"id": r["id"], "x": np.full((2,), r["id"], "f4")})
    ds = cray.from_ray(source, batch_size=4)
    assert ds.element_spec["x"] == tf.TensorSpec((None, 2), tf.float32)
    for _ in range(2):  # every iteration is a new epoch over the Ray dataset
        batches = list(ds.as_numpy_iterator())
        assert [len(b["id"]) for b in batches] == [4, 4, 2]
        assert sorted(np.concatenate([b["id"] for b in batches]).tolist()) == list(range(10))
    ragged = cray.from_ray(ray.data.from_items(_ray_rows(4)), batch_size=4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="different shapes"):
        list(ragged)


def _train_worker(shard):
    """What a Ray Train training function does with get_dataset_shard(...)."""
    import conveyor as tf
    import conveyor.ray as cray
    ds = cray.from_ray(shard)  # the signature comes from the shard's schema
    assert ds.element_spec == {"id": tf.TensorSpec((), tf.int64)}
    ds = ds.map(lambda r: r["id"] * 10, num_parallel_calls=2).batch(3).prefetch(2)
    # Each iteration is one more epoch (a split may hand a worker other rows each time).
    return [[int(v) for batch in ds.as_numpy_iterator() for v in batch] for _ in range(2)]


def test_ray_train_like_streaming_split_into_conveyor(cluster):
    shards = ray.data.range(20).streaming_split(2, equal=True)
    worker = ray.remote(num_cpus=0)(_train_worker)
    results = ray.get([worker.remote(s) for s in shards])
    for epoch in range(2):
        assert [len(r[epoch]) for r in results] == [10, 10]
        assert sorted(results[0][epoch] + results[1][epoch]) == [10 * i for i in range(20)]
