"""Exception types, mirroring ``tf.errors``.

Every engine error is an :class:`OpError` subclass named as in TensorFlow.
Each also derives from the builtin exception a Python programmer would
reach for (``InvalidArgumentError`` is a ``ValueError``, ``NotFoundError`` a
``FileNotFoundError``, ``DataLossError`` an ``OSError``, ...), so code that
catches builtins keeps working.

Exceptions raised by your own functions inside ``map`` or
``from_generator`` are re-raised unchanged (same type, same traceback) with
a note naming the stage; TensorFlow would wrap them in ``UnknownError``.

``DataLossWarning`` (conveyor only) is the warning of data that could not
be read but did not stop the pipeline: a record file or cache file that
ends inside a record (a torn tail), or a TFRecord index sidecar that cannot
be used (stale, damaged, not a regular file).
"""
import warnings as _warnings

__all__ = ["OpError", "CancelledError", "UnknownError", "InvalidArgumentError",
           "DeadlineExceededError", "NotFoundError", "AlreadyExistsError",
           "PermissionDeniedError", "ResourceExhaustedError", "FailedPreconditionError",
           "AbortedError", "OutOfRangeError", "UnimplementedError", "InternalError",
           "UnavailableError", "DataLossError", "UnauthenticatedError",
           "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
           "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
           "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
           "UNAUTHENTICATED", "DataLossWarning"]

OK, CANCELLED, UNKNOWN, INVALID_ARGUMENT, DEADLINE_EXCEEDED, NOT_FOUND = 0, 1, 2, 3, 4, 5
ALREADY_EXISTS, PERMISSION_DENIED, RESOURCE_EXHAUSTED, FAILED_PRECONDITION = 6, 7, 8, 9
ABORTED, OUT_OF_RANGE, UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS = 10, 11, 12, 13, 14, 15
UNAUTHENTICATED = 16


class OpError(Exception):
    """The base of conveyor's pipeline errors, as ``tf.errors.OpError``.

    ``message`` is the text; ``error_code`` the tf.errors code; ``op`` is
    ``None`` (there are no graph ops). TensorFlow's positional form
    ``OpError(node_def, op, message, error_code)`` is accepted too.
    """

    error_code = UNKNOWN

    def __init__(self, *args):
        if len(args) >= 3:  # TensorFlow's (node_def, op, message[, error_code])
            node_def, op, message = args[:3]
        else:
            node_def, op, message = None, None, args[0] if args else ""
        super().__init__(message)
        self.message = message
        self.op = op
        self.node_def = node_def

    def __str__(self):
        return str(self.message)


def _make(name, code, builtin, doc):
    bases = (OpError,) if builtin is None else (OpError, builtin)
    return type(name, bases, {"error_code": code, "__doc__": doc, "__module__": __name__,
                              "__init__": OpError.__init__, "__str__": OpError.__str__})


CancelledError = _make("CancelledError", CANCELLED, None,
                       "The operation was cancelled (an iterator closed while waiting).")
UnknownError = _make("UnknownError", UNKNOWN, None, "An error of unknown kind.")
InvalidArgumentError = _make("InvalidArgumentError", INVALID_ARGUMENT, ValueError,
                             "An argument or an element was not valid (shape, dtype, value).")
DeadlineExceededError = _make("DeadlineExceededError", DEADLINE_EXCEEDED, TimeoutError,
                              "A deadline expired.")
NotFoundError = _make("NotFoundError", NOT_FOUND, FileNotFoundError,
                      "A file or other entity was not found.")
AlreadyExistsError = _make("AlreadyExistsError", ALREADY_EXISTS, FileExistsError,
                           "An entity that we tried to create already exists.")
PermissionDeniedError = _make("PermissionDeniedError", PERMISSION_DENIED, PermissionError,
                              "The caller may not do this (e.g. a file cannot be read).")
ResourceExhaustedError = _make("ResourceExhaustedError", RESOURCE_EXHAUSTED, MemoryError,
                               "Memory or another resource ran out.")
FailedPreconditionError = _make("FailedPreconditionError", FAILED_PRECONDITION, RuntimeError,
                                "The system is not in a state that allows the operation.")
AbortedError = _make("AbortedError", ABORTED, RuntimeError, "The operation was aborted.")
OutOfRangeError = _make("OutOfRangeError", OUT_OF_RANGE, IndexError,
                        "Iteration went past the end (graph-mode end of sequence).")
UnimplementedError = _make("UnimplementedError", UNIMPLEMENTED, NotImplementedError,
                           "The operation is not implemented or not supported.")
InternalError = _make("InternalError", INTERNAL, RuntimeError,
                      "An internal invariant was broken: please report it.")
UnavailableError = _make("UnavailableError", UNAVAILABLE, ConnectionError,
                         "A service is temporarily unavailable.")
DataLossError = _make("DataLossError", DATA_LOSS, OSError,
                      "Data was lost or corrupted (a bad record, a truncated file).")
UnauthenticatedError = _make("UnauthenticatedError", UNAUTHENTICATED, PermissionError,
                             "The request has no valid credentials.")

# The class of each code, indexed by code (the engine raises _BY_CODE[code];
# OK is never raised).
_BY_CODE = (RuntimeError, CancelledError, UnknownError, InvalidArgumentError,
            DeadlineExceededError, NotFoundError, AlreadyExistsError, PermissionDeniedError,
            ResourceExhaustedError, FailedPreconditionError, AbortedError, OutOfRangeError,
            UnimplementedError, InternalError, UnavailableError, DataLossError,
            UnauthenticatedError)
assert all(cls.error_code == code for code, cls in enumerate(_BY_CODE) if code)


class DataLossWarning(UserWarning):
    """A file ended inside a record (a torn tail); the records before it were read.

    Conveyor only. Raised as ``DataLossError`` instead with
    ``on_truncation="error"`` (``TFRecordDataset``, ``TextLineDataset``,
    ``FixedLengthRecordDataset``, ``Dataset.cache``); each message names the
    file and the byte offset where the torn record starts, and is shown once
    per process. Also issued when a TFRecord index sidecar (``<file>.cvindex``)
    cannot be used and the file is read instead: every time that happens.
    """


# core/status.h: CvWarningKind -> (category, once per message per process)
_WARNING_KINDS = {0: (DataLossWarning, True), 1: (DataLossWarning, False)}
_warned = set()

# Every DataLossWarning is shown, not once per source line (Python's "default"
# action): a stale index met again later in the process is a new fallback to
# reading. Appended, so filters the user sets (-W, PYTHONWARNINGS, or
# warnings.filterwarnings at any time) still decide first.
_warnings.filterwarnings("always", category=DataLossWarning, append=True)


def _engine_warning(kind, message):
    """The engine's warnings (from any thread). Torn tails (kind 0): once per
    message, i.e. per file and offset; unusable indexes (kind 1): each time."""
    category, once = _WARNING_KINDS.get(kind, (UserWarning, True))
    if once:
        if message in _warned:
            return
        if len(_warned) > 10000:
            _warned.clear()
        _warned.add(message)
    _warnings.warn(message, category, stacklevel=2)
