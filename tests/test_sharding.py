"""conveyor.sharding: world detection, FILE/DATA/AUTO sharding (disjoint and
complete shards), equal-length shards (truncate / pad with a mask), too few
files, and per-epoch reseeding identical across ranks."""
import sys
import types

import numpy as np
import pytest

import conveyor as tf
from conveyor import errors, sharding
from conveyor.data.experimental import AutoShardPolicy

from _record_files import tfrecord_bytes

ENV_VARS = ["RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK",
            "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE"]


@pytest.fixture
def clean_env(monkeypatch):
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def values(ds):
    return list(ds.as_numpy_iterator())


# -- detect_world ---------------------------------------------------------------------


def test_single_process(clean_env):
    assert sharding.detect_world() == (0, 1, "single process")


@pytest.mark.parametrize("rank_var,size_var", [("RANK", "WORLD_SIZE"),
                                               ("SLURM_PROCID", "SLURM_NTASKS"),
                                               ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                                               ("PMI_RANK", "PMI_SIZE")])
def test_environment_variables(clean_env, rank_var, size_var):
    clean_env.setenv(rank_var, "3")
    clean_env.setenv(size_var, "4")
    world = sharding.detect_world()
    assert (world.rank, world.size) == (3, 4)
    assert rank_var in world.source


def test_environment_order(clean_env):
    clean_env.setenv("SLURM_PROCID", "1")
    clean_env.setenv("SLURM_NTASKS", "2")
    clean_env.setenv("RANK", "5")
    clean_env.setenv("WORLD_SIZE", "8")
    assert sharding.detect_world()[:2] == (5, 8)  # torchrun's variables first


@pytest.mark.parametrize("rank,size,named", [("4", "4", "RANK"), ("x", "4", "RANK"),
                                             ("1", "two", "WORLD_SIZE"), ("-1", "2", "RANK"),
                                             ("0", "0", "WORLD_SIZE")])
def test_environment_errors_name_the_variable(clean_env, rank, size, named):
    clean_env.setenv("RANK", rank)
    clean_env.setenv("WORLD_SIZE", size)
    with pytest.raises(ValueError, match=named):
        sharding.detect_world()


def test_rank_without_size(clean_env):
    clean_env.setenv("PMI_RANK", "0")
    with pytest.raises(ValueError, match="PMI_SIZE"):
        sharding.detect_world()


def test_jax_only_when_imported_and_multi_process(clean_env):
    fake = types.ModuleType("jax")
    fake.process_count = lambda: 3
    fake.process_index = lambda: 2
    clean_env.setitem(sys.modules, "jax", fake)
    clean_env.setenv("RANK", "0")
    clean_env.setenv("WORLD_SIZE", "5")
    assert sharding.detect_world() == (2, 3, "jax")
    fake.process_count = lambda: 1
    assert sharding.detect_world()[:2] == (0, 5)  # one JAX process: the environment


def test_import_conveyor_imports_no_framework(run_python):
    out = run_python("import sys, conveyor, conveyor.sharding\n"
                     "conveyor.sharding.detect_world()\n"
                     "print(sorted(m for m in ('torch', 'jax') if m in sys.modules))")
    assert out.stdout.strip() == "[]", out.stderr


def test_defaults_come_from_the_world(clean_env):
    clean_env.setenv("RANK", "1")
    clean_env.setenv("WORLD_SIZE", "3")
    assert values(sharding.shard(tf.data.Dataset.range(7))) == [1, 4]


# -- DATA policy -----------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 5, 17])
@pytest.mark.parametrize("size", range(1, 9))
def test_data_shards_disjoint_complete(n, size):
    ds = tf.data.Dataset.range(n)
    shards = [values(sharding.shard(ds, size, r, policy="data")) for r in range(size)]
    assert sorted(v for s in shards for v in s) == list(range(n))
    assert max(map(len, shards)) - min(map(len, shards)) <= 1


@pytest.mark.parametrize("n", [3, 5, 17])
@pytest.mark.parametrize("size", range(1, 9))
def test_data_truncate(n, size):
    ds = tf.data.Dataset.range(n)
    shards = [values(sharding.shard(ds, size, r, policy="data", equal="truncate"))
              for r in range(size)]
    assert all(len(s) == n // size for s in shards)
    # Everything but the documented remainder: the last n % size elements.
    assert sorted(v for s in shards for v in s) == list(range(size * (n // size)))


@pytest.mark.parametrize("n", [3, 5, 17])
@pytest.mark.parametrize("size", range(1, 9))
def test_data_pad(n, size):
    ds = tf.data.Dataset.range(n)
    shards = [values(sharding.shard(ds, size, r, policy="data", equal="pad"))
              for r in range(size)]
    target = -(-n // size)
    assert all(len(s) == target for s in shards)
    real = sorted(v for s in shards for v, ok in s if ok)
    pads = [v for s in shards for v, ok in s if not ok]
    assert real == list(range(n))
    assert len(pads) == size * target - n
    # torch's DistributedSampler: the index list wraps around to its start.
    padded = list(range(n)) * (size * target // n + 1)
    assert [[int(v) for v, _ in s] for s in shards] == [
        padded[r:size * target:size] for r in range(size)]


def test_pad_keeps_structure():
    ds = tf.data.Dataset.from_tensor_slices({"x": np.arange(5.0), "y": np.arange(5)})
    (element, is_real), = values(sharding.shard(ds, 3, 2, policy="data", equal="pad"))[1:]
    assert set(element) == {"x", "y"} and is_real.dtype == np.bool_ and not is_real


def test_unknown_cardinality_needs_a_count():
    ds = tf.data.Dataset.range(20).filter(lambda x: x % 2 == 0)
    with pytest.raises(ValueError, match="num_elements"):
        sharding.shard(ds, 3, 0, policy="data", equal="truncate")
    shards = [values(sharding.shard(ds, 3, r, policy="data", equal="truncate",
                                    num_elements="count")) for r in range(3)]
    assert [len(s) for s in shards] == [3, 3, 3]
    assert values(sharding.shard(ds, 3, 0, policy="data", equal="pad",
                                 num_elements=10))[-1] == (np.int64(18), np.True_)
    with pytest.raises(ValueError, match="infinite"):
        sharding.shard(tf.data.Dataset.range(3).repeat(), 2, 0, equal="pad")


def test_argument_errors():
    ds = tf.data.Dataset.range(4)
    with pytest.raises(errors.InvalidArgumentError):
        sharding.shard(ds, 2, 2)
    with pytest.raises(errors.InvalidArgumentError):
        sharding.shard(ds, 0, 0)
    with pytest.raises(ValueError, match="policy"):
        sharding.shard(ds, 2, 0, policy="files")
    with pytest.raises(ValueError, match="HINT"):
        sharding.shard(ds, 2, 0, policy=AutoShardPolicy.HINT)
    with pytest.raises(ValueError, match="equal"):
        sharding.shard(ds, 2, 0, equal="drop")
    assert sharding.shard(ds, 2, 1, policy=AutoShardPolicy.OFF) is ds


def test_unseeded_shuffle_warns_under_data():
    with pytest.warns(RuntimeWarning, match="without a seed"):
        sharding.shard(tf.data.Dataset.range(8).shuffle(8), 2, 0, policy="data")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sharding.shard(tf.data.Dataset.range(8).shuffle(8, seed=1), 2, 0, policy="data")
        sharding.shard(tf.data.Dataset.range(8).shuffle(8), 1, 0, policy="data")


# -- FILE policy -----------------------------------------------------------------------


def write_text_files(folder, count):
    """File i holds i + 1 lines "i-j": lengths differ, so FILE shards do too."""
    names = []
    for i in range(count):
        path = folder / f"part-{i:02d}.txt"
        path.write_text("".join(f"{i}-{j}\n" for j in range(i + 1)))
        names.append(str(path))
    return names


def all_lines(count):
    return sorted(f"{i}-{j}".encode() for i in range(count) for j in range(i + 1))


PIPELINES = {
    "reader": lambda names, pattern: tf.data.TextLineDataset(names),
    "parallel_reads": lambda names, pattern: tf.data.TextLineDataset(names, num_parallel_reads=3),
    "list_files": lambda names, pattern: tf.data.Dataset.list_files(pattern, seed=7).interleave(
        tf.data.TextLineDataset, cycle_length=2).map(lambda x: x),
    "unseeded": lambda names, pattern: tf.data.Dataset.list_files(pattern).flat_map(
        tf.data.TextLineDataset).prefetch(2),
}


@pytest.mark.parametrize("kind", sorted(PIPELINES))
@pytest.mark.parametrize("size", range(1, 9))
def test_file_shards_disjoint_complete(tmp_path, kind, size):
    names = write_text_files(tmp_path, 9)
    ds = PIPELINES[kind](names, str(tmp_path / "*.txt"))
    shards = [values(sharding.shard(ds, size, r, policy="file")) for r in range(size)]
    assert sorted(v for s in shards for v in s) == all_lines(9)
    for r, s in enumerate(shards):  # each rank reads only its files
        assert {int(v.split(b"-")[0]) % size for v in s} <= {r}
    assert sorted(values(ds)) == all_lines(9)  # the input pipeline is unchanged


@pytest.mark.parametrize("size", range(1, 9))
def test_file_equal_lengths(tmp_path, size):
    write_text_files(tmp_path, 9)
    ds = tf.data.Dataset.list_files(str(tmp_path / "*.txt"), shuffle=False).interleave(
        tf.data.TextLineDataset, cycle_length=2)
    lengths = [sum(i + 1 for i in range(9) if i % size == r) for r in range(size)]
    cut = [values(sharding.shard(ds, size, r, equal="truncate", num_elements="count"))
           for r in range(size)]
    assert [len(s) for s in cut] == [min(lengths)] * size
    assert len(set(v for s in cut for v in s)) == min(lengths) * size
    pad = [values(sharding.shard(ds, size, r, equal="pad", num_elements=lengths))
           for r in range(size)]
    assert [len(s) for s in pad] == [max(lengths)] * size
    assert sorted(v for s in pad for v, ok in s if ok) == all_lines(9)
    assert sum(not ok for s in pad for _, ok in s) == size * max(lengths) - 45
    for s in pad:  # the padding comes after the real elements
        flags = [bool(ok) for _, ok in s]
        assert flags == sorted(flags, reverse=True)


def test_file_equal_needs_lengths(tmp_path):
    names = write_text_files(tmp_path, 4)
    with pytest.raises(ValueError, match="count"):
        sharding.shard(tf.data.TextLineDataset(names), 2, 0, equal="pad")
    with pytest.raises(ValueError, match="list"):
        sharding.shard(tf.data.TextLineDataset(names), 2, 0, equal="pad", num_elements=10)


def test_tfrecord_files(tmp_path):
    names = []
    for i in range(5):
        path = tmp_path / f"r{i}.tfrecord"
        path.write_bytes(tfrecord_bytes([b"%d:%d" % (i, j) for j in range(3)]))
        names.append(str(path))
    ds = tf.data.TFRecordDataset(names).map(lambda r: tf.strings.length(r))
    shards = [values(sharding.shard(tf.data.TFRecordDataset(names), 2, r)) for r in range(2)]
    assert shards[0][:3] == [b"0:0", b"0:1", b"0:2"] and shards[1][:3] == [b"1:0", b"1:1", b"1:2"]
    assert len(values(sharding.shard(ds, 2, 1))) == 6


def test_fewer_files_than_shards(tmp_path):
    names = write_text_files(tmp_path, 3)
    for policy in ("file", "auto", AutoShardPolicy.FILE):
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"only has 3 file\(s\), which is not enough for the required 4"):
            sharding.shard(tf.data.TextLineDataset(names), 4, 0, policy=policy)
    # DATA shards the lines instead.
    assert len(values(sharding.shard(tf.data.TextLineDataset(names), 4, 0, policy="data"))) == 2


def test_no_file_source(tmp_path):
    with pytest.raises(errors.NotFoundError, match="unshardable"):
        sharding.shard(tf.data.Dataset.range(8), 2, 0, policy="file")
    assert values(sharding.shard(tf.data.Dataset.range(8), 2, 1, policy="auto")) == [1, 3, 5, 7]
    names = write_text_files(tmp_path, 4)
    cached = tf.data.TextLineDataset(names).cache()
    with pytest.raises(errors.NotFoundError, match="cache"):
        sharding.shard(cached, 2, 0, policy="file")
    assert len(values(sharding.shard(cached, 2, 0))) == 5  # AUTO: by element


def test_file_shard_resumes(tmp_path):
    write_text_files(tmp_path, 6)

    def make():
        return sharding.shard(tf.data.Dataset.list_files(str(tmp_path / "*.txt"), seed=1)
                              .interleave(tf.data.TextLineDataset, cycle_length=2), 2, 1)

    want = values(make())
    it = make().as_numpy_iterator()
    head = [next(it) for _ in range(4)]
    state = it.save()
    it2 = make().as_numpy_iterator()
    it2.restore(state)
    assert head + list(it2) == want


# -- set_epoch -------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["data", "file"])
def test_set_epoch(tmp_path, policy):
    names = write_text_files(tmp_path, 8)

    def make(seed):
        if policy == "file":
            files = tf.data.Dataset.list_files(str(tmp_path / "*.txt"), seed=seed)
            return files.interleave(tf.data.TextLineDataset, cycle_length=2)
        return tf.data.TextLineDataset(names).shuffle(64, seed=seed)

    size = 3
    orders = {}
    for epoch in range(3):
        ranks = []
        for r in range(size):
            data = sharding.ShardedDataset(make, size, r, policy=policy, seed=10)
            data.set_epoch(epoch)
            again = sharding.ShardedDataset(make, size, r, policy=policy, seed=10)
            again.set_epoch(epoch)
            got = [bytes(v) for v in data]
            assert got == [bytes(v) for v in again]  # the same on every process
            ranks.append(got)
        assert sorted(v for s in ranks for v in s) == all_lines(8)  # disjoint and complete
        orders[epoch] = ranks
    assert orders[0] != orders[1] != orders[2]  # a new order every epoch


def test_sharded_dataset_of_a_dataset():
    data = sharding.ShardedDataset(tf.data.Dataset.range(10), 4, 3, equal="pad")
    assert len(data) == 3
    assert [int(v) for v, _ in data] == [3, 7, 1]
    assert "shard 3 of 4" in repr(data)
