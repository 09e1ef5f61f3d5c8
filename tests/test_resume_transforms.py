"""Exact resume of the sources and the sequential transforms: tensor_slices,
tensors, random, from_generator (cannot), window elements, take, repeat,
filter, ignore_errors, concatenate, zip, unbatch, rebatch, padded_batch,
window, group_by_window, choose_from_datasets, sample_from_datasets.

The pattern is tf.data's checkpoint test: run k, save, rebuild, restore, run
the rest == one straight run, for every k (tests/checkpoint_helpers.py).
Errors count as elements: an error is tied to its position, and after a
restore the sequence goes on as the straight run does.
"""
import numpy as np
import pytest

import conveyor as cv
from conveyor import errors
from conveyor.data.ops.window_op import _GroupWindowsDataset
from checkpoint_helpers import (plain, run, straight, verify_resume, verify_resume_in_new_process,
                                verify_two_restores)

D = cv.data.Dataset
T = D.from_tensor_slices

# Predicates that raise on purpose cannot be traced: they run in Python.
pytestmark = pytest.mark.filterwarnings("ignore:.*runs in Python per element")


# -- helpers ---------------------------------------------------------------

def erun(it, n=None, convert=plain):
    """Up to n items of it, an error counting as one item (its type and
    message) and the iteration going on after it."""
    out = []
    while n is None or len(out) < n:
        try:
            out.append(convert(next(it)))
        except StopIteration:
            break
        except (errors.OpError, ZeroDivisionError) as e:
            out.append(("error", type(e).__name__, str(e).splitlines()[0]))
            # A window keeps the exception for its later windows: its
            # traceback (this frame, holding `it`) would make a cycle
            # through the engine that the gc cannot see.
            e.__traceback__ = None
    return out


def everify(make, convert=plain, breaks=None):
    """verify_resume with errors and a converter for non-tensor elements."""
    expected = erun(iter(make()), convert=convert)
    for k in (range(len(expected) + 1) if breaks is None else breaks):
        it = iter(make())
        head = erun(it, k, convert)
        state = it.save()
        it = iter(make())
        it.restore(state)
        tail = erun(it, convert=convert)
        assert head + tail == expected, f"break at {k}"
    return expected


def windows(w):
    """A window element (a dataset, or a structure of them) as plain values."""
    if isinstance(w, tuple):
        return tuple(windows(x) for x in w)
    if isinstance(w, dict):
        return {k: windows(v) for k, v in sorted(w.items())}
    return [plain(x) for x in w]


def groups(pair):
    key, window = pair
    return (int(key), windows(window))


def continues(make, n):
    """For unseeded randomness (a rebuilt pipeline draws other seeds): the
    saved iterator's own rest == the restored one's, at every break."""
    for k in range(n + 1):
        it = iter(make())
        run(it, k)
        state = it.save()
        rest = run(it)
        it2 = iter(make())
        it2.restore(state)
        assert run(it2) == rest, f"break at {k}"


def fails_at(*positions):
    """A filter predicate that raises ZeroDivisionError at the given values
    (errors at known positions without a map)."""
    def predicate(x):
        if int(x) in positions:
            return 1 // 0 == 0
        return True
    return predicate


# -- sources ---------------------------------------------------------------

def test_tensor_slices_and_tensors_resume_at_every_element():
    rows = np.arange(24, dtype=np.float32).reshape(8, 3)
    words = np.array([b"a", b"", b"ccc", b"dd", b"e", b"f", b"g", b"hh"], dtype=object)
    verify_resume(lambda: T((rows, words)))
    verify_resume(lambda: T({"a": np.arange(5), "b": np.ones((5, 2), np.uint8)}))
    verify_resume(lambda: D.from_tensors((np.arange(6).reshape(2, 3), b"x")))
    verify_resume(lambda: T(np.zeros((0, 2))))
    verify_two_restores(lambda: T(np.arange(20)), 3, 11)


def test_seeded_random_resumes_exactly_also_across_epochs():
    verify_resume(lambda: D.random(seed=7).take(6))
    verify_resume(lambda: D.random(seed=7).take(4).repeat(3))
    verify_resume(lambda: D.random(seed=7, rerandomize_each_iteration=True).take(4).repeat(3))
    verify_two_restores(lambda: D.random(seed=1, rerandomize_each_iteration=True).take(3).repeat(4),
                        2, 8)


def test_unseeded_random_carries_its_drawn_seeds():
    continues(lambda: D.random().take(4).repeat(3), 12)
    continues(lambda: D.random(rerandomize_each_iteration=True).take(4).repeat(3), 12)


def test_unseeded_random_continues_in_a_new_process(tmp_path):
    # The saving process's own continuation is the reference: a fresh
    # process draws other seeds, the state brings the saved ones.
    import json
    import subprocess
    import sys
    code = f"""
import json, sys
sys.path.insert(0, {str(__import__('checkpoint_helpers').ROOT)!r})
import conveyor as cv
it = iter(cv.data.Dataset.random(rerandomize_each_iteration=True).take(4).repeat(3))
if sys.argv[1] == "save":
    [next(it) for _ in range(6)]
    open(sys.argv[2], "wb").write(it.save())
else:
    it.restore(open(sys.argv[2], "rb").read())
print(json.dumps([int(v) for v in it]))
"""
    path = str(tmp_path / "state")
    outs = [json.loads(subprocess.run([sys.executable, "-c", code, mode, path], check=True,
                                      capture_output=True, text=True).stdout)
            for mode in ("save", "restore")]
    assert len(outs[0]) == 6 and outs[0] == outs[1]


def test_from_generator_cannot_be_saved_and_says_what_to_do():
    it = iter(D.from_generator(lambda: iter([1, 2, 3]), output_types=cv.int64).take(2))
    next(it)
    with pytest.raises(errors.UnimplementedError, match="FromGenerator.*generator.*from_tensor_slices"):
        it.save()
    assert [int(v) for v in it] == [2]  # still usable


def test_window_elements_resume_inside_a_window():
    ds = D.range(7).window(5, shift=5)
    inner = next(iter(ds))
    verify_resume(lambda: inner)


# -- take / repeat / concatenate --------------------------------------------

def test_take_repeat_concatenate_at_every_element():
    verify_resume(lambda: D.range(10).take(4))
    verify_resume(lambda: D.range(3).take(10))
    verify_resume(lambda: D.range(10).take(0))
    verify_resume(lambda: D.range(4).repeat(3))
    verify_resume(lambda: D.range(4).take(2).repeat(3))
    verify_resume(lambda: D.range(0).repeat())  # empty forever: ends
    verify_resume(lambda: D.range(3).repeat(0))
    verify_resume(lambda: D.range(3).repeat().take(8))
    verify_resume(lambda: D.range(3).concatenate(D.range(0)).concatenate(T(np.array([7, 8], np.int64))).concatenate(D.range(2)))
    verify_two_restores(lambda: D.range(3).repeat(4).concatenate(D.range(5)), 4, 13)


def test_skip_passes_over_sources_take_repeat_and_concatenate_exactly():
    # skip() goes through the kernels' skip where they have one (a row
    # cursor moves; repeat and concatenate skip epoch by epoch, input by
    # input). An error met is returned, and the count starts over after it
    # (TensorFlow's rule: skip(3) over [0, 1, error, 3, 4, 5, 6] gives
    # error, 6).
    makes = [lambda: T(np.arange(7)).repeat(3), lambda: D.range(0).repeat(),
             lambda: D.range(4).take(3).repeat(4), lambda: D.from_tensors(np.int64(1)).repeat(5),
             lambda: T(np.arange(3)).concatenate(D.range(0)).concatenate(D.range(5)).repeat(2),
             lambda: D.range(6).filter(fails_at(2)).repeat(2),
             lambda: D.range(3).concatenate(D.range(6).filter(fails_at(4)))]
    for make in makes:
        full = erun(iter(make()))
        for n in range(len(full) + 2):
            expected, passed, i = [], 0, 0
            while i < len(full) and passed < n:
                if full[i][0] == "error":
                    expected.append(full[i])
                    passed = 0
                else:
                    passed += 1
                i += 1
            assert erun(iter(make().skip(n))) == expected + full[i:], n


# -- filter / ignore_errors: errors at their positions ----------------------

def test_filter_and_its_errors_resume_at_every_element():
    verify_resume(lambda: D.range(20).filter(lambda x: x % 3 == 1))
    everify(lambda: D.range(8).filter(fails_at(2, 5)))
    everify(lambda: D.range(6).filter(fails_at(0, 5)).repeat(2))


def test_ignore_errors_resumes_past_dropped_errors():
    verify_resume(lambda: D.range(10).filter(fails_at(0, 3, 4, 9)).ignore_errors())
    verify_resume(lambda: D.zip((D.range(8).filter(fails_at(2)), D.range(8))).ignore_errors()
                  .repeat(2))


# -- zip ---------------------------------------------------------------------

def test_zip_resumes_and_keeps_its_inputs_in_step_after_an_error():
    verify_resume(lambda: D.zip((D.range(6), T(np.arange(10) * 2.5), D.range(3).repeat())))
    verify_resume(lambda: D.zip({"a": D.range(4), "b": D.from_tensors(b"x").repeat()}))
    everify(lambda: D.zip((D.range(7).filter(fails_at(1, 4)), D.range(100, 107))))


# -- unbatch / rebatch / padded_batch ---------------------------------------

def test_unbatch_resumes_inside_a_batch():
    rows = np.arange(30).reshape(5, 3, 2)
    verify_resume(lambda: T(rows).unbatch())
    verify_resume(lambda: T((rows, np.ones((5, 3), np.bool_))).unbatch().take(11).repeat(2))
    verify_two_restores(lambda: T(rows).unbatch(), 4, 5)
    everify(lambda: T(np.arange(8).reshape(4, 2)).filter(lambda x: 1 // int(x[0] - 2) != 7)
            .unbatch())


def test_unbatch_state_holds_only_the_rows_left():
    big = np.zeros((64, 1000), np.float64)  # one 512 KB batch of 64 rows
    it = iter(T(big[None]).unbatch())
    run(it, 60)
    state = it.save()
    assert 4 * 8000 < len(state) < 5 * 8000 + 1000
    it2 = iter(T(big[None]).unbatch())
    it2.restore(state)
    assert len(run(it2)) == 4


def test_rebatch_resumes_at_every_element():
    rows = np.arange(26).reshape(13, 2)
    verify_resume(lambda: T(rows).rebatch([3, 5, 0, 4]))
    verify_resume(lambda: T(rows).rebatch([4], drop_remainder=True))
    verify_resume(lambda: T(np.arange(18).reshape(6, 3)).rebatch([2, 7]).repeat(2))


def test_padded_batch_resumes_at_every_element():
    verify_resume(lambda: D.range(11).padded_batch(3, padded_shapes=[]))
    verify_resume(lambda: T(np.arange(24).reshape(8, 3)).padded_batch(3, padded_shapes=[5],
                                                                       padding_values=np.int64(-1)))
    verify_resume(lambda: T(np.arange(24).reshape(12, 2)).unbatch().padded_batch(
        5, padded_shapes=[], drop_remainder=True))


# -- window / group_by_window ------------------------------------------------

def test_window_resumes_with_its_overlap_buffer():
    for args in ((4, 3, 2), (2, 5, 1), (3, 1, 1), (5, 2, 1)):
        everify(lambda: D.range(13).window(args[0], shift=args[1], stride=args[2]),
                convert=windows)
    everify(lambda: D.range(9).window(3, shift=2, drop_remainder=True), convert=windows)
    everify(lambda: D.zip((D.range(8), T(np.arange(16.0).reshape(8, 2)))).window(3, shift=2),
            convert=windows)


def test_window_errors_in_the_buffer_come_back_at_their_windows():
    # The error position 3 sits in three overlapping windows; after a
    # restore with it in the buffer it comes back with its code and message
    # (a Python exception as a conveyor error of its code, as tf.data keeps
    # a status in its window buffer).
    def make():
        return D.range(6).filter(fails_at(3)).window(3, shift=1)
    expected = erun(iter(make()), convert=windows)
    assert [e[0] == "error" for e in expected] == [False, True, True, True, False, False]
    for k in range(len(expected) + 1):
        it = iter(make())
        head = erun(it, k, windows)
        it2 = iter(make())
        it2.restore(it.save())
        tail = erun(it2, convert=windows)
        got = head + tail
        assert len(got) == len(expected)
        for a, b in zip(got, expected):
            if b[0] == "error":
                assert a[0] == "error" and "division" in a[2]
            else:
                assert a == b


def test_a_saved_error_message_that_is_not_utf8_still_raises_its_error():
    def make():
        return D.range(6).filter(fails_at(3)).window(3, shift=1)
    it = iter(make())
    erun(it, 2, windows)  # the error position 3 is in the buffer
    state = it._save_engine()
    assert b"by zero" in state
    it2 = iter(make())
    it2._restore_engine(state.replace(b"by zero", b"\xff" * 7))
    got = erun(it2, convert=windows)
    assert got[0][0] == "error" and "\ufffd" in got[0][2]


def test_group_by_window_keeps_its_partial_groups():
    verify = lambda make: everify(make, convert=groups)  # noqa: E731
    verify(lambda: _GroupWindowsDataset(D.range(20), lambda x: x % 3, 4, None))
    verify(lambda: _GroupWindowsDataset(D.range(20), lambda x: x % 4, None, lambda k: k + 1))
    verify(lambda: _GroupWindowsDataset(T(np.arange(30).reshape(15, 2)), lambda x: x[0] % 5, 2,
                                        None).repeat(2))


# -- choose / sample --------------------------------------------------------

def test_choose_from_datasets_resumes_with_exhausted_inputs():
    picks = np.array([0, 1, 1, 2, 0, 0, 0, 1, 0, 1, 1, 1, 1, 1, 0], np.int64)
    verify_resume(lambda: D.choose_from_datasets([D.range(3), D.range(10, 15), D.range(0)],
                                                 T(picks)))
    verify_resume(lambda: D.choose_from_datasets([D.range(3), D.range(10, 15)], T(picks % 2),
                                                 stop_on_empty_dataset=True))
    everify(lambda: D.choose_from_datasets([D.range(3), D.range(10, 15)],
                                           T(np.array([0, 5, 1, -1, 0], np.int64))))


def test_sample_from_datasets_resumes_its_random_choices():
    verify_resume(lambda: D.sample_from_datasets([D.range(5), D.range(100, 110)], [0.3, 0.7],
                                                 seed=5))
    verify_resume(lambda: D.sample_from_datasets([D.range(5), D.range(100, 110)], [0.3, 0.7],
                                                 seed=5, stop_on_empty_dataset=True))
    weights = T(np.array([[0.5, 0.5], [0.9, 0.1]] * 5, np.float32))
    verify_resume(lambda: D.sample_from_datasets([D.range(5), D.range(100, 110)], weights, seed=5))
    continues(lambda: D.sample_from_datasets([D.range(8), D.range(100, 108)]), 16)


# -- composites --------------------------------------------------------------

def test_composite_pipelines_at_every_element():
    words = np.array([b"w%d" % i for i in range(9)], dtype=object)
    verify_resume(lambda: D.zip((T(np.arange(60).reshape(20, 3)), T(np.arange(27.0).reshape(9, 3))))
                  .take(7).repeat(3).rebatch([2, 3]).unbatch())
    verify_resume(lambda: D.zip((D.range(20), T(words))).take(7).repeat(3))
    verify_resume(lambda: D.range(6).concatenate(D.range(50, 53)).filter(lambda x: x % 2 == 0)
                  .padded_batch(2, padded_shapes=[]).unbatch().repeat(2))
    verify_two_restores(lambda: D.zip((D.range(10), D.random(seed=3))).take(6).repeat(3)
                        .filter(lambda a, b: a % 2 == 0), 2, 7)


def test_restore_in_a_new_process_per_family():
    verify_resume_in_new_process("""
        import numpy as np
        import conveyor as cv
        D = cv.data.Dataset
        def make():
            return (D.zip((D.range(20), D.from_tensor_slices(np.arange(9.0)),
                           D.random(seed=4))).take(7).repeat(2)
                    .concatenate(D.zip((D.range(3), D.from_tensor_slices(np.ones(3)),
                                        D.random(seed=5))))
                    .filter(lambda a, *r: True))
    """, breaks=[0, 8, 17])
    verify_resume_in_new_process("""
        import numpy as np
        import conveyor as cv
        D = cv.data.Dataset
        def make():
            rows = np.arange(26).reshape(13, 2)
            return D.from_tensor_slices(rows).rebatch([3, 5]).unbatch().padded_batch(
                4, padded_shapes=[]).unbatch()
    """, breaks=[0, 6])
    verify_resume_in_new_process("""
        import conveyor as cv
        D = cv.data.Dataset
        def make():
            return D.sample_from_datasets([D.range(6), D.range(10, 16)], [0.5, 0.5], seed=9)
    """, breaks=[5])


# -- damaged states -----------------------------------------------------------

DAMAGE_PIPELINES = [
    lambda: T((np.arange(12).reshape(3, 2, 2), np.arange(6.0).reshape(3, 2))).unbatch().take(9).repeat(2),
    lambda: D.zip((D.range(9), D.random(seed=2))).concatenate(D.zip((D.range(3), D.range(3)))),
    lambda: D.range(13).window(4, shift=3),
    lambda: _GroupWindowsDataset(D.range(20), lambda x: x % 3, 4, None),
    lambda: T(np.arange(26).reshape(13, 2)).rebatch([3, 5]),
    lambda: D.range(11).padded_batch(3, padded_shapes=[]),
    lambda: D.sample_from_datasets([D.range(5), D.range(100, 110)], [0.3, 0.7], seed=5),
    lambda: D.choose_from_datasets([D.range(3), D.range(5)], T(np.array([0, 1, 1, 0, 0, 0]))),
    lambda: D.range(10).filter(lambda x: x > 2).ignore_errors(),
]


@pytest.mark.parametrize("make", DAMAGE_PIPELINES)
def test_a_damaged_engine_state_is_an_error_never_a_crash(make):
    it = iter(make())
    erun(it, 2, convert=lambda e: None)
    state = it._save_engine()
    rng = np.random.default_rng(0)
    cuts = sorted(set(range(0, len(state), max(1, len(state) // 40))))
    damaged = [state[:n] for n in cuts]
    for _ in range(60):
        b = bytearray(state)
        b[int(rng.integers(len(b)))] ^= 1 << int(rng.integers(8))
        damaged.append(bytes(b))
    for data in damaged:
        it2 = iter(make())
        try:
            it2._restore_engine(data)
        except (errors.DataLossError, errors.FailedPreconditionError, errors.InvalidArgumentError):
            continue
        # A flip in a value (a position, a row) may be a valid state: it
        # must still run (or fail with an engine error) without crashing.
        for _ in range(200):
            try:
                next(it2)
            except StopIteration:
                break
            except (errors.OpError, ZeroDivisionError):
                pass


# -- against TensorFlow's own checkpoints -------------------------------------

def test_same_continuation_as_tensorflow_checkpoints(tmp_path):
    tf = pytest.importorskip("tensorflow")
    rows = np.arange(24).reshape(8, 3)

    def pipelines(lib):
        d = lib.data.Dataset
        return [
            lambda: d.zip((d.range(10), d.from_tensor_slices(rows))).take(5).repeat(2),
            lambda: d.from_tensor_slices(rows).rebatch([5]),
            lambda: d.range(7).concatenate(d.range(3)).padded_batch(3, padded_shapes=[]),
            lambda: d.random(seed=3).take(5),
        ]

    def tf_rows(element):
        return [np.asarray(x).tolist() for x in tf.nest.flatten(element)]

    def cv_rows(element):
        return [np.asarray(x).tolist() for x in cv.nest.flatten(element)]

    for i, (make_tf, make_cv) in enumerate(zip(pipelines(tf), pipelines(cv))):
        total = len(list(make_tf()))
        for k in sorted({0, 1, total // 2, total}):
            tf_it = iter(make_tf())
            head = [tf_rows(next(tf_it)) for _ in range(k)]
            path = tf.train.Checkpoint(iterator=tf_it).save(str(tmp_path / f"tf{i}_{k}"))
            tf_it2 = iter(make_tf())
            tf.train.Checkpoint(iterator=tf_it2).restore(path)
            tf_tail = [tf_rows(e) for e in tf_it2]

            cv_it = iter(make_cv())
            cv_head = [cv_rows(next(cv_it)) for _ in range(k)]
            state = cv_it.save()
            cv_it2 = iter(make_cv())
            cv_it2.restore(state)
            cv_tail = [cv_rows(e) for e in cv_it2]
            assert cv_head == head and cv_tail == tf_tail, f"pipeline {i}, break {k}"
