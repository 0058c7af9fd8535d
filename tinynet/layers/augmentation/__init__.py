"""Image augmentation layers (Keras 3 names, defaults and semantics, channels-last).

Each draws its transformation per batch in training from its own seeded generator
(:mod:`.base`) and is the identity at inference (``RandomCrop``: Keras's fixed crop). The
affine ones (``RandomTranslation``, ``RandomRotation``, ``RandomZoom``) share the sampler
of :mod:`tinynet.ops.arrays.affine`; every backward pass is the exact input gradient of the
transformation last applied.
"""

from tinynet.layers.augmentation.random_contrast import RandomContrast
from tinynet.layers.augmentation.random_crop import RandomCrop
from tinynet.layers.augmentation.random_flip import RandomFlip
from tinynet.layers.augmentation.random_rotation import RandomRotation
from tinynet.layers.augmentation.random_translation import RandomTranslation
from tinynet.layers.augmentation.random_zoom import RandomZoom

__all__ = ["RandomContrast", "RandomCrop", "RandomFlip", "RandomRotation",
           "RandomTranslation", "RandomZoom"]
