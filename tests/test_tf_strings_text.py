"""conveyor.strings' regex and text ops against TensorFlow, eagerly and traced in map."""
import time

import numpy as np
import pytest

import conveyor as cv

tf = pytest.importorskip("tensorflow")

RNG = np.random.default_rng(11)

ADVERSARIAL = [b"", b" ", b"a", b"Hello, World!", b"  padded\t\n", b"\xff\xfe", b"caf\xc3\xa9",
               b"\xc3", b"\xe2\x82\xac euro", b"MiXeD CaSe 123", b"a\nb\nc", b"tab\there",
               b"x" * 5000, b"\x00nul\x00", b"\xed\xa0\x80 surrogate", b"..,,;;!!", b"_word_"]


def ours_eager_and_traced(fn, values):
    """fn on `values` eagerly, and in a traced map over them (asserting it is native)."""
    eager = np.asarray(fn(np.array(values, dtype=object)))
    ds = cv.data.Dataset.from_tensor_slices(np.array(values, dtype=object)).map(fn)
    assert "mode=native" in repr(ds), repr(ds)
    traced = np.array(list(ds))
    return eager, traced


def check(ours_fn, tf_fn, values=ADVERSARIAL):
    expected = tf_fn(tf.constant(values)).numpy()
    eager, traced = ours_eager_and_traced(ours_fn, values)
    assert eager.dtype == expected.dtype or (eager.dtype == object and expected.dtype == object)
    np.testing.assert_array_equal(eager, expected)
    np.testing.assert_array_equal(traced.reshape(expected.shape), expected)
    ds_tf = tf.data.Dataset.from_tensor_slices(values).map(tf_fn)
    ds_ours = cv.data.Dataset.from_tensor_slices(np.array(values, dtype=object)).map(ours_fn)
    assert ds_ours.element_spec.dtype.name == ds_tf.element_spec.dtype.name
    assert ds_ours.element_spec.shape.as_list() == ds_tf.element_spec.shape.as_list()


@pytest.mark.parametrize("pattern", [
    r"a.c", r".*", r"", r"\w+", r"[[:alpha:]]+", r"[^a-z]*", r"\d{3}", r"(?i)hello.*",
    r"^H.*!$", r"\s*\S+\s*", r".*\bWorld\b.*", r"(a|ab)(c|bcd)", r"x{2,}", r"x{1000}",
    r"(?s).*", r"caf.", r"[\x{e9}\x{20ac}].*", r"\A.*\z", r"_\w+_", r"(?:\.|,|;|!)+",
])
def test_regex_full_match(pattern):
    check(lambda s: cv.strings.regex_full_match(s, pattern),
          lambda s: tf.strings.regex_full_match(s, pattern))


@pytest.mark.parametrize("pattern,rewrite,glob", [
    (r"[^\w\s]", "", True), (r"\s+", " ", True), (r"x*", "-", True), (r"", "-", True),
    (r"(\w)(\w*)", r"\2\1", True), (r"o", "0", False), (r"^", ">", True), (r"$", "<", True),
    (r"(?m)^", ">", True), (r"\b", "|", True), (r"[aeiou]", r"\\\0", True),
    (r"a|ab|abc", "X", True), (r"(a*)*b", "B", True), (r"\xff", "?", True), (r".", ".", True),
])
def test_regex_replace(pattern, rewrite, glob):
    check(lambda s: cv.strings.regex_replace(s, pattern, rewrite, replace_global=glob),
          lambda s: tf.strings.regex_replace(s, pattern, rewrite, replace_global=glob))


def test_case_strip_length():
    values = ADVERSARIAL + ["ÀÉÎõü ßÿ ĀāĲĳ ΑΒΓαβγς АБВабв ЁёЂђ".encode()]
    check(cv.strings.lower, tf.strings.lower, values)
    check(cv.strings.upper, tf.strings.upper, values)
    check(lambda s: cv.strings.lower(s, encoding="utf-8"),
          lambda s: tf.strings.lower(s, encoding="utf-8"), values)
    check(lambda s: cv.strings.upper(s, encoding="utf-8"),
          lambda s: tf.strings.upper(s, encoding="utf-8"), values)
    check(cv.strings.strip, tf.strings.strip, values + [b"\v\f\r x \xa0"])
    check(cv.strings.length, tf.strings.length, values)
    check(lambda s: cv.strings.length(s, unit="UTF8_CHAR"),
          lambda s: tf.strings.length(s, unit="UTF8_CHAR"), values)


def test_invalid_patterns_fail_when_traced():
    for pattern in ["(", "a**", "a{2,1}", "[z-a]", "x{1001}", "[a", "a)"]:
        with pytest.raises(cv.errors.InvalidArgumentError, match="Invalid pattern"):
            cv.strings.regex_full_match(np.array([b"a"], dtype=object), pattern)
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.strings.regex_full_match([b"a"], pattern)
        ds = cv.data.Dataset.from_tensor_slices(np.array([b"a"], dtype=object))
        with pytest.raises(cv.errors.InvalidArgumentError, match="Invalid pattern"):
            ds.map(lambda s: cv.strings.regex_replace(s, pattern, ""))


def test_nested_quantifiers_are_linear():
    text = b"a" * 20000
    start = time.perf_counter()
    assert not cv.strings.regex_full_match(text, "(a*)*b")
    assert not cv.strings.regex_full_match(text, "(a|aa)*c")
    assert cv.strings.regex_replace(text, "(a*)*b", "x") == text
    assert time.perf_counter() - start < 5


def test_regex_fuzz_against_tf():
    rng = np.random.default_rng(3)
    atoms = ["a", "b", ".", "[ab]", "[^a]", "(a|b)", "(ab|a)", "\\w", "\\s", "^", "$", "\\b",
             "(?:a|)", "c"]
    quants = ["", "", "*", "+", "?", "*?", "{2}", "{1,2}", "+?"]
    pairs = []
    for _ in range(300):
        pattern = "".join(rng.choice(atoms) + rng.choice(quants)
                          for _ in range(rng.integers(1, 5)))
        text = "".join(rng.choice(list("ab c")) for _ in range(rng.integers(0, 7)))
        pairs.append((pattern, text))
    texts = np.array([t.encode() for _, t in pairs], dtype=object)
    for pattern, text in pairs:
        want = tf.strings.regex_full_match(text, pattern).numpy()
        got = cv.strings.regex_full_match(text.encode(), pattern)
        assert bool(got) == bool(want), (pattern, text)
        want = tf.strings.regex_replace(text, pattern, "<\\0>").numpy()
        got = cv.strings.regex_replace(text.encode(), pattern, "<\\0>")
        assert got == want, (pattern, text, got, want)
    assert len(texts) == 300


def test_string_equality_broadcasts():
    class_names = np.array(["cat", "dog", "bird"])
    parts = np.array([b"data", b"dog", b"x.jpg"], dtype=object)
    want = tf.constant(parts)[-2] == tf.constant(class_names)
    np.testing.assert_array_equal(cv.equal(parts[-2], class_names), want.numpy())
    a = np.array([[b"a"], [b"b"]], dtype=object)
    b = np.array([b"a", b"b", b""], dtype=object)
    np.testing.assert_array_equal(cv.not_equal(a, b), tf.not_equal(a, b).numpy())
    np.testing.assert_array_equal(cv.equal(a, b), tf.equal(a, b).numpy())

    def fn(path):
        parts = cv.strings.regex_replace(path, "/", "/")
        return parts == class_names, parts != "dog"

    ds = cv.data.Dataset.from_tensor_slices(np.array([b"cat", b"dog", b""], dtype=object)).map(fn)
    assert "mode=native" in repr(ds)
    got = list(ds)
    np.testing.assert_array_equal(got[1][0], [False, True, False])
    assert [bool(x[1]) for x in got] == [True, False, True]


@pytest.mark.parametrize("pos,n", [(0, 2), (1, 100), (-1, 5), (-3, 1), (0, -1), (2, 0)])
@pytest.mark.parametrize("unit", ["BYTE", "UTF8_CHAR"])
def test_substr(pos, n, unit):
    values = [b"abc", b"caf\xc3\xa9s", b"\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac", b"\xff\xfeab"]
    check(lambda s: cv.strings.substr(s, pos, n, unit=unit),
          lambda s: tf.strings.substr(s, pos, n, unit=unit), values)


def test_substr_broadcasts_and_fails_out_of_range():
    values = np.array([b"abcd", b"xyz"], dtype=object)
    got = cv.strings.substr(values, np.array([1, 2]), np.array([2, 1]))
    np.testing.assert_array_equal(got, tf.strings.substr(values, [1, 2], [2, 1]).numpy())
    got = cv.strings.substr(b"hello", np.array([0, 1, 3], np.int64), np.array([1, 2, 9], np.int64))
    np.testing.assert_array_equal(got, tf.strings.substr(b"hello", tf.constant([0, 1, 3], tf.int64),
                                                         tf.constant([1, 2, 9], tf.int64)).numpy())
    for pos in (4, -4):
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.strings.substr(b"abc", pos, 1)
        with pytest.raises(cv.errors.InvalidArgumentError, match="out of range"):
            cv.strings.substr(b"abc", pos, 1)
    ds = cv.data.Dataset.from_tensor_slices(np.array([b"abcdef", b"ab"], dtype=object))
    ds = ds.map(lambda s: cv.strings.substr(s, 3, 2))
    assert "mode=native" in repr(ds)
    it = iter(ds)
    assert next(it) == b"de"
    with pytest.raises(cv.errors.InvalidArgumentError, match="out of range"):
        next(it)


def test_join_and_reduce_join():
    a = np.array([b"a", b"b", b""], dtype=object)
    b = np.array([b"x", b"\xff", b"z"], dtype=object)
    for sep in ["", "-", ", "]:
        want = tf.strings.join([a, "mid", b], separator=sep).numpy()
        np.testing.assert_array_equal(cv.strings.join([a, "mid", b], separator=sep), want)
        assert cv.strings.join(["p", "q"], separator=sep) == tf.strings.join(["p", "q"], sep).numpy()
    with pytest.raises(cv.errors.InvalidArgumentError, match="shapes do not match"):
        cv.strings.join([a, np.array([b"x"], dtype=object)])
    x = np.array([[[b"a", b"b"], [b"c", b"d"], [b"e", b""]]] * 2, dtype=object)
    x[1, 0, 0] = b"Q"
    for axis in [None, 0, 1, 2, -1, [0, 1], [1, 0], [2, 0], [0, 1, 2], [2, 1, 0]]:
        for keepdims in (False, True):
            want = tf.strings.reduce_join(x, axis=axis, keepdims=keepdims, separator="|").numpy()
            got = cv.strings.reduce_join(x, axis=axis, keepdims=keepdims, separator="|")
            np.testing.assert_array_equal(got, want)
    empty = np.zeros((0, 3), dtype=object)
    np.testing.assert_array_equal(cv.strings.reduce_join(empty, axis=0),
                                  tf.strings.reduce_join(tf.constant(empty, tf.string), 0).numpy())

    def fn(s):
        words = cv.strings.join([s, s], separator=" ")
        return cv.strings.reduce_join(cv.reshape(words, [1]), axis=0, separator="+"), words

    ds = cv.data.Dataset.from_tensor_slices(a).map(fn)
    assert "mode=native" in repr(ds)
    assert [tuple(e) for e in ds] == [(b"a a", b"a a"), (b"b b", b"b b"), (b" ", b" ")]


@pytest.mark.parametrize("kwargs", [
    {}, {"precision": 2}, {"precision": 0}, {"scientific": True}, {"shortest": True},
    {"width": 12}, {"width": 12, "fill": "0"}, {"width": 12, "fill": "-"},
    {"width": 12, "fill": "+", "precision": 3}, {"width": 3, "fill": " "}, {"fill": "#"},
])
def test_as_string_floats(kwargs):
    values = np.array([0.0, -0.0, 3.14159, -2.5, 1e20, 1e-7, 123456789.0, np.nan, np.inf, -np.inf])
    for dtype in ("float16", "float32", "float64"):
        with np.errstate(over="ignore"):
            x = values.astype(dtype)  # 1e20 is inf in float16
        want = tf.strings.as_string(x, **kwargs).numpy()
        np.testing.assert_array_equal(cv.strings.as_string(x, **kwargs), want)


@pytest.mark.parametrize("kwargs", [{}, {"width": 6}, {"width": 6, "fill": "0"},
                                    {"width": 6, "fill": "-"}, {"fill": "+"}])
def test_as_string_integers_and_bools(kwargs):
    for dtype in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        info = np.iinfo(dtype)
        x = np.array([0, 1, info.max, info.min, 42], dtype=dtype)
        try:
            want = tf.strings.as_string(x, **kwargs).numpy()
        except (tf.errors.InvalidArgumentError, tf.errors.NotFoundError):
            continue  # a dtype TensorFlow's kernel does not take
        np.testing.assert_array_equal(cv.strings.as_string(x, **kwargs), want)
    flags = np.array([True, False])
    np.testing.assert_array_equal(cv.strings.as_string(flags, **kwargs),
                                  tf.strings.as_string(flags, **kwargs).numpy())
    for bad in [{"precision": 2}, {"scientific": True}, {"fill": "x"}, {"fill": "00"}]:
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.strings.as_string([3], **bad)
        with pytest.raises(cv.errors.InvalidArgumentError):
            cv.strings.as_string([3], **bad)
    ds = cv.data.Dataset.range(3).map(lambda i: cv.strings.join(["n", cv.strings.as_string(i)]))
    assert "mode=native" in repr(ds)
    assert list(ds) == [b"n0", b"n1", b"n2"]


def test_hostile_patterns_fail_cleanly_or_match_like_tf():
    rng = np.random.default_rng(9)
    pieces = list("ab.|()[]^$*+?{}12,-:") + ["\\", "\\b", "\\w", "[[:alpha:]]", "(?i)", "(?:",
                                             "\\x{41}", "[^", "\\z", "é", "[a-\\d]", "{1000}"]
    texts = [b"", b"abc", b"a\xffb\xc3\xa9\n", b"aaaa{1}", b"ab" * 40]
    for _ in range(300):
        pattern = "".join(rng.choice(pieces) for _ in range(rng.integers(0, 10)))
        try:
            want = tf.strings.regex_full_match(texts, pattern).numpy()
        except tf.errors.InvalidArgumentError:
            want = None
        if want is None:
            with pytest.raises(cv.errors.InvalidArgumentError):
                cv.strings.regex_full_match(np.array(texts, dtype=object), pattern)
        else:
            np.testing.assert_array_equal(
                cv.strings.regex_full_match(np.array(texts, dtype=object), pattern), want,
                err_msg=pattern)
    for pattern in ["(" * 300 + ")" * 300, "((a{1000}){1000}){1000}", "a{1000}" * 200]:
        with pytest.raises(cv.errors.InvalidArgumentError):
            cv.strings.regex_full_match(b"a", pattern)


def test_submatch_fuzz_against_tf():
    """Groups in the rewrite: RE2's leftmost-first submatches, empty loops included."""
    pieces = ["a", "b", "c", "(a|ab)", "(b*)", "(a+?)", "(c|)", "([ab])", ".", "(?:ab)*", "\\b",
              "^", "$", "(a*)*", "(|a)", "x?", "(?i)A", "([[:alpha:]]+)"]
    texts = [b"", b"abc", b"aabbcc", b"ab ab\nc", b"caba", b"\xc3\xa9ab"]
    rng = np.random.default_rng(42)
    for _ in range(200):
        pattern = "".join(rng.choice(pieces) for _ in range(rng.integers(1, 5)))
        groups = pattern.count("(") - pattern.count("(?")
        rewrite = "[" + "".join("\\%d," % g for g in range(min(groups, 3) + 1)) + "]"
        glob = bool(rng.integers(0, 2))
        want = tf.strings.regex_replace(texts, pattern, rewrite, replace_global=glob).numpy()
        got = cv.strings.regex_replace(np.array(texts, dtype=object), pattern, rewrite,
                                       replace_global=glob)
        np.testing.assert_array_equal(got, want, err_msg=f"{pattern} {rewrite} {glob}")


def test_format_scalars_and_vectors():
    cases = [
        ("{} {} {} {} {} {}", (np.float32(0.1), np.float32(1 / 3), np.float32(1e20),
                               np.float32(2.0), np.float64(1 / 3), np.float32(1e-7))),
        ("{} {} {} {}", (3, "abc", True, np.int64(-5))),
        ("x={}!", (np.arange(10, dtype=np.int32),)),
        ("{} and {}", (np.array([b"a\"b\n\xff\x01\x7f\x00'", b""], dtype=object),
                        np.float16(0.1))),
        ("{}", (np.array([np.nan, -np.inf, 0.5]),)),
        ("none", ()),
    ]
    for template, inputs in cases:
        for summarize in (3, 2, -1):
            want = tf.strings.format(template, inputs, summarize=summarize).numpy()
            assert cv.strings.format(template, inputs, summarize=summarize) == want
    assert cv.strings.format("<>", [3], placeholder="<>") == b"3"
    with pytest.raises(ValueError):
        cv.strings.format("{} {}", [1])
    ds = cv.data.Dataset.range(3).map(lambda i: cv.strings.format("n={}", i))
    assert "mode=native" in repr(ds)
    assert list(ds) == [b"n=0", b"n=1", b"n=2"]
