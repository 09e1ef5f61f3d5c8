"""``conveyor.keras.preprocessing`` (``tf.keras.preprocessing``): the
dataset loaders under their older names."""
from conveyor.keras.utils import (image_dataset_from_directory, text_dataset_from_directory,
                                  timeseries_dataset_from_array)

__all__ = ["image_dataset_from_directory", "text_dataset_from_directory",
           "timeseries_dataset_from_array"]
