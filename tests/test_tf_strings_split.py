"""conveyor.strings' split, number and hash ops against TensorFlow, eagerly and
traced inside Dataset.map (the map must compile to a native program)."""
import os

import numpy as np
import pytest

import conveyor as cv

tf = pytest.importorskip("tensorflow")

RNG = np.random.default_rng(11)

PIECES = [b"a", b"bc", b" ", b"  ", b"\t", b"\n", b"\v", b"\f", b"\r", b",", b",,", b"<>", b"<",
          b">", b"\xc3\xa9", b"\xff", b"\x00", b"\xa0", b"\x85", b"ab", b"xyz"]


def random_strings(count, max_pieces=8):
    out = [b"", b" ", b",", b"<>", b"<><>", b" a ", b",a,", b"a,,b", b"<>a<><>b<>"]
    while len(out) < count:
        k = int(RNG.integers(0, max_pieces + 1))
        out.append(b"".join(PIECES[i] for i in RNG.integers(0, len(PIECES), k)))
    return out


def random_bytes(count, max_len=12):
    """Byte strings mixing ASCII, valid multi-byte UTF-8 and invalid sequences."""
    parts = [b"a", b"Z", b"\x00", b"\x01", b"\x1f", b"\x7f", "é".encode(), "€".encode(),
             "𝄞".encode(), "\uffff".encode(), b"\x80", b"\xbf", b"\xc0\xaf", b"\xc1", b"\xc2",
             b"\xe2\x82", b"\xed\xa0\x80", b"\xed\x9f\xbf", b"\xef\xbf", b"\xf0\x90",
             b"\xf0\x8f\xbf\xbf", b"\xf4\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf5", b"\xff",
             b"\xe0\xa0", b"\xe0\x9f\x80"]
    out = [b""]
    while len(out) < count:
        k = int(RNG.integers(1, max_len + 1))
        if RNG.random() < 0.3:
            out.append(RNG.integers(0, 256, k, dtype=np.uint8).tobytes())
        else:
            out.append(b"".join(parts[i] for i in RNG.integers(0, len(parts), k)))
    return out


def tf_result(fn):
    """TensorFlow's value, or the exception type it raised."""
    try:
        return fn().numpy()
    except Exception as e:  # noqa: BLE001 - the type is what we compare
        return type(e)


def check_same(got_fn, expected):
    if isinstance(expected, type):
        with pytest.raises(Exception) as info:
            got_fn()
        if issubclass(expected, tf.errors.OpError):  # the same tf.errors class
            assert type(info.value).__name__ == expected.__name__, info.value
        else:
            assert isinstance(info.value, expected), info.value
        return
    got = got_fn()
    got = np.asarray(got)
    assert got.dtype == expected.dtype or (got.dtype == object and expected.dtype == object)
    assert got.shape == expected.shape
    if got.dtype.kind == "f":
        assert np.array_equal(got.view(f"u{got.itemsize}"), expected.view(f"u{got.itemsize}")) or \
            np.array_equal(got, expected, equal_nan=True)
    else:
        assert got.tolist() == expected.tolist()


def map_results(strings, cv_fn, tf_fn):
    """Both libraries' results of a map over `strings` (traced in conveyor)."""
    ours = cv.data.Dataset.from_tensor_slices(strings).map(cv_fn)
    assert "mode=native" in repr(ours), repr(ours)
    theirs = tf.data.Dataset.from_tensor_slices(strings).map(tf_fn)
    return ours, theirs


def assert_same_elements(ours, theirs):
    a, b = list(ours.as_numpy_iterator()), list(theirs.as_numpy_iterator())
    assert len(a) == len(b)
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape and x.tolist() == y.tolist(), (x, y)


# -- split ----------------------------------------------------------------------

SEPS = [None, "", ",", ",,", "<>", " ", "\xe9", b"\xff", b"\x00"]


@pytest.mark.parametrize("sep", SEPS, ids=repr)
@pytest.mark.parametrize("maxsplit", [-1, 0, 1, 2, 5, -3])
def test_split_matches_tf(sep, maxsplit):
    for s in random_strings(60):
        expected = tf.strings.split(s, sep, maxsplit=maxsplit).numpy()
        got = cv.strings.split(s, sep, maxsplit=maxsplit)
        assert got.dtype == object and got.shape == expected.shape, (s, sep, got, expected)
        assert got.tolist() == expected.tolist(), (s, sep, maxsplit)


@pytest.mark.parametrize("sep", [None, ",", "<>"])
def test_split_traced_in_map_matches_tf(sep):
    strings = random_strings(80)
    ours, theirs = map_results(strings, lambda s: cv.strings.split(s, sep, maxsplit=3),
                               lambda s: tf.strings.split(s, sep, maxsplit=3))
    assert ours.element_spec.shape.as_list() == theirs.element_spec.shape.as_list() == [None]
    assert_same_elements(ours, theirs)


def test_split_with_traced_separator():
    pairs = [(b"a,b,,c", b","), (b"a<>b", b"<>"), (b"a b", b""), (b"", b",")]
    ds = cv.data.Dataset.from_tensor_slices(([p[0] for p in pairs], [p[1] for p in pairs]))
    ds = ds.map(lambda s, sep: cv.strings.split(s, sep))
    assert "mode=native" in repr(ds)
    for got, (s, sep) in zip(ds.as_numpy_iterator(), pairs):
        assert got.tolist() == tf.strings.split(s, sep).numpy().tolist()


def test_split_then_index_traced():
    paths = ["/data/cats/1.jpg", "/data/dogs/x/2.jpg", "rel/birds/3.png"]

    def label(lib):
        def fn(path):
            parts = lib.strings.split(path, os.path.sep)
            return parts[-2], parts[1:], parts[::-1], parts[0]
        return fn

    ours, theirs = map_results(paths, label(cv), label(tf))
    assert ours.element_spec[0].shape.as_list() == []
    assert ours.element_spec[1].shape.as_list() == [None]
    a, b = list(ours.as_numpy_iterator()), list(theirs.as_numpy_iterator())
    for x, y in zip(a, b):
        assert x[0] == y[0]
        assert [np.asarray(v).tolist() for v in x[1:]] == [np.asarray(v).tolist() for v in y[1:]]


def test_split_index_out_of_range_in_map_is_invalid_argument():
    ds = cv.data.Dataset.from_tensor_slices(["a/b", "c"]).map(
        lambda p: cv.strings.split(p, "/")[1])
    assert "mode=native" in repr(ds)
    it = iter(ds)
    assert next(it) == b"b"
    with pytest.raises(cv.errors.InvalidArgumentError):
        next(it)


def test_split_of_rank_1_needs_ragged_tensors():
    with pytest.raises(NotImplementedError, match=r"tf\.strings\.split.*RaggedTensor"):
        cv.strings.split(["a b", "c"])
    ds = cv.data.Dataset.from_tensor_slices([["a b", "c"]])
    with pytest.raises(NotImplementedError, match=r"tf\.strings\.split.*RaggedTensor"):
        ds.map(lambda s: cv.strings.split(s))
    for fn in (cv.strings.bytes_split, lambda s: cv.strings.unicode_decode(s, "UTF-8"),
               lambda s: cv.strings.unicode_split(s, "UTF-8")):
        with pytest.raises(NotImplementedError, match="RaggedTensor"):
            fn([b"ab"])


@pytest.mark.parametrize("make", [
    lambda s: s, lambda s: s.decode("utf-8", "surrogateescape"), lambda s: np.array(s, object),
    lambda s: np.array(s), lambda s: cv.constant(s), lambda s: np.bytes_(s)],
    ids=["bytes", "str", "object-array", "bytes-array", "EagerTensor", "np.bytes_"])
def test_eager_inputs(make):
    s = b"a,b,,c d"
    try:
        value = make(s)
    except UnicodeDecodeError:
        pytest.skip("not text")
    assert cv.strings.split(value, ",").tolist() == [b"a", b"b", b"", b"c d"]
    assert cv.strings.split(value).tolist() == [b"a,b,,c", b"d"]
    assert cv.strings.bytes_split(value).tolist() == [bytes([c]) for c in s]
    assert cv.strings.unicode_decode(value, "UTF-8").tolist() == list(s)
    assert int(cv.strings.to_hash_bucket_fast(value, 1000)) == \
        int(tf.strings.to_hash_bucket_fast(s, 1000))
    # an op's EagerTensor result feeds the next op
    parts = cv.strings.split(value, ",")
    assert cv.strings.to_hash_bucket_fast(parts, 77).tolist() == \
        tf.strings.to_hash_bucket_fast(tf.strings.split(s, ","), 77).numpy().tolist()


# -- bytes_split, unicode_decode, unicode_split ---------------------------------

def test_bytes_split_matches_tf():
    strings = random_bytes(100)
    for s in strings:
        assert cv.strings.bytes_split(s).tolist() == tf.strings.bytes_split(s).numpy().tolist()
    ours, theirs = map_results(strings, cv.strings.bytes_split, tf.strings.bytes_split)
    assert_same_elements(ours, theirs)


@pytest.mark.parametrize("errors", ["replace", "ignore", "strict"])
@pytest.mark.parametrize("replacement_char", [0xFFFD, 63, 0, 0xD800, 0x10FFFF])
@pytest.mark.parametrize("controls", [False, True])
def test_unicode_decode_matches_tf(errors, replacement_char, controls):
    for s in random_bytes(120):
        expected = tf_result(lambda: tf.strings.unicode_decode(
            s, "UTF-8", errors=errors, replacement_char=replacement_char,
            replace_control_characters=controls))
        check_same(lambda: cv.strings.unicode_decode(
            s, "UTF-8", errors=errors, replacement_char=replacement_char,
            replace_control_characters=controls), expected)


@pytest.mark.parametrize("errors", ["replace", "ignore", "strict"])
@pytest.mark.parametrize("replacement_char", [0xFFFD, 63, 0xD800, 0x1F600])
def test_unicode_split_matches_tf(errors, replacement_char):
    for s in random_bytes(120):
        expected = tf_result(lambda: tf.strings.unicode_split(
            s, "UTF-8", errors=errors, replacement_char=replacement_char))
        check_same(lambda: cv.strings.unicode_split(
            s, "UTF-8", errors=errors, replacement_char=replacement_char), expected)


@pytest.mark.parametrize("errors", ["replace", "ignore"])
def test_unicode_ops_traced_in_map_match_tf(errors):
    strings = random_bytes(80)
    ours, theirs = map_results(
        strings,
        lambda s: (cv.strings.unicode_decode(s, "UTF-8", errors=errors),
                   cv.strings.unicode_split(s, "UTF-8", errors=errors)),
        lambda s: (tf.strings.unicode_decode(s, "UTF-8", errors=errors),
                   tf.strings.unicode_split(s, "UTF-8", errors=errors)))
    assert ours.element_spec[0].dtype == cv.int32
    for x, y in zip(ours.as_numpy_iterator(), theirs.as_numpy_iterator()):
        assert x[0].dtype == y[0].dtype and x[0].tolist() == y[0].tolist()
        assert x[1].tolist() == y[1].tolist()


def test_unicode_strict_fails_in_map_and_arguments_are_checked():
    ds = cv.data.Dataset.from_tensor_slices([b"ok", b"bad\xff"]).map(
        lambda s: cv.strings.unicode_decode(s, "UTF-8", errors="strict"))
    assert "mode=native" in repr(ds)
    it = iter(ds)
    assert next(it).tolist() == [111, 107]
    with pytest.raises(cv.errors.InvalidArgumentError, match="Invalid formatting"):
        next(it)
    with pytest.raises(cv.errors.InvalidArgumentError, match="errors"):
        cv.strings.unicode_decode(b"a", "UTF-8", errors="bogus")
    with pytest.raises(cv.errors.InvalidArgumentError, match="replacement_char"):
        cv.strings.unicode_decode(b"a", "UTF-8", replacement_char=0x110000)
    with pytest.raises(NotImplementedError, match="UTF-8"):
        cv.strings.unicode_decode(b"a", "UTF-16-BE")


# -- to_number --------------------------------------------------------------------

NUMBER_CASES = [
    "1", " 1", "1 ", " 1 ", "+1", "-1", "1.5", "1e3", "1E3", "1e+3", "1e-3", ".5", "5.", "0x10",
    "0X1f", "-0x10", "0x1p3", "0x.8", "010", "00012", "inf", "-inf", "Inf", "INF", "infinity",
    "-Infinity", "nan", "NaN", "-nan", "nan(123)", "", " ", "1_000", "1,5", "\t2\n", "\r\f1\v",
    "\x0b5", "1e", "e5", "1e+", "3.4e39", "3.4028235e38", "3.4028236e38", "1e-40", "1e-45",
    "7e-46", "1e-50", "1e400", "-1e400", "2147483647", "2147483648", "-2147483648",
    "-2147483649", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
    "-9223372036854775809", "99999999999999999999", "0x", "1.0", "+-1", "--1", "- 1", "1 2",
    "1\x00", "\x001", "0b1", "\uff11", "+0", "-0", "infin", "nan(", "1f", "1d", "1.5L", "16777217",
    "1.00000005960464477539062500000001", "0.1", "-.5e-3", "+.e1", ".", "+", "-", "\xa01",
    "4294967295", "4294967296", "18446744073709551615", "18446744073709551616"]


@pytest.mark.parametrize("out_type", ["float32", "float64", "int32", "int64", "uint32", "uint64"])
def test_to_number_matches_tf(out_type):
    for text in NUMBER_CASES:
        expected = tf_result(lambda: tf.strings.to_number(text, getattr(tf, out_type)))
        check_same(lambda: cv.strings.to_number(text, getattr(cv, out_type)), expected)
    # random values printed several ways
    values = np.concatenate([RNG.standard_normal(200) * 10.0 ** RNG.integers(-40, 40, 200),
                             RNG.integers(-2 ** 40, 2 ** 40, 100)])
    texts = [f"{v!r}" for v in values] + [f"{v:.9g}" for v in values] + \
        [float(v).hex() for v in values[:50]] + [str(int(v)) for v in values[200:]]
    expected = tf_result(lambda: tf.strings.to_number(texts, getattr(tf, out_type)))
    if isinstance(expected, type):  # ints: parse those that TensorFlow parses one by one
        texts = [t for t in texts
                 if not isinstance(tf_result(lambda: tf.strings.to_number(t, out_type)), type)]
        expected = tf.strings.to_number(texts, getattr(tf, out_type)).numpy()
    check_same(lambda: cv.strings.to_number(np.array(texts, object), out_type), expected)


def test_to_number_error_names_the_string_and_keeps_shape():
    with pytest.raises(cv.errors.InvalidArgumentError,
                       match="StringToNumberOp could not correctly convert string: 1x"):
        cv.strings.to_number(["1", "1x"])
    got = cv.strings.to_number([["1", "2"], ["3", "4.5"]])
    assert got.shape == (2, 2) and got.dtype == np.float32
    with pytest.raises(cv.errors.InvalidArgumentError, match="out_type"):
        cv.strings.to_number("1", cv.int16)
    with pytest.raises(TypeError):
        cv.strings.to_number(np.array([1, 2]))


def test_to_number_traced_in_map_matches_tf():
    lines = ["1,2.5,-3", " 4 , 5e2,0x10", "7,inf,-0"]

    def parse(lib):
        def fn(line):
            parts = lib.strings.split(line, ",")
            return lib.strings.to_number(parts, lib.float64), lib.strings.to_number(parts[0],
                                                                                    lib.int32)
        return fn

    ours, theirs = map_results(lines, parse(cv), parse(tf))
    for x, y in zip(ours.as_numpy_iterator(), theirs.as_numpy_iterator()):
        assert x[0].dtype == y[0].dtype and x[0].tolist() == y[0].tolist()
        assert x[1].dtype == y[1].dtype and x[1] == y[1]
    bad = cv.data.Dataset.from_tensor_slices(["1", "x2"]).map(
        lambda s: cv.strings.to_number(s, cv.int64))
    with pytest.raises(cv.errors.InvalidArgumentError, match="convert string: x2"):
        list(bad)


# -- hash buckets -----------------------------------------------------------------

def hash_inputs():
    strings = [RNG.integers(0, 256, n, dtype=np.uint8).tobytes() for n in range(301)]
    strings += [RNG.integers(0, 256, int(n), dtype=np.uint8).tobytes()
                for n in RNG.integers(0, 301, 3000)]
    strings += [b"a" * n for n in range(0, 300, 7)] + [b"\x00" * n for n in range(0, 200, 13)]
    return np.array(strings, dtype=object)


BUCKETS = [1, 2, 3, 10, 1000, 2 ** 31 - 1, 2 ** 31, 2 ** 32 + 15, 2 ** 62, 2 ** 63 - 1]


@pytest.mark.parametrize("num_buckets", BUCKETS)
def test_to_hash_bucket_fast_matches_tf(num_buckets):
    strings = hash_inputs()
    got = cv.strings.to_hash_bucket_fast(strings, num_buckets)
    expected = tf.strings.to_hash_bucket_fast(strings, num_buckets).numpy()
    assert got.dtype == np.int64 and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("key", [[0, 0], [1, 2], [-1, -2], [2 ** 63 - 1, -2 ** 63],
                                 [123456789, 987654321]])
@pytest.mark.parametrize("num_buckets", [7, 2 ** 62, 2 ** 63 - 1])
def test_to_hash_bucket_strong_matches_tf(key, num_buckets):
    strings = hash_inputs()[:600]
    got = cv.strings.to_hash_bucket_strong(strings, num_buckets, key)
    expected = tf.strings.to_hash_bucket_strong(strings, num_buckets, key).numpy()
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("num_buckets", [1, 5, 2 ** 62, 2 ** 63 - 1])
def test_to_hash_bucket_legacy_matches_tf(num_buckets):
    strings = hash_inputs()[:1000]
    got = cv.strings.to_hash_bucket(strings, num_buckets)
    np.testing.assert_array_equal(got, tf.strings.to_hash_bucket(strings, num_buckets).numpy())


def test_hash_buckets_keep_shape_and_scalars():
    x = np.array([[b"a", b"b", b"c"], [b"", b"dd", b"e"]], object)
    for cv_fn, tf_fn in [(lambda v: cv.strings.to_hash_bucket_fast(v, 9),
                          lambda v: tf.strings.to_hash_bucket_fast(v, 9)),
                         (lambda v: cv.strings.to_hash_bucket_strong(v, 9, [3, 4]),
                          lambda v: tf.strings.to_hash_bucket_strong(v, 9, [3, 4]))]:
        got, expected = cv_fn(x), tf_fn(x).numpy()
        assert got.shape == (2, 3) and got.tolist() == expected.tolist()
        assert int(cv_fn(b"scalar")) == int(tf_fn(b"scalar"))
        assert np.ndim(cv_fn(b"scalar")) == 0


def test_hash_buckets_traced_in_map_match_tf():
    strings = list(hash_inputs()[:200])

    def fn(lib):
        return lambda s: (lib.strings.to_hash_bucket_fast(s, 1000),
                          lib.strings.to_hash_bucket_strong(s, 2 ** 40, [5, 6]),
                          lib.strings.to_hash_bucket(s, 17))

    ours, theirs = map_results(strings, fn(cv), fn(tf))
    for x, y in zip(ours.as_numpy_iterator(), theirs.as_numpy_iterator()):
        assert [int(v) for v in x] == [int(v) for v in y]
        assert all(np.asarray(v).dtype == np.int64 for v in x)


@pytest.mark.parametrize("num_buckets", [0, -1, -(2 ** 40), 2 ** 63])
def test_hash_bucket_count_must_be_positive(num_buckets):
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.strings.to_hash_bucket_fast(["a"], num_buckets)
    with pytest.raises(cv.errors.InvalidArgumentError, match="num_buckets"):
        cv.strings.to_hash_bucket_fast(["a"], num_buckets)
    with pytest.raises(cv.errors.InvalidArgumentError, match="num_buckets"):
        cv.strings.to_hash_bucket_strong(["a"], num_buckets, [1, 2])
    ds = cv.data.Dataset.from_tensor_slices(["a"])
    with pytest.raises(ValueError, match="num_buckets"):  # as TensorFlow's traced map
        ds.map(lambda s: cv.strings.to_hash_bucket_fast(s, num_buckets))


def test_strong_hash_key_must_have_two_elements():
    with pytest.raises(cv.errors.InvalidArgumentError, match="Key must have 2 elements"):
        cv.strings.to_hash_bucket_strong(["a"], 10, [1, 2, 3])
    with pytest.raises(TypeError):
        cv.strings.to_hash_bucket_fast([1, 2], 10)


# -- strings in the engine: batches, large values, hostile bytes -------------------

def test_string_indexing_of_batches_traced():
    big = [bytes([65 + i]) * (100_000 + i) for i in range(6)]  # batches of large strings
    small = [b"x%d" % i for i in range(6)]

    def fn(lib):
        return lambda b: (b[1], b[::-2], b[-1:], lib.strings.split(b[0], b"B"))

    for data in (big, small):
        ours = cv.data.Dataset.from_tensor_slices(data).batch(3).map(fn(cv))
        assert "mode=native" in repr(ours)
        theirs = tf.data.Dataset.from_tensor_slices(data).batch(3).map(fn(tf))
        for x, y in zip(ours.as_numpy_iterator(), theirs.as_numpy_iterator()):
            assert x[0] == y[0]
            assert [np.asarray(v).tolist() for v in x[1:]] == [np.asarray(v).tolist() for v in y[1:]]


def test_long_strings_and_random_bytes():
    long_texts = ["1" + "0" * 300, "0" * 200 + "5", " " * 500 + "-7" + "\t" * 300,
                  "1." + "3" * 1000 + "e-5"]
    for out_type in ["float32", "float64", "int32", "int64", "uint64"]:
        for text in long_texts:
            expected = tf_result(lambda: tf.strings.to_number(text, out_type))
            check_same(lambda: cv.strings.to_number(text, out_type), expected)
    huge = RNG.integers(0, 256, 1 << 20, dtype=np.uint8).tobytes()
    for sep in (None, b"\x00", b"\xff\xfe"):
        assert cv.strings.split(huge, sep).tolist() == tf.strings.split(huge, sep).numpy().tolist()
    np.testing.assert_array_equal(cv.strings.unicode_decode(huge, "UTF-8"),
                                  tf.strings.unicode_decode(huge, "UTF-8").numpy())
    assert int(cv.strings.to_hash_bucket_fast(huge, 2 ** 63 - 1)) == \
        int(tf.strings.to_hash_bucket_fast(huge, 2 ** 63 - 1))
    assert int(cv.strings.to_hash_bucket_strong(huge, 2 ** 63 - 1, [7, 9])) == \
        int(tf.strings.to_hash_bucket_strong(huge, 2 ** 63 - 1, [7, 9]))


def test_parallel_native_map_equals_eager():
    """Worker threads run the ops concurrently without the GIL: the results
    equal the eager ones, element by element and in order."""
    strings = random_bytes(400, max_len=30)

    def fn(s):
        return (cv.strings.split(s), cv.strings.split(s, b"\xff", maxsplit=2),
                cv.strings.bytes_split(s)[::3], cv.strings.unicode_decode(s, "UTF-8"),
                cv.strings.unicode_split(s, "UTF-8", errors="ignore"),
                cv.strings.to_hash_bucket_fast(s, 97), cv.strings.to_hash_bucket_strong(s, 97, [1, 2]),
                cv.strings.to_hash_bucket(s, 97))

    ds = cv.data.Dataset.from_tensor_slices(np.array(strings, object)).map(
        fn, num_parallel_calls=4, deterministic=True)
    assert "mode=native" in repr(ds)
    for s, got in zip(strings, ds.as_numpy_iterator()):
        want = fn(s)
        assert [np.asarray(v).tolist() for v in got] == [np.asarray(v).tolist() for v in want]
