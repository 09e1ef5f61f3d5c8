"""The tensor ops, in rooms named by kind as in TensorFlow's python/ops.

* ``math_ops``: elementwise arithmetic, comparisons and logic, ``cast``,
  reductions (``reduce_sum`` ...), ``argmax``/``argmin``, ``range``,
  ``cumsum``, ``clip_by_value``, and the ``Tensor`` operators (``+``, ``<``,
  ``x[i]`` ...).
* ``array_ops``: shapes and indexing: ``constant``/``fill``/``zeros``/
  ``ones``, ``reshape``, ``shape``, ``expand_dims``, ``squeeze``,
  ``concat``, ``stack``/``unstack``, ``gather``, ``where``, ``transpose``,
  ``tile``, ``pad``, ``split``, ``boolean_mask``, ``identity``, ``size``,
  ``rank``...
* ``control_flow_ops``: ``cond``.
* ``logging_ops``: ``print``.
* ``string_ops``: ``tf.strings``.
* ``random_ops``, ``stateless_random_ops``: ``tf.random``'s ops (the seed
  rules are ``conveyor.framework.random_seed``).
* ``image_ops``: ``convert_image_dtype``, which ``conveyor.image`` and
  ``conveyor.io``'s decoders share (the rest of ``tf.image`` is in
  ``conveyor/image/``).

Each op checks its arguments, works out its output's dtype and shape, and
records itself with ``conveyor.framework.tracing.apply`` (eagerly it runs at
once). Users reach the ops through the public faces: ``conveyor.reshape``,
``conveyor.math``, ``conveyor.strings``, ``conveyor.random``. This
package's ``__init__`` imports nothing.
"""
