"""Failed restores (docs/resume.md, "A damaged state"): a state whose CRC was
recomputed after damage (a forged state) raises only conveyor's errors, and
any failed restore leaves the iterator exactly as iter(dataset) made it: the
first epoch's order from element 0, every seed generator and counter as it
was."""
import random
import struct
import zlib

import numpy as np
import pytest

import conveyor as cv
from conveyor import errors
from conveyor.data import checkpoint as ckpt
from checkpoint_helpers import run

D = cv.data.Dataset
HEADER_END = len(ckpt._MAGIC) + ckpt._HEADER.size  # then the held element's length (8 bytes)


def _make():
    return D.zip((D.range(40).shuffle(10, seed=3).batch(4),
                  D.from_tensor_slices([b"x%d" % i for i in range(10)]),
                  D.range(10).map(lambda x: x * 2)))


def _with_crc(body):
    return body + struct.pack("<I", zlib.crc32(body))


def _state_with_held_element():
    """A real state (3 elements in) carrying a held-back element, as an interrupted
    next() leaves one: (body without its CRC, offset of the held element, its end)."""
    ds = _make()
    it = iter(ds)
    run(it, 3)
    engine = it._save_engine()
    held = ckpt._encode_element((np.arange(4, dtype=np.int64), b"held", np.int64(7)))
    body = (ckpt._MAGIC + ckpt._HEADER.pack(ckpt._VERSION, ckpt.fingerprint(ds), ckpt._HELD)
            + struct.pack("<Q", len(held)) + held + engine)
    return body, HEADER_END + 8, HEADER_END + 8 + len(held)


def _forged(body, held_at, held_end, rng):
    """(name, forged state) cases: every header and held-element byte altered,
    held-element lengths that lie, and random bytes anywhere."""
    for at in range(len(ckpt._MAGIC), held_end):
        for value in (body[at] ^ 0x01, body[at] ^ 0x80, 0x00, 0xFF):
            if value != body[at]:
                yield f"byte {at} = {value:#x}", body[:at] + bytes([value]) + body[at + 1:]
    for cut in (1, 2, 9, 50, held_end - held_at):  # the held element shorter, its length too
        held = body[held_at:held_end - cut]
        yield f"held cut by {cut}", (body[:HEADER_END] + struct.pack("<Q", len(held)) + held
                                     + body[held_end:])
    for _ in range(300):
        at = rng.randrange(len(ckpt._MAGIC), len(body))
        n = rng.randint(1, 4)
        yield f"random {at}+{n}", body[:at] + bytes(rng.randrange(256) for _ in range(n)) + \
            body[at + n:]


def test_forged_states_raise_conveyor_errors_and_leave_a_fresh_iterator():
    body, held_at, held_end = _state_with_held_element()
    fresh = run(iter(_make()))
    it = iter(_make())
    it.restore(_with_crc(body))  # the unforged state restores
    assert run(it, 1)[0][2][2] == 7
    rng = random.Random(31)
    raised = accepted = 0
    for name, forged in _forged(body, held_at, held_end, rng):
        it = iter(_make())
        try:
            it.restore(_with_crc(forged))
        except (errors.DataLossError, errors.FailedPreconditionError):
            raised += 1
            assert run(it) == fresh, name
        except Exception as e:  # noqa: BLE001 - the point: no other error type
            pytest.fail(f"{name}: {type(e).__name__}: {e}")
        else:
            accepted += 1  # well-formed after all (a value byte): runs like any state
            try:
                run(it)
            except errors.OpError:
                pass
    assert raised > 1000 and accepted > 0, (raised, accepted)


@pytest.mark.parametrize("flags", [ckpt._FINISHED | ckpt._HELD, 4, 0x80, 0])
def test_flags_that_do_not_fit_the_state_are_data_loss(flags):
    # Finished with frames, held bytes without the flag, an unknown flag.
    body, _, _ = _state_with_held_element()
    forged = body[:HEADER_END - 1] + bytes([flags]) + body[HEADER_END:]
    it = iter(_make())
    with pytest.raises(errors.DataLossError, match="corrupt iterator state"):
        it.restore(_with_crc(forged))
    assert run(it) == run(iter(_make()))


@pytest.mark.parametrize("held", [
    b"",                                      # no leaf count
    struct.pack("<I", 3),                     # leaves missing
    struct.pack("<I", 10**9) + b"s" * 20,     # a count the bytes cannot hold
    struct.pack("<I", 1) + b"a" + struct.pack("<Q", 2**63) + b"x",  # a length past the end
    struct.pack("<I", 1) + b"q" + struct.pack("<Q", 0),             # an unknown kind
    struct.pack("<I", 1) + b"a" + struct.pack("<Q", 5) + b"\x93NUMP",  # a .npy cut short
])
def test_malformed_held_elements_are_data_loss(held):
    ds = _make()
    body = (ckpt._MAGIC + ckpt._HEADER.pack(ckpt._VERSION, ckpt.fingerprint(ds), ckpt._HELD)
            + struct.pack("<Q", len(held)) + held + iter(_make())._save_engine())
    it = iter(ds)
    with pytest.raises(errors.DataLossError, match="corrupt iterator state"):
        it.restore(_with_crc(body))
    assert run(it) == run(iter(_make()))


def test_npy_headers_that_lie_are_data_loss():
    # A .npy header claiming a huge shape, an object dtype, or a shape other than
    # the bytes: refused before any array is made (no MemoryError, no ValueError).
    good = ckpt._encode_element(np.arange(4, dtype=np.int64))
    for old, new in ((b"(4,)", b"(999999999999,)"), (b"'<i8'", b"'|O'"), (b"(4,)", b"(5,)"),
                     (b"(4,)", b"(2, 2"), (b"'<i8'", b"'<zz'")):
        assert old in good
        held = good.replace(old, new)
        body = (ckpt._MAGIC + ckpt._HEADER.pack(ckpt._VERSION, bytes(16), ckpt._HELD)
                + struct.pack("<Q", len(held)) + held + iter(D.range(3))._save_engine())
        it = iter(D.range(3))
        with pytest.raises(errors.DataLossError, match="held element"):
            it.restore(_with_crc(body))
        assert [int(x) for x in it] == [0, 1, 2]


def _fused(on):
    ds = D.range(40).shuffle(40, seed=7).batch(4)
    options = cv.data.Options()
    options.experimental_optimization.shuffle_and_batch_fusion = on
    return ds.with_options(options)


def _first_two_epochs(make, fail):
    """The first iterator's elements and the next iterator's, after fail(it)."""
    ds = make()
    it = iter(ds)
    for _ in range(2):  # the same failure twice moves nothing either
        fail(it)
    return run(it), run(iter(ds))


def test_a_failed_engine_restore_leaves_the_first_epoch():
    # Saved with shuffle+batch fusion, restored without: the engine refuses the
    # frames after making a fresh iterator, which draws from the dataset's seed
    # generator. The iterator must still yield the first epoch and the dataset's
    # next iterator the second, as a fresh iter(ds) and the one after it would.
    it = iter(_fused(True))
    run(it, 2)
    state = it.save()

    def fail(it):
        with pytest.raises(errors.FailedPreconditionError, match="ShuffleBatch"):
            it.restore(state)
    ref = _fused(False)
    expected = (run(iter(ref)), run(iter(ref)))
    assert expected[0] != expected[1]  # reshuffled each iteration
    assert _first_two_epochs(lambda: _fused(False), fail) == expected


def test_a_restore_failing_after_a_shuffle_was_restored_moves_no_generator():
    # The shuffle's frame restores (resetting the dataset's generator to the
    # saved one, four iterators on), then the frame after it fails.
    def make():
        return D.zip((D.range(40).shuffle(10, seed=3).batch(4), D.range(10)))
    saving = make()
    for _ in range(3):
        run(iter(saving))
    it = iter(saving)
    run(it, 2)
    engine = it._save_engine()
    at = engine.rindex(b"Range")
    engine = engine[:at] + b"Rangf" + engine[at + 5:]  # the second input's frame
    body = (ckpt._MAGIC + ckpt._HEADER.pack(ckpt._VERSION, ckpt.fingerprint(saving), 0)
            + struct.pack("<Q", 0) + engine)

    def fail(it):
        with pytest.raises(errors.FailedPreconditionError, match="Rangf"):
            it.restore(_with_crc(body))
    ref = make()
    expected = (run(iter(ref)), run(iter(ref)))
    assert _first_two_epochs(make, fail) == expected
