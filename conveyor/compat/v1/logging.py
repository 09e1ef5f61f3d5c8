"""``tf.compat.v1.logging``: TensorFlow 1's logging functions, on Python's
``logging`` (the "tensorflow" logger, as TensorFlow's own)."""
import logging as _logging

__all__ = ["DEBUG", "INFO", "WARN", "ERROR", "FATAL", "debug", "info", "warn", "warning", "error",
           "fatal", "log", "vlog", "log_if", "log_first_n", "log_every_n", "flush",
           "set_verbosity", "get_verbosity"]

DEBUG, INFO, WARN, ERROR, FATAL = (_logging.DEBUG, _logging.INFO, _logging.WARN, _logging.ERROR,
                                   _logging.FATAL)
_logger = _logging.getLogger("tensorflow")
if not _logger.handlers and not _logging.getLogger().handlers:
    # As TensorFlow's logger: to stderr, "INFO:tensorflow:message" (TensorFlow,
    # imported too, finds this handler and adds none).
    _handler = _logging.StreamHandler()
    _handler.setFormatter(_logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
    _logger.addHandler(_handler)
_counts = {}


def debug(msg, *args, **kwargs):
    _logger.debug(msg, *args, **kwargs)


def info(msg, *args, **kwargs):
    _logger.info(msg, *args, **kwargs)


def warning(msg, *args, **kwargs):
    _logger.warning(msg, *args, **kwargs)


warn = warning


def error(msg, *args, **kwargs):
    _logger.error(msg, *args, **kwargs)


def fatal(msg, *args, **kwargs):
    _logger.fatal(msg, *args, **kwargs)


def log(level, msg, *args, **kwargs):
    _logger.log(level, msg, *args, **kwargs)


def vlog(level, msg, *args, **kwargs):
    _logger.log(level, msg, *args, **kwargs)


def log_if(level, msg, condition, *args):
    if condition:
        _logger.log(level, msg, *args)


def _caller_key():
    import sys
    frame = sys._getframe(2)
    return frame.f_code.co_filename, frame.f_lineno


def log_first_n(level, msg, n, *args):
    """Log only the first `n` times this line runs."""
    key = _caller_key()
    _counts[key] = _counts.get(key, 0) + 1
    if _counts[key] <= n:
        _logger.log(level, msg, *args)


def log_every_n(level, msg, n, *args):
    """Log on the 1st, (n+1)th, ... time this line runs."""
    key = _caller_key()
    count = _counts.get(key, 0)
    _counts[key] = count + 1
    if count % n == 0:
        _logger.log(level, msg, *args)


def flush():
    for handler in _logger.handlers:
        handler.flush()


def set_verbosity(v):
    _logger.setLevel(v)


def get_verbosity():
    return _logger.getEffectiveLevel()
