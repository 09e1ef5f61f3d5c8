"""Exact resume of the record-file readers (TFRecord, TextLine,
FixedLengthRecord; plain, GZIP and ZLIB) and of skip/shard over them: tf.data's
checkpoint test pattern (break at every element of small files, at many points
of bigger ones, two restores, a restore in a fresh process), states saved
between files and at the end, and the errors for a changed file or a
damaged position."""
import gzip
import json
import os
import struct
import subprocess
import sys
import textwrap
import zlib

import pytest

import conveyor as cv
from conveyor import errors
from conveyor.tools.index import write_index

from _record_files import frame
from checkpoint_helpers import ROOT, run, straight, verify_resume, verify_two_restores

D = cv.data


def _filenames_can_be_saved():
    try:
        iter(D.Dataset.from_tensor_slices([b"x"])).save()
        return True
    except errors.UnimplementedError:
        return False


needs_saved_filenames = pytest.mark.skipif(
    not _filenames_can_be_saved(),
    reason="the readers' filename input (from_tensor_slices) cannot be saved yet")

COMPRESS = {None: lambda b: b, "GZIP": gzip.compress, "ZLIB": zlib.compress}


def _tfrecords(k, n, size=3):
    return [b"%d/%d:" % (k, i) * (1 + (i * 5 + k) % size) for i in range(n)]


def _write_tfrecord(path, records, compression=None):
    with open(path, "wb") as f:
        f.write(COMPRESS[compression](b"".join(frame(r) for r in records)))
    return str(path)


@pytest.fixture
def tfrecord_files(tmp_path):
    def make(compression=None, sizes=(5, 0, 7, 3)):
        return [_write_tfrecord(tmp_path / f"r{k}.{compression}", _tfrecords(k, n), compression)
                for k, n in enumerate(sizes)]
    return make


@needs_saved_filenames
@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_tfrecord_resumes_at_every_element(tfrecord_files, compression):
    files = tfrecord_files(compression)
    make = lambda: D.TFRecordDataset(files, compression_type=compression)  # noqa: E731
    assert len(verify_resume(make)) == 15
    verify_two_restores(make, 3, 11)
    verify_two_restores(make, 0, 15)


TEXT = [b"a\r\nbb\n\nccc\nlast", b"", b"x\ny\n", b"\n\n", b"only"]


@needs_saved_filenames
@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_text_line_resumes_at_every_element(tmp_path, compression):
    files = []
    for k, text in enumerate(TEXT):
        p = tmp_path / f"t{k}.txt"
        p.write_bytes(COMPRESS[compression](text))
        files.append(str(p))
    make = lambda: D.TextLineDataset(files, compression_type=compression)  # noqa: E731
    assert len(verify_resume(make)) == 10
    verify_two_restores(make, 2, 9)


@needs_saved_filenames
@pytest.mark.parametrize("compression", [None, "GZIP"])
@pytest.mark.parametrize("header,record,footer", [(0, 4, 0), (3, 4, 2), (2, 2, 5)])
def test_fixed_length_resumes_at_every_element(tmp_path, compression, header, record, footer):
    files = []
    for k, n in enumerate([4, 0, 3]):
        body = bytes((k * 50 + i) % 256 for i in range(n * record))
        p = tmp_path / f"x{k}.bin"
        p.write_bytes(COMPRESS[compression](b"H" * header + body + b"F" * footer))
        files.append(str(p))
    make = lambda: D.FixedLengthRecordDataset(  # noqa: E731
        files, record, header_bytes=header, footer_bytes=footer, compression_type=compression)
    assert len(verify_resume(make)) == 7
    verify_two_restores(make, 1, 6)


@needs_saved_filenames
@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_torn_tails_resume(tmp_path, compression):
    a = tmp_path / "a.tfrecord"
    a.write_bytes(COMPRESS[compression](b"".join(frame(r) for r in _tfrecords(0, 4))
                                        + frame(b"torn" * 10)[:20]))
    t = tmp_path / "t.txt"
    t.write_bytes(COMPRESS[compression](b"l1\nl2\nl3"))
    with pytest.warns(errors.DataLossWarning):
        verify_resume(lambda: D.TFRecordDataset([str(a)] * 2, compression_type=compression))
    verify_resume(lambda: D.TextLineDataset([str(t)] * 2, compression_type=compression))


@needs_saved_filenames
@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_bigger_files_resume_at_many_points(tfrecord_files, compression):
    files = tfrecord_files(compression, sizes=(1500, 1, 1200))
    make = lambda: D.TFRecordDataset(files, compression_type=compression,  # noqa: E731
                                     buffer_size=4096)
    expected = straight(make)
    assert len(expected) == 2701
    breaks = sorted({0, 1, 2, 1499, 1500, 1501, 1502, 2700, 2701} | set(range(3, 2701, 97)))
    verify_resume(make, breaks, expected)


_CHILD = """
import json, sys
sys.path.insert(0, {root!r})
{code}
mode, k, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
it = iter(make())
out = []
if mode == "restore":
    it.restore(open(path, "rb").read())
while mode == "restore" or len(out) < k:
    try:
        out.append(bytes(next(it)).hex())
    except StopIteration:
        break
if mode == "save":
    open(path, "wb").write(it.save())
print(json.dumps(out))
"""


def verify_resume_in_new_process(code, breaks, tmp_path):
    """checkpoint_helpers' fresh-process pattern for readers (elements are bytes):
    one process runs k elements and saves, a fresh one restores and runs the rest."""
    path = str(tmp_path / "state")

    def child(mode, k):
        script = _CHILD.format(root=ROOT, code=textwrap.dedent(code))
        done = subprocess.run([sys.executable, "-c", script, mode, str(k), path],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])
    expected = child("save", 1 << 62)
    for k in breaks:
        head = child("save", k)
        assert head + child("restore", 0) == expected, f"break at {k} (new process)"


@needs_saved_filenames
def test_restore_in_a_fresh_process(tfrecord_files, tmp_path):
    plain, gz = tfrecord_files(None, (40, 0, 25)), tfrecord_files("GZIP", (30, 12))
    text = tmp_path / "t.txt.gz"
    text.write_bytes(gzip.compress(b"".join(b"line %d\n" % i for i in range(33))))
    verify_resume_in_new_process(f"""
        import conveyor as cv
        def make():
            return cv.data.TFRecordDataset({plain!r})
    """, [0, 1, 39, 40, 41, 64, 65], tmp_path)
    verify_resume_in_new_process(f"""
        import conveyor as cv
        def make():
            return cv.data.TFRecordDataset({gz!r}, compression_type="GZIP").shard(3, 1)
    """, [0, 5, 13, 14], tmp_path)
    verify_resume_in_new_process(f"""
        import conveyor as cv
        def make():
            return cv.data.TextLineDataset({str(text)!r}, compression_type="GZIP").skip(4)
    """, [0, 10, 29], tmp_path)


@needs_saved_filenames
def test_a_state_saved_between_files(tmp_path):
    """After a missing file (or a corrupt record) no file is open: the state is the
    filename input's, and the restored iterator goes on with the next file."""
    a = _write_tfrecord(tmp_path / "a", _tfrecords(0, 3))
    bad = _write_tfrecord(tmp_path / "bad", _tfrecords(1, 4))
    with open(bad, "r+b") as f:
        f.seek(20)
        f.write(b"\x00\xff")
    files = [a, str(tmp_path / "missing"), a, bad, a]
    want = [("ok", r) for r in _tfrecords(0, 3)]
    want = want + [("NotFoundError",)] + want + [("DataLossError",)] + want

    def collect(it, out):
        while True:
            try:
                out.append(("ok", bytes(next(it))))
            except StopIteration:
                return out
            except (errors.NotFoundError, errors.DataLossError) as e:
                out.append((type(e).__name__,))
                return out

    straight_run = []
    it = iter(D.TFRecordDataset(files))
    while len(collect(it, straight_run)) < len(want) and straight_run[-1][0] != "ok":
        pass
    assert straight_run == want
    got, it = [], iter(D.TFRecordDataset(files))
    for _ in range(3):  # up to each error, save right after it, restore, go on
        collect(it, got)
        state = it.save()
        it = iter(D.TFRecordDataset(files))
        it.restore(state)
    assert got == want


@needs_saved_filenames
def test_a_finished_reader_restores_to_the_end(tfrecord_files):
    files = tfrecord_files()
    it = iter(D.TFRecordDataset(files))
    assert len(run(it)) == 15
    for state in (it.save(), it.state_dict()):
        it2 = iter(D.TFRecordDataset(files))
        (it2.restore if isinstance(state, bytes) else it2.load_state_dict)(state)
        assert run(it2) == []


@needs_saved_filenames
def test_the_state_is_small(tfrecord_files):
    files = tfrecord_files(sizes=(500,))
    it = iter(D.TFRecordDataset(files))
    run(it, 321)
    assert len(it.save()) < 200 + len(files[0])


@needs_saved_filenames
def test_restore_seeks_instead_of_reading(tmp_path):
    """A record before the saved position is damaged in place (size and mtime kept):
    the restore does not read it."""
    recs = _tfrecords(0, 300)
    p = _write_tfrecord(tmp_path / "s.tfrecord", recs)
    it = iter(D.TFRecordDataset(p))
    run(it, 250)
    state = it.save()
    st = os.stat(p)
    with open(p, "r+b") as f:
        f.seek(100)
        f.write(b"\xff\xff")
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    it = iter(D.TFRecordDataset(p))
    it.restore(state)
    assert [bytes(x) for x in it] == recs[250:]


@needs_saved_filenames
def test_a_changed_file_is_refused(tfrecord_files):
    files = tfrecord_files(sizes=(6, 6))
    it = iter(D.TFRecordDataset(files))
    run(it, 8)
    state = it.save()
    with open(files[1], "ab") as f:
        f.write(frame(b"new"))
    with pytest.raises(errors.FailedPreconditionError,
                       match=r"r1\.None\" \(record 2 at byte \d+\): the file changed since the "
                             r"state was saved"):
        iter(D.TFRecordDataset(files)).restore(state)
    os.remove(files[1])
    with pytest.raises(errors.NotFoundError, match="r1"):
        iter(D.TFRecordDataset(files)).restore(state)


def _patch_offset(state, name, delta):
    """The state with the saved offset of file `name` moved by delta bytes
    (and its checksum fixed), as a damaged or forged state would be."""
    name = name.encode()
    at = state.index(struct.pack("<Q", len(name)) + name) + 8 + len(name)
    (offset,) = struct.unpack_from("<Q", state, at)
    body = state[:at] + struct.pack("<Q", offset + delta) + state[at + 8:-4]
    return body + struct.pack("<I", zlib.crc32(body))


@needs_saved_filenames
@pytest.mark.parametrize("kind", ["tfrecord", "tfrecord-gzip", "text", "text-gzip", "fixed",
                                  "fixed-gzip"])
def test_a_position_that_is_not_a_record_start_is_refused(tmp_path, kind):
    p = tmp_path / "f"
    comp = "GZIP" if kind.endswith("gzip") else None
    if kind.startswith("tfrecord"):
        p.write_bytes(COMPRESS[comp](b"".join(frame(r) for r in _tfrecords(0, 9, 50))))
        make = lambda: D.TFRecordDataset(str(p), compression_type=comp)  # noqa: E731
    elif kind.startswith("text"):
        p.write_bytes(COMPRESS[comp](b"".join(b"line %03d\n" % i for i in range(9))))
        make = lambda: D.TextLineDataset(str(p), compression_type=comp)  # noqa: E731
    else:
        p.write_bytes(COMPRESS[comp](bytes(range(90))))
        make = lambda: D.FixedLengthRecordDataset(str(p), 10, compression_type=comp)  # noqa: E731
    it = iter(make())
    run(it, 4)
    state = it.save()
    for delta in (1, -3):
        with pytest.raises(errors.DataLossError, match=r"cannot restore the position in \"[^\"]*f\""
                           r" \(record 4 at byte \d+.*\): (no .* starts there|the offset)"):
            iter(make()).restore(_patch_offset(state, str(p), delta))
    with pytest.raises(errors.DataLossError):
        iter(make()).restore(_patch_offset(state, str(p), 1 << 40))


@needs_saved_filenames
def test_other_reader_arguments_are_another_pipeline(tfrecord_files, tmp_path):
    files = tfrecord_files("GZIP")
    it = iter(D.TFRecordDataset(files, compression_type="GZIP"))
    run(it, 3)
    state = it.save()
    for other in (D.TFRecordDataset(files), D.TFRecordDataset(files[:2], compression_type="GZIP"),
                  D.TextLineDataset(files, compression_type="GZIP"),
                  D.TFRecordDataset(files, compression_type="GZIP").skip(1)):
        with pytest.raises(errors.FailedPreconditionError, match="different pipeline"):
            iter(other).restore(state)
    x = tmp_path / "x.bin"
    x.write_bytes(bytes(64))
    it = iter(D.FixedLengthRecordDataset(str(x), 4))
    run(it, 2)
    with pytest.raises(errors.FailedPreconditionError, match="different pipeline"):
        iter(D.FixedLengthRecordDataset(str(x), 8)).restore(it.save())


@needs_saved_filenames
@pytest.mark.parametrize("indexed", [False, True])
def test_skip_and_shard_resume(tfrecord_files, indexed):
    files = tfrecord_files(sizes=(9, 0, 14, 5))
    if indexed:
        for f in files:
            write_index(f)
    for make in (lambda: D.TFRecordDataset(files).skip(4),
                 lambda: D.TFRecordDataset(files).skip(10).skip(3),
                 lambda: D.TFRecordDataset(files).skip(-1),
                 lambda: D.TFRecordDataset(files).skip(100),
                 lambda: D.TFRecordDataset(files).shard(3, 2),
                 lambda: D.TFRecordDataset(files).shard(5, 0).skip(1),
                 lambda: D.TFRecordDataset(files).skip(2).shard(2, 1),
                 lambda: D.TFRecordDataset(files).shard(40, 27)):
        verify_resume(make)
    verify_two_restores(lambda: D.TFRecordDataset(files).shard(2, 0), 2, 10)


def test_skip_and_shard_resume_over_any_input():
    for make in (lambda: D.Dataset.range(20).skip(7), lambda: D.Dataset.range(20).skip(-1),
                 lambda: D.Dataset.range(20).skip(30), lambda: D.Dataset.range(20).shard(3, 1),
                 lambda: D.Dataset.range(20).skip(2).shard(4, 3).skip(1)):
        verify_resume(make)
    verify_two_restores(lambda: D.Dataset.range(50).skip(7).shard(3, 1), 4, 9)
    it = iter(D.Dataset.range(20).skip(5))
    run(it, 2)
    with pytest.raises(errors.FailedPreconditionError, match="different pipeline"):
        iter(D.Dataset.range(20).skip(6)).restore(it.save())
