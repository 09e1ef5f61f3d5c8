"""Errors that name their source: an op that fails inside a traced map names the file
(read_file) or the record file and record index (record readers) its bytes came from;
truncated JPEGs say "truncated"; list_files with no match names the pattern. The error
classes are TensorFlow's."""
import os
import re
import shutil

import numpy as np
import pytest

import conveyor as cv

TESTDATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared",
                        "testdata", "jpeg")
if not os.path.isdir(TESTDATA):
    TESTDATA = "/work/shared/testdata/jpeg"
pytestmark = pytest.mark.skipif(not os.path.isdir(TESTDATA), reason="no shared test data")


def jpeg(name):
    return os.path.join(TESTDATA, name)


@pytest.fixture
def files(tmp_path):
    good = str(tmp_path / "good.jpg")
    shutil.copy(jpeg("hopper.jpg"), good)
    data = open(jpeg("flower.jpg"), "rb").read()
    header_cut = str(tmp_path / "header_cut.jpg")
    open(header_cut, "wb").write(data[:300])
    rows_cut = str(tmp_path / "rows_cut.jpg")
    open(rows_cut, "wb").write(data[:len(data) // 2])
    return good, header_cut, rows_cut


def error_at(ds, index):
    it = iter(ds)
    for _ in range(index):
        next(it)
    with pytest.raises(cv.errors.InvalidArgumentError) as e:
        next(it)
    return str(e.value)


def test_decode_of_read_file_names_the_file(files):
    good, header_cut, rows_cut = files
    ds = cv.data.Dataset.from_tensor_slices([good, header_cut, good, rows_cut]).map(
        lambda p: cv.io.decode_jpeg(cv.io.read_file(p)))
    msg = error_at(ds, 1)
    assert msg == (f'Dataset.map(<lambda>) (element 1), in DecodeJpeg on "{header_cut}": Invalid '
                   "JPEG data: truncated: the data ends after 300 bytes, before the end of its "
                   "header (Premature end of JPEG file)")
    it = iter(ds)
    next(it)
    with pytest.raises(cv.errors.InvalidArgumentError):
        next(it)
    next(it)  # errors belong to one position: the iterator goes on
    with pytest.raises(cv.errors.InvalidArgumentError) as e:
        next(it)
    assert f'(element 3), in DecodeJpeg on "{rows_cut}": Invalid JPEG data: truncated: ' \
        "Premature end of JPEG file: the data ends after row" in str(e.value)


def test_parallel_map_names_the_file(files):
    good, header_cut, _ = files
    ds = cv.data.Dataset.from_tensor_slices([good] * 5 + [header_cut] + [good] * 5).map(
        lambda p: cv.image.resize(cv.io.decode_jpeg(cv.io.read_file(p), channels=3), [32, 32]),
        num_parallel_calls=4)
    assert f'(element 5), in DecodeJpeg on "{header_cut}"' in error_at(ds, 5)


def test_progressive_truncated_testdata_file_says_truncated():
    path = jpeg("truncated_jpeg.jpg")
    ds = cv.data.Dataset.from_tensors(path).map(lambda p: cv.io.decode_jpeg(cv.io.read_file(p)))
    msg = error_at(ds, 0)
    assert f'in DecodeJpeg on "{path}": Invalid JPEG data: truncated: Premature end of JPEG ' \
        "file" in msg


def test_decode_of_tfrecords_names_record_file_and_index(tmp_path, files):
    good, header_cut, _ = files
    path = str(tmp_path / "images.tfr")
    with cv.io.TFRecordWriter(path) as w:
        for f in [good, good, good, header_cut, good]:
            w.write(open(f, "rb").read())
    ds = cv.data.TFRecordDataset(path).map(cv.io.decode_jpeg)
    assert f'(element 3), in DecodeJpeg on record 3 of "{path}": Invalid JPEG data: truncated' \
        in error_at(ds, 3)
    # Through shuffle, prefetch and a parallel map: the record index is the file's.
    ds = cv.data.TFRecordDataset(path).shuffle(5, seed=2).prefetch(2).map(
        cv.io.decode_jpeg, num_parallel_calls=3)
    msgs = []
    it = iter(ds)
    for _ in range(5):
        try:
            next(it)
        except cv.errors.InvalidArgumentError as e:
            msgs.append(str(e))
    assert len(msgs) == 1 and f'on record 3 of "{path}"' in msgs[0]


def test_example_bytes_name_the_record(tmp_path, files):
    good, header_cut, _ = files
    path = str(tmp_path / "examples.tfr")

    from _example_wire import entry, example, ld
    with cv.io.TFRecordWriter(path) as w:
        for f in [good, header_cut]:
            image = open(f, "rb").read()
            w.write(example(entry(b"image", ld(0x0A, ld(0x0A, image)))))
    spec = {"image": cv.io.FixedLenFeature([], cv.string)}
    ds = cv.data.TFRecordDataset(path).map(
        lambda r: cv.io.decode_jpeg(cv.io.parse_single_example(r, spec)["image"]))
    assert f'in DecodeJpeg on record 1 of "{path}"' in error_at(ds, 1)


def test_text_lines_name_the_line(tmp_path, files):
    good, header_cut, _ = files
    listing = str(tmp_path / "list.txt")
    open(listing, "w").write(f"{good}\n{header_cut}\n")
    ds = cv.data.TextLineDataset(listing).map(lambda p: cv.io.decode_jpeg(cv.io.read_file(p)))
    # The bytes DecodeJpeg failed on came from the JPEG file (not the list).
    assert f'in DecodeJpeg on "{header_cut}"' in error_at(ds, 1)


def test_errors_without_a_file_source_are_unchanged():
    ds = cv.data.Dataset.from_tensors(b"not a jpeg").map(cv.io.decode_jpeg)
    msg = error_at(ds, 0)
    assert msg.startswith("Dataset.map(decode_jpeg) (element 0), in DecodeJpeg: ")


def test_list_files_no_match_names_the_pattern(tmp_path):
    pattern = str(tmp_path / "*.nothing")
    with pytest.raises(cv.errors.InvalidArgumentError) as e:
        cv.data.Dataset.list_files(pattern)
    assert str(e.value) == f"No files matched pattern: {pattern}"
    with pytest.raises(cv.errors.InvalidArgumentError, match=re.escape(pattern + ", ")):
        cv.data.Dataset.list_files([pattern, pattern + "x"])


def test_same_error_types_as_tensorflow(tmp_path, files):
    tf = pytest.importorskip("tensorflow")
    good, header_cut, rows_cut = files
    for path in (header_cut, rows_cut):
        with pytest.raises(tf.errors.InvalidArgumentError):
            list(tf.data.Dataset.from_tensors(path).map(
                lambda p: tf.io.decode_jpeg(tf.io.read_file(p))))
        with pytest.raises(cv.errors.InvalidArgumentError, match="truncated"):
            list(cv.data.Dataset.from_tensors(path).map(
                lambda p: cv.io.decode_jpeg(cv.io.read_file(p))))
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.data.Dataset.list_files(str(tmp_path / "*.nothing"))


def test_origin_survives_batching_of_nothing_else():
    # Elements that never touched a file have no origin, also after batch/unbatch.
    ds = cv.data.Dataset.from_tensor_slices(np.array([b"x", b"y"], dtype=object)).batch(2) \
        .unbatch().map(cv.io.decode_jpeg)
    assert "in DecodeJpeg: " in error_at(ds, 0)
