"""``conveyor.image``: the ``tf.image`` ops an input pipeline uses.

Every op runs eagerly on NumPy arrays and is traced into a native program
inside ``Dataset.map`` (see docs/guide.md, "Native map functions").
"""
from conveyor.image._adjust import *  # noqa: F401,F403
from conveyor.image._resize import *  # noqa: F401,F403
from conveyor.image._transform import *  # noqa: F401,F403
from conveyor.io.image_ops import decode_image, decode_jpeg, decode_png  # noqa: F401
from conveyor.io.image_ops import decode_and_crop_jpeg, extract_jpeg_shape  # noqa: F401
from conveyor.image._bounding_box import *  # noqa: F401,F403
from conveyor.image._pad import resize_with_pad  # noqa: F401
from conveyor.image._boxes import (crop_and_resize, draw_bounding_boxes,  # noqa: F401
                                   non_max_suppression)
from conveyor.image._variation import total_variation  # noqa: F401
from conveyor.image._variation import image_gradients  # noqa: F401
from conveyor.image._color import rgb_to_yiq, rgb_to_yuv, yiq_to_rgb, yuv_to_rgb  # noqa: F401
from conveyor.image._patches import extract_patches  # noqa: F401
from conveyor.image._jpeg_quality import (adjust_jpeg_quality, random_jpeg_quality,  # noqa: F401
                                          stateless_random_jpeg_quality)
