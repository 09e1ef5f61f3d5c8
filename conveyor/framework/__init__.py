"""conveyor's machinery under the ops: tracing a function into a native
program and the symbolic ``Tensor`` (``tracing``), eager tensors (``eager``),
``tf.Variable`` (``variables``), the conversion of Python values to arrays
(``convert``), TensorFlow's seed rules (``random_seed``), the progress bar
switch (``progress``), ``tf.function`` (``function``) and
``convert_to_tensor``/``is_tensor`` (``tensor_conversion``).

Nothing here is imported on its own by users; the public names are in
``conveyor`` and its public modules. This package's ``__init__`` imports
nothing, so importing one of its modules runs only that module.
"""
