"""``conveyor.io``: the ``tf.io`` namespace (record files, tf.train.Example)."""
