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
