"""Damaged, foreign and forged .cvindex sidecars never give a wrong record
(issue 31): thousands of random damages (bit flips, zeroed ranges, entries
moved, another file's index, a data file rewritten in place with its size,
mtime and edges kept), each checked against the records read without any
index, through skip, shard and resume."""
import os
import random
import shutil
import struct
import warnings

import pytest

import conveyor as cv
from conveyor import errors
from conveyor.tools.index import INDEX_SUFFIX, write_index

import _cvindex
from _record_files import frame

D = cv.data


def _write(path, records):
    with open(path, "wb") as f:
        f.write(b"".join(frame(r) for r in records))
    return str(path)


def _records(rng, n, tag):
    return [(b"%s%04d|" % (tag, i)) * rng.randrange(0, 6) + b"#%d" % i for i in range(n)]


def _take(ds, n):
    return [bytes(x) for x in ds.take(n).as_numpy_iterator()]


class _Case:
    """One data file, its good index, and the records read without an index."""

    def __init__(self, tmp_path, rng, n=600, tag=b"a"):
        self.recs = _records(rng, n, tag)
        self.path = _write(tmp_path / ("%s.tfrecord" % tag.decode()), self.recs)
        write_index(self.path)
        self.good = open(self.path + INDEX_SUFFIX, "rb").read()

    def put_index(self, raw):
        with open(self.path + INDEX_SUFFIX, "wb") as f:
            f.write(raw)

    def check(self, rng, what):
        """skip and shard through the (damaged) index equal unindexed reading."""
        n = len(self.recs)
        for k in (rng.randrange(0, n + 2), rng.randrange(0, n + 2)):
            got = _take(D.TFRecordDataset(self.path).skip(k), 3)
            assert got == self.recs[k:k + 3], f"{what}: skip({k})"
        num = rng.randrange(2, 300)
        i = rng.randrange(0, num)
        got = _take(D.TFRecordDataset(self.path).shard(num, i), 4)
        assert got == self.recs[i::num][:4], f"{what}: shard({num}, {i})"


def _damages(rng, good, other):
    """(name, damaged index bytes) for one random damage of `good`."""
    kind = rng.randrange(5)
    raw = bytearray(good)
    if kind == 0:
        for _ in range(rng.randrange(1, 4)):
            bit = rng.randrange(8 * len(raw))
            raw[bit // 8] ^= 1 << (bit % 8)
        return "bit flips", bytes(raw)
    if kind == 1:
        start = rng.randrange(len(raw))
        end = min(len(raw), start + rng.randrange(1, 4097))
        raw[start:end] = bytes(end - start)
        return f"zeroed [{start}, {end})", bytes(raw)
    fields, entries, _ = _cvindex.parse(good)
    i, j = rng.randrange(len(entries)), rng.randrange(len(entries))
    if kind == 2:  # whole entries moved, the table's bytes only
        table = len(good) - 16 * len(entries)
        raw[table + 16 * i:table + 16 * i + 16] = good[table + 16 * j:table + 16 * j + 16]
        return f"entry {j} copied over entry {i}", bytes(raw)
    if kind == 3:  # an offset moved, the block CRCs recomputed (a forgery)
        entries[i] = (entries[j][0],) + entries[i][1:]
        return f"entry {i} forged to entry {j}'s offset", _cvindex.build(fields, entries)
    return "another file's index", other


def test_random_damage_never_gives_a_wrong_record(tmp_path):
    rng = random.Random(31)
    case = _Case(tmp_path, rng)
    # Another file: same record lengths (so the same offsets), other bytes.
    other_recs = [bytes(reversed(r)) for r in case.recs]
    other = _write(tmp_path / "other.tfrecord", other_recs)
    write_index(other)
    other_raw = open(other + INDEX_SUFFIX, "rb").read()
    cases = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", errors.DataLossWarning)
        for _ in range(2000):
            what, raw = _damages(rng, case.good, other_raw)
            case.put_index(raw)
            case.check(rng, what)
            cases += 1
    assert cases == 2000


def test_other_files_index_forged_to_this_file_is_caught_by_record_crcs(tmp_path):
    """The index of a file with the same record lengths, its header restamped for
    this file: every offset and length CRC matches; the data CRC of the record
    read through it does not, so the reader goes back to reading."""
    rng = random.Random(7)
    case = _Case(tmp_path, rng)
    other = _write(tmp_path / "other.tfrecord", [bytes(reversed(r)) for r in case.recs])
    write_index(other)
    shutil.copyfile(other + INDEX_SUFFIX, case.path + INDEX_SUFFIX)
    _cvindex.restamp(case.path)
    for k in (1, 17, 300, 599):
        with pytest.warns(errors.DataLossWarning, match=r"does not match the record found there"):
            assert _take(D.TFRecordDataset(case.path).skip(k), 2) == case.recs[k:k + 2]
    with pytest.warns(errors.DataLossWarning, match=r"from the start"):
        assert _take(D.TFRecordDataset(case.path).shard(50, 3), 5) == case.recs[3::50][:5]


def _split_in_place(path, recs, k, rng):
    """Rewrite record k as two records in the same bytes, keeping the file's
    size, mtime and first and last 4 KiB (a record boundary moved)."""
    offsets = [0]
    for r in recs:
        offsets.append(offsets[-1] + 16 + len(r))
    body = recs[k]
    assert len(body) >= 16
    cut = rng.randrange(0, len(body) - 16 + 1)
    a, b = body[:cut], body[cut:len(body) - 16]
    st = os.stat(path)
    with open(path, "r+b") as f:
        f.seek(offsets[k])
        f.write(frame(a) + frame(b))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    return recs[:k] + [a, b] + recs[k + 1:]


def test_file_rewritten_in_place_with_edges_and_mtime_kept(tmp_path):
    rng = random.Random(5)
    cases = 0
    for t in range(40):
        recs = [b"r%04d-" % i + b"x" * rng.randrange(16, 40) for i in range(500)]
        path = _write(tmp_path / f"s{t}.tfrecord", recs)
        write_index(path)
        head = open(path, "rb").read(4096)
        k = rng.randrange(100, 400)  # well inside the file: its edges are kept
        now = _split_in_place(path, recs, k, rng)
        assert open(path, "rb").read(4096) == head
        for n in (rng.randrange(0, 500), k + 1 + rng.randrange(0, 50), 499):
            with pytest.warns(errors.DataLossWarning, match=r"is stale: the file is not the one "
                              r"indexed"):
                assert _take(D.TFRecordDataset(path).skip(n), 3) == now[n:n + 3]
            cases += 1
        num = rng.randrange(2, 40)
        with pytest.warns(errors.DataLossWarning, match="is stale"):
            assert _take(D.TFRecordDataset(path).shard(num, 1), 5) == now[1::num][:5]
    assert cases == 120


def test_resume_through_a_damaged_index(tmp_path):
    """Parallel interleave restores each inner reader at a mark and skips from
    there (with the index): states saved with a good index, restored after it
    was damaged, go on with the right records."""
    rng = random.Random(11)
    case = _Case(tmp_path, rng, n=300)
    other = _write(tmp_path / "other.tfrecord", [bytes(reversed(r)) for r in case.recs])
    write_index(other)
    other_raw = open(other + INDEX_SUFFIX, "rb").read()

    def make():
        return D.Dataset.from_tensor_slices([case.path, case.path]).interleave(
            D.TFRecordDataset, cycle_length=2, block_length=1, num_parallel_calls=2)
    expected = [r for pair in zip(case.recs, case.recs) for r in pair]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", errors.DataLossWarning)
        for _ in range(120):
            case.put_index(case.good)
            it = iter(make())
            k = rng.randrange(0, len(expected))
            head = [bytes(next(it)) for _ in range(k)]
            state = it.save()
            del it
            what, raw = _damages(rng, case.good, other_raw)
            case.put_index(raw)
            it = iter(make())
            it.restore(state)
            tail = [bytes(x) for x in it]
            assert head + tail == expected, f"{what}: resumed at {k}"


def test_version_01_index_is_ignored_with_a_warning(tmp_path):
    rng = random.Random(3)
    case = _Case(tmp_path, rng, n=40)
    case.put_index(b"CVRIDX01" + struct.pack("<QqIIQ", 0, 0, 0, 0, 40) + bytes(8) +
                   bytes(8 * 41))
    with pytest.warns(errors.DataLossWarning, match="version 01; this conveyor reads 02"):
        assert _take(D.TFRecordDataset(case.path).skip(7), 2) == case.recs[7:9]
