"""Pooling layers (Keras 3 names and defaults, channels-last).

``MaxPooling2D`` and ``AveragePooling2D`` slide a window over ``[batch, H, W, C]``;
``GlobalAveragePooling2D`` and ``GlobalMaxPooling2D`` reduce every position; the 1-D
layers run them on ``[batch, steps, 1, channels]`` (:mod:`.steps`). The
operations are in :mod:`tinynet.ops.arrays.pooling`, over the Numba kernels of
:mod:`tinynet.kernels.pooling`.
"""

from tinynet.layers.pooling.average_pooling1d import AveragePooling1D
from tinynet.layers.pooling.average_pooling2d import AveragePooling2D
from tinynet.layers.pooling.global_average_pooling1d import GlobalAveragePooling1D
from tinynet.layers.pooling.global_average_pooling2d import GlobalAveragePooling2D
from tinynet.layers.pooling.global_max_pooling1d import GlobalMaxPooling1D
from tinynet.layers.pooling.global_max_pooling2d import GlobalMaxPooling2D
from tinynet.layers.pooling.max_pooling1d import MaxPooling1D
from tinynet.layers.pooling.max_pooling2d import MaxPooling2D

__all__ = ["MaxPooling2D", "AveragePooling2D", "GlobalAveragePooling2D", "GlobalMaxPooling2D",
           "MaxPooling1D", "AveragePooling1D", "GlobalAveragePooling1D", "GlobalMaxPooling1D"]
