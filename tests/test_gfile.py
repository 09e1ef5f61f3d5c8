"""conveyor.io.gfile over the engine's file-system layer: local files compared
with TensorFlow's tf.io.gfile (skipped without TensorFlow), the _engine.fs_*
functions, and the errors."""
import os

import pytest

import conveyor as cv
from conveyor import _engine
from conveyor import errors
from conveyor.io import gfile


@pytest.fixture(scope="module")
def tf():
    return pytest.importorskip("tensorflow")


def make_tree(root):
    os.makedirs(os.path.join(root, "d", "sub", "deeper"))
    os.makedirs(os.path.join(root, "e"))
    for name, text in [("d/a.txt", "one\ntwo\nthree"), ("d/b.csv", "1,2\n"), ("d/.hidden", ""),
                       ("d/sub/c.txt", "c\n"), ("d/sub/deeper/x.bin", "\x00\x01"),
                       ("top.txt", "top\n")]:
        with open(os.path.join(root, name), "w") as f:
            f.write(text)


def test_queries_match_tensorflow(tf, tmp_path):
    root = str(tmp_path)
    make_tree(root)
    for pattern in ["d/*", "*/*.txt", "d/sub/*/*", "d/?.txt", "d/[ab].*", "nope*", "d/a.txt",
                    "d", "d/", "*/", "d/*/", "*"]:
        full = os.path.join(root, pattern)
        assert gfile.glob(full) == sorted(tf.io.gfile.glob(full)), pattern
        assert gfile.glob("file://" + full) == sorted(tf.io.gfile.glob("file://" + full))
    for path in ["", "d", "d/sub", "d/a.txt", "nope", "e"]:
        full = os.path.join(root, path)
        assert gfile.exists(full) == tf.io.gfile.exists(full), path
        assert gfile.isdir(full) == tf.io.gfile.isdir(full), path
    for path in ["", "d", "d/sub", "e"]:
        full = os.path.join(root, path)
        assert gfile.listdir(full) == sorted(tf.io.gfile.listdir(full))
    for topdown in (True, False):
        ours = [(t, sorted(s), sorted(f)) for t, s, f in gfile.walk(root, topdown)]
        theirs = [(t, sorted(s), sorted(f)) for t, s, f in tf.io.gfile.walk(root, topdown)]
        assert sorted(ours) == sorted(theirs)
        if not topdown:
            assert ours[-1][0] == root
    for path in ["d/a.txt", "d"]:
        ours, theirs = gfile.stat(os.path.join(root, path)), tf.io.gfile.stat(os.path.join(root, path))
        assert ours.is_directory == theirs.is_directory
        if not ours.is_directory:
            assert ours.length == theirs.length
        assert ours.mtime_nsec // 10**9 == theirs.mtime_nsec // 10**9
    for parts in [("a", "b"), ("gs://b/", "x"), ("gs://b", "x/", "y"), ("gs://b", "/x"),
                  ("gs://b", ""), ("memory://a", "b")]:
        assert gfile.join(*parts) == tf.io.gfile.join(*parts)


def test_relative_glob_matches_tensorflow(tf, tmp_path, monkeypatch):
    make_tree(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    for pattern in ["*", "*.txt", "d/*", "top.txt"]:
        assert gfile.glob(pattern) == sorted(tf.io.gfile.glob(pattern)), pattern


def test_errors_match_tensorflow(tf, tmp_path):
    root = str(tmp_path)
    make_tree(root)
    cases = [
        lambda g: g.listdir(os.path.join(root, "d/a.txt")),
        lambda g: g.listdir(os.path.join(root, "nope")),
        lambda g: g.remove(os.path.join(root, "e")),
        lambda g: g.remove(os.path.join(root, "nope")),
        lambda g: g.stat(os.path.join(root, "nope")),
        lambda g: g.GFile(os.path.join(root, "nope")).read(),
        lambda g: g.GFile(os.path.join(root, "d")).read(),
        lambda g: g.rename(os.path.join(root, "top.txt"), os.path.join(root, "d/a.txt")),
        lambda g: g.copy(os.path.join(root, "top.txt"), os.path.join(root, "d/a.txt")),
        lambda g: g.rmtree(os.path.join(root, "nope")),
    ]
    for i, case in enumerate(cases):
        with pytest.raises(Exception) as theirs:
            case(tf.io.gfile)
        with pytest.raises(errors.OpError) as ours:
            case(gfile)
        assert type(ours.value).__name__ == type(theirs.value).__name__, (i, ours.value)


def test_gfile_reading_matches_tensorflow(tf, tmp_path):
    path = str(tmp_path / "lines.txt")
    with open(path, "w") as f:
        f.write("alpha\nbeta\n\ngamma")
    for mode in ("r", "rb"):
        with gfile.GFile(path, mode) as ours, tf.io.gfile.GFile(path, mode) as theirs:
            assert ours.size() == theirs.size()
            assert ours.readline() == theirs.readline()
            assert ours.tell() == theirs.tell()
            assert ours.read(3) == theirs.read(3)
            assert ours.readlines() == theirs.readlines()
            ours.seek(2)
            theirs.seek(2)
            assert ours.read() == theirs.read()
            ours.seek(-3, 2)
            theirs.seek(-3, 2)
            assert ours.read() == theirs.read()
            ours.seek(0)
            theirs.seek(0)
            assert list(ours) == list(theirs)


def test_gfile_writing(tf, tmp_path):
    ours, theirs = str(tmp_path / "ours.txt"), str(tmp_path / "theirs.txt")
    for g, path in [(gfile, ours), (tf.io.gfile, theirs)]:
        with g.GFile(path, "w") as f:
            f.write("héllo\n")
            f.write(b"bytes\n")
            assert f.tell() == 13
        with g.GFile(path, "a") as f:
            f.write("more\n")
        with g.GFile(path, "ab") as f:
            f.write(b"end")
    assert open(ours, "rb").read() == open(theirs, "rb").read()
    # A written file appears only at close, whole.
    path = str(tmp_path / "late.bin")
    f = gfile.GFile(path, "wb")
    f.write(b"x" * 1000)
    f.flush()
    assert not os.path.exists(path)
    f.close()
    assert os.path.getsize(path) == 1000
    assert sorted(os.listdir(tmp_path)) == ["late.bin", "ours.txt", "theirs.txt"]
    # Opening for writing without writing creates nothing, as in TensorFlow.
    gfile.GFile(str(tmp_path / "never"), "w").close()
    assert not os.path.exists(tmp_path / "never")
    with pytest.raises(errors.PermissionDeniedError):
        gfile.GFile(ours, "r").write("no")


def test_directories_rename_copy(tmp_path):
    root = str(tmp_path)
    gfile.makedirs(os.path.join(root, "a/b/c"))
    gfile.makedirs(os.path.join(root, "a/b/c"))
    gfile.mkdir(os.path.join(root, "a/b/c"))  # exists: no error, as TensorFlow's
    with gfile.GFile(os.path.join(root, "a/b/c/f"), "w") as f:
        f.write("data")
    gfile.copy(os.path.join(root, "a/b/c/f"), os.path.join(root, "g"))
    gfile.copy(os.path.join(root, "a/b/c/f"), os.path.join(root, "g"), overwrite=True)
    gfile.rename(os.path.join(root, "g"), os.path.join(root, "h"))
    assert gfile.GFile(os.path.join(root, "h")).read() == "data"
    with pytest.raises(errors.AlreadyExistsError):
        gfile.rename(os.path.join(root, "h"), os.path.join(root, "a/b/c/f"))
    gfile.rename(os.path.join(root, "h"), os.path.join(root, "a/b/c/f"), overwrite=True)
    assert not gfile.exists(os.path.join(root, "h"))
    gfile.rmtree(os.path.join(root, "a"))
    assert os.listdir(root) == []


def _read_range(url, offset=0, size=-1):
    """Up to `size` bytes at `offset` of `url` (-1: to the end), through gfile's engine file."""
    r = gfile.FsReader(url)
    try:
        r.seek(offset)
        return r.read(size)
    finally:
        r.close()


def test_engine_functions(tmp_path):
    make_tree(str(tmp_path))
    root = str(tmp_path)
    size, mtime_ns, is_dir, version = _engine.fs_stat(os.path.join(root, "d/a.txt"))
    assert (size, is_dir) == (13, False) and mtime_ns > 0 and version
    assert _engine.fs_list(os.path.join(root, "d"), True) == [
        ".hidden", "a.txt", "b.csv", "sub/c.txt", "sub/deeper/x.bin"]
    assert _read_range(os.path.join(root, "d/a.txt"), 4, 3) == b"two"
    assert _read_range("file://" + os.path.join(root, "d/a.txt"), 8) == b"three"
    r = gfile.FsReader(os.path.join(root, "d/a.txt"))
    assert (r.size(), r.read(3), r.tell()) == (13, b"one", 3)
    r.close()
    with pytest.raises(ValueError):
        r.read()
    w = gfile.FsWriter(os.path.join(root, "gone"))
    w.write(b"abc")
    w.abort()
    assert not os.path.exists(os.path.join(root, "gone"))
    with pytest.raises(errors.NotFoundError, match="nope"):
        _read_range(os.path.join(root, "nope"))
    with pytest.raises(errors.UnimplementedError, match="nosuchscheme"):
        _engine.fs_stat("nosuchscheme://x/y")


def test_read_file_and_write_file(tmp_path):
    path = str(tmp_path / "blob")
    cv.io.write_file(path, b"\x00payload")
    assert cv.io.read_file(path) == b"\x00payload"
    assert cv.io.read_file("file://" + path) == b"\x00payload"


# ---- the fsspec fallback, over fsspec's own memory:// file system (no mock) ----

@pytest.fixture
def memory():
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    fs.store.clear()
    fs.pseudo_dirs.clear()
    fs.pseudo_dirs.append("")
    yield "memory://"
    fs.store.clear()


def make_tree_through_gfile(root):
    gfile.makedirs(gfile.join(root, "d/sub/deeper"))
    gfile.makedirs(gfile.join(root, "e"))
    for name, text in [("d/a.txt", "one\ntwo\nthree"), ("d/b.csv", "1,2\n"),
                       ("d/sub/c.txt", "c\n"), ("d/sub/deeper/x.bin", "\x00\x01"),
                       ("top.txt", "top\n")]:
        with gfile.GFile(gfile.join(root, name), "w") as f:
            f.write(text)


def test_memory_urls_behave_as_local_files(memory, tmp_path):
    local, remote = str(tmp_path), memory + "t"
    for root in (local, remote):
        make_tree_through_gfile(root)

    def rel(paths, root):
        return [p[len(root):] for p in paths]

    for pattern in ["/d/*", "/*/*.txt", "/d/sub/*/*", "/d/?.txt", "/d/[ab].*", "/nope*"]:
        assert rel(gfile.glob(local + pattern), local) == rel(gfile.glob(remote + pattern), remote)
    for path in ["/d", "/d/a.txt", "/nope"]:
        assert gfile.exists(local + path) == gfile.exists(remote + path)
        assert gfile.isdir(local + path) == gfile.isdir(remote + path)
    assert gfile.listdir(local + "/d") == gfile.listdir(remote + "/d")
    assert _engine.fs_list(local + "/d", True) == _engine.fs_list(remote + "/d", True)
    assert [(t[len(local):], s, f) for t, s, f in gfile.walk(local)] == \
        [(t[len(remote):], s, f) for t, s, f in gfile.walk(remote)]
    assert gfile.stat(remote + "/d/a.txt").length == 13
    with gfile.GFile(remote + "/d/a.txt") as f:
        assert f.readline() == "one\n" and f.read() == "two\nthree"
    gfile.copy(remote + "/top.txt", remote + "/copy.txt")
    with pytest.raises(errors.AlreadyExistsError):
        gfile.copy(remote + "/top.txt", remote + "/copy.txt")
    gfile.rename(remote + "/copy.txt", remote + "/moved.txt")
    assert not gfile.exists(remote + "/copy.txt")
    assert _read_range(remote + "/moved.txt") == b"top\n"
    with gfile.GFile(remote + "/moved.txt", "a") as f:
        f.write("more\n")
    assert _read_range(remote + "/moved.txt") == b"top\nmore\n"
    gfile.remove(remote + "/moved.txt")
    with pytest.raises(errors.NotFoundError, match="memory://t/nope"):
        gfile.GFile(remote + "/nope").read()
    with pytest.raises(errors.NotFoundError):
        gfile.remove(remote + "/nope")


def test_memory_urls_in_pipelines(memory):
    with cv.io.TFRecordWriter(memory + "r/a.tfrecord") as w:
        for i in range(6):
            w.write(b"rec%d" % i)
    ds = cv.data.TFRecordDataset(memory + "r/a.tfrecord")
    assert list(ds.as_numpy_iterator()) == [b"rec%d" % i for i in range(6)]
    assert list(ds.skip(4).as_numpy_iterator()) == [b"rec4", b"rec5"]
    assert list(cv.data.Dataset.list_files(memory + "r/*", shuffle=False).as_numpy_iterator()) \
        == [b"memory://r/a.tfrecord"]
    cached = cv.data.Dataset.range(5).cache(memory + "c/cache")
    assert list(cached.as_numpy_iterator()) == list(range(5))
    assert gfile.listdir(memory + "c") and list(cached.as_numpy_iterator()) == list(range(5))
    cv.data.Dataset.range(4).save(memory + "saved")
    assert list(cv.data.Dataset.load(memory + "saved").as_numpy_iterator()) == list(range(4))
    cv.io.write_file(memory + "w/blob", b"payload")
    assert cv.io.read_file(memory + "w/blob") == b"payload"
    with gfile.GFile(memory + "t.txt", "w") as f:
        f.write("a\nb\n")
    assert list(cv.data.TextLineDataset(memory + "t.txt").as_numpy_iterator()) == [b"a", b"b"]


def test_an_unknown_scheme_without_fsspec_says_to_install_it(run_python):
    r = run_python("""
        import sys
        sys.modules["fsspec"] = None  # as if it were not installed
        from conveyor import _engine, errors
        try:
            _engine.fs_stat("weird://bucket/x")
        except errors.UnimplementedError as e:
            print("OK", e)
    """)
    assert r.returncode == 0, r.stderr
    assert "OK" in r.stdout and "weird://" in r.stdout and "fsspec" in r.stdout


def test_a_bad_seek_names_the_file_without_its_credentials(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"abc")
    reader = gfile.FsReader(str(path))
    with pytest.raises(ValueError, match="seek to -1 is not possible in .*f$"):
        reader.seek(-1)
    reader.close()
    # A URL's user:password@ and query (a signed URL's signature) never reach a message.
    assert gfile._shown("https://user:secret@host/a/b?X-Amz-Signature=abc") == "https://host/a/b?..."
    assert gfile._shown("https://host?token=abc") == "https://host?..."
    assert gfile._shown("gs://bucket/key") == "gs://bucket/key"
