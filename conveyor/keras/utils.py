"""``conveyor.keras.utils`` (``tf.keras.utils``): Keras' dataset loaders."""
from conveyor.keras.image_dataset import image_dataset_from_directory
from conveyor.keras.text_dataset import text_dataset_from_directory
from conveyor.keras.timeseries_dataset import timeseries_dataset_from_array

__all__ = ["image_dataset_from_directory", "text_dataset_from_directory",
           "timeseries_dataset_from_array"]
