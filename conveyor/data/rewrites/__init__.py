"""Pipeline rewrites: one module per optimization, as tf.data's
grappler/optimizers/data/ has one file per optimizer.

A rewrite looks at a node of the pipeline's graph (a ``Dataset``) and, when
its pattern matches and the options ask for it, gives something that does
the same work better: a fused engine dataset (``shuffle_batch``,
``map_batch``), a batch built on workers (``parallel_batch``), a pipeline
with the shard moved to its file list (``auto_shard``) or a map program
with hinted decoders (``scaled_decode``). It returns None (or its input
unchanged) when it does not apply. Results never change beyond what the
option documents.

When they run: the fusions and ``parallel_batch`` while ``BatchDataset._build``
builds the engine dataset for a build context (``BuildContext``, from the
options); ``scaled_decode`` when a map's traced program is compiled for a
context that asks for it; ``auto_shard`` when ``conveyor.sharding.shard``
is called.

The rule: a rewrite works only through the graph API of
``conveyor/data/ops/dataset_base.py`` (``inputs()``, ``with_inputs()``,
``named_args``, ``arg(name)``), the methods of the Dataset protocol
(``_known_spec()``, ``element_spec``) and those of the op it matches
(``MapDataset._engine_parallelism(ctx)``, ``InterleaveDataset.
first_inner_dataset()``), never through another dataset's fields
(tests/test_package_layout.py checks ``_inputs``, ``_engine_cache`` and
``_args``). This package's ``__init__``
imports nothing, so an op module can import one rewrite without a circle.
"""
