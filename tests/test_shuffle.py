"""shuffle without TensorFlow: permutations, seeds, determinism across thread counts."""
import numpy as np
import pytest

import conveyor as cv

Dataset = cv.data.Dataset


def values(ds):
    return [int(v) for v in ds]


def test_seeded_shuffle_is_a_reproducible_permutation():
    a = values(Dataset.range(100).shuffle(30, seed=4))
    assert sorted(a) == list(range(100)) and a != list(range(100))
    assert values(Dataset.range(100).shuffle(30, seed=4)) == a


def test_reshuffle_each_iteration():
    ds = Dataset.range(50).shuffle(50, seed=1)
    first, second = values(ds), values(ds)
    assert first != second and sorted(first) == sorted(second)
    fixed = Dataset.range(50).shuffle(50, seed=1, reshuffle_each_iteration=False)
    assert values(fixed) == values(fixed)


@pytest.mark.parametrize("workers", [1, 2, 4, cv.data.AUTOTUNE])
def test_order_does_not_depend_on_thread_count(workers):
    base = values(Dataset.range(200).shuffle(64, seed=9).map(lambda x: x * 2))
    ds = Dataset.range(200).shuffle(64, seed=9).map(lambda x: x * 2, num_parallel_calls=workers)
    assert values(ds.prefetch(3)) == base


def test_buffer_size_one_keeps_order_and_errors_pass_through():
    assert values(Dataset.range(10).shuffle(1, seed=3)) == list(range(10))

    def f(x):
        if x == 3:
            raise ValueError("three")
        return x
    it = iter(Dataset.range(6).map(f).shuffle(2, seed=1))
    seen, errors = [], 0
    while True:
        try:
            seen.append(int(next(it)))
        except ValueError:
            errors += 1
        except StopIteration:
            break
    assert errors == 1 and sorted(seen) == [0, 1, 2, 4, 5]


def test_huge_buffer_does_not_preallocate():
    assert sorted(values(Dataset.range(10).shuffle(10**12, seed=1))) == list(range(10))


def test_cardinality_and_bad_arguments():
    assert Dataset.range(7).shuffle(3).cardinality() == 7
    with pytest.raises(TypeError):
        Dataset.range(3).shuffle(2.5)
    with pytest.raises(cv.errors.InvalidArgumentError):
        Dataset.range(3).shuffle(-1)


def test_global_seed_makes_unseeded_shuffles_reproducible():
    cv.random.set_seed(77)
    a = [values(Dataset.range(20).shuffle(20)) for _ in range(2)]
    cv.random.set_seed(77)
    b = [values(Dataset.range(20).shuffle(20)) for _ in range(2)]
    cv.random.set_seed(None)
    assert a == b and a[0] != a[1]


def test_list_files(tmp_path):
    for name in ["x2", "x1", "x3"]:
        (tmp_path / name).write_bytes(b"")
    names = [v.decode() for v in Dataset.list_files(str(tmp_path / "x*"), shuffle=False)]
    assert names == [str(tmp_path / n) for n in ("x1", "x2", "x3")]
    shuffled = [v.decode() for v in Dataset.list_files(str(tmp_path / "x*"), seed=3)]
    assert sorted(shuffled) == names
    with pytest.raises(cv.errors.InvalidArgumentError, match="No files matched"):
        Dataset.list_files(str(tmp_path / "nothing*"))
