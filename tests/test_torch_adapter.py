"""conveyor.torch: the same values, dtypes and shapes as the NumPy pipeline,
zero-copy tensors, DataLoader workers reading each element exactly once,
exact resume through state_dict, set_epoch, and a real two-process
torch.distributed (gloo) run."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import conveyor as tf  # noqa: E402
import conveyor.torch as ct  # noqa: E402

from _jpeg_files import GOOD, needs_files  # noqa: E402
from conftest import fork_with_busy_threads  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pipelines():
    n = 10
    rng = np.random.default_rng(0)
    names = np.array([b"name-%d" % i for i in range(n)], dtype=object)
    out = {
        "slices_dict": tf.data.Dataset.from_tensor_slices({
            "a": rng.standard_normal((n, 3)).astype(np.float32), "b": np.arange(n),
            "c": np.arange(n) % 2 == 0, "d": np.arange(n, dtype=np.uint8),
            "h": np.arange(n, dtype=np.float16), "e": np.arange(n, dtype=np.float64)}),
        "slices_tuple": tf.data.Dataset.from_tensor_slices(
            (rng.integers(0, 255, (n, 4, 4, 3)).astype(np.uint8), np.arange(n, dtype=np.int32))),
        "map_batch": tf.data.Dataset.range(n).map(
            lambda x: (tf.cast(x, tf.float32) * 2.5, {"sq": x * x}),
            num_parallel_calls=2).batch(4),
        "strings": tf.data.Dataset.from_tensor_slices({"name": names, "v": np.arange(n) * 0.5}),
        "strings_batched": tf.data.Dataset.from_tensor_slices(
            (names, np.arange(n, dtype=np.int16))).batch(3),
    }
    if GOOD:
        out["jpeg"] = tf.data.Dataset.from_tensor_slices(GOOD).map(
            lambda p: (tf.image.resize(tf.io.decode_jpeg(tf.io.read_file(p), channels=3),
                                       [16, 16]), p)).batch(2)
    return out


def assert_same(numpy_element, torch_element, structure=True):
    """Leaf by leaf; `structure`: the same containers (a DataLoader's
    default_convert makes lists of tuples, so without it a list may stand for a tuple)."""
    a, t = numpy_element, torch_element
    if isinstance(a, dict):
        assert type(t) is type(a) or not structure
        assert sorted(t) == sorted(a)
        for key in a:
            assert_same(a[key], t[key], structure)
    elif isinstance(a, tuple):
        assert type(t) is type(a) or (not structure and isinstance(t, list))
        assert len(t) == len(a)
        for x, y in zip(a, t):
            assert_same(x, y, structure)
    elif isinstance(a, bytes):
        assert t == a
    elif np.asarray(a).dtype == object:
        assert t == np.asarray(a).tolist()
    else:
        a = np.asarray(a)
        assert isinstance(t, torch.Tensor)
        assert tuple(t.shape) == a.shape
        assert t.numpy().dtype == a.dtype
        np.testing.assert_array_equal(t.numpy(), a)


@pytest.mark.parametrize("name", ["slices_dict", "slices_tuple", "map_batch", "strings",
                                  "strings_batched", pytest.param("jpeg", marks=needs_files)])
def test_same_as_numpy(name):
    ds = pipelines()[name]
    want = list(ds.as_numpy_iterator())
    got = list(ct.loader(ds))
    assert len(got) == len(want)
    for a, t in zip(want, got):
        assert type(t) is type(a)
        assert_same(a, t)
    # Through a DataLoader (batch_size=None): the same leaves (its default_convert
    # turns tuples into lists).
    through = list(torch.utils.data.DataLoader(ct.IterableDataset(ds), batch_size=None))
    assert len(through) == len(want)
    for a, t in zip(want, through):
        assert_same(a, t, structure=False)


def test_zero_copy_and_strings():
    element = next(tf.data.Dataset.from_tensor_slices(
        {"x": np.ones((2, 3), np.float32), "s": np.array([b"a", b"b"], dtype=object)}
    ).batch(2).as_numpy_iterator())
    out = ct.to_torch(element)
    assert out["x"].data_ptr() == element["x"].ctypes.data  # the same memory
    assert out["s"] == [b"a", b"b"]
    scalar = ct.to_torch((np.int64(3), b"x", np.bytes_(b"y")))
    assert scalar[0].shape == () and scalar[0].dtype == torch.int64
    assert scalar[1:] == (b"x", b"y")


def write_files(folder, count=6):
    names = []
    for i in range(count):
        path = folder / f"f{i}.txt"
        path.write_text("".join(f"{i}-{j}\n" for j in range(5)))
        names.append(str(path))
    return names


@fork_with_busy_threads  # DataLoader workers fork while torch's and the engine's threads allocate
@pytest.mark.parametrize("policy", ["data", "file"])
def test_dataloader_workers_exactly_once(tmp_path, policy):
    names = write_files(tmp_path, 8)
    ds = tf.data.TextLineDataset(names).map(lambda x: tf.strings.join([x, "!"]))
    want = sorted(v for v in ds.as_numpy_iterator())
    got = []
    for rank in range(2):  # two ranks, two workers each: shard rank * 2 + worker of 4
        adapter = ct.IterableDataset(ds, 2, rank, policy=policy)
        loader = torch.utils.data.DataLoader(adapter, batch_size=None, num_workers=2)
        got += list(loader)
    assert sorted(got) == want


@fork_with_busy_threads  # DataLoader workers fork while torch's and the engine's threads allocate
def test_dataloader_workers_batched_tensors():
    ds = tf.data.Dataset.range(40).map(lambda x: tf.cast(x, tf.float32))
    adapter = ct.IterableDataset(ds, 1, 0)
    loader = torch.utils.data.DataLoader(adapter, batch_size=4, num_workers=2)
    got = torch.cat(list(loader))
    assert sorted(got.tolist()) == list(range(40))


@fork_with_busy_threads  # DataLoader workers fork while torch's and the engine's threads allocate
def test_equal_shards_across_workers_and_ranks():
    ds = tf.data.Dataset.range(23)
    lengths, real = [], []
    for rank in range(2):
        adapter = ct.IterableDataset(ds, 2, rank, equal="pad")
        got = list(torch.utils.data.DataLoader(adapter, batch_size=None, num_workers=2))
        lengths.append(len(got))
        real += [int(x) for x, ok in got if ok]
    assert lengths == [12, 12]  # 4 shards (2 ranks x 2 workers) of 6
    assert sorted(real) == list(range(23))


def test_state_dict_resume():
    def make(seed):
        return tf.data.Dataset.range(30).shuffle(30, seed=seed).map(lambda x: x * 2).batch(4)

    adapter = ct.IterableDataset(make, 2, 1, seed=5)
    adapter.set_epoch(3)
    want = [t.tolist() for t in adapter]
    it = iter(adapter)
    head = [next(it).tolist() for _ in range(2)]
    state = adapter.state_dict()
    assert state["epoch"] == 3
    saved = torch.load(_roundtrip(state), weights_only=False)
    fresh = ct.IterableDataset(make, 2, 1, seed=5)
    fresh.load_state_dict(saved)
    rest = [t.tolist() for t in fresh]
    assert head + rest == want
    assert [t.tolist() for t in fresh] == want  # the next iteration starts over
    with pytest.raises(TypeError):
        fresh.load_state_dict({"state": b""})


def _roundtrip(obj):
    import io
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return buf


def test_set_epoch_same_on_every_rank():
    def make(seed):
        return tf.data.Dataset.range(20).shuffle(20, seed=seed)

    epochs = []
    for epoch in range(2):
        parts = []
        for rank in range(3):
            adapter = ct.loader(make, 3, rank, seed=1)
            adapter.set_epoch(epoch)
            parts.append([int(x) for x in adapter])
        assert sorted(sum(parts, [])) == list(range(20))
        epochs.append(parts)
    assert epochs[0] != epochs[1]


def test_len():
    assert len(ct.loader(tf.data.Dataset.range(10), 3, 2)) == 3
    assert len(ct.loader(tf.data.Dataset.range(10), 3, 2, equal="truncate")) == 3
    assert len(torch.utils.data.DataLoader(ct.loader(tf.data.Dataset.range(10), 4, 0),
                                           batch_size=None)) == 3


def _make_range(seed):
    return tf.data.Dataset.range(12).shuffle(12, seed=seed)


def test_pickling_for_spawned_workers():
    import pickle
    adapter = ct.IterableDataset(_make_range, 2, 1, seed=3)
    adapter.set_epoch(2)
    copy = pickle.loads(pickle.dumps(adapter))
    assert [int(x) for x in copy] == [int(x) for x in adapter]
    it = iter(adapter)
    next(it)
    pickle.dumps(adapter)  # a live iterator stays behind
    with pytest.raises(TypeError, match="multiprocessing_context='fork'"):
        pickle.dumps(ct.IterableDataset(tf.data.Dataset.range(3)))


def test_bad_arguments():
    with pytest.raises(TypeError):
        ct.IterableDataset([1, 2, 3])
    with pytest.raises(ValueError):
        ct.IterableDataset(tf.data.Dataset.range(3), equal="yes")


def test_import_error_names_the_extra(run_python):
    out = run_python("""
import sys
sys.modules['torch'] = None   # as if torch were not installed
try:
    import conveyor.torch
except ImportError as e:
    print(e)
""")
    assert "pip install conveyor[torch]" in out.stdout, out.stderr


DISTRIBUTED = """
import json, sys
import torch.distributed as dist
import torch.multiprocessing as mp


def run(rank, init, out):
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
    import torch
    import conveyor as tf
    import conveyor.sharding
    import conveyor.torch
    world = conveyor.sharding.detect_world()
    ds = tf.data.Dataset.range(23).map(lambda x: x * 10)
    padded = [(int(x), bool(ok)) for x, ok in conveyor.torch.IterableDataset(ds, equal="pad")]
    # A process started by spawn starts its DataLoader workers by spawn too, which
    # would pickle the Dataset: fork them.
    loader = torch.utils.data.DataLoader(conveyor.torch.IterableDataset(ds), batch_size=None,
                                         num_workers=2, multiprocessing_context="fork")
    workers = [int(x) for x in loader]
    gathered = [None, None]
    dist.all_gather_object(gathered, {"world": list(world), "padded": padded, "workers": workers})
    if rank == 0:
        with open(out, "w") as f:
            json.dump(gathered, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=(sys.argv[1], sys.argv[2]), nprocs=2)
"""


@fork_with_busy_threads  # DataLoader workers fork while torch's and the engine's threads allocate
def test_torch_distributed_two_processes(tmp_path):
    script = tmp_path / "ddp.py"
    script.write_text(textwrap.dedent(DISTRIBUTED))
    out = tmp_path / "out.json"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for name in ("RANK", "WORLD_SIZE", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, str(script), f"file://{tmp_path}/rendezvous",
                           str(out)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = json.loads(out.read_text())
    assert [r["world"] for r in ranks] == [[0, 2, "torch.distributed"],
                                           [1, 2, "torch.distributed"]]
    padded = [r["padded"] for r in ranks]
    assert [len(p) for p in padded] == [12, 12]  # equal lengths: no rank waits at the end
    assert sorted(x for p in padded for x, ok in p if ok) == [10 * i for i in range(23)]
    assert sum(not ok for p in padded for _, ok in p) == 1
    # DataLoader workers inside each rank: shard rank * 2 + worker of 4.
    assert sorted(x for r in ranks for x in r["workers"]) == [10 * i for i in range(23)]
