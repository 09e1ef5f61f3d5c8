"""The protobuf wire code: the wire format's encoder and decoder (``wire``)
and tf.train's Example messages as plain Python classes (``example_pb``),
with no protobuf dependency. Users reach the messages as
``conveyor.train.Example`` ...; ``conveyor.io``'s ops (``serialize_example``,
``serialize_tensor``, ``parse_tensor``) use ``wire`` for their bytes.

This package's ``__init__`` imports nothing.
"""
