"""``conveyor.version`` (``tf.version``): ``VERSION`` is the TensorFlow
release whose tf.data API conveyor implements, so that version checks in
input code (``tf.version.VERSION >= "2.4"``) take TensorFlow 2's path;
``CONVEYOR_VERSION`` is conveyor's own version (``conveyor.__version__``)."""
VERSION = "2.21.0"
GIT_VERSION = "conveyor-0.1.0"
CONVEYOR_VERSION = "0.1.0"
COMPILER_VERSION = "conveyor"

__all__ = ["VERSION", "GIT_VERSION", "CONVEYOR_VERSION", "COMPILER_VERSION"]
