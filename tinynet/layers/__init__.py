"""Layers (Keras 3 names and defaults, channels-last).

Imports are lazy: ``from tinynet.layers import Conv2D`` loads only the modules it needs,
which keeps ``import tinynet`` fast.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "Layer": "tinynet.layers.layer",
    "Parameter": "tinynet.layers.layer",
    "Input": "tinynet.layers.input",
    "InputLayer": "tinynet.layers.input",
    "Add": "tinynet.layers.merging",
    "Subtract": "tinynet.layers.merging",
    "Multiply": "tinynet.layers.merging",
    "Average": "tinynet.layers.merging",
    "Maximum": "tinynet.layers.merging",
    "Minimum": "tinynet.layers.merging",
    "Concatenate": "tinynet.layers.merging",
    "Dot": "tinynet.layers.dot_layer",
    "add": "tinynet.layers.merging.functions",
    "subtract": "tinynet.layers.merging.functions",
    "multiply": "tinynet.layers.merging.functions",
    "average": "tinynet.layers.merging.functions",
    "maximum": "tinynet.layers.merging.functions",
    "minimum": "tinynet.layers.merging.functions",
    "concatenate": "tinynet.layers.merging.functions",
    "dot": "tinynet.layers.merging.functions",
    "Dense": "tinynet.layers.dense",
    "Lambda": "tinynet.layers.lambda_layer",
    "Conv2D": "tinynet.layers.convolutional",
    "Conv1D": "tinynet.layers.conv1d",
    "Conv2DTranspose": "tinynet.layers.conv2d_transpose",
    "DepthwiseConv2D": "tinynet.layers.depthwise_conv2d",
    "SeparableConv2D": "tinynet.layers.separable_conv2d",
    "MaxPooling2D": "tinynet.layers.pooling",
    "AveragePooling2D": "tinynet.layers.pooling",
    "GlobalAveragePooling2D": "tinynet.layers.pooling",
    "GlobalMaxPooling2D": "tinynet.layers.pooling",
    "MaxPooling1D": "tinynet.layers.pooling",
    "AveragePooling1D": "tinynet.layers.pooling",
    "GlobalAveragePooling1D": "tinynet.layers.pooling",
    "GlobalMaxPooling1D": "tinynet.layers.pooling",
    "Flatten": "tinynet.layers.reshaping",
    "Reshape": "tinynet.layers.reshaping",
    "Permute": "tinynet.layers.permute",
    "RepeatVector": "tinynet.layers.repeat_vector",
    "Identity": "tinynet.layers.identity",
    "Masking": "tinynet.layers.masking",
    "UnitNormalization": "tinynet.layers.unit_normalization",
    "ActivityRegularization": "tinynet.layers.activity_regularization",
    "GaussianNoise": "tinynet.layers.gaussian_noise",
    "GaussianDropout": "tinynet.layers.gaussian_dropout",
    "ZeroPadding2D": "tinynet.layers.zero_padding",
    "Cropping2D": "tinynet.layers.cropping",
    "Rescaling": "tinynet.layers.rescaling",
    "Normalization": "tinynet.layers.normalization_preprocessing",
    "Embedding": "tinynet.layers.embedding",
    "TextVectorization": "tinynet.layers.preprocessing.text_vectorization",
    "StringLookup": "tinynet.layers.preprocessing.string_lookup",
    "IntegerLookup": "tinynet.layers.preprocessing.integer_lookup",
    "CategoryEncoding": "tinynet.layers.preprocessing.category_encoding",
    "Hashing": "tinynet.layers.preprocessing.hashing",
    "Discretization": "tinynet.layers.preprocessing.discretization",
    "UpSampling2D": "tinynet.layers.up_sampling",
    "RandomFlip": "tinynet.layers.augmentation",
    "RandomCrop": "tinynet.layers.augmentation",
    "RandomTranslation": "tinynet.layers.augmentation",
    "RandomRotation": "tinynet.layers.augmentation",
    "RandomZoom": "tinynet.layers.augmentation",
    "RandomContrast": "tinynet.layers.augmentation",
    "Activation": "tinynet.layers.activations",
    "ReLU": "tinynet.layers.activations",
    "LeakyReLU": "tinynet.layers.activations",
    "ELU": "tinynet.layers.activations",
    "Sigmoid": "tinynet.layers.activations",
    "Tanh": "tinynet.layers.activations",
    "Softmax": "tinynet.layers.activations",
    "Dropout": "tinynet.layers.regularization.dropout",
    "SpatialDropout2D": "tinynet.layers.regularization.dropout",
    "BatchNormalization": "tinynet.layers.regularization.normalization",
    "GroupNormalization": "tinynet.layers.regularization.normalization",
    "InstanceNormalization": "tinynet.layers.regularization.normalization",
    "LayerNormalization": "tinynet.layers.regularization.normalization",
    "SimpleRNN": "tinynet.layers.recurrent",
    "LSTM": "tinynet.layers.recurrent",
    "GRU": "tinynet.layers.recurrent",
    "Bidirectional": "tinynet.layers.recurrent",
    "TimeDistributed": "tinynet.layers.recurrent",
    "MultiHeadAttention": "tinynet.layers.attention",
    "Attention": "tinynet.layers.attention",
    "AdditiveAttention": "tinynet.layers.attention",
}

__all__ = sorted(_EXPORTS)


# Keras's keras.layers.serialize / deserialize: functions of tinynet.saving, named here
# by module path (the layers facade re-exports them; the layer modules never import saving)
_FUNCTIONS = {"serialize": ("tinynet.saving.serialization", "serialize_layer"),
              "deserialize": ("tinynet.saving.serialization", "deserialize_layer")}


def __getattr__(name: str):
    if name in _FUNCTIONS:
        module, attr = _FUNCTIONS[name]
        value = getattr(importlib.import_module(module), attr)
    else:
        module = _EXPORTS.get(name)
        if module is None:
            raise AttributeError(f"module 'tinynet.layers' has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
