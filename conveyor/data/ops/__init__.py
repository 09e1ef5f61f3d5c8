"""The op classes behind ``conveyor.data.Dataset``, one module per tf.data
operation family, named as TensorFlow's tensorflow/python/data/ops/ files and
classes are (without their leading underscore):

* dataset_base.py: the ``Dataset`` base class every op subclasses (engine
  build, options, iteration, cardinality, repr) and the element structure
  (``DatasetSpec``, packing windows into ``VariantDataset``);
* structured_function.py: user functions handed to the engine
  (``MapFunction``: traced or Python; ``calling_convention``);
* sources: from_tensors_op.py (TensorDataset, TensorSliceDataset),
  range_op.py, random_op.py, from_generator_op.py;
* one-input transformations: map_op.py, filter_op.py, batch_op.py (batch,
  padded_batch, unbatch, rebatch), prefetch_op.py, shuffle_op.py,
  take_skip_repeat_op.py, shard_op.py, ignore_errors_op.py, cache_op.py,
  options_op.py (with_options), assert_cardinality_op.py;
* several inputs or datasets of datasets: zip_concatenate_op.py,
  interleave_op.py (interleave, flat_map), directed_interleave_op.py
  (choose_from_datasets, sample_from_datasets), window_op.py (window,
  group_by_window).

The public methods that construct them (``Dataset.map`` ...) are in
conveyor/data/dataset.py; these modules import only dataset_base.py and each
other, never dataset.py.
"""
