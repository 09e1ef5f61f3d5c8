"""Progress bars for the work a user waits on: ``Dataset.cache`` filling its
cache, ``conveyor.tools.index`` indexing TFRecord files, and the pipeline
doctor's runs. One switch and one helper for all three.

The switch (``conveyor.data.experimental.progress``; ``cache_progress`` is
the same switch under its older name): None (the default) shows bars when
tqdm is installed and stderr is a terminal, True always (tqdm required),
False never. A call can override it (``diagnose(..., progress=True)``,
``python -m conveyor.tools.index --progress``). tqdm is optional and imported
only when a bar is shown; without a bar nothing is written and nothing else
changes: results are the same either way.
"""
import sys

_enabled = None  # None: auto (tqdm installed and stderr a terminal)


def set_enabled(enabled):
    """The process-wide switch: None (auto), True or False."""
    global _enabled
    _enabled = None if enabled is None else bool(enabled)


def enabled():
    return _enabled


def tqdm_class():
    """tqdm's bar class, or None when tqdm is not installed."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def active(override=None):
    """Whether a bar is shown now: `override` (a call's own True/False) wins
    over the switch; None on both means tqdm installed and stderr a terminal."""
    choice = _enabled if override is None else bool(override)
    if choice is False:
        return False
    if override and tqdm_class() is None:
        raise ImportError("a progress bar needs tqdm: pip install tqdm")
    if choice is None:
        try:
            if not sys.stderr.isatty():
                return False
        except (AttributeError, ValueError):
            return False
    return tqdm_class() is not None


class Silent:
    """What :func:`bar` returns when no bar is shown: tqdm's methods, doing nothing."""
    n = 0
    total = None

    def update(self, n=1):
        pass

    def set_description_str(self, desc=None, refresh=True):
        pass

    def set_postfix_str(self, s="", refresh=True):
        pass

    def close(self):
        pass

    def write(self, s, file=None):
        print(s, file=file or sys.stderr)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def bar(total=None, desc="", unit="it", override=None, **kwargs):
    """A tqdm bar on stderr when :func:`active`, else a silent stand-in with
    the same methods (update, set_description_str, set_postfix_str, write,
    close). `override`: the call's own True/False (True without tqdm raises
    ImportError), None for the switch."""
    if not active(override):
        return Silent()
    return tqdm_class()(total=total, desc=desc, unit=unit, dynamic_ncols=True, **kwargs)
