"""``tf.function`` and ``tf.autograph.experimental.do_not_convert``: both
decorators pass the function through.

A map function is traced by the map itself (conveyor/framework/tracing.py),
with or without ``@tf.function``, and called eagerly elsewhere;
``input_signature`` and the compile flags are accepted.
"""
import types

__all__ = ["function", "autograph"]


def function(func=None, input_signature=None, autograph=True, jit_compile=None,
             reduce_retracing=False, experimental_implements=None,
             experimental_autograph_options=None, experimental_attributes=None,
             experimental_relax_shapes=None, experimental_compile=None,
             experimental_follow_type_hints=None):
    """``@tf.function``: returns `func` itself (a map traces it natively on its
    own; called directly it runs eagerly). Usable with or without arguments."""
    if func is None:
        return lambda f: function(f, input_signature, autograph, jit_compile, reduce_retracing)
    if not callable(func):
        raise TypeError(f"tf.function: {func!r} is not callable")
    return func


class _Experimental:
    @staticmethod
    def do_not_convert(func=None):
        """Decorator: `func` unchanged (conveyor does not rewrite Python)."""
        if func is None:
            return lambda f: f
        return func


autograph = types.SimpleNamespace(experimental=_Experimental())
