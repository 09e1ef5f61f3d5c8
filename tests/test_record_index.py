"""TFRecord index sidecars (<file>.cvindex): the tool that writes them, the
stale/damaged index warnings, and skip/shard that seek with them, compared
with unindexed reading and with tf.data."""
import os
import struct
import subprocess
import sys
import warnings

import pytest

import conveyor as cv
from conveyor import errors
from conveyor.tools.index import INDEX_SUFFIX, index_path, write_index

from _record_files import frame
import _cvindex

D = cv.data
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(cv.__file__)))


def _records(k, n):
    return [b"%d:%05d|" % (k, i) * (1 + (i * 7 + k) % 13) for i in range(n)]


def _write(path, records):
    with open(path, "wb") as f:
        f.write(b"".join(frame(r) for r in records))
    return str(path)


@pytest.fixture
def files(tmp_path):
    """Four files (0, 1, 150 and 400 records), all indexed but the third."""
    out = []
    for k, n in enumerate([150, 0, 60, 400]):
        out.append(_write(tmp_path / f"f{k}.tfrecord", _records(k, n)))
    for k in (0, 1, 3):
        write_index(out[k])
    return out


def _read(ds):
    return list(ds.as_numpy_iterator())


def _reference(files):
    out = []
    for f in files:
        raw = open(f, "rb").read()
        pos = 0
        while pos < len(raw):
            (n,) = struct.unpack_from("<Q", raw, pos)
            out.append(raw[pos + 12:pos + 12 + n])
            pos += 16 + n
    return out


def _corrupt_in_place(path, offset):
    """Flip one byte, keeping the file's size and mtime (so its index stays valid)."""
    st = os.stat(path)
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0x5A]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _no_warnings(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn()


def test_cli_writes_one_sidecar_per_file(tmp_path):
    a = _write(tmp_path / "a.tfrecord", _records(0, 25))
    b = _write(tmp_path / "b.tfrecord", [])
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-m", "conveyor.tools.index", a, b],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"{a}: 25 records -> {a}{INDEX_SUFFIX}" in done.stdout
    assert f"{b}: 0 records" in done.stdout
    assert index_path(a) == a + ".cvindex"
    raw = open(a + INDEX_SUFFIX, "rb").read()
    assert raw[:8] == b"CVRIDX02" and len(raw) == 64 + 4 * 1 + 16 * 26
    fields, entries, _ = _cvindex.parse(raw)
    assert fields["n"] == 25 and fields["version"] == _cvindex.crc32c(
        _cvindex.local_version(a).encode())
    assert entries[0][0] == 0 and entries[-1] == (os.path.getsize(a), 0, 0)
    recs = _records(0, 25)
    assert [e[2] for e in entries[:-1]] == [_cvindex.masked_crc(r) for r in recs]
    assert not [p for p in os.listdir(tmp_path) if ".tmp." in p]


def test_cli_refuses_corrupt_and_missing_files(tmp_path):
    good = _write(tmp_path / "good.tfrecord", _records(0, 5))
    bad = _write(tmp_path / "bad.tfrecord", _records(1, 5))
    with open(bad, "r+b") as f:
        f.seek(40)
        f.write(b"\xff")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-m", "conveyor.tools.index", bad,
                           str(tmp_path / "missing"), good],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 1
    assert "bad.tfrecord: not indexed: DataLossError" in done.stderr
    assert "missing: not indexed: NotFoundError" in done.stderr
    assert os.path.exists(good + INDEX_SUFFIX) and not os.path.exists(bad + INDEX_SUFFIX)
    assert sorted(os.listdir(tmp_path)) == ["bad.tfrecord", "good.tfrecord",
                                            "good.tfrecord" + INDEX_SUFFIX]


def test_torn_tail_is_left_out_of_the_index(tmp_path):
    recs = _records(0, 10)
    p = _write(tmp_path / "t.tfrecord", recs)
    whole = os.path.getsize(p)
    with open(p, "ab") as f:
        f.write(frame(b"x" * 100)[:50])
    assert write_index(p) == 10
    raw = open(p + INDEX_SUFFIX, "rb").read()
    assert _cvindex.parse(raw)[1][10] == (whole, 0, 0)
    for n in (3, 10, 11, 20):
        errors._warned.clear()  # the engine warns once per message
        with pytest.warns(errors.DataLossWarning, match="torn tail"):
            assert _read(D.TFRecordDataset(p).skip(n)) == recs[n:]


@pytest.mark.parametrize("n", [0, 1, 149, 150, 151, 209, 210, 211, 400, 609, 610, 611, 5000])
def test_skip_equals_unindexed_reading(files, n):
    expected = _reference(files)
    assert len(expected) == 610
    assert _no_warnings(lambda: _read(D.TFRecordDataset(files).skip(n))) == expected[n:]
    assert _read(D.TFRecordDataset(files).skip(n).take(3)) == expected[n:n + 3]


def test_chained_skips_and_skip_after_reading(files):
    expected = _reference(files)
    assert _read(D.TFRecordDataset(files).skip(100).skip(100).skip(5)) == expected[205:]
    it = iter(D.TFRecordDataset(files).take(400).skip(170))
    assert [next(it) for _ in range(3)] == expected[170:173]


@pytest.mark.parametrize("num,index", [(1, 0), (2, 1), (3, 0), (7, 6), (100, 3), (609, 608),
                                       (700, 5), (700, 650)])
def test_shard_equals_unindexed_reading(files, num, index):
    assert _read(D.TFRecordDataset(files).shard(num, index)) == _reference(files)[index::num]


def test_index_seeks_past_records_it_does_not_read(tmp_path):
    """The proof that skip seeks: a record whose header is damaged inside the
    skipped range is not read with the index (tf.data, and conveyor without an
    index, raise there). Damaged data is passed over unchecked by both (tf.data's
    skip reads only each record's length)."""
    recs = _records(0, 300)
    p = _write(tmp_path / "c.tfrecord", recs)
    write_index(p)
    start = sum(16 + len(r) for r in recs[:120])
    _corrupt_in_place(p, start + 2)  # record 120's length: its CRC fails
    _corrupt_in_place(p, start + 16 + len(recs[120]) + 12)  # record 121's data
    _cvindex.restamp(p)  # the index still claims the file (its version moved with the damage)
    assert _no_warnings(lambda: _read(D.TFRecordDataset(p).skip(200))) == recs[200:]
    assert _read(D.TFRecordDataset(p).shard(150, 1)) == [recs[1], recs[151]]
    os.rename(p + INDEX_SUFFIX, p + ".saved")
    with pytest.raises(errors.DataLossError, match="corrupted record at"):
        _read(D.TFRecordDataset(p).skip(200))
    os.rename(p + ".saved", p + INDEX_SUFFIX)
    # Reading through the damaged records still raises where they are.
    with pytest.raises(errors.DataLossError, match=r"record 120\b"):
        _read(D.TFRecordDataset(p).skip(100))
    with pytest.raises(errors.DataLossError, match=r"record 121\b"):
        _read(D.TFRecordDataset(p).skip(100).shard(21, 0).skip(1))  # 121 is read, not skipped


def test_stale_index_is_ignored_with_a_warning(tmp_path):
    recs = _records(0, 50)
    p = _write(tmp_path / "s.tfrecord", recs)
    write_index(p)
    with open(p, "ab") as f:
        f.write(frame(b"one more"))
    with pytest.warns(errors.DataLossWarning, match=r"s\.tfrecord\.cvindex\" is stale: the file "
                      r"had \d+ bytes when it was indexed"):
        assert _read(D.TFRecordDataset(p).skip(20)) == recs[20:] + [b"one more"]
    write_index(p)
    assert _no_warnings(lambda: _read(D.TFRecordDataset(p).skip(50))) == [b"one more"]
    # Same size, new mtime.
    st = os.stat(p)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    with pytest.warns(errors.DataLossWarning, match="mtime differs"):
        assert _read(D.TFRecordDataset(p).skip(49)) == recs[49:] + [b"one more"]
    # Same size and mtime, other bytes at the ends: the edge checksums.
    write_index(p)
    st = os.stat(p)
    with open(p, "r+b") as f:
        f.write(frame(b"X" * len(recs[0])))
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.warns(errors.DataLossWarning, match="first or last bytes differ"):
        assert _read(D.TFRecordDataset(p).skip(1)) == recs[1:] + [b"one more"]


def test_damaged_index_is_ignored_with_a_warning(tmp_path):
    recs = _records(0, 40)
    p = _write(tmp_path / "d.tfrecord", recs)
    write_index(p)
    good = open(p + INDEX_SUFFIX, "rb").read()
    for damaged, why in ((b"short", "has 5 bytes, too few for a conveyor record index"),
                         (b"not an index at all" * 5, "not a conveyor record index"),
                         (good[:6] + b"99" + good[8:], "version 99"),
                         (good[:9] + b"\x01" + good[10:], "fails its CRC-32C"),
                         (good[:-8], "does not match its record count")):
        open(p + INDEX_SUFFIX, "wb").write(damaged)
        with pytest.warns(errors.DataLossWarning, match=why):
            assert _read(D.TFRecordDataset(p).skip(7)) == recs[7:]
    # A damaged entry fails its block's CRC, found when the block is used.
    fields, entries, _ = _cvindex.parse(good)
    raw = bytearray(good)
    raw[-16 * 11] ^= 1  # entry 30's offset
    open(p + INDEX_SUFFIX, "wb").write(bytes(raw))
    with pytest.warns(errors.DataLossWarning, match=r"cvindex\" is ignored: its block 0 "
                      r"\(entries 0-40\) fails its CRC-32C"):
        assert _read(D.TFRecordDataset(p).skip(20)) == recs[20:]
    # An entry forged with its block's CRC recomputed, that does not point at the
    # record it indexed: found when it is used.
    entries[30] = (entries[30][0] + 1,) + entries[30][1:]
    open(p + INDEX_SUFFIX, "wb").write(_cvindex.build(fields, entries))
    assert _no_warnings(lambda: _read(D.TFRecordDataset(p).skip(20))) == recs[20:]
    with pytest.warns(errors.DataLossWarning, match="entry for record 30 does not point at the "
                      "record header it indexed"):
        assert _read(D.TFRecordDataset(p).skip(30)) == recs[30:]


def test_compressed_files_skip_by_reading(tmp_path):
    p = str(tmp_path / "z.tfrecord")
    recs = _records(0, 30)
    with cv.io.TFRecordWriter(p, cv.io.TFRecordOptions(compression_type="GZIP")) as w:
        for r in recs:
            w.write(r)
    assert _read(D.TFRecordDataset(p, compression_type="GZIP").skip(12)) == recs[12:]


# -- against tf.data --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tf():
    return pytest.importorskip("tensorflow")


@pytest.fixture
def tf_files(tf, tmp_path):
    out = []
    for k, n in enumerate([90, 0, 35, 200]):
        p = str(tmp_path / f"tf{k}.tfrecord")
        with tf.io.TFRecordWriter(p) as w:
            for r in _records(k, n):
                w.write(r)
        if k != 2:
            write_index(p)
        out.append(p)
    return out


@pytest.mark.parametrize("n", [0, 1, 89, 90, 91, 125, 126, 300, 325, 326, 1000])
def test_skip_matches_tf_data(tf, tf_files, n):
    want = list(tf.data.TFRecordDataset(tf_files).skip(n).as_numpy_iterator())
    assert _read(D.TFRecordDataset(tf_files).skip(n)) == want


@pytest.mark.parametrize("num,index", [(2, 0), (3, 2), (10, 9), (325, 324), (400, 100)])
def test_shard_matches_tf_data(tf, tf_files, num, index):
    want = list(tf.data.TFRecordDataset(tf_files).shard(num, index).as_numpy_iterator())
    assert _read(D.TFRecordDataset(tf_files).shard(num, index)) == want


def _collect(it, limit=2000):
    """Elements and error kinds, in order, as one reads on past errors."""
    out = []
    while len(out) < limit:
        try:
            x = next(it)
        except StopIteration:
            return out
        except Exception as e:  # noqa: BLE001 - the error's kind and position count
            out.append(type(e).__name__)
            continue
        out.append(bytes(x.numpy() if hasattr(x, "numpy") else x))
    return out


@pytest.mark.parametrize("op", ["skip30", "skip70", "skip200", "shard7", "shard40"])
def test_damaged_records_in_skipped_ranges_match_tf_data(tf, tmp_path, op):
    """Without an index, skip passes over records as tf.data does: a damaged
    length raises, damaged data does not (its CRC is not read)."""
    recs = _records(0, 100)
    good = _write(tmp_path / "good.tfrecord", recs)
    bad = _write(tmp_path / "bad.tfrecord", recs)
    offsets = [sum(16 + len(r) for r in recs[:i]) for i in range(101)]
    _corrupt_in_place(bad, offsets[20] + 12 + 1)  # data of record 20
    _corrupt_in_place(bad, offsets[50] + 3)  # length of record 50
    files = [good, bad, good]

    def build(lib):
        ds = lib.data.TFRecordDataset(files)
        n = int(op[4:] if op.startswith("skip") else op[5:])
        return ds.skip(n) if op.startswith("skip") else ds.shard(n, 3)
    assert _collect(iter(build(cv))) == _collect(iter(build(tf)))


def test_skip_does_not_count_elements_passed_before_an_error(tf):
    """tf.data's Skip: an input error while skipping is returned, and the
    elements skipped in that call are skipped again from the new position."""
    import numpy as np
    x = [1.0, 1.0, 1.0, 0.0] + [1.0] * 6
    want = _collect(iter(tf.data.Dataset.range(10).map(
        lambda i: tf.debugging.check_numerics(1.0 / tf.gather(x, i), "boom")
        * tf.cast(i, tf.float32)).skip(5)))

    def f(i):
        if int(i) == 3:
            raise ValueError("boom")
        return np.float32(i)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = _collect(iter(D.Dataset.range(10).map(f).skip(5)))
    assert [w if isinstance(w, str) else float(np.frombuffer(w, np.float32)[0]) for w in want] \
        == ["InvalidArgumentError", 9.0]
    assert got == ["ValueError", np.float32(9).tobytes()]


_SPECIAL_SIDECAR = r"""
import os, sys, warnings
import conveyor as cv
from conveyor import errors
path, kind = sys.argv[1], sys.argv[2]
side = path + ".cvindex"
if kind == "fifo":
    os.mkfifo(side)
elif kind == "dir":
    os.mkdir(side)
else:
    os.symlink("/dev/null", side)
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    got = [bytes(r) for r in cv.data.TFRecordDataset(path).skip(30).as_numpy_iterator()]
    got2 = [bytes(r) for r in cv.data.TFRecordDataset(path).shard(7, 3).as_numpy_iterator()]
msgs = [str(x.message) for x in w if issubclass(x.category, errors.DataLossWarning)]
assert msgs and all(side in m and "not a regular file" in m for m in msgs), msgs
print(len(got), len(got2), repr(got[0]), repr(got2[0]))
"""


@pytest.mark.parametrize("kind", ["fifo", "dir", "device"])
def test_sidecar_that_is_no_regular_file_is_ignored_without_blocking(tmp_path, kind):
    """A FIFO at <file>.cvindex would block open() forever (and SIGINT with it); it, a
    directory or a device is ignored with a warning naming it, and skip/shard read."""
    recs = _records(0, 50)
    p = _write(tmp_path / "x.tfrecord", recs)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _SPECIAL_SIDECAR, p, kind], env=env, timeout=60,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["20", "7", repr(recs[30]), repr(recs[3])]


def test_stale_index_warns_every_time_under_default_filters(tmp_path):
    """Each fallback from a stale index warns, also the second time the same message
    comes from the same line: the engine does not deduplicate it, and conveyor's
    appended "always" filter for DataLossWarning outlives Python's once-per-location."""
    recs = _records(0, 30)
    paths = []
    for k in range(2):
        p = _write(tmp_path / f"t{k}.tfrecord", recs)
        write_index(p)
        with open(p, "ab") as f:
            f.write(frame(b"tail"))
        paths.append(p)
    code = (
        "import sys, warnings\n"
        "import conveyor as cv\n"
        "seen = []\n"
        "warnings.showwarning = lambda m, c, *a, **k: seen.append((c.__name__, str(m)))\n"
        "for p in sys.argv[1:] + sys.argv[1:]:\n"
        "    assert len(list(cv.data.TFRecordDataset(p).skip(5))) == 26\n"
        "for c, m in seen: print(c, m.split('\"')[1])\n")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PYTHONWARNINGS", None)
    out = subprocess.run([sys.executable, "-c", code] + paths, env=env, timeout=60,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    idx = [p + INDEX_SUFFIX for p in paths]
    assert out.stdout.split("\n")[:-1] == ["DataLossWarning " + i for i in idx + idx]
    # The same, under pytest's recording: two skips over the same stale index.
    for _ in range(2):
        with pytest.warns(errors.DataLossWarning, match="is stale"):
            assert _read(D.TFRecordDataset(paths[0]).skip(29)) == [recs[29], b"tail"]
