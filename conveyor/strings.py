"""``conveyor.strings``: the ``tf.strings`` ops an input pipeline uses.

Each op runs eagerly on Python strings, ``bytes``, NumPy arrays of them and
EagerTensors, and inside ``Dataset.map`` is compiled into the native
program (no GIL). Strings are bytes; text is UTF-8. Values, dtypes, shapes
and errors follow TensorFlow's. The regex ops use conveyor's own engine
(csrc/ops/regex.c: RE2's syntax, linear time); a pattern is compiled once
when the pipeline is built.
"""
from conveyor.ops.string_ops import (as_string, bytes_split, format, join, length,  # noqa: F401,A004
                                     lower, reduce_join, regex_full_match, regex_replace, split,
                                     strip, substr, to_hash_bucket, to_hash_bucket_fast,
                                     to_hash_bucket_strong, to_number, unicode_decode,
                                     unicode_split, upper, ngrams)

__all__ = ["split", "bytes_split", "unicode_split", "unicode_decode", "to_number",
           "to_hash_bucket_fast", "to_hash_bucket_strong", "to_hash_bucket", "regex_full_match",
           "regex_replace", "lower", "upper", "strip", "length", "substr", "join", "reduce_join",
           "as_string", "format", "ngrams"]
