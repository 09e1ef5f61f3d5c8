"""Exact resume: the iterator API (save/restore, state_dict, tf.train.Checkpoint),
the header (fingerprint, checksum, version) and its errors. Per-kernel
positions are tested beside each kernel family (tests/test_resume_*.py)."""
import os

import numpy as np
import pytest

import conveyor as cv
from conveyor import errors
from checkpoint_helpers import (run, straight, verify_resume, verify_resume_in_new_process,
                                verify_two_restores)

D = cv.data.Dataset


def test_range_resumes_at_every_element():
    verify_resume(lambda: D.range(2, 23, 3))
    verify_resume(lambda: D.range(10, 0, -2))
    verify_resume(lambda: D.range(0, 10, 3))  # its end is 12, past stop
    verify_resume(lambda: D.range(5, 5))
    verify_two_restores(lambda: D.range(20), 5, 13)


def test_restore_in_a_new_process():
    verify_resume_in_new_process("""
        import conveyor as cv
        def make():
            return cv.data.Dataset.range(50)
    """, breaks=[0, 1, 17, 49, 50])


def test_state_dict_round_trip_and_is_plain():
    it = iter(D.range(10))
    run(it, 4)
    state = it.state_dict()
    assert set(state) == {"format", "version", "state"} and isinstance(state["state"], bytes)
    it2 = iter(D.range(10))
    it2.load_state_dict(state)
    assert [int(v) for v in it2] == list(range(4, 10))
    with pytest.raises(TypeError):
        iter(D.range(10)).load_state_dict({"nope": 1})


def test_a_finished_iterator_restores_to_the_end():
    it = iter(D.range(3))
    assert len(run(it)) == 3
    it2 = iter(D.range(3))
    it2.restore(it.save())
    assert run(it2) == []


def test_restoring_into_a_changed_pipeline_raises():
    it = iter(D.range(10))
    run(it, 3)
    state = it.save()
    for changed in (D.range(11), D.range(1, 10), D.range(10, output_type=cv.int32),
                    D.range(10).map(lambda x: x + 2), D.range(10).take(5)):
        with pytest.raises(errors.FailedPreconditionError, match="different pipeline"):
            iter(changed).restore(state)


def test_a_corrupt_state_raises_and_leaves_a_usable_iterator():
    it = iter(D.range(10))
    run(it, 3)
    state = it.save()
    for bad in (state[:-1], state[:10], b"", b"x" * 100, state[:-5] + bytes([state[-5] ^ 1]) + state[-4:]):
        it2 = iter(D.range(10))
        with pytest.raises(errors.DataLossError, match="corrupt iterator state"):
            it2.restore(bad)
        assert [int(v) for v in it2] == list(range(10))  # from the start, as new
    with pytest.raises(TypeError):
        iter(D.range(10)).restore("text")


def test_restore_rewinds_a_used_iterator():
    # tf.data's checkpoint guide: save, go on, restore into the same iterator.
    def make():
        return D.range(40).shuffle(8, seed=3).map(lambda x: x * 3, num_parallel_calls=2).batch(
            3).prefetch(2)
    expected = straight(make)
    it = iter(make())
    assert run(it, 4) == expected[:4]
    state = it.save()
    assert run(it, 3) == expected[4:7]
    it.restore(state)
    assert run(it, 2) == expected[4:6]
    it.restore(state)  # again, and from elements a prefetch had ready
    assert run(it) == expected[4:]
    it2 = iter(make())
    run(it2, 9)
    it2.restore(state)
    assert run(it2) == expected[4:]


def test_restore_into_a_finished_or_closed_iterator_says_so():
    it = iter(D.range(10))
    state = it.save()
    run(it)
    with pytest.raises(ValueError, match="reached its end"):
        it.restore(state)
    it = iter(D.range(10))
    it.close()
    with pytest.raises(ValueError, match="closed"):
        it.restore(state)
    with pytest.raises(ValueError, match="closed"):
        it.save()


def test_train_checkpoint_restores_a_used_iterator(tmp_path):
    it = iter(D.range(20))
    ckpt = cv.train.Checkpoint(iterator=it)
    first = [int(next(it)) for _ in range(5)]
    path = ckpt.save(str(tmp_path / "ckpt"))
    assert [int(next(it)) for _ in range(5)] == list(range(5, 10))
    ckpt.restore(path)
    assert first + [int(x) for x in it] == list(range(20))


def test_a_generator_cannot_be_saved_and_says_so():
    it = iter(D.from_generator(lambda: iter([1, 2]), output_types=cv.int64))
    next(it)
    with pytest.raises((errors.UnimplementedError, errors.FailedPreconditionError)) as e:
        it.save()
    assert "Generator" in str(e.value) or "generator" in str(e.value)


def test_train_checkpoint_saves_numbered_and_restores_latest(tmp_path):
    it = iter(D.range(100))
    ckpt = cv.train.Checkpoint(iterator=it)
    run(it, 10)
    first = ckpt.save(str(tmp_path / "ckpt"))
    run(it, 15)
    second = ckpt.save(str(tmp_path / "ckpt"))
    assert first.endswith("-1") and second.endswith("-2")
    assert cv.train.latest_checkpoint(str(tmp_path)) == second
    it2 = iter(D.range(100))
    status = cv.train.Checkpoint(iterator=it2).restore(cv.train.latest_checkpoint(str(tmp_path)))
    status.assert_consumed()
    assert [int(v) for v in it2] == list(range(25, 100))
    it3 = iter(D.range(100))
    cv.train.Checkpoint(iterator=it3).read(first)
    assert int(next(it3)) == 10
    assert cv.train.Checkpoint(iterator=iter(D.range(3))).restore(None) is not None
    with pytest.raises(errors.NotFoundError):
        cv.train.Checkpoint(iterator=iter(D.range(3))).read(str(tmp_path / "missing"))
    path = second + ".cvckpt"
    data = bytearray(open(path, "rb").read())
    data[-10] ^= 0xFF
    open(path, "wb").write(bytes(data))
    with pytest.raises(errors.DataLossError):
        cv.train.Checkpoint(iterator=iter(D.range(100))).read(second)
    with pytest.raises(ValueError):
        cv.train.Checkpoint(model=object())
    assert not [f for f in os.listdir(tmp_path) if ".tmp" in f]


def test_fingerprint_covers_arguments_arrays_and_functions():
    from conveyor.data.checkpoint import fingerprint as fp
    a = np.arange(10)
    assert fp(D.from_tensor_slices(a).batch(2)) == fp(D.from_tensor_slices(a.copy()).batch(2))
    assert fp(D.from_tensor_slices(a).batch(2)) != fp(D.from_tensor_slices(a + 1).batch(2))
    assert fp(D.from_tensor_slices(a).batch(2)) != fp(D.from_tensor_slices(a).batch(3))
    assert fp(D.range(5).shuffle(3, seed=1)) != fp(D.range(5).shuffle(3, seed=2))
    assert fp(cv.data.TFRecordDataset(["a", "b"])) != fp(cv.data.TFRecordDataset(["a", "c"]))
    assert straight(lambda: D.range(3)) == straight(lambda: D.range(3))


def test_checkpoint_manager_keeps_the_newest_and_restores_a_variable(tmp_path):
    it = iter(D.range(20))
    step = cv.Variable(0)
    ckpt = cv.train.Checkpoint(step=step, iterator=it)
    manager = cv.train.CheckpointManager(ckpt, str(tmp_path / "run"), max_to_keep=2)
    assert manager.latest_checkpoint is None and manager.restore_or_initialize() is None
    run(it, 5)
    step.assign_add(5)
    first = manager.save()
    run(it, 5)
    step.assign(99)
    ckpt.restore(manager.latest_checkpoint)
    assert int(step) == 5 and step.numpy() == 5 and step.dtype == cv.int32
    assert [int(next(it)) for _ in range(2)] == [5, 6]
    for _ in range(3):
        manager.save()
    assert manager.checkpoints == [str(tmp_path / "run" / f"ckpt-{n}") for n in (3, 4)]
    assert sorted(os.listdir(tmp_path / "run")) == ["ckpt-3.cvckpt", "ckpt-4.cvckpt"]
    assert not os.path.exists(first + ".cvckpt")
    # A new manager over the same directory (a restarted job) numbers on.
    again = cv.train.CheckpointManager(cv.train.Checkpoint(step=cv.Variable(0)),
                                       str(tmp_path / "run"), max_to_keep=2)
    assert again.latest_checkpoint.endswith("ckpt-4")
    assert again.save().endswith("ckpt-5")


def test_variable_basics():
    v = cv.Variable([1.0, 2.0], name="w")
    assert v.dtype == cv.float32 and v.shape.as_list() == [2] and v.name == "w:0"
    v.assign_sub([1.0, 1.0])
    assert (v + 1).tolist() == [1.0, 2.0] and (2 * v).tolist() == [0.0, 2.0]
    with pytest.raises(ValueError, match="Shape mismatch"):
        v.assign([1.0])
    assert repr(cv.Variable(3)) == "<tf.Variable 'Variable:0' shape=() dtype=int32, numpy=3>"
    with pytest.raises(ValueError, match="cannot be checkpointed"):
        cv.train.Checkpoint(x=3)


def test_fingerprint_sees_captured_constants_not_mutable_state():
    from conveyor.data.checkpoint import fingerprint

    def make(scale, log):
        def fn(x):
            log.append(1)
            return x * scale
        return D.range(4).map(fn)
    log = []
    assert fingerprint(make(2, log)) == fingerprint(make(2, [1, 2, 3]))  # a counter: same
    assert fingerprint(make(2, log)) != fingerprint(make(3, log))  # a constant: different
