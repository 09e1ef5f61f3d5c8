"""``conveyor.io``: the ``tf.io`` namespace (record files, tf.train.Example, files and images)."""
from conveyor.io import gfile
from conveyor.io.example import *  # noqa: F401,F403
from conveyor.io.sequence_example import *  # noqa: F401,F403
from conveyor.io.tfrecord import *  # noqa: F401,F403
from conveyor.io.image_ops import *  # noqa: F401,F403
from conveyor.io._encode import encode_jpeg, encode_png  # noqa: F401
from conveyor.io.csv_ops import decode_csv  # noqa: F401
from conveyor.io._tensor_proto import parse_tensor, serialize_tensor  # noqa: F401
from conveyor.io._compressed import decode_compressed  # noqa: F401
from conveyor.io.files import decode_base64, encode_base64, matching_files  # noqa: F401
