"""``tf.compat.v1.gfile``: TensorFlow 1's CamelCase names for
``conveyor.io.gfile`` (looked up when used, so they follow that module)."""
from conveyor.io import gfile as _gfile

_NAMES = {"Exists": "exists", "Glob": "glob", "IsDirectory": "isdir",
          "ListDirectory": "listdir", "MakeDirs": "makedirs", "MkDir": "mkdir",
          "Remove": "remove", "DeleteRecursively": "rmtree", "Stat": "stat", "GFile": "GFile",
          "Open": "GFile", "FastGFile": "GFile", "Copy": "copy", "Rename": "rename",
          "Walk": "walk"}


def __getattr__(name):
    target = _NAMES.get(name, name)
    try:
        return getattr(_gfile, target)
    except AttributeError:
        raise AttributeError(f"conveyor's tf.compat.v1.gfile has no {name} (conveyor.io.gfile "
                             f"has no {target})") from None


def __dir__():
    return sorted(n for n, t in _NAMES.items() if hasattr(_gfile, t))
