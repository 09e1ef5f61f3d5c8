"""Real-style tf.data snippets run under TensorFlow and under conveyor.

Each snippet module holds functions ``snippet_<name>(tf, tmp_path)`` written as
a user would write them (``tf.`` everywhere), returning what they produced
converted with ``_compare.to_numpy``. ``tests/test_tf_snippets.py`` runs each
one under both libraries and compares; ``known.py`` lists those not yet
identical; ``report.py`` prints the counts.
"""
MODULES = ["guide_basics", "guide_transform", "perf_guide", "csv_tutorial", "images_tutorial",
           "tfrecord_tutorial", "text_tutorial", "docstrings_dataset", "docstrings_experimental",
           "imagenet_recipes", "keras_io_style", "tf1_style", "detection_audio_style",
           "augment_style", "vision_dataloaders_style", "seqio_packing_style",
           "keras_loaders_style", "data_guide_more", "vision_parsers_style",
           "data_guide_extra", "tf1_parsing_style", "text_lookup_style",
           "keras_utils_by_hand", "augment_ops_style"]
