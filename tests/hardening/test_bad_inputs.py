"""The bad-input matrix: every public constructor and method, fed wrong arguments.

Each case is ``(id, what was passed, callable, exception type, regex)``. The call must
raise exactly that exception type (``ValueError`` or ``TypeError``; ``KeyError`` for
unknown tuning gates; ``FileNotFoundError`` for a missing file or folder; ``OpError``, the
``ValueError`` of :mod:`tinynet.ops`, and ``IndexError`` for out-of-range indices there;
``NotImplementedError`` for a layer or initializer without its computation;
``RuntimeError`` for a ``call()`` that leaves tinynet.ops) with a message
matching the regex; the regexes pin the argument's name, the value received and what was
expected. Mistyped keywords (``kw-*``) pin the whole message with its suggestion. ``docs/errors.md`` is generated from
this table: ``python tests/hardening/test_bad_inputs.py`` rewrites it, and
:func:`test_errors_doc_matches_table` checks it is current.
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np
import pytest

import tinynet as tn
from tinynet import callbacks, datasets, losses, metrics, optimizers, saving, tuning
from tinynet.tools import compile_ahead
from tinynet.warmup import warmup
from tinynet.layers import (ELU, Activation, Add, Average, AveragePooling2D,
                            BatchNormalization, Concatenate, Conv2D, Dense, Dropout, Flatten,
                            GlobalAveragePooling2D, GlobalMaxPooling2D, GroupNormalization,
                            Input, InputLayer, InstanceNormalization, LayerNormalization,
                            LeakyReLU, Maximum, MaxPooling2D, Multiply, Parameter, ReLU,
                            Reshape, Sigmoid, Softmax, SpatialDropout2D, Subtract, Tanh)
from tinynet.layers import (AveragePooling1D, Conv1D, Conv2DTranspose, Cropping2D,
                            DepthwiseConv2D, Embedding, GlobalAveragePooling1D,
                            GlobalMaxPooling1D, MaxPooling1D, Normalization, Rescaling,
                            SeparableConv2D, UpSampling2D, ZeroPadding2D)
from tinynet.layers import (RandomContrast, RandomCrop, RandomFlip, RandomRotation,
                            RandomTranslation, RandomZoom)
from tinynet.utils import to_categorical
from tinynet.ops.core import OpError

DOC = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
NAN, INF = float("nan"), float("inf")


class Case(NamedTuple):
    id: str
    what: str
    call: Callable[[], Any]
    exc: type
    pattern: str


CASES: list[Case] = []


def case(id: str, what: str, call: Callable[[], Any], exc: type, *fragments: str) -> None:
    """Adds a case whose message must contain ``fragments`` in order (literal text)."""
    CASES.append(Case(id, what, call, exc, ".*".join(re.escape(f) for f in fragments)))


# -- fixtures for the cases (fresh objects per call) ------------------------------------------
def z(*shape: int) -> np.ndarray:
    return np.zeros(shape, dtype=np.float32)


def called_ids(layer: Any, ids: list) -> Any:
    """``layer`` after one forward on the integer ``ids``."""
    layer(np.array(ids))
    return layer


def adapted(layer: Any, data: np.ndarray) -> Any:
    layer.adapt(data)
    return layer


def called(layer: Any, *shape: int) -> Any:
    """``layer`` after one forward on zeros of ``shape``."""
    layer(z(*shape))
    return layer


def mlp() -> tn.Sequential:
    return tn.Sequential([Input((4,)), Dense(3)])


class Doubler(tn.layers.Layer):  # a user's layer: no ONNX export
    def forward(self, x, training=False):
        return tn.Tensor(np.asarray(x) * 2)


def compiled(loss: str = "mse") -> tn.Sequential:
    model = mlp()
    model.compile(optimizer="sgd", loss=loss)
    return model


X, Y = z(5, 4), z(5, 3)
LABELS = np.array([0, 1, 2, 0, 1])


def fit(model: tn.Sequential, x: Any = X, y: Any = Y, **kwargs: Any) -> Any:
    kwargs.setdefault("verbose", 0)
    return model.fit(x, y, **kwargs)


def param_with_grad(grad_shape: tuple) -> Parameter:
    p = Parameter(z(2), "w")
    p.grad = z(*grad_shape)
    return p


# ============================================================================================
# layers
# ============================================================================================
POS_INT = "must be a positive int"
case("dense-units-zero", "Dense(0)", lambda: Dense(0), ValueError,
     "Dense: units", POS_INT, "got 0")
case("dense-units-negative", "Dense(-1)", lambda: Dense(-1), ValueError,
     "Dense: units", POS_INT, "got -1")
case("dense-units-float", "Dense(2.5)", lambda: Dense(2.5), TypeError,
     "Dense: units", POS_INT, "got 2.5")
case("dense-units-str", "Dense('3')", lambda: Dense("3"), TypeError,
     "Dense: units", POS_INT, "got '3'")
case("dense-units-bool", "Dense(True)", lambda: Dense(True), TypeError,
     "Dense: units", POS_INT, "got True")
case("dense-activation-unknown", "Dense(3, activation='swish')",
     lambda: Dense(3, activation="swish"), ValueError,
     "Dense: activation must be one of", "'relu'", "got 'swish'")
case("dense-activation-int", "Dense(3, activation=1)", lambda: Dense(3, activation=1),
     TypeError, "Dense: activation must be a string, a function of a tensor or None", "got 1")
case("dense-use-bias-str", "Dense(3, use_bias='yes')", lambda: Dense(3, use_bias="yes"),
     TypeError, "Dense: use_bias must be a bool, got 'yes'")
case("dense-initializer-unknown", "Dense(3, kernel_initializer='glorot')",
     lambda: Dense(3, kernel_initializer="glorot"), ValueError,
     "Dense: kernel_initializer", "'glorot'", "expected one of", "glorot_uniform")
case("dense-initializer-int", "Dense(3, kernel_initializer=1)",
     lambda: Dense(3, kernel_initializer=1), TypeError,
     "Dense: kernel_initializer must be an initializer name (str), got 1")
case("dense-seed-negative", "Dense(3, seed=-1)", lambda: Dense(3, seed=-1), ValueError,
     "Dense: seed must be None or a non-negative int, got -1")
case("dense-seed-float", "Dense(3, seed=1.5)", lambda: Dense(3, seed=1.5), TypeError,
     "Dense: seed must be None or a non-negative int, got 1.5")
case("layer-name-empty", "Dense(3, name='')", lambda: Dense(3, name=""), TypeError,
     "Dense: name must be a non-empty str, got ''")
case("layer-name-int", "Dense(3, name=5)", lambda: Dense(3, name=5), TypeError,
     "Dense: name must be a non-empty str, got 5")
case("layer-trainable-int", "Dense(3, trainable=1)", lambda: Dense(3, trainable=1),
     TypeError, "Dense: trainable must be a bool, got 1")
case("layer-input-shape-str", "Dense(3, input_shape='4')",
     lambda: Dense(3, input_shape="4"), TypeError,
     "Dense: input_shape must be a tuple of ints, got '4'")
case("layer-input-shape-negative", "Dense(3, input_shape=(-1,))",
     lambda: Dense(3, input_shape=(-1,)), ValueError,
     "Dense: input_shape must hold non-negative ints or None, got (-1,)")
case("dense-build-rank1", "Dense(3).build((None,))", lambda: Dense(3).build((None,)),
     ValueError, "Dense 'dense': input must have rank >= 2", "got shape (None,)")
case("dense-build-empty-features", "Dense(3).build((None, 0))",
     lambda: Dense(3).build((None, 0)), ValueError,
     "Dense 'dense': the last input axis must be known and non-empty, got shape (None, 0)")
case("dense-call-wrong-features", "Dense built for 4 features, called on shape (2, 5)",
     lambda: called(Dense(3), 2, 4)(z(2, 5)), ValueError,
     "Dense 'dense': expected input of shape (batch, ..., 4), got shape (2, 5)")
case("dense-call-str", "Dense(3)('abc')", lambda: Dense(3)("abc"), TypeError,
     "input must be a real-valued numeric array", "'abc' (str)")
case("dense-call-none", "Dense(3)(None)", lambda: Dense(3)(None), TypeError,
     "input must be a real-valued numeric array", "got None")
case("dense-call-ragged", "Dense(3)([[1, 2], [3]])", lambda: Dense(3)([[1, 2], [3]]),
     ValueError, "input must be a real-valued numeric array", "got [[1, 2], [3]] (list)")
case("dense-backward-wrong-grad", "Dense backward with grad of shape (2, 5) for output (2, 3)",
     lambda: called(Dense(3), 2, 4).backward(z(2, 5)), ValueError,
     "Dense 'dense': grad_output must have shape (2, 3), got (2, 5)")
case("parameter-assign-shape", "Parameter.assign of shape (3,) into (4, 3)",
     lambda: called(Dense(3), 2, 4).kernel.assign(z(3)), ValueError,
     "Parameter dense/kernel: expected shape (4, 3), got (3,)")
case("layer-set-weights-count", "Dense.set_weights([one array])",
     lambda: called(Dense(3), 2, 4).set_weights([z(4, 3)]), ValueError,
     "Layer 'dense': set_weights expected 2 arrays, got 1")
case("layer-count-params-unbuilt", "Dense(3).count_params() before build",
     lambda: Dense(3).count_params(), ValueError,
     "Layer 'dense' is not built yet", "call build(input_shape)")
case("layer-trainable-setter", "layer.trainable = 'no'",
     lambda: setattr(Dense(3), "trainable", "no"), TypeError,
     "dense: trainable must be a bool, got 'no'")

PAIR = "must be a positive int or a tuple of 2 positive ints"
case("conv-filters-zero", "Conv2D(0, 3)", lambda: Conv2D(0, 3), ValueError,
     "Conv2D: filters", POS_INT, "got 0")
case("conv-kernel-zero", "Conv2D(2, 0)", lambda: Conv2D(2, 0), ValueError,
     "Conv2D: kernel_size", PAIR, "got 0")
case("conv-kernel-triple", "Conv2D(2, (1, 2, 3))", lambda: Conv2D(2, (1, 2, 3)), ValueError,
     "Conv2D: kernel_size", PAIR, "got (1, 2, 3)")
case("conv-kernel-float", "Conv2D(2, 2.0)", lambda: Conv2D(2, 2.0), TypeError,
     "Conv2D: kernel_size", PAIR, "got 2.0")
case("conv-kernel-pair-zero", "Conv2D(2, (3, 0))", lambda: Conv2D(2, (3, 0)), ValueError,
     "Conv2D: kernel_size", PAIR, "got (3, 0)")
case("conv-strides-zero", "Conv2D(2, 3, strides=0)", lambda: Conv2D(2, 3, strides=0),
     ValueError, "Conv2D: strides", PAIR, "got 0")
case("conv-dilation-negative", "Conv2D(2, 3, dilation_rate=-1)",
     lambda: Conv2D(2, 3, dilation_rate=-1), ValueError,
     "Conv2D: dilation_rate", PAIR, "got -1")
case("conv-padding-unknown", "Conv2D(2, 3, padding='full')",
     lambda: Conv2D(2, 3, padding="full"), ValueError,
     "Conv2D: padding must be 'valid' or 'same', got 'full'")
case("conv-padding-int", "Conv2D(2, 3, padding=1)", lambda: Conv2D(2, 3, padding=1),
     TypeError, "Conv2D: padding must be 'valid' or 'same', got 1")
case("conv-strides-with-dilation", "Conv2D(2, 3, strides=2, dilation_rate=2)",
     lambda: Conv2D(2, 3, strides=2, dilation_rate=2), ValueError,
     "Conv2D: strides > 1 is not supported with dilation_rate > 1",
     "got strides=(2, 2) and dilation_rate=(2, 2)")
case("conv-input-rank3", "Conv2D(2, 3) on shape (2, 4, 4)",
     lambda: Conv2D(2, 3)(z(2, 4, 4)), ValueError,
     "Conv2D 'conv2d': input must have rank 4", "got shape (None, 4, 4)")
case("conv-input-too-small", "Conv2D(2, 5) on a 4x4 image",
     lambda: Conv2D(2, 5)(z(1, 4, 4, 1)), ValueError,
     "Conv2D 'conv2d': input spatial size (4, 4) is smaller than the dilated kernel",
     "kernel_size=(5, 5)")
case("conv-input-channels", "Conv2D built for 1 channel, called on 3",
     lambda: called(Conv2D(2, 3), 1, 4, 4, 1)(z(1, 4, 4, 3)), ValueError,
     "Conv2D 'conv2d': expected 1 input channels, got shape (1, 4, 4, 3)")
case("conv-backward-wrong-grad", "Conv2D backward with grad (1, 1, 1, 2) for output (1, 2, 2, 2)",
     lambda: called(Conv2D(2, 3), 1, 4, 4, 1).backward(z(1, 1, 1, 2)), ValueError,
     "Conv2D 'conv2d': grad_output must have shape (1, 2, 2, 2), got (1, 1, 1, 2)")

case("maxpool-size-zero", "MaxPooling2D(0)", lambda: MaxPooling2D(0), ValueError,
     "MaxPooling2D: pool_size", PAIR, "got 0")
case("maxpool-size-one-entry", "MaxPooling2D((2,))", lambda: MaxPooling2D((2,)), ValueError,
     "MaxPooling2D: pool_size", PAIR, "got (2,)")
case("maxpool-size-str", "MaxPooling2D('2')", lambda: MaxPooling2D("2"), TypeError,
     "MaxPooling2D: pool_size", PAIR, "got '2'")
case("avgpool-strides-negative", "AveragePooling2D(2, strides=-1)",
     lambda: AveragePooling2D(2, strides=-1), ValueError,
     "AveragePooling2D: strides", PAIR, "got -1")
case("maxpool-padding-unknown", "MaxPooling2D(padding='causal')",
     lambda: MaxPooling2D(padding="causal"), ValueError,
     "MaxPooling2D: padding must be 'valid' or 'same', got 'causal'")
case("avgpool-padding-none", "AveragePooling2D(padding=None)",
     lambda: AveragePooling2D(padding=None), TypeError,
     "AveragePooling2D: padding must be 'valid' or 'same', got None")
case("maxpool-input-rank3", "MaxPooling2D() on shape (2, 4, 4)",
     lambda: MaxPooling2D()(z(2, 4, 4)), ValueError,
     "MaxPooling2D 'max_pooling2d': input must have rank 4", "got shape (None, 4, 4)")
case("maxpool-input-too-small", "MaxPooling2D(5) on a 4x4 image",
     lambda: MaxPooling2D(5)(z(1, 4, 4, 1)), ValueError,
     "MaxPooling2D 'max_pooling2d': pool_size (5, 5) does not fit input shape (None, 4, 4, 1)")
case("maxpool-backward-wrong-grad", "MaxPooling2D backward with grad (1, 3, 3, 1)",
     lambda: called(MaxPooling2D(), 1, 4, 4, 1).backward(z(1, 3, 3, 1)), ValueError,
     "MaxPooling2D 'max_pooling2d': grad_output must have shape (1, 2, 2, 1)",
     "got (1, 3, 3, 1)")
case("gap-keepdims-int", "GlobalAveragePooling2D(keepdims=1)",
     lambda: GlobalAveragePooling2D(keepdims=1), TypeError,
     "GlobalAveragePooling2D: keepdims must be a bool, got 1")
case("gmp-input-rank2", "GlobalMaxPooling2D() on shape (2, 4)",
     lambda: GlobalMaxPooling2D()(z(2, 4)), ValueError,
     "GlobalMaxPooling2D 'global_max_pooling2d': input must have rank 4", "got shape (None, 4)")
case("gap-input-no-positions", "GlobalAveragePooling2D() on shape (1, 0, 4, 1)",
     lambda: GlobalAveragePooling2D()(z(1, 0, 4, 1)), ValueError,
     "input must have at least one position, got shape (None, 0, 4, 1)")

TARGET = "target_shape must be a tuple of positive ints with at most one -1"
case("flatten-backward-wrong-grad", "Flatten backward with grad (2, 5) for output (2, 6)",
     lambda: called(Flatten(), 2, 3, 2).backward(z(2, 5)), ValueError,
     "Flatten 'flatten': grad_output must have shape (2, 6)", "got (2, 5)")
case("reshape-target-str", "Reshape('abc')", lambda: Reshape("abc"), TypeError,
     "Reshape: " + TARGET, "got 'abc'")
case("reshape-target-zero", "Reshape((0, 2))", lambda: Reshape((0, 2)), ValueError,
     "Reshape: " + TARGET, "got (0, 2)")
case("reshape-target-float", "Reshape((2.5,))", lambda: Reshape((2.5,)), TypeError,
     "Reshape: " + TARGET, "got (2.5,)")
case("reshape-target-two-unknown", "Reshape((-1, -1))", lambda: Reshape((-1, -1)),
     ValueError, "Reshape: target_shape may contain at most one -1", "got (-1, -1)")
case("reshape-size-mismatch", "Reshape((5,)) on shape (2, 4)",
     lambda: Reshape((5,))(z(2, 4)), ValueError,
     "Reshape 'reshape': cannot reshape input shape (None, 4) to target_shape (5,)",
     "4 elements per sample, target holds 5")
case("reshape-unknown-not-divisible", "Reshape((-1, 3)) on shape (2, 4)",
     lambda: Reshape((-1, 3))(z(2, 4)), ValueError,
     "Reshape 'reshape': cannot reshape input shape (None, 4) to target_shape (-1, 3)",
     "not a multiple of 3")

MARGINS = ("must be an int, a tuple of 2 ints (symmetric height, symmetric width) or a tuple "
           "of 2 tuples of 2 ints ((top, bottom), (left, right)), each >= 0")
case("zero-padding-str", "ZeroPadding2D('same')", lambda: ZeroPadding2D("same"), TypeError,
     "ZeroPadding2D: padding " + MARGINS, "got 'same'")
case("zero-padding-negative", "ZeroPadding2D(-1)", lambda: ZeroPadding2D(-1), ValueError,
     "ZeroPadding2D: padding " + MARGINS, "got -1")
case("zero-padding-three", "ZeroPadding2D((1, 2, 3))", lambda: ZeroPadding2D((1, 2, 3)),
     ValueError, "ZeroPadding2D: padding " + MARGINS, "got (1, 2, 3)")
case("zero-padding-float", "ZeroPadding2D((1.5, 1))", lambda: ZeroPadding2D((1.5, 1)),
     TypeError, "ZeroPadding2D: padding " + MARGINS, "got (1.5, 1)")
case("zero-padding-channels-first", "ZeroPadding2D(1, data_format='channels_first')",
     lambda: ZeroPadding2D(1, data_format="channels_first"), ValueError,
     "ZeroPadding2D: data_format must be None or 'channels_last' (tinynet is channels-last)",
     "got 'channels_first'")
case("zero-padding-rank", "ZeroPadding2D() on shape (2, 3)",
     lambda: ZeroPadding2D()(z(2, 3)), ValueError,
     "ZeroPadding2D 'zero_padding2d': input must have rank 4", "got shape (None, 3)")
case("zero-padding-backward-wrong-grad", "ZeroPadding2D backward with grad (1, 2, 2, 1)",
     lambda: called(ZeroPadding2D(), 1, 2, 2, 1).backward(z(1, 2, 2, 1)), ValueError,
     "ZeroPadding2D 'zero_padding2d': grad_output must have shape (1, 4, 4, 1)",
     "got (1, 2, 2, 1)")
case("cropping-negative", "Cropping2D(((0, -1), (0, 0)))",
     lambda: Cropping2D(((0, -1), (0, 0))), ValueError,
     "Cropping2D: cropping " + MARGINS, "got ((0, -1), (0, 0))")
case("cropping-none", "Cropping2D(None)", lambda: Cropping2D(None), TypeError,
     "Cropping2D: cropping " + MARGINS, "got None")
case("cropping-channels-first", "Cropping2D(data_format='channels_first')",
     lambda: Cropping2D(data_format="channels_first"), ValueError,
     "Cropping2D: data_format must be None or 'channels_last'", "got 'channels_first'")
case("cropping-too-much", "Cropping2D(2) on shape (1, 4, 5, 1)",
     lambda: Cropping2D(2)(z(1, 4, 5, 1)), ValueError,
     "Cropping2D 'cropping2d': cropping ((2, 2), (2, 2)) leaves nothing of input shape "
     "(None, 4, 5, 1)", "expected top + bottom < height and left + right < width")
case("cropping-backward-wrong-grad", "Cropping2D backward with grad (1, 4, 4, 1)",
     lambda: called(Cropping2D(1), 1, 4, 4, 1).backward(z(1, 4, 4, 1)), ValueError,
     "Cropping2D 'cropping2d': grad_output must have shape (1, 2, 2, 1)", "got (1, 4, 4, 1)")
case("up-sampling-size-zero", "UpSampling2D(0)", lambda: UpSampling2D(0), ValueError,
     "UpSampling2D: size must be a positive int or a tuple of 2 positive ints", "got 0")
case("up-sampling-size-str", "UpSampling2D('2')", lambda: UpSampling2D("2"), TypeError,
     "UpSampling2D: size must be a positive int or a tuple of 2 positive ints", "got '2'")
case("up-sampling-interpolation-unknown", "UpSampling2D(interpolation='bicubic')",
     lambda: UpSampling2D(interpolation="bicubic"), ValueError,
     "UpSampling2D: interpolation must be 'nearest' or 'bilinear'", "got 'bicubic'")
case("up-sampling-interpolation-none", "UpSampling2D(interpolation=None)",
     lambda: UpSampling2D(interpolation=None), TypeError,
     "UpSampling2D: interpolation must be 'nearest' or 'bilinear'", "got None")
case("up-sampling-channels-first", "UpSampling2D(data_format='channels_first')",
     lambda: UpSampling2D(data_format="channels_first"), ValueError,
     "UpSampling2D: data_format must be None or 'channels_last'", "got 'channels_first'")
case("up-sampling-rank", "UpSampling2D() on shape (2, 3, 4)",
     lambda: UpSampling2D()(z(2, 3, 4)), ValueError,
     "UpSampling2D 'up_sampling2d': input must have rank 4", "got shape (2, 3, 4)")
case("up-sampling-backward-wrong-grad", "UpSampling2D backward with grad (1, 2, 2, 1)",
     lambda: called(UpSampling2D(), 1, 2, 2, 1).backward(z(1, 2, 2, 1)), ValueError,
     "UpSampling2D 'up_sampling2d': grad_output must have shape (1, 4, 4, 1)",
     "got (1, 2, 2, 1)")
AUG = "must be a number or a tuple of 2 numbers in"
FILL_MODES = "'reflect', 'wrap', 'constant' or 'nearest'"
case("random-flip-mode", "RandomFlip('diagonal')", lambda: RandomFlip("diagonal"), ValueError,
     "RandomFlip: mode must be 'horizontal', 'vertical' or 'horizontal_and_vertical'",
     "got 'diagonal'")
case("random-flip-mode-none", "RandomFlip(None)", lambda: RandomFlip(None), TypeError,
     "RandomFlip: mode must be 'horizontal', 'vertical' or 'horizontal_and_vertical'",
     "got None")
case("random-flip-seed-negative", "RandomFlip(seed=-1)", lambda: RandomFlip(seed=-1),
     ValueError, "RandomFlip: seed must be None or a non-negative int", "got -1")
case("random-flip-channels-first", "RandomFlip(data_format='channels_first')",
     lambda: RandomFlip(data_format="channels_first"), ValueError,
     "RandomFlip: data_format must be None or 'channels_last'", "got 'channels_first'")
case("random-flip-rank", "RandomFlip() on shape (2, 3, 4)",
     lambda: RandomFlip()(z(2, 3, 4), training=True), ValueError,
     "RandomFlip 'random_flip': input must have rank 4 [batch, height, width, channels]",
     "got shape (None, 3, 4)")
case("random-flip-backward-wrong-grad", "RandomFlip backward with grad (1, 2, 3, 1)",
     lambda: called(RandomFlip(), 1, 3, 2, 1).backward(z(1, 2, 3, 1)), ValueError,
     "RandomFlip 'random_flip': grad_output must have shape (1, 3, 2, 1)", "got (1, 2, 3, 1)")
case("random-crop-height-zero", "RandomCrop(0, 3)", lambda: RandomCrop(0, 3), ValueError,
     "RandomCrop: height must be a positive int", "got 0")
case("random-crop-width-float", "RandomCrop(3, 2.5)", lambda: RandomCrop(3, 2.5), TypeError,
     "RandomCrop: width must be a positive int", "got 2.5")
case("random-crop-backward-wrong-grad", "RandomCrop(2, 2) backward with grad (1, 4, 4, 1)",
     lambda: called(RandomCrop(2, 2), 1, 4, 4, 1).backward(z(1, 4, 4, 1)), ValueError,
     "RandomCrop 'random_crop': grad_output must have shape (1, 2, 2, 1)", "got (1, 4, 4, 1)")
case("random-translation-factor-big", "RandomTranslation(1.5, 0.1)",
     lambda: RandomTranslation(1.5, 0.1), ValueError,
     "RandomTranslation: height_factor " + AUG + " [-1, 1]", "got 1.5")
case("random-translation-factor-three", "RandomTranslation(0.1, (0.1, 0.2, 0.3))",
     lambda: RandomTranslation(0.1, (0.1, 0.2, 0.3)), ValueError,
     "RandomTranslation: width_factor " + AUG + " [-1, 1]", "got (0.1, 0.2, 0.3)")
case("random-translation-factor-str", "RandomTranslation('0.1', 0.1)",
     lambda: RandomTranslation("0.1", 0.1), TypeError,
     "RandomTranslation: height_factor " + AUG + " [-1, 1]", "got '0.1'")
case("random-translation-fill-mode", "RandomTranslation(0.1, 0.1, fill_mode='mirror')",
     lambda: RandomTranslation(0.1, 0.1, fill_mode="mirror"), ValueError,
     "RandomTranslation: fill_mode must be " + FILL_MODES, "got 'mirror'")
case("random-translation-interpolation", "RandomTranslation(0.1, 0.1, interpolation='bicubic')",
     lambda: RandomTranslation(0.1, 0.1, interpolation="bicubic"), ValueError,
     "RandomTranslation: interpolation must be 'nearest' or 'bilinear'", "got 'bicubic'")
case("random-rotation-factor-nan", "RandomRotation(nan)", lambda: RandomRotation(NAN),
     ValueError, "RandomRotation: factor " + AUG + " [-1, 1]", "got nan")
case("random-rotation-factor-none", "RandomRotation(None)", lambda: RandomRotation(None),
     TypeError, "RandomRotation: factor " + AUG + " [-1, 1]", "got None")
case("random-rotation-fill-mode-int", "RandomRotation(0.1, fill_mode=0)",
     lambda: RandomRotation(0.1, fill_mode=0), TypeError,
     "RandomRotation: fill_mode must be " + FILL_MODES, "got 0")
case("random-rotation-fill-value-str", "RandomRotation(0.1, fill_value='0')",
     lambda: RandomRotation(0.1, fill_value="0"), TypeError,
     "RandomRotation: fill_value must be a finite number", "got '0'")
case("random-rotation-fill-value-inf", "RandomRotation(0.1, fill_value=inf)",
     lambda: RandomRotation(0.1, fill_value=INF), ValueError,
     "RandomRotation: fill_value must be a finite number", "got inf")
case("random-zoom-factor-minus-one", "RandomZoom(-1.0)", lambda: RandomZoom(-1.0), ValueError,
     "RandomZoom: height_factor " + AUG + " (-1, 1]", "got -1.0")
case("random-zoom-width-factor", "RandomZoom(0.2, (0.1, -1.5))",
     lambda: RandomZoom(0.2, (0.1, -1.5)), ValueError,
     "RandomZoom: width_factor " + AUG + " (-1, 1]", "got (0.1, -1.5)")
case("random-zoom-interpolation", "RandomZoom(0.1, interpolation='bicubic')",
     lambda: RandomZoom(0.1, interpolation="bicubic"), ValueError,
     "RandomZoom: interpolation must be 'nearest' or 'bilinear'", "got 'bicubic'")
case("random-zoom-rank", "RandomZoom(0.1) on shape (2, 3)",
     lambda: RandomZoom(0.1)(z(2, 3), training=True), ValueError,
     "RandomZoom 'random_zoom': input must have rank 4", "got shape (None, 3)")
case("random-contrast-factor-negative", "RandomContrast(-0.1)",
     lambda: RandomContrast(-0.1), ValueError,
     "RandomContrast: factor " + AUG + " [0, 1]", "got -0.1")
case("random-contrast-factor-bool", "RandomContrast(True)", lambda: RandomContrast(True),
     TypeError, "RandomContrast: factor " + AUG + " [0, 1]", "got True")
case("random-contrast-value-range-order", "RandomContrast(0.2, value_range=(1, 0))",
     lambda: RandomContrast(0.2, value_range=(1, 0)), ValueError,
     "RandomContrast: value_range must be a tuple of 2 finite numbers (low, high) with "
     "low < high", "got (1, 0)")
case("random-contrast-value-range-int", "RandomContrast(0.2, value_range=255)",
     lambda: RandomContrast(0.2, value_range=255), TypeError,
     "RandomContrast: value_range must be a tuple of 2 finite numbers", "got 255")
POOL1 = "must be a positive int or a tuple of 1 positive int"
case("embedding-input-dim-zero", "Embedding(0, 4)", lambda: Embedding(0, 4), ValueError,
     "Embedding: input_dim", POS_INT, "got 0")
case("embedding-output-dim-float", "Embedding(10, 4.0)", lambda: Embedding(10, 4.0), TypeError,
     "Embedding: output_dim", POS_INT, "got 4.0")
case("embedding-initializer", "Embedding(10, 4, embeddings_initializer='nope')",
     lambda: Embedding(10, 4, embeddings_initializer="nope"), ValueError,
     "Embedding: embeddings_initializer: unknown initializer 'nope'")
case("embedding-mask-zero", "Embedding(10, 4, mask_zero='yes')",
     lambda: Embedding(10, 4, mask_zero="yes"), TypeError,
     "Embedding: mask_zero must be a bool, got 'yes'")
case("masking-value", "Masking(mask_value='x')", lambda: tn.layers.Masking("x"), TypeError,
     "Masking: mask_value must be a real number, got 'x'")
case("masking-rank", "Sequential([Input(()), Masking()])",
     lambda: tn.Sequential([Input(()), tn.layers.Masking()]), ValueError,
     "Masking 'masking': input must have a batch and a feature axis, got shape (None,)")
case("export-masked-pooling", "export of Embedding(mask_zero=True) -> GlobalAveragePooling1D",
     lambda: tn.Sequential([Input((4,)), Embedding(5, 2, mask_zero=True),
                            GlobalAveragePooling1D()]).export("m.onnx"), ValueError,
     "Sequential.export: layer 'global_average_pooling1d' uses the mask 'embedding' makes, "
     "and masks have no ONNX form yet")
case("gap1d-mask-shape", "GlobalAveragePooling1D()(x (2, 3, 4), mask (2, 4))",
     lambda: GlobalAveragePooling1D()(z(2, 3, 4), mask=np.ones((2, 4), dtype=bool)),
     ValueError, "GlobalAveragePooling1D 'global_average_pooling1d': mask must have shape "
     "(2, 3) (the input's shape without its last axis), got (2, 4)")
case("embedding-id-out-of-range", "Embedding(10, 4) on ids [[3, 12]]",
     lambda: Embedding(10, 4)(np.array([[3, 12]])), ValueError,
     "Embedding 'embedding': ids must be integers in [0, 10), got 12 at index (0, 1)")
case("embedding-id-negative", "Embedding(10, 4) on ids [[-2]]",
     lambda: Embedding(10, 4)(np.array([[-2]])), ValueError,
     "Embedding 'embedding': ids must be integers in [0, 10), got -2 at index (0, 0)")
case("embedding-id-fraction", "Embedding(10, 4) on ids [[0.5]]",
     lambda: Embedding(10, 4)(np.array([[0.5]])), ValueError,
     "Embedding 'embedding': ids must be integers in [0, 10), got 0.5 at index (0, 0)")
case("embedding-id-strings", "Embedding(10, 4) on ids [['a']]",
     lambda: Embedding(10, 4)(np.array([["a"]])), TypeError,
     "Embedding 'embedding': inputs must be integer ids, got dtype <U1")
case("embedding-backward-wrong-grad", "Embedding backward with grad (1, 2)",
     lambda: called_ids(Embedding(10, 4), [[1, 2]]).backward(z(1, 2)), ValueError,
     "Embedding 'embedding': grad_output must have shape (1, 2, 4)", "got (1, 2)")
case("normalization-axis-str", "Normalization(axis='x')", lambda: Normalization(axis="x"),
     TypeError, "Normalization: axis must be None, an int or a tuple of ints", "got 'x'")
case("normalization-mean-alone", "Normalization(mean=1.0)", lambda: Normalization(mean=1.0),
     ValueError, "Normalization: mean and variance must be given together",
     "got mean=1.0 and variance=None")
case("normalization-shapes-differ", "Normalization(mean=[1, 2], variance=[1])",
     lambda: Normalization(mean=[1, 2], variance=[1]), ValueError,
     "Normalization: mean and variance must have the same shape, got (2,) and (1,)")
case("normalization-negative-variance", "Normalization(mean=0.0, variance=-1.0)",
     lambda: Normalization(mean=0.0, variance=-1.0), ValueError,
     "Normalization: mean must be finite and variance finite and >= 0")
case("normalization-mean-rank", "Normalization(mean=[[1.0]], variance=[[1.0]])",
     lambda: Normalization(mean=[[1.0]], variance=[[1.0]]), ValueError,
     "Normalization: mean must have at most 1 axes (one per kept axis (-1,))",
     "got shape (1, 1)")
case("normalization-invert-int", "Normalization(invert=1)", lambda: Normalization(invert=1),
     TypeError, "Normalization: invert must be a bool", "got 1")
case("normalization-axis-range", "Normalization(axis=3) on shape (2, 4)",
     lambda: Normalization(axis=3)(z(2, 4)), ValueError,
     "Normalization 'normalization': axis (3,) is out of range for inputs of rank 2")
case("normalization-batch-axis", "Normalization(axis=0) on shape (2, 4)",
     lambda: Normalization(axis=0)(z(2, 4)), ValueError,
     "Normalization 'normalization': axis must not keep the batch axis 0, got axis=(0,)")
case("normalization-adapt-given", "Normalization(mean=0.0, variance=1.0).adapt(...)",
     lambda: Normalization(mean=0.0, variance=1.0).adapt(z(2, 3)), ValueError,
     "Normalization 'normalization': adapt() needs a layer built without mean and variance")
case("normalization-adapt-type", "Normalization().adapt(3)",
     lambda: Normalization().adapt(3), TypeError,
     "Normalization 'normalization': adapt() takes an array or an iterable of batches",
     "got int")
case("normalization-adapt-empty", "Normalization().adapt([])",
     lambda: Normalization().adapt([]), ValueError,
     "Normalization 'normalization': adapt() got no data")
case("normalization-adapt-shape", "Normalization().adapt on 3 then 4 features",
     lambda: adapted(Normalization(), z(2, 3)).adapt(z(2, 4)), ValueError,
     "Normalization 'normalization': adapt() data of shape (2, 4) does not match the built "
     "input shape (None, 3)")
case("normalization-call-shape", "Normalization built for 3 features on 4",
     lambda: called(Normalization(), 2, 3)(z(2, 4)), ValueError,
     "Normalization 'normalization': expected inputs of shape (None, 3), got (2, 4)")
case("conv1d-kernel-pair", "Conv1D(2, (3, 3))", lambda: Conv1D(2, (3, 3)), ValueError,
     "Conv1D: kernel_size " + POOL1, "got (3, 3)")
case("conv1d-filters-zero", "Conv1D(0, 3)", lambda: Conv1D(0, 3), ValueError,
     "Conv1D: filters", POS_INT, "got 0")
case("conv1d-padding-full", "Conv1D(2, 3, padding='full')",
     lambda: Conv1D(2, 3, padding="full"), ValueError,
     "Conv1D: padding must be 'valid', 'same' or 'causal'", "got 'full'")
case("conv1d-strides-with-dilation", "Conv1D(2, 3, strides=2, dilation_rate=2)",
     lambda: Conv1D(2, 3, strides=2, dilation_rate=2), ValueError,
     "Conv1D: strides > 1 is not supported with dilation_rate > 1", "got strides=2")
case("conv1d-channels-first", "Conv1D(2, 3, data_format='channels_first')",
     lambda: Conv1D(2, 3, data_format="channels_first"), ValueError,
     "Conv1D: data_format must be None or 'channels_last'", "got 'channels_first'")
case("conv1d-rank", "Conv1D(2, 3) on shape (2, 4, 4, 1)",
     lambda: Conv1D(2, 3)(z(2, 4, 4, 1)), ValueError,
     "Conv1D 'conv1d': input must have rank 3 (batch, steps, channels)",
     "got shape (None, 4, 4, 1)")
case("conv1d-too-short", "Conv1D(2, 5) on shape (1, 3, 2)", lambda: Conv1D(2, 5)(z(1, 3, 2)),
     ValueError, "Conv1D 'conv1d': input spatial size (3,) is smaller than the dilated kernel",
     "kernel_size=5, dilation_rate=1")
case("conv1d-backward-wrong-grad", "Conv1D backward with grad (1, 3, 2)",
     lambda: called(Conv1D(2, 3), 1, 5, 2).backward(z(1, 2, 2)), ValueError,
     "Conv1D 'conv1d': grad_output must have shape (1, 3, 2)", "got (1, 2, 2)")
case("conv2d-transpose-output-padding-stride", "Conv2DTranspose(2, 3, output_padding=1)",
     lambda: Conv2DTranspose(2, 3, output_padding=1), ValueError,
     "Conv2DTranspose: output_padding must be None, a non-negative int or a tuple of 2 "
     "non-negative ints, each less than the stride (1, 1)", "got 1")
case("conv2d-transpose-output-padding-float", "Conv2DTranspose(2, 3, 2, output_padding=0.5)",
     lambda: Conv2DTranspose(2, 3, 2, output_padding=0.5), TypeError,
     "Conv2DTranspose: output_padding must be None", "got 0.5")
case("conv2d-transpose-output-padding-triple",
     "Conv2DTranspose(2, 3, 2, output_padding=(1, 1, 1))",
     lambda: Conv2DTranspose(2, 3, 2, output_padding=(1, 1, 1)), ValueError,
     "Conv2DTranspose: output_padding must be None", "got (1, 1, 1)")
case("conv2d-transpose-kernel-zero", "Conv2DTranspose(2, 0)", lambda: Conv2DTranspose(2, 0),
     ValueError, "Conv2DTranspose: kernel_size", PAIR, "got 0")
case("conv2d-transpose-channels", "Conv2DTranspose on 3 channels, built for 2",
     lambda: called(Conv2DTranspose(2, 3), 1, 4, 4, 2)(z(1, 4, 4, 3)), ValueError,
     "Conv2DTranspose 'conv2d_transpose': expected 2 input channels", "got shape (1, 4, 4, 3)")
case("conv2d-transpose-backward-wrong-grad", "Conv2DTranspose backward with grad (1, 2, 2, 2)",
     lambda: called(Conv2DTranspose(2, 3), 1, 2, 2, 1).backward(z(1, 2, 2, 2)), ValueError,
     "Conv2DTranspose 'conv2d_transpose': grad_output must have shape (1, 4, 4, 2)",
     "got (1, 2, 2, 2)")
case("depthwise-multiplier-zero", "DepthwiseConv2D(3, depth_multiplier=0)",
     lambda: DepthwiseConv2D(3, depth_multiplier=0), ValueError,
     "DepthwiseConv2D: depth_multiplier", POS_INT, "got 0")
case("depthwise-initializer-unknown", "DepthwiseConv2D(3, depthwise_initializer='nope')",
     lambda: DepthwiseConv2D(3, depthwise_initializer="nope"), ValueError,
     "DepthwiseConv2D: depthwise_initializer: unknown initializer 'nope'")
case("depthwise-strides-with-dilation", "DepthwiseConv2D(3, 2, dilation_rate=2)",
     lambda: DepthwiseConv2D(3, 2, dilation_rate=2), ValueError,
     "DepthwiseConv2D: strides > 1 is not supported with dilation_rate > 1")
case("depthwise-rank", "DepthwiseConv2D(3) on shape (2, 4, 4)",
     lambda: DepthwiseConv2D(3)(z(2, 4, 4)), ValueError,
     "DepthwiseConv2D 'depthwise_conv2d': input must have rank 4", "got shape (None, 4, 4)")
case("depthwise-too-small", "DepthwiseConv2D(5) on shape (1, 3, 3, 2)",
     lambda: DepthwiseConv2D(5)(z(1, 3, 3, 2)), ValueError,
     "DepthwiseConv2D 'depthwise_conv2d': input spatial size (3, 3) is smaller than the "
     "dilated kernel", "kernel_size=(5, 5)")
case("depthwise-backward-wrong-grad", "DepthwiseConv2D backward with grad (1, 3, 3, 2)",
     lambda: called(DepthwiseConv2D(3), 1, 4, 4, 2).backward(z(1, 3, 3, 2)), ValueError,
     "DepthwiseConv2D 'depthwise_conv2d': grad_output must have shape (1, 2, 2, 2)",
     "got (1, 3, 3, 2)")
case("separable-filters-float", "SeparableConv2D(2.0, 3)", lambda: SeparableConv2D(2.0, 3),
     TypeError, "SeparableConv2D: filters", POS_INT, "got 2.0")
case("separable-pointwise-initializer", "SeparableConv2D(2, 3, pointwise_initializer=1)",
     lambda: SeparableConv2D(2, 3, pointwise_initializer=1), TypeError,
     "SeparableConv2D: pointwise_initializer must be an initializer name (str)", "got 1")
case("separable-padding", "SeparableConv2D(2, 3, padding='causal')",
     lambda: SeparableConv2D(2, 3, padding="causal"), ValueError,
     "SeparableConv2D: padding must be 'valid' or 'same'", "got 'causal'")
case("separable-channels", "SeparableConv2D on 3 channels, built for 2",
     lambda: called(SeparableConv2D(4, 3), 1, 4, 4, 2)(z(1, 4, 4, 3)), ValueError,
     "SeparableConv2D 'separable_conv2d': expected 2 input channels", "got shape (1, 4, 4, 3)")
case("max-pooling1d-pool-pair", "MaxPooling1D((2, 2))", lambda: MaxPooling1D((2, 2)),
     ValueError, "MaxPooling1D: pool_size " + POOL1, "got (2, 2)")
case("max-pooling1d-pool-zero", "MaxPooling1D(0)", lambda: MaxPooling1D(0), ValueError,
     "MaxPooling1D: pool_size " + POOL1, "got 0")
case("average-pooling1d-strides-float", "AveragePooling1D(2, strides=1.5)",
     lambda: AveragePooling1D(2, strides=1.5), TypeError,
     "AveragePooling1D: strides " + POOL1, "got 1.5")
case("average-pooling1d-padding", "AveragePooling1D(padding='full')",
     lambda: AveragePooling1D(padding="full"), ValueError,
     "AveragePooling1D: padding must be 'valid' or 'same'", "got 'full'")
case("max-pooling1d-rank", "MaxPooling1D() on shape (2, 4, 4, 1)",
     lambda: MaxPooling1D()(z(2, 4, 4, 1)), ValueError,
     "MaxPooling1D 'max_pooling1d': input must have rank 3 (batch, steps, channels)",
     "got shape (None, 4, 4, 1)")
case("max-pooling1d-too-big", "MaxPooling1D(5) on shape (1, 3, 2)",
     lambda: MaxPooling1D(5)(z(1, 3, 2)), ValueError,
     "MaxPooling1D 'max_pooling1d': pool_size 5 does not fit input shape (None, 3, 2)",
     "the output would be empty")
case("max-pooling1d-backward-wrong-grad", "MaxPooling1D backward with grad (1, 3, 2)",
     lambda: called(MaxPooling1D(), 1, 4, 2).backward(z(1, 3, 2)), ValueError,
     "MaxPooling1D 'max_pooling1d': grad_output must have shape (1, 2, 2)", "got (1, 3, 2)")
case("global-average-pooling1d-keepdims", "GlobalAveragePooling1D(keepdims=1)",
     lambda: GlobalAveragePooling1D(keepdims=1), TypeError,
     "GlobalAveragePooling1D: keepdims must be a bool", "got 1")
case("global-max-pooling1d-channels-first", "GlobalMaxPooling1D('channels_first')",
     lambda: GlobalMaxPooling1D("channels_first"), ValueError,
     "GlobalMaxPooling1D: data_format must be None or 'channels_last'", "got 'channels_first'")
case("global-max-pooling1d-backward-wrong-grad", "GlobalMaxPooling1D backward with grad (1, 3)",
     lambda: called(GlobalMaxPooling1D(), 1, 4, 2).backward(z(1, 3)), ValueError,
     "GlobalMaxPooling1D 'global_max_pooling1d': grad_output must have shape (1, 2)",
     "got (1, 3)")
case("rescaling-scale-str", "Rescaling('half')", lambda: Rescaling("half"), TypeError,
     "Rescaling: scale must be a finite float or an array of them", "got 'half'")
case("rescaling-offset-nan", "Rescaling(1.0, offset=nan)", lambda: Rescaling(1.0, NAN),
     ValueError, "Rescaling: offset must be a finite float or an array of them", "got nan")
case("rescaling-scale-broadcast", "Rescaling([1, 2, 3]) on shape (2, 2)",
     lambda: Rescaling([1.0, 2.0, 3.0])(z(2, 2)), ValueError,
     "Rescaling 'rescaling': scale (3,) and offset () must broadcast to the input's shape "
     "(2, 2)")
case("rescaling-backward-wrong-grad", "Rescaling backward with grad (2, 3) for (2, 2)",
     lambda: called(Rescaling(2.0), 2, 2).backward(z(2, 3)), ValueError,
     "Rescaling 'rescaling': grad_output must have shape (2, 2)", "got (2, 3)")
case("to-categorical-float-labels", "to_categorical([0.5, 1])",
     lambda: to_categorical([0.5, 1]), TypeError,
     "to_categorical: x must hold integer class labels", "got dtype float64")
case("to-categorical-classes-str", "to_categorical([0, 1], '2')",
     lambda: to_categorical([0, 1], "2"), TypeError,
     "to_categorical: num_classes must be an int or None", "got '2'")
case("to-categorical-negative-classes", "to_categorical([0], -1)",
     lambda: to_categorical([0], -1), ValueError,
     "to_categorical: num_classes must be >= 0", "got -1")
case("to-categorical-out-of-range", "to_categorical([0, 3], 3)",
     lambda: to_categorical([0, 3], 3), ValueError,
     "to_categorical: label 3 is out of range for 3 classes (expected 0 <= label < 3)")
case("activation-unknown", "Activation('swish')", lambda: Activation("swish"), ValueError,
     "Activation: activation must be one of", "got 'swish'")
case("activation-int", "Activation(3)", lambda: Activation(3), TypeError,
     "Activation: activation must be a string, a function of a tensor or None", "got 3")
case("relu-max-value-negative", "ReLU(max_value=-1.0)", lambda: ReLU(max_value=-1.0),
     ValueError, "ReLU: max_value must be None or a non-negative float, got -1.0")
case("relu-slope-nan", "ReLU(negative_slope=nan)", lambda: ReLU(negative_slope=NAN),
     ValueError, "ReLU: negative_slope must be a non-negative float, got nan")
case("relu-threshold-str", "ReLU(threshold='0')", lambda: ReLU(threshold="0"), TypeError,
     "ReLU: threshold must be a non-negative float, got '0'")
case("relu-threshold-inf", "ReLU(threshold=inf)", lambda: ReLU(threshold=INF), ValueError,
     "ReLU: threshold must be a non-negative float, got inf")
case("leaky-relu-negative", "LeakyReLU(-0.1)", lambda: LeakyReLU(-0.1), ValueError,
     "LeakyReLU: negative_slope must be a non-negative float, got -0.1")
case("leaky-relu-inf", "LeakyReLU(inf)", lambda: LeakyReLU(INF), ValueError,
     "LeakyReLU: negative_slope must be a non-negative float, got inf")
case("elu-alpha-inf", "ELU(inf)", lambda: ELU(INF), ValueError,
     "ELU: alpha must be a finite float, got inf")
case("elu-alpha-str", "ELU('1')", lambda: ELU("1"), TypeError,
     "ELU: alpha must be a finite float, got '1'")
case("softmax-axis-float", "Softmax(axis=1.0)", lambda: Softmax(axis=1.0), TypeError,
     "Softmax: axis must be an int, got 1.0")
case("softmax-axis-out-of-range", "Softmax(axis=3) on shape (2, 3)",
     lambda: Softmax(axis=3)(z(2, 3)), ValueError,
     "Softmax 'softmax': axis 3 is out of range for input of shape (2, 3)")
case("sigmoid-name-empty", "Sigmoid(name='')", lambda: Sigmoid(name=""), TypeError,
     "Sigmoid: name must be a non-empty str, got ''")
case("tanh-trainable-str", "Tanh(trainable='no')", lambda: Tanh(trainable="no"), TypeError,
     "Tanh: trainable must be a bool, got 'no'")
case("activation-backward-wrong-grad", "ReLU backward with grad (2, 4) for output (2, 3)",
     lambda: called(ReLU(), 2, 3).backward(z(2, 4)), ValueError,
     "ReLU 're_lu': grad_output must have shape (2, 3), got (2, 4)")

RATE = "rate must be a float in [0, 1)"
case("dropout-rate-one", "Dropout(1.0)", lambda: Dropout(1.0), ValueError,
     "Dropout: " + RATE, "got 1.0")
case("dropout-rate-nan", "Dropout(nan)", lambda: Dropout(NAN), ValueError,
     "Dropout: " + RATE, "got nan")
case("dropout-rate-str", "Dropout('0.5')", lambda: Dropout("0.5"), TypeError,
     "Dropout: " + RATE, "got '0.5'")
case("dropout-rate-huge-int", "Dropout(10**400)", lambda: Dropout(10**400), ValueError,
     "Dropout: " + RATE, "got 1000")
case("dropout-seed-negative", "Dropout(0.5, seed=-2)", lambda: Dropout(0.5, seed=-2),
     ValueError, "Dropout: seed must be None or a non-negative int, got -2")
case("dropout-noise-shape-int", "Dropout(0.5, noise_shape=5)",
     lambda: Dropout(0.5, noise_shape=5), TypeError,
     "Dropout: noise_shape must be a tuple of positive ints or None entries", "got 5")
case("dropout-noise-shape-zero", "Dropout(0.5, noise_shape=(None, 0))",
     lambda: Dropout(0.5, noise_shape=(None, 0)), ValueError,
     "Dropout: noise_shape must be a tuple of positive ints or None entries", "got (None, 0)")
case("dropout-noise-shape-mismatch", "Dropout(0.5, noise_shape=(None, 2)) on shape (2, 3)",
     lambda: Dropout(0.5, noise_shape=(None, 2))(z(2, 3), training=True), ValueError,
     "Dropout 'dropout': noise_shape (None, 2) does not broadcast to input shape (None, 3)")
case("spatial-dropout-rate-negative", "SpatialDropout2D(-0.1)",
     lambda: SpatialDropout2D(-0.1), ValueError, "SpatialDropout2D: " + RATE, "got -0.1")
case("spatial-dropout-rank2", "SpatialDropout2D(0.5) on shape (2, 3)",
     lambda: SpatialDropout2D(0.5)(z(2, 3), training=True), ValueError,
     "SpatialDropout2D 'spatial_dropout2d': input must have rank 4", "got shape (None, 3)")

EPS = "epsilon must be a finite number > 0"
MOMENTUM = "momentum must be a number in [0, 1]"
case("bn-momentum-high", "BatchNormalization(momentum=1.5)",
     lambda: BatchNormalization(momentum=1.5), ValueError,
     "BatchNormalization: " + MOMENTUM, "got 1.5")
case("bn-momentum-nan", "BatchNormalization(momentum=nan)",
     lambda: BatchNormalization(momentum=NAN), ValueError,
     "BatchNormalization: " + MOMENTUM, "got nan")
case("bn-momentum-str", "BatchNormalization(momentum='0.9')",
     lambda: BatchNormalization(momentum="0.9"), TypeError,
     "BatchNormalization: " + MOMENTUM, "got '0.9'")
case("bn-epsilon-zero", "BatchNormalization(epsilon=0)",
     lambda: BatchNormalization(epsilon=0), ValueError, "BatchNormalization: " + EPS, "got 0")
case("bn-epsilon-nan", "BatchNormalization(epsilon=nan)",
     lambda: BatchNormalization(epsilon=NAN), ValueError,
     "BatchNormalization: " + EPS, "got nan")
case("bn-epsilon-inf", "BatchNormalization(epsilon=inf)",
     lambda: BatchNormalization(epsilon=INF), ValueError,
     "BatchNormalization: " + EPS, "got inf")
case("bn-epsilon-huge-int", "BatchNormalization(epsilon=10**400)",
     lambda: BatchNormalization(epsilon=10**400), ValueError,
     "BatchNormalization: " + EPS, "got 1000")
case("bn-epsilon-str", "BatchNormalization(epsilon='1e-3')",
     lambda: BatchNormalization(epsilon="1e-3"), TypeError,
     "BatchNormalization: " + EPS, "got '1e-3'")
case("bn-axis-float", "BatchNormalization(axis=1.5)", lambda: BatchNormalization(axis=1.5),
     TypeError, "BatchNormalization: axis must be an int, got 1.5")
case("bn-axis-out-of-range", "BatchNormalization(axis=5).build((None, 3))",
     lambda: BatchNormalization(axis=5).build((None, 3)), ValueError,
     "BatchNormalization: axis 5 is out of range for an input of rank 2")
case("bn-axis-batch", "BatchNormalization(axis=0).build((None, 3))",
     lambda: BatchNormalization(axis=0).build((None, 3)), ValueError,
     "BatchNormalization: axis 0 is the batch axis; expected an axis in 1..1")
case("bn-center-none", "BatchNormalization(center=None)",
     lambda: BatchNormalization(center=None), TypeError,
     "BatchNormalization: center must be a bool, got None")
case("bn-scale-str", "BatchNormalization(scale='no')", lambda: BatchNormalization(scale="no"),
     TypeError, "BatchNormalization: scale must be a bool, got 'no'")
case("bn-empty-channels", "BatchNormalization().build((None, 0))",
     lambda: BatchNormalization().build((None, 0)), ValueError,
     "BatchNormalization: the normalized axes of input shape (None, 0) must not be empty",
     "got sizes (0,)")
case("bn-call-wrong-channels", "BatchNormalization built for 3 channels, called on 4",
     lambda: called(BatchNormalization(), 2, 3)(z(2, 4)), ValueError,
     "BatchNormalization 'batch_normalization': expected 3 channels on axis 1",
     "got input shape (2, 4)")
case("bn-call-wrong-rank", "BatchNormalization built for rank 3, called on rank 2",
     lambda: called(BatchNormalization(), 2, 3, 4)(z(2, 4)), ValueError,
     "expected 4 channels on axis 2 of a rank-3 input, got input shape (2, 4)")
case("bn-backward-wrong-grad", "BatchNormalization backward with grad (3, 4) for output (2, 4)",
     lambda: called(BatchNormalization(), 2, 4).backward(z(3, 4)), ValueError,
     "BatchNormalization 'batch_normalization': grad_output must have shape (2, 4)",
     "got (3, 4)")

GROUPS = "groups must be >= 1, or -1 for one group per channel"
case("gn-groups-zero", "GroupNormalization(0)", lambda: GroupNormalization(0), ValueError,
     "GroupNormalization: " + GROUPS, "got 0")
case("gn-groups-minus-two", "GroupNormalization(-2)", lambda: GroupNormalization(-2),
     ValueError, "GroupNormalization: " + GROUPS, "got -2")
case("gn-groups-float", "GroupNormalization(2.0)", lambda: GroupNormalization(2.0), TypeError,
     "GroupNormalization: groups must be an int", "got 2.0")
case("gn-not-divisible", "GroupNormalization(4) on 6 channels",
     lambda: GroupNormalization(4)(z(2, 6)), ValueError,
     "GroupNormalization: channels (6) must be divisible by groups (4)")
case("gn-build-rank1", "GroupNormalization(1).build((None,))",
     lambda: GroupNormalization(1).build((None,)), ValueError,
     "GroupNormalization: input must have rank >= 2, got shape (None,)")
case("gn-axis-str", "GroupNormalization(axis='x')", lambda: GroupNormalization(axis="x"),
     TypeError, "GroupNormalization: axis must be an int, got 'x'")
case("gn-backward-wrong-grad", "GroupNormalization backward with grad (2, 5) for output (2, 4)",
     lambda: called(GroupNormalization(2), 2, 4).backward(z(2, 5)), ValueError,
     "GroupNormalization 'group_normalization': grad_output must have shape (2, 4)",
     "got (2, 5)")
case("in-epsilon-negative", "InstanceNormalization(epsilon=-1e-3)",
     lambda: InstanceNormalization(epsilon=-1e-3), ValueError,
     "InstanceNormalization: " + EPS, "got -0.001")
case("in-center-int", "InstanceNormalization(center=1)",
     lambda: InstanceNormalization(center=1), TypeError,
     "InstanceNormalization: center must be a bool, got 1")
case("in-empty-channels", "InstanceNormalization() on shape (2, 0)",
     lambda: InstanceNormalization()(z(2, 0)), ValueError,
     "InstanceNormalization: the normalized axes of input shape (None, 0) must not be empty")

LN_AXIS = "axis must be an int or a non-empty tuple of ints"
case("ln-axis-empty", "LayerNormalization(axis=())", lambda: LayerNormalization(axis=()),
     TypeError, "LayerNormalization: " + LN_AXIS, "got ()")
case("ln-axis-str", "LayerNormalization(axis='x')", lambda: LayerNormalization(axis="x"),
     TypeError, "LayerNormalization: " + LN_AXIS, "got 'x'")
case("ln-axis-batch", "LayerNormalization(axis=0).build((None, 3))",
     lambda: LayerNormalization(axis=0).build((None, 3)), ValueError,
     "LayerNormalization: axis 0 includes the batch axis 0")
case("ln-axis-repeated", "LayerNormalization(axis=(1, -1)).build((None, 3))",
     lambda: LayerNormalization(axis=(1, -1)).build((None, 3)), ValueError,
     "LayerNormalization: axis (1, -1) repeats an axis (rank 2)")
case("ln-axis-out-of-range", "LayerNormalization(axis=4).build((None, 3))",
     lambda: LayerNormalization(axis=4).build((None, 3)), ValueError,
     "LayerNormalization: axis 4 is out of range for an input of rank 2")
case("ln-epsilon-nan", "LayerNormalization(epsilon=nan)",
     lambda: LayerNormalization(epsilon=NAN), ValueError,
     "LayerNormalization: " + EPS, "got nan")
case("ln-call-wrong-size", "LayerNormalization built for 3 features, called on 4",
     lambda: called(LayerNormalization(), 2, 3)(z(2, 4)), ValueError,
     "LayerNormalization 'layer_normalization': expected sizes (3,) on axes (1,)",
     "got input shape (2, 4)")
case("ln-backward-wrong-grad", "LayerNormalization backward with grad (2, 5) for output (2, 4)",
     lambda: called(LayerNormalization(), 2, 4).backward(z(2, 5)), ValueError,
     "LayerNormalization 'layer_normalization': grad_output must have shape (2, 4)",
     "got (2, 5)")

case("input-shape-float", "Input((None, 2.5))", lambda: Input((None, 2.5)), ValueError,
     "Input: shape must hold non-negative ints or None, got (None, 2.5)")
case("input-shape-str", "Input('abc')", lambda: Input("abc"), TypeError,
     "Input: shape must be a tuple of ints, got 'abc'")
case("input-shape-negative", "Input((-1,))", lambda: Input((-1,)), ValueError,
     "Input: shape must hold non-negative ints or None, got (-1,)")

case("input-dtype", "Input((3,), dtype='int8')", lambda: Input((3,), dtype="int8"), ValueError,
     "Input: dtype must be None or one of ('float32', 'int32', 'int64', 'bool', 'string'), "
     "got 'int8'")
case("input-dtype-object", "Input((3,), dtype=object())", lambda: Input((3,), dtype=object()),
     ValueError, "Input: dtype must be None or one of ('float32', 'int32', 'int64', 'bool', "
     "'string'), got <object object>")
case("input-layer-dtype", "InputLayer((3,), dtype=np.float16)",
     lambda: InputLayer((3,), dtype=np.float16), ValueError,
     "InputLayer: dtype must be None or one of ('float32', 'int32', 'int64', 'bool', "
     "'string'), got <class 'numpy.float16'>")
case("input-batch-size-zero", "Input((3,), batch_size=0)", lambda: Input((3,), batch_size=0),
     ValueError, "Input: batch_size must be None or a positive int, got 0")
case("input-batch-size-float", "Input((3,), batch_size=2.0)",
     lambda: Input((3,), batch_size=2.0), ValueError,
     "Input: batch_size must be None or a positive int, got 2.0")
case("input-batch-size-and-batch-shape", "Input(batch_shape=(4, 3), batch_size=4)",
     lambda: Input(batch_shape=(4, 3), batch_size=4), ValueError,
     "Input: give batch_size only with shape, not with batch_shape=(4, 3)")
case("input-sparse", "Input((3,), sparse=True)", lambda: Input((3,), sparse=True), ValueError,
     "Input: sparse must be False or None (tinynet has no sparse tensors), got True")
case("input-keras-positional-twice", "Input((3,), 8, 'int32', dtype='int64')",
     lambda: Input((3,), 8, "int32", dtype="int64"), TypeError,
     "Input: got multiple values for argument 'dtype'")
case("input-keras-positional-too-many", "Input((3,), 8, 'int32', None, None, 'x', 1)",
     lambda: Input((3,), 8, "int32", None, None, "x", 1), TypeError,
     "Input: takes at most 6 positional arguments ('shape', 'batch_size', 'dtype', 'sparse', "
     "'batch_shape', 'name'), got 7")
case("input-int-data-nan", "an int32 Input's model called on [[nan, 1.0]]",
     lambda: tn.Sequential([Input((2,), dtype="int32"), Dense(1)]).predict(
         np.array([[NAN, 1.0]]), verbose=0), ValueError,
     "Sequential.predict: x must hold finite numbers for an Input of dtype int32, got nan")
case("input-shape-and-batch-shape", "Input((3,), batch_shape=(None, 3))",
     lambda: Input((3,), batch_shape=(None, 3)), ValueError,
     "Input: give exactly one of shape and batch_shape")
case("input-batch-shape-zero", "Input(batch_shape=(0, 3))",
     lambda: Input(batch_shape=(0, 3)), ValueError,
     "Input: batch_shape must start with None (any batch size) or a positive batch size, got "
     "(0, 3)")
case("input-layer-no-shape", "InputLayer()", lambda: InputLayer(), ValueError,
     "InputLayer: give exactly one of shape and batch_shape, got shape=None, batch_shape=None")

# ============================================================================================
# Functional models and merging layers
# ============================================================================================
def _two(name_a: str = "a", name_b: str = "b", b_shape: tuple = (3,)) -> tuple:
    return Input((3,), name=name_a), Input(b_shape, name=name_b)


case("model-output-array", "tn.Model(Input((3,)), np.ones((1, 3)))",
     lambda: tn.Model(Input((3,)), z(1, 3)), TypeError,
     "Model: outputs: expected symbolic tensors (from tn.Input or a layer called on one), "
     "got ndarray at position 0")
case("model-inputs-empty", "tn.Model([], out)",
     lambda: tn.Model([], Dense(2)(Input((3,)))), ValueError, "Model: inputs must not be empty")
case("model-input-not-input", "tn.Model(Dense(2)(x), out)",
     lambda: (lambda t: tn.Model(t, Dense(1)(t)))(Dense(2)(Input((3,)))), ValueError,
     "Model: every input must come from tn.Input, got the output of layer 'dense'")
case("model-disconnected", "tn.Model(a, Add()([a, b]))",
     lambda: (lambda a, b: tn.Model(a, Add()([a, b])))(*_two()), ValueError,
     "Model: the graph is disconnected: tensor 'b' (shape (None, 3)) comes from an input "
     "that is not among the model's inputs ['a']")
case("model-unused-input", "tn.Model([a, b], Dense(2)(a))",
     lambda: (lambda a, b: tn.Model([a, b], Dense(2)(a)))(*_two()), ValueError,
     "Model: the inputs ['b'] are not used by any output")
case("model-duplicate-names", "two layers named 'x' in one model",
     lambda: (lambda a: tn.Model(a, Dense(2, name="x")(Dense(3, name="x")(a))))(Input((3,))),
     ValueError, "Model: the name 'x' is used 2 times in the model")
case("model-dict-key", "tn.Model({'x': Input(name='a')}, out)",
     lambda: (lambda a: tn.Model({"x": a}, Dense(2)(a)))(Input((3,), name="a")), ValueError,
     "Model: the inputs dict maps 'x' to the input named 'a'; use the input's name as its key")
case("model-predict-count", "two-input model.predict([x, x, x])",
     lambda: (lambda a, b: tn.Model([a, b], Add()([a, b])))(*_two()).predict([z(1, 3)] * 3),
     ValueError, "Model.predict: model 'functional' takes 2 inputs ['a', 'b'], got a list of 3")
case("model-predict-shape", "model.predict(x of shape (2, 4)) for input (None, 3)",
     lambda: (lambda a: tn.Model(a, Dense(2)(a)))(Input((3,), name="a")).predict(z(2, 4)),
     ValueError, "Model.predict: input 'a' of model 'functional' expects a non-empty batch of "
     "shape (None, 3) (None = any), got shape (2, 4)")
case("model-fit-targets", "two-output model.fit(x, y) with one target",
     lambda: (lambda a: (lambda m: (m.compile("sgd", "mse"), m.fit(z(2, 3), z(2, 1))))(
         tn.Model(a, [Dense(1, name="p")(a), Dense(1, name="q")(a)])))(Input((3,))),
     ValueError, "Model.fit: model 'functional' has 2 outputs ['p', 'q']; pass y as a list or "
     "dict with one target per output")
case("model-compile-loss-count", "two-output compile(loss=['mse'])",
     lambda: tn.Model((a := Input((3,))), [Dense(1, name="p")(a), Dense(1, name="q")(a)])
     .compile("sgd", loss=["mse"]), ValueError,
     "Model.compile: loss must have one entry per output (2: ['p', 'q']), got 1")
case("model-compile-loss-key", "two-output compile(loss={'r': 'mse'})",
     lambda: tn.Model((a := Input((3,))), [Dense(1, name="p")(a), Dense(1, name="q")(a)])
     .compile("sgd", loss={"r": "mse"}), ValueError,
     "Model.compile: loss has keys ['r'] that are not output names; the outputs are ['p', 'q']")
case("model-compile-loss-weight", "compile(loss_weights='x')",
     lambda: tn.Sequential([Input((3,)), Dense(1)]).compile("sgd", "mse", loss_weights="x"),
     ValueError, "Sequential.compile: loss_weights must hold finite numbers, got 'x'")
case("model-get-layer-missing", "model.get_layer('nope')",
     lambda: tn.Sequential([Input((3,)), Dense(1)]).get_layer("nope"), ValueError,
     "Sequential.get_layer: no layer named 'nope' in model 'sequential'")
case("model-get-layer-both", "model.get_layer('dense', 0)",
     lambda: tn.Sequential([Input((3,)), Dense(1)]).get_layer("dense", 0), ValueError,
     "Sequential.get_layer: give exactly one of name and index, got name='dense', index=0")
case("model-get-layer-index", "model.get_layer(index=5)",
     lambda: tn.Sequential([Input((3,)), Dense(1)]).get_layer(index=5), ValueError,
     "Sequential.get_layer: index 5 is out of range for a model of 1 layers")
case("model-layer-two-places", "one Dense in two nested Sequentials of one Model",
     lambda: (lambda d: (lambda s1, s2, a, b: tn.Model([a, b], Concatenate()([s1(a), s2(b)])))(
         tn.Sequential([Input((2,)), d], name="s1"), tn.Sequential([Input((2,)), d], name="s2"),
         Input((2,)), Input((2,))))(Dense(2, name="d")), ValueError,
     "Model: layer 'd' belongs to the model at 2 places ['s1/d', 's2/d']; a layer may be "
     "called several times in one graph (shared weights), but not belong to two of the "
     "models inside another (or to one and the outer graph)")
case("seq-add-merge", "Sequential().add(Add())", lambda: tn.Sequential().add(Add()), ValueError,
     "Sequential.add: layer 'add' (Add) takes several inputs; a Sequential model passes one "
     "tensor from layer to layer (use tn.Model for such graphs)")
case("seq-add-itself", "model.add(model)",
     lambda: (lambda m: m.add(m))(tn.Sequential()), ValueError,
     "Sequential.add: model 'sequential' cannot contain itself")
case("seq-add-symbolic", "Sequential().add(Dense(2)(Input((3,))))",
     lambda: tn.Sequential().add(Dense(2)(Input((3,)))), TypeError,
     "Sequential.add: a symbolic tensor may only be added as the model's input (from "
     "tn.Input), got the output of 'dense'")
case("merge-one-tensor", "Add()(Input((3,)))", lambda: Add()(Input((3,))), ValueError,
     "Add 'add': expects a list of input tensors, got one tensor 'input_layer'")
case("merge-mixed", "Add()([Input((3,)), np.ones((1, 3))])",
     lambda: Add()([Input((3,)), z(1, 3)]), TypeError,
     "Add 'add': expected symbolic tensors (from tn.Input or a layer called on one), got "
     "ndarray at position 1")
case("merge-shapes", "Add()([Input((3,)), Input((4,))])",
     lambda: Add()(list(_two(b_shape=(4,)))), ValueError,
     "Add 'add' cannot take 'a' (None, 3), 'b' (None, 4): Add 'add': inputs have "
     "incompatible shapes [(None, 3), (None, 4)] (axis 1: 3 and 4)")
case("merge-ranks", "Multiply()([Input((3,)), Input((1, 3))])",
     lambda: Multiply()(list(_two(b_shape=(1, 3)))), ValueError,
     "Multiply 'multiply': inputs must have one rank, got shapes [(None, 3), (None, 1, 3)]")
case("merge-subtract-three", "Subtract()([a, a, a])",
     lambda: (lambda a: Subtract()([a, a, a]))(Input((3,))), ValueError,
     "Subtract 'subtract': expects exactly 2 inputs, got 3")
case("merge-one-input", "Maximum()([a])", lambda: Maximum()([Input((3,))]), ValueError,
     "Maximum 'maximum': expects at least 2 inputs, got 1")
case("merge-batch-sizes", "Add()([ones(2, 3), ones(3, 3)])",
     lambda: Add()([z(2, 3), z(3, 3)]), ValueError,
     "Add 'add': inputs must hold one batch size, got shapes [(2, 3), (3, 3)]")
case("merge-not-list", "Average().forward(np.ones((2, 3)))",
     lambda: Average().forward(z(2, 3)), ValueError,
     "Average 'average': expects a list of inputs, got ndarray")
case("concat-axis-type", "Concatenate(axis=1.0)", lambda: Concatenate(axis=1.0), TypeError,
     "Concatenate: axis must be an int, got 1.0")
case("concat-axis-batch", "Concatenate(axis=0)([a, b])",
     lambda: Concatenate(axis=0)(list(_two())), ValueError,
     "Concatenate 'concatenate': axis 0 is not a non-batch axis of inputs of rank 2")
case("concat-shapes", "Concatenate()([Input((2, 3)), Input((3, 3))])",
     lambda: Concatenate()([Input((2, 3)), Input((3, 3))]), ValueError,
     "Concatenate 'concatenate': inputs must match except along axis -1, got shapes "
     "[(None, 2, 3), (None, 3, 3)]")
case("concat-one", "Concatenate()([a])", lambda: Concatenate()([Input((3,))]), ValueError,
     "Concatenate 'concatenate': expects a list of at least 2 input shapes")

# ============================================================================================
# Sequential
# ============================================================================================
case("seq-layers-not-list", "Sequential(layers=Dense(3))",
     lambda: tn.Sequential(layers=Dense(3)), TypeError,
     "Sequential: layers must be a list of layers, got Dense")
case("seq-name-empty", "Sequential(name='')", lambda: tn.Sequential(name=""), TypeError,
     "Sequential: name must be a non-empty str, got ''")
case("seq-add-str", "model.add('dense')", lambda: tn.Sequential().add("dense"), TypeError,
     "Sequential.add: expected a tinynet Layer, got str: 'dense'")
case("seq-add-twice", "model.add(layer) twice",
     lambda: (lambda m, l: (m.add(l), m.add(l)))(tn.Sequential(), Dense(2)), ValueError,
     "Sequential.add: layer 'dense' is already in the model")
case("seq-duplicate-names", "Sequential([Dense(2, name='a'), Dense(2, name='a')])",
     lambda: tn.Sequential([Dense(2, name="a"), Dense(2, name="a")]), ValueError,
     "Sequential.add: all layers must have unique names; 'a' is already the name")
case("seq-input-not-first", "Sequential([Dense(2), Input((3,))])",
     lambda: tn.Sequential([Dense(2), Input((3,))]), ValueError,
     "Sequential: an Input must be the first element and appear once")
case("seq-incompatible-layer", "Sequential([Input((4,)), Conv2D(2, 3)])",
     lambda: tn.Sequential([Input((4,)), Conv2D(2, 3)]), ValueError,
     "Layer 'conv2d' (Conv2D) cannot take the model input with shape (None, 4)",
     "input must have rank 4")
case("seq-build-no-shape", "Sequential([Dense(2)]).build()",
     lambda: tn.Sequential([Dense(2)]).build(), ValueError,
     "Sequential.build: model 'sequential' has no input shape; pass input_shape")
case("seq-build-rank1", "model.build((None,))",
     lambda: tn.Sequential([Dense(2)]).build((None,)), ValueError,
     "Sequential.build: input_shape must include the batch axis and at least one feature "
     "axis", "got (None,)")
case("seq-build-str", "model.build('x')", lambda: tn.Sequential([Dense(2)]).build("x"),
     TypeError, "Sequential.build: input_shape must be a tuple of ints, got 'x'")
case("seq-build-conflict", "model with Input((4,)) .build((None, 5))",
     lambda: mlp().build((None, 5)), ValueError,
     "Sequential.build: model 'sequential' expects input shape (None, 4), got (None, 5)")
case("seq-compile-optimizer-unknown", "model.compile('adamx', 'mse')",
     lambda: mlp().compile("adamx", "mse"), ValueError,
     "Unknown optimizer 'adamx'; valid names: adagrad, adam, adamax, adamw, lion, "
     "nadam, rmsprop, sgd")
case("seq-compile-optimizer-int", "model.compile(3, 'mse')", lambda: mlp().compile(3, "mse"),
     TypeError, "optimizers.get: expected an Optimizer instance, a name or a config dict",
     "got int: 3")
case("seq-compile-loss-unknown", "model.compile('sgd', 'msee')",
     lambda: mlp().compile("sgd", "msee"), ValueError,
     "Unknown loss 'msee'; valid names: mse")
case("seq-compile-loss-int", "model.compile('sgd', 3)", lambda: mlp().compile("sgd", 3),
     TypeError, "losses.get: expected a Loss instance, a name or a config dict", "got int: 3")
case("seq-compile-metrics-str", "model.compile(..., metrics='accuracy')",
     lambda: mlp().compile("sgd", "mse", metrics="accuracy"), TypeError,
     "Sequential.compile: metrics must be a list, got str: 'accuracy'")
case("seq-compile-metric-unknown", "model.compile(..., metrics=['f1'])",
     lambda: mlp().compile("sgd", "mse", metrics=["f1"]), ValueError,
     "Unknown metric 'f1'; valid names: accuracy")
case("seq-compile-metric-int", "model.compile(..., metrics=[3])",
     lambda: mlp().compile("sgd", "mse", metrics=[3]), TypeError,
     "metrics.get: expected a Metric instance, a name or a function, got int: 3")
case("seq-compile-metric-duplicate", "model.compile(..., metrics=['mae', 'mae'])",
     lambda: mlp().compile("sgd", "mse", metrics=["mae", "mae"]), ValueError,
     "Sequential.compile: metric names must be unique and not 'loss', got ['mae', 'mae']")
case("seq-fit-batch-size-zero", "model.fit(x, y, batch_size=0)",
     lambda: fit(compiled(), batch_size=0), ValueError,
     "Sequential.fit: batch_size must be a positive int, got 0")
case("seq-fit-batch-size-float", "model.fit(x, y, batch_size=2.0)",
     lambda: fit(compiled(), batch_size=2.0), TypeError,
     "Sequential.fit: batch_size must be a positive int, got 2.0")
case("seq-fit-epochs-negative", "model.fit(x, y, epochs=-1)",
     lambda: fit(compiled(), epochs=-1), ValueError,
     "Sequential.fit: epochs must be a non-negative int, got -1")
case("seq-fit-verbose", "model.fit(x, y, verbose=3)", lambda: fit(compiled(), verbose=3),
     ValueError, "Sequential.fit: verbose must be 0, 1, 2 or 'auto', got 3")
case("seq-fit-shuffle-str", "model.fit(x, y, shuffle='yes')",
     lambda: fit(compiled(), shuffle="yes"), TypeError,
     "Sequential.fit: shuffle must be a bool, got 'yes'")
case("seq-fit-callbacks-int", "model.fit(x, y, callbacks=5)",
     lambda: fit(compiled(), callbacks=5), TypeError,
     "Sequential.fit: callbacks must be a list of Callback objects, got int")
case("seq-fit-callbacks-element", "model.fit(x, y, callbacks=[5])",
     lambda: fit(compiled(), callbacks=[5]), TypeError,
     "Sequential.fit: callbacks must be a list of Callback objects, got an element of type int")
case("seq-fit-validation-split-one", "model.fit(x, y, validation_split=1.0)",
     lambda: fit(compiled(), validation_split=1.0), ValueError,
     "Sequential.fit: validation_split must be a float in [0, 1), got 1.0")
case("seq-fit-validation-split-nan", "model.fit(x, y, validation_split=nan)",
     lambda: fit(compiled(), validation_split=NAN), ValueError,
     "Sequential.fit: validation_split must be a float in [0, 1), got nan")
case("seq-fit-validation-split-too-few", "model.fit(x[:1], y[:1], validation_split=0.5)",
     lambda: fit(compiled(), X[:1], Y[:1], validation_split=0.5), ValueError,
     "Sequential.fit: 1 samples are not enough to split", "validation_split=0.5")
case("seq-fit-validation-data-array", "model.fit(x, y, validation_data=x)",
     lambda: fit(compiled(), validation_data=X), ValueError,
     "Sequential.fit: validation_data must be a tuple (x_val, y_val) or (x_val, y_val, "
     "sample_weight_val), got ndarray")
case("seq-fit-sample-weight-length", "model.fit(x, y, sample_weight=ones(4))",
     lambda: fit(compiled(), sample_weight=np.ones(4)), ValueError,
     "Sequential.fit: sample_weight must hold one weight per sample (5), got shape (4,)")
case("seq-fit-sample-weight-nan", "model.fit(x, y, sample_weight=[nan, 1, 1, 1, 1])",
     lambda: fit(compiled(), sample_weight=[NAN, 1, 1, 1, 1]), ValueError,
     "Sequential.fit: sample_weight must be finite")
case("seq-fit-sample-weight-strings", "model.fit(x, y, sample_weight=['a'] * 5)",
     lambda: fit(compiled(), sample_weight=["a"] * 5), TypeError,
     "Sequential.fit: sample_weight must be an array of numbers")
case("seq-fit-both-weights", "model.fit(x, y, sample_weight=..., class_weight=...)",
     lambda: fit(compiled(), sample_weight=np.ones(5), class_weight={0: 1.0}), ValueError,
     "Sequential.fit: give class_weight or sample_weight, not both (as Keras)")
case("seq-fit-class-weight-list", "model.fit(x, y, class_weight=[1.0, 2.0])",
     lambda: fit(compiled(), class_weight=[1.0, 2.0]), TypeError,
     "Sequential.fit: class_weight must be a dict {class index: weight}", "got [1.0, 2.0]")
case("seq-fit-class-weight-key", "model.fit(x, y, class_weight={-1: 2.0})",
     lambda: fit(compiled(), class_weight={-1: 2.0}), ValueError,
     "Sequential.fit: class_weight keys must be class indices (ints >= 0), got -1")
case("seq-fit-class-weight-value", "model.fit(x, y, class_weight={0: inf})",
     lambda: fit(compiled(), class_weight={0: INF}), ValueError,
     "Sequential.fit: class_weight values must be finite numbers, got inf for class 0")
case("seq-evaluate-sample-weight-length", "model.evaluate(x, y, sample_weight=ones(6))",
     lambda: compiled().evaluate(X, Y, verbose=0, sample_weight=np.ones(6)), ValueError,
     "Sequential.evaluate: sample_weight must hold one weight per sample (5), got shape (6,)")
case("seq-train-on-batch-sample-weight", "model.train_on_batch(x, y, sample_weight=ones(2))",
     lambda: compiled().train_on_batch(X, Y, sample_weight=np.ones(2)), ValueError,
     "Sequential.train_on_batch: sample_weight must hold one weight per sample (5)")
case("loss-sample-weight-shape", "MeanSquaredError()(y, p, sample_weight=ones(3))",
     lambda: tn.losses.MeanSquaredError()(z(2, 4), z(2, 4), sample_weight=np.ones(3)),
     ValueError, "MeanSquaredError: sample_weight shape (3,) does not match the per-sample "
     "losses' shape (2,)")
case("loss-sample-weight-nan", "MeanSquaredError()(y, p, sample_weight=[nan, 1])",
     lambda: tn.losses.MeanSquaredError()(z(2, 4), z(2, 4), sample_weight=[NAN, 1.0]),
     ValueError, "MeanSquaredError: sample_weight must be finite")
case("bce-label-smoothing-range", "BinaryCrossentropy(label_smoothing=1.5)",
     lambda: tn.losses.BinaryCrossentropy(label_smoothing=1.5), ValueError,
     "BinaryCrossentropy: label_smoothing must be a float in [0, 1], got 1.5")
case("cce-label-smoothing-str", "CategoricalCrossentropy(label_smoothing='0.1')",
     lambda: tn.losses.CategoricalCrossentropy(label_smoothing="0.1"), TypeError,
     "CategoricalCrossentropy: label_smoothing must be a float in [0, 1], got '0.1'")
case("binary-focal-alpha", "BinaryFocalCrossentropy(alpha=2.0)",
     lambda: tn.losses.BinaryFocalCrossentropy(alpha=2.0), ValueError,
     "BinaryFocalCrossentropy: alpha must be a float in [0, 1], got 2.0")
case("binary-focal-gamma", "BinaryFocalCrossentropy(gamma=-1.0)",
     lambda: tn.losses.BinaryFocalCrossentropy(gamma=-1.0), ValueError,
     "BinaryFocalCrossentropy: gamma must be a finite float >= 0, got -1.0")
case("binary-focal-balancing", "BinaryFocalCrossentropy(apply_class_balancing=1)",
     lambda: tn.losses.BinaryFocalCrossentropy(apply_class_balancing=1), TypeError,
     "BinaryFocalCrossentropy: apply_class_balancing must be a bool", "got 1")
case("categorical-focal-gamma-nan", "CategoricalFocalCrossentropy(gamma=nan)",
     lambda: tn.losses.CategoricalFocalCrossentropy(gamma=NAN), ValueError,
     "CategoricalFocalCrossentropy: gamma must be a finite float >= 0, got nan")
case("seq-fit-xy-mismatch", "model.fit(x[5 samples], y[4 samples])",
     lambda: fit(compiled(), X, Y[:4]), ValueError,
     "Sequential.fit: x and y must hold the same number of samples",
     "x with shape (5, 4) and y with shape (4, 3)")
case("seq-fit-x-rank1", "model.fit(np.zeros(5), y)", lambda: fit(compiled(), np.zeros(5)),
     ValueError, "Sequential.fit: x must be a non-empty batch with at least one feature axis",
     "got x with shape (5,)")
case("seq-fit-x-empty", "model.fit(np.zeros((0, 4)), y[:0])",
     lambda: fit(compiled(), z(0, 4), Y[:0]), ValueError,
     "Sequential.fit: x must be a non-empty batch", "got x with shape (0, 4)")
case("seq-fit-x-wrong-shape", "model.fit(np.zeros((5, 6)), y)",
     lambda: fit(compiled(), z(5, 6)), ValueError,
     "Sequential.fit: model 'sequential' expects input shape (None, 4)",
     "got x with shape (5, 6)")
case("seq-fit-x-str", "model.fit('abc', y)", lambda: fit(compiled(), "abc"), TypeError,
     "Sequential.fit: x must be a real-valued numeric array", "'abc' (str)")
case("seq-fit-y-scalar", "model.fit(x, 1.0)", lambda: fit(compiled(), X, 1.0), ValueError,
     "Sequential.fit: x and y must hold the same number of samples",
     "y with shape (")  # (1,) or (), as tinynet.tensor.as_array keeps a 0-d array or not
case("seq-fit-y-str", "model.fit(x, ['a'] * 5)", lambda: fit(compiled(), X, ["a"] * 5),
     TypeError, "Sequential.fit: y must be a real-valued numeric array", "got dtype <U1")
case("seq-fit-y-wrong-shape", "model.fit(x, np.zeros((5, 2))) with loss='mse'",
     lambda: fit(compiled(), X, z(5, 2)), ValueError,
     "Sequential.fit: MeanSquaredError: y_true shape (5, 2) is incompatible with y_pred shape "
     "(5, 3)")
case("seq-fit-label-too-large", "model.fit(x, labels with 3) for 3 classes",
     lambda: fit(compiled("sparse_categorical_crossentropy"), X, np.array([0, 1, 2, 3, 1])),
     ValueError, "Sequential.fit: SparseCategoricalCrossentropy: label 3 is out of range for 3 "
     "classes", "expected 0 <= label < 3")
case("seq-fit-label-negative", "model.fit(x, labels with -1)",
     lambda: fit(compiled("sparse_categorical_crossentropy"), X, np.array([0, 1, 2, -1, 1])),
     ValueError, "Sequential.fit: SparseCategoricalCrossentropy: label -1 is out of range for 3 "
     "classes")
case("seq-fit-label-fraction", "model.fit(x, labels with 0.5)",
     lambda: fit(compiled("sparse_categorical_crossentropy"), X,
                 np.array([0, 1, 2, 0.5, 1])), ValueError,
     "Sequential.fit: SparseCategoricalCrossentropy: labels must be integer class indices, "
     "got 0.5")
case("seq-fit-label-nan", "model.fit(x, labels with nan)",
     lambda: fit(compiled("sparse_categorical_crossentropy"), X,
                 np.array([0, 1, 2, NAN, 1])), ValueError,
     "Sequential.fit: SparseCategoricalCrossentropy: labels must be integer class indices, "
     "got nan")
case("seq-evaluate-batch-size", "model.evaluate(x, y, batch_size=-3)",
     lambda: compiled().evaluate(X, Y, batch_size=-3, verbose=0), ValueError,
     "Sequential.evaluate: batch_size must be a positive int, got -3")
case("seq-evaluate-verbose", "model.evaluate(x, y, verbose='loud')",
     lambda: compiled().evaluate(X, Y, verbose="loud"), ValueError,
     "Sequential.evaluate: verbose must be 0, 1, 2 or 'auto', got 'loud'")
case("seq-evaluate-mismatch", "model.evaluate(x[5], y[2])",
     lambda: compiled().evaluate(X, Y[:2], verbose=0), ValueError,
     "Sequential.evaluate: x and y must hold the same number of samples",
     "y with shape (2, 3)")
case("seq-predict-batch-size", "model.predict(x, batch_size=0)",
     lambda: mlp().predict(X, batch_size=0, verbose=0), ValueError,
     "Sequential.predict: batch_size must be a positive int, got 0")
case("seq-predict-wrong-shape", "model.predict(np.zeros((5, 3)))",
     lambda: mlp().predict(z(5, 3), verbose=0), ValueError,
     "Sequential.predict: model 'sequential' expects input shape (None, 4)",
     "got x with shape (5, 3)")
case("seq-predict-none", "model.predict(None)", lambda: mlp().predict(None, verbose=0),
     TypeError, "Sequential.predict: x must be a real-valued numeric array", "got None")
case("seq-predict-complex", "model.predict(complex array)",
     lambda: mlp().predict(np.ones((2, 4), np.complex64), verbose=0), TypeError,
     "Sequential.predict: x must be a real-valued numeric array", "got dtype complex64")
case("seq-train-on-batch-mismatch", "model.train_on_batch(x[5], y[3])",
     lambda: compiled().train_on_batch(X, Y[:3]), ValueError,
     "Sequential.train_on_batch: x and y must hold the same number of samples",
     "y with shape (3, 3)")
case("seq-train-on-batch-wrong-shape", "model.train_on_batch(np.zeros((5, 2)), y)",
     lambda: compiled().train_on_batch(z(5, 2), Y), ValueError,
     "Sequential.train_on_batch: model 'sequential' expects input shape (None, 4)",
     "got x with shape (5, 2)")
case("seq-test-on-batch-mismatch", "model.test_on_batch(x[5], y[3])",
     lambda: compiled().test_on_batch(X, Y[:3]), ValueError,
     "Sequential.test_on_batch: x and y must hold the same number of samples",
     "y with shape (3, 3)")
case("seq-predict-on-batch-wrong-shape", "model.predict_on_batch(np.zeros((5, 2)))",
     lambda: compiled().predict_on_batch(z(5, 2)), ValueError,
     "Sequential.predict_on_batch: model 'sequential' expects input shape (None, 4)",
     "got x with shape (5, 2)")
case("seq-fit-no-y", "model.fit(x) with a compiled loss and no y",
     lambda: compiled().fit(X, verbose=0), TypeError,
     "Sequential.fit: y is None; targets are needed: pass y (one row per sample of x), or x "
     "as a dataset of (x, y) batches")
case("seq-test-on-batch-no-y", "model.test_on_batch(x)",
     lambda: compiled().test_on_batch(X), TypeError,
     "Sequential.test_on_batch: y is None; targets are needed")
def add_loss_only() -> tn.Model:
    """A model whose only loss is what a layer adds: it trains on x alone."""
    from tinynet import layers as tl

    class SquareMean(tl.Layer):
        def call(self, x):
            self.add_loss(tn.ops.mean(tn.ops.square(x)))
            return x

    inp = tn.Input((4,))
    m = tn.Model(inp, SquareMean()(tl.Dense(3)(inp)))
    m.compile(optimizer="sgd")
    return m


case("fit-add-loss-only-sample-weight", "fit(x, sample_weight=...) on an add_loss-only model",
     lambda: add_loss_only().fit(X, sample_weight=np.ones(5), verbose=0), ValueError,
     "Model.fit: sample_weight weighs the compiled loss and weighted metrics, and this model "
     "has none (its loss is what its layers add); got sample_weight of type ndarray")
case("fit-add-loss-only-class-weight", "fit(x, class_weight=...) on an add_loss-only model",
     lambda: add_loss_only().fit(X, class_weight={0: 1.0}, verbose=0), ValueError,
     "Model.fit: class_weight weighs the compiled loss and weighted metrics",
     "got class_weight of type dict")

class _TwoArgs(tn.layers.Layer):
    """A call() layer with a further argument (the call-arguments cases)."""

    def call(self, x, other=None):
        return x if other is None else x + other


def _call_node_config(index):
    """A functional config whose call() layer's node names its further input ``index``."""
    a, b = tn.Input((3,), name="a"), tn.Input((3,), name="b")
    config = tn.Model([a, b], _TwoArgs(name="two")(a, other=b)).get_config()
    config["layers"][-1]["inbound_nodes"][0]["call"]["kwargs"]["other"] = {
        "__node_input__": index}
    return config


case("layer-call-without-input", "layer() with no input at all",
     lambda: _TwoArgs(name="two")(other=None), TypeError,
     "_TwoArgs 'two': called without an input; pass it first (layer(x)) or by name (x=x)")
case("from-config-call-input-index", "a node's call argument {'__node_input__': -1}",
     lambda: tn.Model.from_config(_call_node_config(-1),
                                  custom_objects={"_TwoArgs": _TwoArgs}), ValueError,
     "layer 'two': a call argument's input index must be an int >= 0, got -1")
case("from-config-call-input-gap", "a node's call arguments numbering inputs 0 and 2",
     lambda: tn.Model.from_config(_call_node_config(1),
                                  custom_objects={"_TwoArgs": _TwoArgs}), ValueError,
     "layer 'two': a node's call arguments must number their inputs 0, 1, 2, ..., got [1]")

case("seq-summary-line-length-small", "model.summary(line_length=-5)",
     lambda: mlp().summary(line_length=-5), ValueError,
     "summary: line_length must leave every column at least 4 characters wide, got -5")
case("seq-summary-line-length-str", "model.summary(line_length='wide')",
     lambda: mlp().summary(line_length="wide"), TypeError,
     "summary: line_length must be an int, got 'wide'")
case("seq-summary-print-fn", "model.summary(print_fn=5)",
     lambda: mlp().summary(print_fn=5), TypeError,
     "summary: print_fn must be None or a callable, got 5")
case("seq-set-weights-count", "model.set_weights([one array])",
     lambda: mlp().set_weights([z(4, 3)]), ValueError,
     "Sequential.set_weights: expected 2 arrays, got 1")
case("seq-set-weights-shape", "model.set_weights([(3, 3), (3,)])",
     lambda: mlp().set_weights([z(3, 3), z(3)]), ValueError,
     "Sequential.set_weights: dense/kernel expects shape (4, 3), got (3, 3)")

# ============================================================================================
# losses and metrics
# ============================================================================================
case("loss-mse-shape", "MeanSquaredError()(y_true (2, 3), y_pred (2, 4))",
     lambda: losses.MeanSquaredError()(z(2, 3), z(2, 4)), ValueError,
     "MeanSquaredError: y_true shape (2, 3) is incompatible with y_pred shape (2, 4)")
case("loss-mse-empty", "MeanSquaredError()(empty, empty)",
     lambda: losses.MeanSquaredError()(z(0, 3), z(0, 3)), ValueError,
     "MeanSquaredError: y_pred must be a non-empty array with a batch axis, got shape (0, 3)")
case("loss-mse-pred-none", "MeanSquaredError()(y, None)",
     lambda: losses.MeanSquaredError()(z(2), None), TypeError,
     "MeanSquaredError: y_pred must be a real-valued numeric array", "got None")
case("loss-bce-from-logits-str", "BinaryCrossentropy(from_logits='yes')",
     lambda: losses.BinaryCrossentropy(from_logits="yes"), TypeError,
     "BinaryCrossentropy: from_logits must be a bool, got 'yes'")
case("loss-cce-shape", "CategoricalCrossentropy()(y_true (2,), y_pred (2, 3))",
     lambda: losses.CategoricalCrossentropy()(z(2), z(2, 3)), ValueError,
     "CategoricalCrossentropy: y_true shape (2,) holds one label per sample, but this loss "
     "expects one-hot labels of y_pred's shape (2, 3); for integer class labels use "
     "SparseCategoricalCrossentropy (loss='sparse_categorical_crossentropy'), or one-hot them "
     "with tinynet.utils.to_categorical(y, 3)")
case("loss-cce-classes", "CategoricalCrossentropy()(y_true (2, 3), y_pred (2, 4))",
     lambda: losses.CategoricalCrossentropy()(z(2, 3), z(2, 4)), ValueError,
     "CategoricalCrossentropy: y_true shape (2, 3) must equal y_pred shape (2, 4) (one-hot "
     "labels: 3 classes in y_true, 4 units in y_pred)")
case("loss-cce-scalar-true", "CategoricalCrossentropy().value_and_grad(y_true (), y_pred (1,))",
     lambda: losses.CategoricalCrossentropy().value_and_grad(np.full((), 0.0),
                                                             np.full((1,), 0.5)),
     ValueError, "CategoricalCrossentropy: y_true shape () must equal y_pred shape (1,) "
     "(one-hot labels: one row of classes per sample)")
case("loss-cce-true-str", "CategoricalCrossentropy()('abc', y_pred)",
     lambda: losses.CategoricalCrossentropy()("abc", z(1, 3)), TypeError,
     "CategoricalCrossentropy: y_true must be a real-valued numeric array", "'abc' (str)")
case("loss-scce-out-of-range", "SparseCategoricalCrossentropy()([3], 3 classes)",
     lambda: losses.SparseCategoricalCrossentropy()(np.array([3]), np.full((1, 3), 1 / 3)),
     ValueError, "SparseCategoricalCrossentropy: label 3 is out of range for 3 classes")
case("loss-scce-inf-label", "SparseCategoricalCrossentropy()([inf], ...)",
     lambda: losses.SparseCategoricalCrossentropy()(np.array([INF]), np.full((1, 3), 1 / 3)),
     ValueError, "SparseCategoricalCrossentropy: labels must be integer class indices, got inf")
case("loss-scce-shape", "SparseCategoricalCrossentropy()(2 labels, 1 row)",
     lambda: losses.SparseCategoricalCrossentropy()(np.array([0, 1]), np.full((1, 3), 1 / 3)),
     ValueError, "SparseCategoricalCrossentropy: y_true shape (2,) does not match y_pred shape "
     "(1, 3)")
case("loss-name-int", "MeanSquaredError(name=3)", lambda: losses.MeanSquaredError(name=3),
     TypeError, "MeanSquaredError: name must be a non-empty str, got 3")
case("huber-delta-zero", "losses.Huber(delta=0)", lambda: losses.Huber(delta=0), ValueError,
     "Huber: delta must be a finite float > 0, got 0")
case("huber-delta-str", "losses.Huber(delta='1')", lambda: losses.Huber(delta="1"), TypeError,
     "Huber: delta must be a finite float > 0, got '1'")
case("huber-delta-inf", "losses.Huber(delta=inf)", lambda: losses.Huber(delta=INF), ValueError,
     "Huber: delta must be a finite float > 0, got inf")
case("hinge-shapes", "losses.Hinge()(zeros (2, 3), zeros (2, 4))",
     lambda: losses.Hinge()(z(2, 3), z(2, 4)), ValueError,
     "Hinge: y_true shape (2, 3) is incompatible with y_pred shape (2, 4)")
case("fit-initial-epoch-negative", "model.fit(x, y, initial_epoch=-1)",
     lambda: compiled().fit(z(4, 4), z(4, 3), initial_epoch=-1, verbose=0), ValueError,
     "Sequential.fit: initial_epoch must be a non-negative int, got -1")
case("fit-initial-epoch-float", "model.fit(x, y, initial_epoch=1.0)",
     lambda: compiled().fit(z(4, 4), z(4, 3), initial_epoch=1.0, verbose=0), TypeError,
     "Sequential.fit: initial_epoch must be a non-negative int, got 1.0")
case("fit-validation-freq-zero", "model.fit(x, y, validation_freq=0)",
     lambda: compiled().fit(z(4, 4), z(4, 3), validation_freq=0, verbose=0), ValueError,
     "Sequential.fit: validation_freq must be a positive int or a non-empty list of positive ints",
     "got 0")
case("fit-validation-freq-str", "model.fit(x, y, validation_freq='2')",
     lambda: compiled().fit(z(4, 4), z(4, 3), validation_freq="2", verbose=0), TypeError,
     "Sequential.fit: validation_freq must be a positive int or a non-empty list of positive ints",
     "got '2'")
case("fit-validation-freq-list", "model.fit(x, y, validation_freq=[1, 0])",
     lambda: compiled().fit(z(4, 4), z(4, 3), validation_freq=[1, 0], verbose=0), ValueError,
     "Sequential.fit: validation_freq must be a positive int or a non-empty list of positive ints",
     "got [1, 0]")
case("backup-dir-int", "callbacks.BackupAndRestore(3)",
     lambda: callbacks.BackupAndRestore(3), TypeError,
     "BackupAndRestore: backup_dir must be a non-empty str or path, got 3")
case("backup-save-freq-zero", "callbacks.BackupAndRestore('b', save_freq=0)",
     lambda: callbacks.BackupAndRestore("b", save_freq=0), ValueError,
     "BackupAndRestore: save_freq must be 'epoch', a positive int or False, got 0")
case("backup-delete-int", "callbacks.BackupAndRestore('b', delete_checkpoint=1)",
     lambda: callbacks.BackupAndRestore("b", delete_checkpoint=1), TypeError,
     "BackupAndRestore: delete_checkpoint must be a bool", "got 1")
case("reduce-lr-factor-one", "callbacks.ReduceLROnPlateau(factor=1.0)",
     lambda: callbacks.ReduceLROnPlateau(factor=1.0), ValueError,
     "ReduceLROnPlateau: factor must be a float in [0, 1)", "got 1.0")
case("reduce-lr-factor-str", "callbacks.ReduceLROnPlateau(factor='0.1')",
     lambda: callbacks.ReduceLROnPlateau(factor="0.1"), TypeError,
     "ReduceLROnPlateau: factor must be a float, got '0.1'")
case("reduce-lr-patience-negative", "callbacks.ReduceLROnPlateau(patience=-1)",
     lambda: callbacks.ReduceLROnPlateau(patience=-1), ValueError,
     "ReduceLROnPlateau: patience must be a non-negative int, got -1")
case("reduce-lr-min-lr-negative", "callbacks.ReduceLROnPlateau(min_lr=-0.1)",
     lambda: callbacks.ReduceLROnPlateau(min_lr=-0.1), ValueError,
     "ReduceLROnPlateau: min_lr must be a finite float >= 0, got -0.1")
case("reduce-lr-mode", "callbacks.ReduceLROnPlateau(mode='up')",
     lambda: callbacks.ReduceLROnPlateau(mode="up"), ValueError,
     "ReduceLROnPlateau: mode must be one of 'auto', 'min', 'max', got 'up'")
case("schedule-decay-steps-zero", "schedules.ExponentialDecay(0.1, 0, 0.9)",
     lambda: optimizers.schedules.ExponentialDecay(0.1, 0, 0.9), ValueError,
     "ExponentialDecay: decay_steps must be a finite float > 0, got 0")
case("schedule-rate-str", "schedules.CosineDecay('0.1', 10)",
     lambda: optimizers.schedules.CosineDecay("0.1", 10), TypeError,
     "CosineDecay: initial_learning_rate must be a non-negative float no larger than "
     "float32's largest (3.4028235e+38), got '0.1'")
case("schedule-staircase-int", "schedules.InverseTimeDecay(0.1, 5, 0.5, staircase=1)",
     lambda: optimizers.schedules.InverseTimeDecay(0.1, 5, 0.5, staircase=1), TypeError,
     "InverseTimeDecay: staircase must be a bool, got 1")
case("schedule-piecewise-lengths", "schedules.PiecewiseConstantDecay([10], [1.0])",
     lambda: optimizers.schedules.PiecewiseConstantDecay([10], [1.0]), ValueError,
     "PiecewiseConstantDecay: values must be a list with one more entry than boundaries",
     "got boundaries=[10], values=[1.0]")
case("schedule-restarts-t-mul", "schedules.CosineDecayRestarts(0.1, 10, t_mul=0)",
     lambda: optimizers.schedules.CosineDecayRestarts(0.1, 10, t_mul=0), ValueError,
     "CosineDecayRestarts: t_mul must be a finite float >= 1, got 0")
case("schedule-deserialize-unknown", "schedules.deserialize({'class_name': 'Step'})",
     lambda: optimizers.schedules.deserialize({"class_name": "Step"}), ValueError,
     "schedules.deserialize: unknown schedule 'Step'; valid names: ExponentialDecay")
case("precision-threshold-range", "metrics.Precision(thresholds=1.5)",
     lambda: metrics.Precision(thresholds=1.5), ValueError,
     "Precision: thresholds must be None or a float in [0, 1], got 1.5")
case("recall-top-k-zero", "metrics.Recall(top_k=0)", lambda: metrics.Recall(top_k=0),
     ValueError, "Recall: top_k must be None or an int >= 1, got 0")
case("recall-class-id-float", "metrics.Recall(class_id=1.0)",
     lambda: metrics.Recall(class_id=1.0), TypeError,
     "Recall: class_id must be None or an int >= 0, got 1.0")
case("recall-class-id-range", "metrics.Recall(class_id=5) on 3 classes",
     lambda: metrics.Recall(class_id=5)(z(2, 3), z(2, 3)), ValueError,
     "Recall: class_id 5 is out of range for 3 classes")
case("auc-curve", "metrics.AUC(curve='PRGAIN')", lambda: metrics.AUC(curve="PRGAIN"),
     ValueError, "AUC: curve must be 'ROC' or 'PR', got 'PRGAIN'")
case("auc-summation", "metrics.AUC(summation_method='careful')",
     lambda: metrics.AUC(summation_method="careful"), ValueError,
     "AUC: summation_method must be 'interpolation', 'minoring' or 'majoring'",
     "got 'careful'")
case("auc-num-thresholds", "metrics.AUC(num_thresholds=1)",
     lambda: metrics.AUC(num_thresholds=1), ValueError,
     "AUC: num_thresholds must be an int > 1 (and < 2**31), got 1")
case("auc-thresholds-range", "metrics.AUC(thresholds=[0.5, 2.0])",
     lambda: metrics.AUC(thresholds=[0.5, 2.0]), ValueError,
     "AUC: thresholds must be None or a list of floats in [0, 1]")
case("top-k-zero", "metrics.TopKCategoricalAccuracy(k=0)",
     lambda: metrics.TopKCategoricalAccuracy(k=0), ValueError,
     "TopKCategoricalAccuracy: k must be a positive int, got 0")
case("sparse-top-k-float", "metrics.SparseTopKCategoricalAccuracy(k=2.0)",
     lambda: metrics.SparseTopKCategoricalAccuracy(k=2.0), TypeError,
     "SparseTopKCategoricalAccuracy: k must be a positive int, got 2.0")
case("sparse-top-k-sorted-ids", "metrics.SparseTopKCategoricalAccuracy(from_sorted_ids=1)",
     lambda: metrics.SparseTopKCategoricalAccuracy(from_sorted_ids=1), TypeError,
     "SparseTopKCategoricalAccuracy: from_sorted_ids must be a bool, got 1")
case("sparse-top-k-shapes", "metrics.SparseTopKCategoricalAccuracy()([0, 1], zeros (3, 4))",
     lambda: metrics.SparseTopKCategoricalAccuracy()([0, 1], z(3, 4)), ValueError,
     "SparseTopKCategoricalAccuracy: y_true shape (2,) does not match y_pred shape (3, 4)")
case("csv-logger-filename", "callbacks.CSVLogger(3)", lambda: callbacks.CSVLogger(3),
     TypeError, "CSVLogger: filename must be a str or a path, got 3")
case("csv-logger-separator", "callbacks.CSVLogger('f', separator=';;')",
     lambda: callbacks.CSVLogger("f", separator=";;"), TypeError,
     "CSVLogger: separator must be a one-character str, got ';;'")
case("csv-logger-append", "callbacks.CSVLogger('f', append=1)",
     lambda: callbacks.CSVLogger("f", append=1), TypeError,
     "CSVLogger: append must be a bool", "got 1")
case("terminate-on-nan-raise-error", "callbacks.TerminateOnNaN(raise_error='yes')",
     lambda: callbacks.TerminateOnNaN(raise_error="yes"), TypeError,
     "TerminateOnNaN: raise_error must be a bool", "got 'yes'")
case("lambda-callback-not-callable", "callbacks.LambdaCallback(on_epoch_end=3)",
     lambda: callbacks.LambdaCallback(on_epoch_end=3), TypeError,
     "LambdaCallback: on_epoch_end must be callable or None, got 3")
case("losses-get-unknown", "losses.get('l2')", lambda: losses.get("l2"), ValueError,
     "Unknown loss 'l2'; valid names: mse")
case("losses-get-int", "losses.get(3)", lambda: losses.get(3), TypeError,
     "losses.get: expected a Loss instance, a name or a config dict, got int: 3")
case("metric-threshold-str", "BinaryAccuracy(threshold='0.5')",
     lambda: metrics.BinaryAccuracy(threshold="0.5"), TypeError,
     "BinaryAccuracy: threshold must be a float, got '0.5'")
case("metric-threshold-nan", "BinaryAccuracy(threshold=nan)",
     lambda: metrics.BinaryAccuracy(threshold=NAN), ValueError,
     "BinaryAccuracy: threshold must be a finite float, got nan")
case("metrics-get-unknown", "metrics.get('f1')", lambda: metrics.get("f1"), ValueError,
     "Unknown metric 'f1'; valid names: accuracy")
case("metrics-get-int", "metrics.get(3)", lambda: metrics.get(3), TypeError,
     "metrics.get: expected a Metric instance, a name or a function, got int: 3")
case("metric-categorical-shape", "CategoricalAccuracy()((2, 3), (2, 4))",
     lambda: metrics.CategoricalAccuracy()(z(2, 3), z(2, 4)), ValueError,
     "CategoricalAccuracy: y_true shape (2, 3) must equal y_pred shape (2, 4)")
case("metric-sparse-shape", "SparseCategoricalAccuracy()(3 labels, 2 rows)",
     lambda: metrics.SparseCategoricalAccuracy()(np.array([0, 1, 2]), z(2, 3)), ValueError,
     "SparseCategoricalAccuracy: y_true shape (3,) does not match y_pred shape (2, 3)")
case("metric-mse-str", "metrics.MeanSquaredError()('a', y_pred)",
     lambda: metrics.MeanSquaredError()("a", z(1)), TypeError,
     "MeanSquaredError: y_true must be a real-valued numeric array", "'a' (str)")
case("metric-wrapper-not-callable", "MeanMetricWrapper(5)",
     lambda: metrics.MeanMetricWrapper(5), TypeError,
     "MeanMetricWrapper: fn must be callable, got 5")

# ============================================================================================
# optimizers
# ============================================================================================
LR = "learning_rate must be a non-negative float no larger than float32's largest (3.4028235e+38) or a callable schedule"
case("sgd-lr-nan", "SGD(learning_rate=nan)", lambda: optimizers.SGD(learning_rate=NAN),
     ValueError, "SGD: " + LR, "got nan")
case("sgd-lr-negative", "SGD(learning_rate=-1)", lambda: optimizers.SGD(learning_rate=-1),
     ValueError, "SGD: " + LR, "got -1")
case("sgd-lr-inf", "SGD(learning_rate=inf)", lambda: optimizers.SGD(learning_rate=INF),
     ValueError, "SGD: " + LR, "got inf")
case("sgd-lr-str", "SGD(learning_rate='0.1')", lambda: optimizers.SGD(learning_rate="0.1"),
     TypeError, "SGD: " + LR, "got '0.1'")
case("sgd-lr-huge-int", "SGD(learning_rate=10**400)",
     lambda: optimizers.SGD(learning_rate=10**400), ValueError, "SGD: " + LR, "got 1000")
case("sgd-lr-number-over-schedule", "opt = SGD(ExponentialDecay(...)); opt.learning_rate = 0.01",
     lambda: setattr(optimizers.SGD(optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)),
                     "learning_rate", 0.01), TypeError,
     "SGD: learning_rate was given as a schedule, so it cannot be set to a number (as in "
     "Keras); give the optimizer a float learning_rate to set it, got 0.01 over")
case("sgd-momentum-high", "SGD(momentum=2.0)", lambda: optimizers.SGD(momentum=2.0),
     ValueError, "SGD: momentum must be a float in [0, 1], got 2.0")
case("sgd-nesterov-int", "SGD(nesterov=1)", lambda: optimizers.SGD(nesterov=1), TypeError,
     "SGD: nesterov must be a bool, got 1")
case("adam-beta1-one", "Adam(beta_1=1.0)", lambda: optimizers.Adam(beta_1=1.0), ValueError,
     "Adam: beta_1 must be a float in [0, 1), got 1.0")
case("adam-beta2-nan", "Adam(beta_2=nan)", lambda: optimizers.Adam(beta_2=NAN), ValueError,
     "Adam: beta_2 must be a float in [0, 1), got nan")
case("adam-epsilon-negative", "Adam(epsilon=-1e-7)", lambda: optimizers.Adam(epsilon=-1e-7),
     ValueError, "Adam: epsilon must be a non-negative float, got -1e-07")
case("adam-amsgrad-str", "Adam(amsgrad='no')", lambda: optimizers.Adam(amsgrad="no"),
     TypeError, "Adam: amsgrad must be a bool, got 'no'")
case("adamw-weight-decay-none", "AdamW(weight_decay=None)",
     lambda: optimizers.AdamW(weight_decay=None), ValueError,
     "AdamW: weight_decay must be a non-negative float, got None")
case("adamw-weight-decay-negative", "AdamW(weight_decay=-0.1)",
     lambda: optimizers.AdamW(weight_decay=-0.1), ValueError,
     "AdamW: weight_decay must be None or a non-negative float, got -0.1")
case("rmsprop-rho-one", "RMSprop(rho=1.0)", lambda: optimizers.RMSprop(rho=1.0), ValueError,
     "RMSprop: rho must be a float in [0, 1), got 1.0")
case("rmsprop-momentum-negative", "RMSprop(momentum=-0.5)",
     lambda: optimizers.RMSprop(momentum=-0.5), ValueError,
     "RMSprop: momentum must be a float in [0, 1], got -0.5")
case("rmsprop-centered-int", "RMSprop(centered=0)", lambda: optimizers.RMSprop(centered=0),
     TypeError, "RMSprop: centered must be a bool, got 0")
case("adagrad-initial-negative", "Adagrad(initial_accumulator_value=-0.1)",
     lambda: optimizers.Adagrad(initial_accumulator_value=-0.1), ValueError,
     "Adagrad: initial_accumulator_value must be a non-negative float, got -0.1")
case("adagrad-epsilon-nan", "Adagrad(epsilon=nan)", lambda: optimizers.Adagrad(epsilon=NAN),
     ValueError, "Adagrad: epsilon must be a non-negative float, got nan")
case("nadam-beta1-one", "Nadam(beta_1=1.0)", lambda: optimizers.Nadam(beta_1=1.0), ValueError,
     "Nadam: beta_1 must be a float in [0, 1), got 1.0")
case("nadam-beta2-negative", "Nadam(beta_2=-0.5)", lambda: optimizers.Nadam(beta_2=-0.5),
     ValueError, "Nadam: beta_2 must be a float in [0, 1), got -0.5")
case("nadam-beta2-str", "Nadam(beta_2='0.999')", lambda: optimizers.Nadam(beta_2="0.999"),
     TypeError, "Nadam: beta_2 must be a float in [0, 1), got '0.999'")
case("nadam-epsilon-nan", "Nadam(epsilon=nan)", lambda: optimizers.Nadam(epsilon=NAN),
     ValueError, "Nadam: epsilon must be a non-negative float, got nan")
case("nadam-lr-negative", "Nadam(learning_rate=-1)",
     lambda: optimizers.Nadam(learning_rate=-1), ValueError, "Nadam: " + LR, "got -1")
case("nadam-amsgrad", "Nadam(amsgrad=True)", lambda: optimizers.Nadam(amsgrad=True),
     TypeError, "Nadam got an unexpected keyword argument 'amsgrad'; valid keyword arguments: "
     "learning_rate, beta_1, beta_2, epsilon, weight_decay, clipnorm, clipvalue, "
     "global_clipnorm, name")
case("adamax-beta1-one", "Adamax(beta_1=1.0)", lambda: optimizers.Adamax(beta_1=1.0),
     ValueError, "Adamax: beta_1 must be a float in [0, 1), got 1.0")
case("adamax-beta2-high", "Adamax(beta_2=1.5)", lambda: optimizers.Adamax(beta_2=1.5),
     ValueError, "Adamax: beta_2 must be a float in [0, 1], got 1.5")
case("adamax-beta2-none", "Adamax(beta_2=None)", lambda: optimizers.Adamax(beta_2=None),
     TypeError, "Adamax: beta_2 must be a float in [0, 1], got None")
case("adamax-epsilon-negative", "Adamax(epsilon=-1e-7)",
     lambda: optimizers.Adamax(epsilon=-1e-7), ValueError,
     "Adamax: epsilon must be a non-negative float, got -1e-07")
case("adamax-weight-decay-inf", "Adamax(weight_decay=inf)",
     lambda: optimizers.Adamax(weight_decay=INF), ValueError,
     "Adamax: weight_decay must be None or a non-negative float, got inf")
case("lion-beta1-zero", "Lion(beta_1=0.0)", lambda: optimizers.Lion(beta_1=0.0), ValueError,
     "Lion: beta_1 must be a float in (0, 1], got 0.0")
case("lion-beta1-high", "Lion(beta_1=1.5)", lambda: optimizers.Lion(beta_1=1.5), ValueError,
     "Lion: beta_1 must be a float in (0, 1], got 1.5")
case("lion-beta1-bool", "Lion(beta_1=True)", lambda: optimizers.Lion(beta_1=True), TypeError,
     "Lion: beta_1 must be a float in (0, 1], got True")
case("lion-beta2-negative", "Lion(beta_2=-0.01)", lambda: optimizers.Lion(beta_2=-0.01),
     ValueError, "Lion: beta_2 must be a float in [0, 1], got -0.01")
case("lion-epsilon", "Lion(epsilon=1e-7)", lambda: optimizers.Lion(epsilon=1e-7), TypeError,
     "Lion got an unexpected keyword argument 'epsilon'; valid keyword arguments: "
     "learning_rate, beta_1, beta_2, weight_decay, clipnorm, clipvalue, global_clipnorm, name")
case("lion-clipnorm-zero", "Lion(clipnorm=0)", lambda: optimizers.Lion(clipnorm=0),
     ValueError, "Lion: clipnorm must be None or a positive float, got 0")
case("adamw-amsgrad-int", "AdamW(amsgrad=1)", lambda: optimizers.AdamW(amsgrad=1), TypeError,
     "AdamW: amsgrad must be a bool, got 1")
case("adam-amsgrad-none", "Adam(amsgrad=None)", lambda: optimizers.Adam(amsgrad=None),
     TypeError, "Adam: amsgrad must be a bool, got None")
case("nadam-set-state-no-u-product", "Nadam().set_state({'iterations': 3}, [])",
     lambda: optimizers.Nadam().set_state({"iterations": np.int64(3)}, []), ValueError,
     "Nadam: optimizer state has no entry 'u_product'")
case("nadam-set-state-u-product-array", "Nadam().set_state({..., 'u_product': [1, 2]}, [])",
     lambda: optimizers.Nadam().set_state(
         {"iterations": np.int64(3), "u_product": np.array([1.0, 2.0])}, []), ValueError,
     "Nadam: optimizer state 'u_product' must be one float", "got array([1., 2.])")
case("optimizer-clipnorm-zero", "SGD(clipnorm=0.0)", lambda: optimizers.SGD(clipnorm=0.0),
     ValueError, "SGD: clipnorm must be None or a positive float, got 0.0")
case("optimizer-clipvalue-nan", "SGD(clipvalue=nan)", lambda: optimizers.SGD(clipvalue=NAN),
     ValueError, "SGD: clipvalue must be None or a positive float, got nan")
case("optimizer-global-clipnorm-negative", "Adam(global_clipnorm=-1.0)",
     lambda: optimizers.Adam(global_clipnorm=-1.0), ValueError,
     "Adam: global_clipnorm must be None or a positive float, got -1.0")
case("optimizer-two-clips", "SGD(clipnorm=1.0, clipvalue=1.0)",
     lambda: optimizers.SGD(clipnorm=1.0, clipvalue=1.0), ValueError,
     "SGD: only one of clipnorm, clipvalue and global_clipnorm can be set",
     "got clipnorm=1.0, clipvalue=1.0")
case("optimizer-lr-setter-nan", "optimizer.learning_rate = nan",
     lambda: setattr(optimizers.Adam(), "learning_rate", NAN), ValueError,
     "Adam: " + LR, "got nan")
case("optimizer-name-empty", "Adam(name='')", lambda: optimizers.Adam(name=""), TypeError,
     "Adam: name must be a non-empty str, got ''")
case("optimizers-get-unknown", "optimizers.get('adamx')", lambda: optimizers.get("adamx"),
     ValueError, "Unknown optimizer 'adamx'; valid names: adagrad, adam, adamax, adamw, lion, "
     "nadam, rmsprop, sgd")
case("optimizers-get-float", "optimizers.get(1.0)", lambda: optimizers.get(1.0), TypeError,
     "optimizers.get: expected an Optimizer instance, a name or a config dict, got float: 1.0")
case("optimizers-get-dict", "optimizers.get({'config': {}})",
     lambda: optimizers.get({"config": {}}), ValueError,
     "optimizers.get: a config dict needs 'class_name' and 'config' keys, got keys ['config']")
case("optimizer-exclude-names-int", "AdamW().exclude_from_weight_decay(var_names=[3])",
     lambda: optimizers.AdamW().exclude_from_weight_decay(var_names=[3]), TypeError,
     "AdamW: exclude_from_weight_decay var_names must be non-empty strings, got 3")
case("optimizer-apply-array", "SGD().apply([ndarray])",
     lambda: optimizers.SGD().apply([z(3)]), TypeError,
     "SGD: apply expects Parameter objects, got ndarray")
case("optimizer-apply-int", "SGD().apply(5)", lambda: optimizers.SGD().apply(5), TypeError,
     "SGD: apply expects a list of Parameter objects, got int")
case("optimizer-apply-grad-shape", "SGD().apply([param (2,) with grad (3,)])",
     lambda: optimizers.SGD().apply([param_with_grad((3,))]), ValueError,
     "SGD: gradient of w has shape (3,), expected (2,)")

# ============================================================================================
# callbacks
# ============================================================================================
NON_NEG_INT = "must be a non-negative int"
SUFFIX = ("must end in .safetensors or .keras (tinynet's format, or a Keras 3 archive; "
          "Keras's legacy .h5 is not supported)")
WEIGHTS_SUFFIX = ("must end in .safetensors or .weights.h5 (tinynet's format, or Keras's "
                  "weights file; Keras's legacy .h5 is not supported)")
case("early-stopping-monitor-empty", "EarlyStopping(monitor='')",
     lambda: callbacks.EarlyStopping(monitor=""), TypeError,
     "EarlyStopping: monitor must be a non-empty str, got ''")
case("early-stopping-patience-negative", "EarlyStopping(patience=-1)",
     lambda: callbacks.EarlyStopping(patience=-1), ValueError,
     "EarlyStopping: patience", NON_NEG_INT, "got -1")
case("early-stopping-patience-float", "EarlyStopping(patience=1.5)",
     lambda: callbacks.EarlyStopping(patience=1.5), TypeError,
     "EarlyStopping: patience", NON_NEG_INT, "got 1.5")
case("early-stopping-start-negative", "EarlyStopping(start_from_epoch=-1)",
     lambda: callbacks.EarlyStopping(start_from_epoch=-1), ValueError,
     "EarlyStopping: start_from_epoch", NON_NEG_INT, "got -1")
case("early-stopping-mode", "EarlyStopping(mode='up')",
     lambda: callbacks.EarlyStopping(mode="up"), ValueError,
     "EarlyStopping: mode must be one of 'auto', 'min', 'max', got 'up'")
case("early-stopping-min-delta-str", "EarlyStopping(min_delta='0')",
     lambda: callbacks.EarlyStopping(min_delta="0"), TypeError,
     "EarlyStopping: min_delta must be a float, got '0'")
case("early-stopping-min-delta-nan", "EarlyStopping(min_delta=nan)",
     lambda: callbacks.EarlyStopping(min_delta=NAN), ValueError,
     "EarlyStopping: min_delta must be a finite float, got nan")
case("early-stopping-baseline-str", "EarlyStopping(baseline='x')",
     lambda: callbacks.EarlyStopping(baseline="x"), TypeError,
     "EarlyStopping: baseline must be None or a float, got 'x'")
case("early-stopping-baseline-inf", "EarlyStopping(baseline=inf)",
     lambda: callbacks.EarlyStopping(baseline=INF), ValueError,
     "EarlyStopping: baseline must be None or a finite float, got inf")
case("early-stopping-restore-str", "EarlyStopping(restore_best_weights='yes')",
     lambda: callbacks.EarlyStopping(restore_best_weights="yes"), TypeError,
     "EarlyStopping: restore_best_weights must be a bool, got 'yes'")
case("lr-scheduler-not-callable", "LearningRateScheduler(0.1)",
     lambda: callbacks.LearningRateScheduler(0.1), TypeError,
     "LearningRateScheduler: schedule must be callable, got 0.1")
case("lr-scheduler-verbose", "LearningRateScheduler(f, verbose=-1)",
     lambda: callbacks.LearningRateScheduler(lambda e: 0.1, verbose=-1), ValueError,
     "LearningRateScheduler: verbose must be a non-negative int, got -1")
case("checkpoint-filepath-int", "ModelCheckpoint(5)", lambda: callbacks.ModelCheckpoint(5),
     TypeError, "ModelCheckpoint: filepath must be a str or os.PathLike, got int")
case("checkpoint-filepath-extension", "ModelCheckpoint('m.h5')",
     lambda: callbacks.ModelCheckpoint("m.h5"), ValueError,
     "ModelCheckpoint: filepath " + SUFFIX, "got 'm.h5'; e.g. 'm.safetensors'")
case("checkpoint-mode", "ModelCheckpoint('m.safetensors', mode='best')",
     lambda: callbacks.ModelCheckpoint("m.safetensors", mode="best"), ValueError,
     "ModelCheckpoint: mode must be one of 'auto', 'min', 'max', got 'best'")
case("checkpoint-save-freq-zero", "ModelCheckpoint('m.safetensors', save_freq=0)",
     lambda: callbacks.ModelCheckpoint("m.safetensors", save_freq=0), ValueError,
     "ModelCheckpoint: save_freq must be 'epoch' or a positive int, got 0")
case("checkpoint-save-best-only-int", "ModelCheckpoint('m.safetensors', save_best_only=1)",
     lambda: callbacks.ModelCheckpoint("m.safetensors", save_best_only=1), TypeError,
     "ModelCheckpoint: save_best_only must be a bool, got 1")
case("checkpoint-monitor-empty", "ModelCheckpoint('m.safetensors', monitor='')",
     lambda: callbacks.ModelCheckpoint("m.safetensors", monitor=""), TypeError,
     "ModelCheckpoint: monitor must be a non-empty str, got ''")
case("checkpoint-threshold-str", "ModelCheckpoint(..., initial_value_threshold='x')",
     lambda: callbacks.ModelCheckpoint("m.safetensors", initial_value_threshold="x"),
     TypeError, "ModelCheckpoint: initial_value_threshold must be None or a float, got 'x'")

# ============================================================================================
# tuning, seed, datasets, saving, Tensor
# ============================================================================================
GATE = "unknown tuning gate 'nope'; valid gates: bn_parallel_min_elems"
case("tuning-get-unknown", "tuning.get('nope')", lambda: tuning.get("nope"), KeyError, GATE)
case("tuning-set-unknown", "tuning.set(nope=1)", lambda: tuning.set(nope=1), KeyError, GATE)
case("tuning-reset-unknown", "tuning.reset('nope')", lambda: tuning.reset("nope"), KeyError,
     GATE)
case("tuning-override-unknown", "with tuning.override(nope=1)",
     lambda: tuning.override(nope=1).__enter__(), KeyError, GATE)
case("tuning-set-negative", "tuning.set(gn_row_parallel_min_elems=-1)",
     lambda: tuning.set(gn_row_parallel_min_elems=-1), ValueError,
     "tuning gate gn_row_parallel_min_elems (tuning.set): value must be >= 0, got -1")
case("tuning-set-float", "tuning.set(gn_row_parallel_min_elems=1.5)",
     lambda: tuning.set(gn_row_parallel_min_elems=1.5), TypeError,
     "tuning gate gn_row_parallel_min_elems (tuning.set): value must be a non-negative int",
     "got 1.5 of type float")
case("tuning-set-bool", "tuning.set(gn_row_parallel_min_elems=True)",
     lambda: tuning.set(gn_row_parallel_min_elems=True), TypeError,
     "value must be a non-negative int, got True of type bool")
case("tuning-threads-zero", "tuning.set_num_threads(0)", lambda: tuning.set_num_threads(0),
     ValueError, "num_threads (set_num_threads): expected 1 <= n <= ", "got 0")
case("tuning-threads-too-many", "tuning.set_num_threads(1000)",
     lambda: tuning.set_num_threads(1000), ValueError,
     "num_threads (set_num_threads): expected 1 <= n <= ", "got 1000")
case("tuning-threads-str", "tuning.set_num_threads('2')",
     lambda: tuning.set_num_threads("2"), TypeError,
     "num_threads (set_num_threads): expected an int, got '2'")
case("tuning-adaptive-int", "tuning.set_adaptive_threads(1)",
     lambda: tuning.set_adaptive_threads(1), TypeError,
     "set_adaptive_threads(on): expected a bool, got 1")
case("tuning-adaptive-str", "tuning.set_adaptive_threads('yes')",
     lambda: tuning.set_adaptive_threads("yes"), TypeError,
     "set_adaptive_threads(on): expected a bool, got 'yes'")
case("set-seed-negative", "tn.set_seed(-1)", lambda: tn.set_seed(-1), ValueError,
     "set_seed: seed must be a non-negative int, got -1")
case("set-seed-float", "tn.set_seed(1.5)", lambda: tn.set_seed(1.5), TypeError,
     "set_seed: seed must be a non-negative int, got 1.5")
case("set-seed-str", "tn.set_seed('1')", lambda: tn.set_seed("1"), TypeError,
     "set_seed: seed must be a non-negative int, got '1'")
case("set-seed-none", "tn.set_seed(None)", lambda: tn.set_seed(None), TypeError,
     "set_seed: seed must be a non-negative int, got None")
case("make-rng-negative", "tinynet.random.make_rng(-3)",
     lambda: tn.random.make_rng(-3), ValueError,
     "make_rng: seed must be None or a non-negative int, got -3")

TEST_SIZE = "load_digits: test_size must be a float in (0, 1) or a positive int"
case("digits-test-size-zero", "load_digits(test_size=0.0)",
     lambda: datasets.load_digits(test_size=0.0), ValueError, TEST_SIZE, "got 0.0")
case("digits-test-size-int-zero", "load_digits(test_size=0)",
     lambda: datasets.load_digits(test_size=0), ValueError, TEST_SIZE, "got 0")
case("digits-test-size-large", "load_digits(test_size=1.5)",
     lambda: datasets.load_digits(test_size=1.5), ValueError, TEST_SIZE, "got 1.5")
case("digits-test-size-nan", "load_digits(test_size=nan)",
     lambda: datasets.load_digits(test_size=NAN), ValueError, TEST_SIZE, "got nan")
case("digits-test-size-str", "load_digits(test_size='0.2')",
     lambda: datasets.load_digits(test_size="0.2"), TypeError, TEST_SIZE, "got '0.2'")
case("digits-seed-negative", "load_digits(seed=-1)", lambda: datasets.load_digits(seed=-1),
     ValueError, "load_digits: seed must be None or a non-negative int, got -1")
case("idx-images-path-int", "load_idx(5, 'labels')", lambda: datasets.load_idx(5, "labels"),
     TypeError, "load_idx: images path must be a str or os.PathLike, got int")
case("idx-labels-path-none", "load_idx('images', None)",
     lambda: datasets.load_idx("images", None), TypeError,
     "load_idx: labels path must be a str or os.PathLike, got NoneType")

case("save-model-not-a-model", "save_model('m', 'x.safetensors')",
     lambda: saving.save_model("m", "x.safetensors"), TypeError,
     "save_model: expected a tinynet model (Sequential or Model), got str")
case("save-model-path-int", "save_model(model, 5)", lambda: saving.save_model(mlp(), 5),
     TypeError, "save_model: path must be a str or os.PathLike, got int")
case("save-weights-path-none", "save_weights(model, None)",
     lambda: saving.save_weights(mlp(), None), TypeError,
     "save_weights: path must be a str or os.PathLike, got NoneType")
case("load-weights-not-a-model", "load_weights(5, 'x')", lambda: saving.load_weights(5, "x"),
     TypeError, "load_weights: expected a tinynet model (Sequential or Model), got int")
case("load-weights-path-int", "load_weights(model, 5)",
     lambda: saving.load_weights(mlp(), 5), TypeError,
     "load_weights: path must be a str or os.PathLike, got int")
case("load-model-path-int", "load_model(5)", lambda: saving.load_model(5), TypeError,
     "load_model: path must be a str or os.PathLike, got int")
case("model-save-path-float", "model.save(3.5)", lambda: mlp().save(3.5), TypeError,
     "save_model: path must be a str or os.PathLike, got float")
case("model-save-weights-bytes", "model.save_weights(b'w.safetensors')",
     lambda: mlp().save_weights(b"w.safetensors"), TypeError,
     "save_weights: path must be a str or os.PathLike, got bytes")
case("model-save-path-empty", "model.save('')", lambda: mlp().save(""), ValueError,
     "save_model: path must name a file, got an empty string ''")
case("model-save-weights-path-empty", "model.save_weights('')",
     lambda: mlp().save_weights(""), ValueError,
     "save_weights: path must name a file, got an empty string ''")
case("load-model-path-empty", "load_model('')", lambda: saving.load_model(""), ValueError,
     "load_model: path must name a file, got an empty string ''")
case("model-export-path-empty", "model.export('')", lambda: mlp().export(""), ValueError,
     "Sequential.export: path must name a file, got an empty string ''")
case("model-export-path-folder", "model.export('out/')", lambda: mlp().export("out/"),
     ValueError, "Sequential.export: path must name a file, got 'out/', which ends in a "
     "separator (a folder)")
EXPORT_FORMAT = "Sequential.export: format must be 'onnx' (the only export format)"
case("model-export-format-keras-default", "model.export('m', format='tf_saved_model')",
     lambda: mlp().export("m", format="tf_saved_model"), ValueError, EXPORT_FORMAT,
     "got 'tf_saved_model'")
case("model-export-format-upper", "model.export('m.onnx', format='ONNX')",
     lambda: mlp().export("m.onnx", format="ONNX"), ValueError, EXPORT_FORMAT, "got 'ONNX'")
case("model-export-format-none", "model.export('m.onnx', format=None)",
     lambda: mlp().export("m.onnx", format=None), ValueError, EXPORT_FORMAT, "got None")
case("model-export-path-int", "model.export(5)", lambda: mlp().export(5), TypeError,
     "Sequential.export: path must be a str or os.PathLike, got int")
EXPORT_OPSET = "Sequential.export: opset must be None or an int >= 13"
case("model-export-opset-low", "model.export('m.onnx', opset=12)",
     lambda: mlp().export("m.onnx", opset=12), ValueError, EXPORT_OPSET, "got 12")
case("model-export-opset-str", "model.export('m.onnx', opset='17')",
     lambda: mlp().export("m.onnx", opset="17"), TypeError, EXPORT_OPSET, "got '17'")
case("model-export-opset-float", "model.export('m.onnx', opset=17.0)",
     lambda: mlp().export("m.onnx", opset=17.0), TypeError, EXPORT_OPSET, "got 17.0")
case("model-export-opset-bool", "model.export('m.onnx', opset=True)",
     lambda: mlp().export("m.onnx", opset=True), TypeError, EXPORT_OPSET, "got True")
case("model-export-custom-layer", "Sequential([Input((3,)), Doubler()]).export('m.onnx')",
     lambda: tn.Sequential([Input((3,)), Doubler(name="doubler")]).export("m.onnx"),
     ValueError, "Sequential.export: layer 'doubler' (Doubler) has no ONNX export; only the "
     "built-in layers of tinynet.layers export (docs/export.md lists them)")
case("model-export-custom-layer-nested", "Model(x, Sequential([Doubler()])(x)).export('m.onnx')",
     lambda: (lambda x: tn.Model(x, tn.Sequential([Doubler(name="doubler")], name="block")(x)))(
         Input((3,))).export("m.onnx"),
     ValueError, "Model.export: layer 'block/doubler' (Doubler) has no ONNX export")
case("model-export-subclass-of-dense", "Sequential([Input((3,)), MyDense(2)]).export('m.onnx')",
     lambda: tn.Sequential([Input((3,)), type("MyDense", (Dense,), {})(2, name="mine")]).export(
         "m.onnx"),
     ValueError, "Sequential.export: layer 'mine' (MyDense) has no ONNX export")
case("model-export-unbuilt", "Sequential([Dense(2)]).export('m.onnx')",
     lambda: tn.Sequential([Dense(2)]).export("m.onnx"), ValueError,
     "Sequential.export: Sequential model 'sequential' is not built yet: call "
     "build(input_shape), or fit/predict on data, first")

WARM = "warmup: workers must be a positive int"
case("warmup-workers-zero", "warmup(workers=0)", lambda: warmup(workers=0), ValueError, WARM,
     "got 0")
case("warmup-workers-float", "warmup(workers=2.0)", lambda: warmup(workers=2.0), TypeError,
     WARM, "got 2.0")
case("warmup-workers-bool", "warmup(workers=True)", lambda: warmup(workers=True), TypeError,
     WARM, "got True")

AHEAD = "compile_ahead.set_enabled: enabled must be a bool"
case("compile-ahead-enabled-int", "compile_ahead.set_enabled(1)",
     lambda: compile_ahead.set_enabled(1), TypeError, AHEAD, "got 1")
case("compile-ahead-enabled-none", "compile_ahead.set_enabled(None)",
     lambda: compile_ahead.set_enabled(None), TypeError, AHEAD, "got None")

DATA = "Tensor: data must be a real-valued numeric array (bool, int or float)"
case("tensor-str", "Tensor('abc')", lambda: tn.Tensor("abc"), TypeError, DATA,
     "got dtype <U3", "'abc' (str)")
case("tensor-dict", "Tensor({'a': 1})", lambda: tn.Tensor({"a": 1}), TypeError, DATA,
     "{'a': 1} (dict)")
case("tensor-ragged", "Tensor([[1, 2], [3]])", lambda: tn.Tensor([[1, 2], [3]]), ValueError,
     DATA, "[[1, 2], [3]] (list)", "inhomogeneous")
case("tensor-none", "Tensor(None)", lambda: tn.Tensor(None), TypeError, DATA, "got None")
case("tensor-none-element", "Tensor([1.0, None])", lambda: tn.Tensor([1.0, None]), TypeError,
     DATA, "got dtype object", "[1.0, None] (list)")
case("tensor-complex", "Tensor(np.array([1+2j]))", lambda: tn.Tensor(np.array([1 + 2j])),
     TypeError, DATA, "got dtype complex128")


# ============================================================================================
# mistyped keyword arguments: the public class (or method), every unknown keyword and the
# closest valid names (tinynet.keywords)
# ============================================================================================
def kw(id: str, what: str, call: Callable[[], Any], message: str) -> None:
    """A mistyped-keyword case: ``TypeError`` with exactly ``message``."""
    CASES.append(Case(id, what, call, TypeError, "^" + re.escape(message) + "$"))


GOT = "got an unexpected keyword argument"
kw("kw-group-normalization-group", "GroupNormalization(group=4)",
   lambda: GroupNormalization(group=4),
   f"GroupNormalization {GOT} 'group'; did you mean 'groups'?")
kw("kw-max-pooling-pool", "MaxPooling2D(pool=2)", lambda: MaxPooling2D(pool=2),
   f"MaxPooling2D {GOT} 'pool'; did you mean 'pool_size'?")
kw("kw-average-pooling1d-pool", "AveragePooling1D(pool=2)", lambda: AveragePooling1D(pool=2),
   f"AveragePooling1D {GOT} 'pool'; did you mean 'pool_size'?")
kw("kw-dense-activation", "Dense(3, activaton='relu')", lambda: Dense(3, activaton="relu"),
   f"Dense {GOT} 'activaton'; did you mean 'activation'?")
kw("kw-dense-two-keys", "Dense(3, activaton='relu', bias=False)",
   lambda: Dense(3, activaton="relu", bias=False),
   "Dense got unexpected keyword arguments 'activaton' (did you mean 'activation'?), 'bias' "
   "(did you mean 'use_bias'?)")
kw("kw-dense-input-dim", "Dense(3, input_dim=4) (Keras 2)", lambda: Dense(3, input_dim=4),
   f"Dense {GOT} 'input_dim'; did you mean 'input_shape'?")
kw("kw-dense-layer-name", "Dense(3, nme='out')", lambda: Dense(3, nme="out"),
   f"Dense {GOT} 'nme'; did you mean 'name'?")
kw("kw-conv2d-kernel", "Conv2D(8, kernel=3)", lambda: Conv2D(8, kernel=3),
   f"Conv2D {GOT} 'kernel'; did you mean 'kernel_size'?")
kw("kw-conv2d-dilation", "Conv2D(8, 3, dilation=2)", lambda: Conv2D(8, 3, dilation=2),
   f"Conv2D {GOT} 'dilation'; did you mean 'dilation_rate'?")
kw("kw-reshape-shape", "Reshape(shape=(2, 2))", lambda: Reshape(shape=(2, 2)),
   f"Reshape {GOT} 'shape'; did you mean 'target_shape' or 'input_shape'?")
kw("kw-dropout-noise-shape", "Dropout(0.5, noiseshape=(None, 1))",
   lambda: Dropout(0.5, noiseshape=(None, 1)),
   f"Dropout {GOT} 'noiseshape'; did you mean 'noise_shape'?")
kw("kw-batch-normalization-momentum", "BatchNormalization(momentun=0.9)",
   lambda: BatchNormalization(momentun=0.9),
   f"BatchNormalization {GOT} 'momentun'; did you mean 'momentum'?")
kw("kw-layer-normalization-two", "LayerNormalization(centre=False, epsilom=1e-5)",
   lambda: LayerNormalization(centre=False, epsilom=1e-5),
   "LayerNormalization got unexpected keyword arguments 'centre' (did you mean 'center'?), "
   "'epsilom' (did you mean 'epsilon'?)")
kw("kw-instance-normalization-groups", "InstanceNormalization(groups=2)",
   lambda: InstanceNormalization(groups=2),
   f"InstanceNormalization {GOT} 'groups'; valid keyword arguments: epsilon, center, scale, "
   "name, trainable, input_shape")
kw("kw-concatenate-axes", "Concatenate(axes=1)", lambda: Concatenate(axes=1),
   f"Concatenate {GOT} 'axes'; did you mean 'axis'?")
kw("kw-random-rotation-fill", "RandomRotation(0.1, fill='constant')",
   lambda: RandomRotation(0.1, fill="constant"),
   f"RandomRotation {GOT} 'fill'; did you mean 'fill_mode' or 'fill_value'?")
kw("kw-embedding-input-length", "Embedding(10, 4, input_length=5) (Keras 2)",
   lambda: Embedding(10, 4, input_length=5),
   f"Embedding {GOT} 'input_length'; did you mean 'input_shape'?")
kw("kw-adam-lr", "Adam(lr=0.01) (Keras 2)", lambda: optimizers.Adam(lr=0.01),
   f"Adam {GOT} 'lr'; did you mean 'learning_rate'?")
kw("kw-adam-beta1", "Adam(beta1=0.9)", lambda: optimizers.Adam(beta1=0.9),
   f"Adam {GOT} 'beta1'; did you mean 'beta_1'?")
kw("kw-sgd-nesterov", "SGD(momentum=0.9, nestrov=True)",
   lambda: optimizers.SGD(momentum=0.9, nestrov=True),
   f"SGD {GOT} 'nestrov'; did you mean 'nesterov'?")
kw("kw-adamw-weight-decay", "AdamW(weightdecay=0.01)",
   lambda: optimizers.AdamW(weightdecay=0.01),
   f"AdamW {GOT} 'weightdecay'; did you mean 'weight_decay'?")
kw("kw-rmsprop-centered", "RMSprop(centred=True)", lambda: optimizers.RMSprop(centred=True),
   f"RMSprop {GOT} 'centred'; did you mean 'centered'?")
kw("kw-cce-from-logits", "CategoricalCrossentropy(from_logit=True)",
   lambda: losses.CategoricalCrossentropy(from_logit=True),
   f"CategoricalCrossentropy {GOT} 'from_logit'; did you mean 'from_logits'?")
kw("kw-bce-label-smoothing", "BinaryCrossentropy(label_smooth=0.1)",
   lambda: losses.BinaryCrossentropy(label_smooth=0.1),
   f"BinaryCrossentropy {GOT} 'label_smooth'; did you mean 'label_smoothing'?")
kw("kw-scce-label-smoothing", "SparseCategoricalCrossentropy(label_smoothing=0.1)",
   lambda: losses.SparseCategoricalCrossentropy(label_smoothing=0.1),
   f"SparseCategoricalCrossentropy {GOT} 'label_smoothing'; valid keyword arguments: "
   "from_logits, name")
kw("kw-huber-delta", "Huber(delt=1.0)", lambda: losses.Huber(delt=1.0),
   f"Huber {GOT} 'delt'; did you mean 'delta'?")
kw("kw-precision-thresholds", "Precision(threshold=0.5)",
   lambda: metrics.Precision(threshold=0.5),
   f"Precision {GOT} 'threshold'; did you mean 'thresholds'?")
kw("kw-auc-curve", "AUC(curves='PR')", lambda: metrics.AUC(curves="PR"),
   f"AUC {GOT} 'curves'; did you mean 'curve'?")
kw("kw-top-k-accuracy", "TopKCategoricalAccuracy(top_k=3)",
   lambda: metrics.TopKCategoricalAccuracy(top_k=3),
   f"TopKCategoricalAccuracy {GOT} 'top_k'; valid keyword arguments: k, name")
kw("kw-early-stopping-patience", "EarlyStopping(patient=3)",
   lambda: callbacks.EarlyStopping(patient=3),
   f"EarlyStopping {GOT} 'patient'; did you mean 'patience'?")
kw("kw-early-stopping-restore", "EarlyStopping(restore_best=True)",
   lambda: callbacks.EarlyStopping(restore_best=True),
   f"EarlyStopping {GOT} 'restore_best'; did you mean 'restore_best_weights'?")
kw("kw-checkpoint-save-best", "ModelCheckpoint('m.safetensors', save_best=True)",
   lambda: callbacks.ModelCheckpoint("m.safetensors", save_best=True),
   f"ModelCheckpoint {GOT} 'save_best'; did you mean 'save_best_only'?")
kw("kw-reduce-lr-patience", "ReduceLROnPlateau(paitence=2)",
   lambda: callbacks.ReduceLROnPlateau(paitence=2),
   f"ReduceLROnPlateau {GOT} 'paitence'; did you mean 'patience'?")
kw("kw-csv-logger-separator", "CSVLogger('log.csv', seperator=';')",
   lambda: callbacks.CSVLogger("log.csv", seperator=";"),
   f"CSVLogger {GOT} 'seperator'; did you mean 'separator'?")
kw("kw-lr-scheduler-verbose", "LearningRateScheduler(f, verbosity=1)",
   lambda: callbacks.LearningRateScheduler(lambda epoch: 0.1, verbosity=1),
   f"LearningRateScheduler {GOT} 'verbosity'; did you mean 'verbose'?")
kw("kw-exponential-decay-staircase", "ExponentialDecay(0.1, 10, 0.9, stair_case=True)",
   lambda: optimizers.schedules.ExponentialDecay(0.1, 10, 0.9, stair_case=True),
   f"ExponentialDecay {GOT} 'stair_case'; did you mean 'staircase'?")
kw("kw-cosine-decay-warmup", "CosineDecay(0.1, 100, warmup=10)",
   lambda: optimizers.schedules.CosineDecay(0.1, 100, warmup=10),
   f"CosineDecay {GOT} 'warmup'; did you mean 'warmup_target' or 'warmup_steps'?")
kw("kw-piecewise-boundaries", "PiecewiseConstantDecay(boundary=[10], values=[1.0, 0.5])",
   lambda: optimizers.schedules.PiecewiseConstantDecay(boundary=[10], values=[1.0, 0.5]),
   f"PiecewiseConstantDecay {GOT} 'boundary'; did you mean 'boundaries'?")
kw("kw-sequential-layers", "Sequential(layer=[Dense(2)])",
   lambda: tn.Sequential(layer=[Dense(2)]),
   f"Sequential {GOT} 'layer'; did you mean 'layers'?")
kw("kw-model-outputs", "tn.Model(inputs=x, output=y)",
   lambda: (lambda x: tn.Model(inputs=x, output=Dense(2)(x)))(Input((3,))),
   f"Model {GOT} 'output'; did you mean 'outputs'?")
kw("kw-input-dtype", "Input((3,), dtpye='float32')",
   lambda: Input((3,), dtpye="float32"), f"Input {GOT} 'dtpye'; did you mean 'dtype'?")
kw("kw-fit-epoch", "model.fit(x, y, epoch=2)", lambda: fit(compiled(), epoch=2),
   f"Sequential.fit {GOT} 'epoch'; did you mean 'epochs'?")
kw("kw-fit-nb-epoch", "model.fit(x, y, nb_epoch=2) (Keras 2)",
   lambda: fit(compiled(), nb_epoch=2),
   f"Sequential.fit {GOT} 'nb_epoch'; did you mean 'epochs'?")
kw("kw-fit-two-keys", "model.fit(x, y, epoch=2, batchsize=8)",
   lambda: fit(compiled(), epoch=2, batchsize=8),
   "Sequential.fit got unexpected keyword arguments 'epoch' (did you mean 'epochs'?), "
   "'batchsize' (did you mean 'batch_size'?)")
kw("kw-fit-validation", "model.fit(x, y, validation=(x, y))",
   lambda: fit(compiled(), validation=(X, Y)),
   f"Sequential.fit {GOT} 'validation'; did you mean 'validation_split', 'validation_data' "
   "or 'validation_steps'?")
kw("kw-model-fit-epoch", "functional model.fit(x, y, epoch=2)",
   lambda: (lambda a: (lambda m: (m.compile("sgd", "mse"), m.fit(X, Y, epoch=2)))(
       tn.Model(a, Dense(3)(a))))(Input((4,))),
   f"Model.fit {GOT} 'epoch'; did you mean 'epochs'?")
kw("kw-evaluate-verbose", "model.evaluate(x, y, verbosity=0)",
   lambda: compiled().evaluate(X, Y, verbosity=0),
   f"Sequential.evaluate {GOT} 'verbosity'; did you mean 'verbose'?")
kw("kw-predict-batch", "model.predict(x, batch=4)", lambda: mlp().predict(X, batch=4),
   f"Sequential.predict {GOT} 'batch'; did you mean 'batch_size'?")
kw("kw-compile-metric", "model.compile('sgd', 'mse', metric=['mae'])",
   lambda: mlp().compile("sgd", "mse", metric=["mae"]),
   f"Sequential.compile {GOT} 'metric'; did you mean 'metrics'?")
kw("kw-compile-optimiser", "model.compile(optimiser='sgd', loss='mse')",
   lambda: mlp().compile(optimiser="sgd", loss="mse"),
   f"Sequential.compile {GOT} 'optimiser'; did you mean 'optimizer'?")
kw("kw-compile-run-eagerly", "model.compile('sgd', 'mse', run_eagerly=True)",
   lambda: mlp().compile("sgd", "mse", run_eagerly=True),
   f"Sequential.compile {GOT} 'run_eagerly'; valid keyword arguments: optimizer, loss, "
   "metrics, loss_weights, weighted_metrics")
kw("kw-train-on-batch-sample-weight", "model.train_on_batch(x, y, sample_weights=w)",
   lambda: compiled().train_on_batch(X, Y, sample_weights=np.ones(5)),
   f"Sequential.train_on_batch {GOT} 'sample_weights'; did you mean 'sample_weight'?")
kw("kw-save-overwrite", "model.save('m.safetensors', overwrite=True)",
   lambda: mlp().save("m.safetensors", overwrite=True),
   f"Sequential.save {GOT} 'overwrite'; valid keyword arguments: path")
kw("kw-summary-line-length", "model.summary(line_lenght=80)",
   lambda: mlp().summary(line_lenght=80),
   f"Sequential.summary {GOT} 'line_lenght'; did you mean 'line_length'?")

SHAPE_TUPLE = "Input: shape must be a tuple, e.g. Input(shape="
case("input-shape-spread", "Input(8, 8, 1)", lambda: Input(8, 8, 1), TypeError,
     SHAPE_TUPLE + "(8, 8, 1)); got extra positional arguments 8, 1")
case("input-shape-spread-two", "Input(28, 28)", lambda: Input(28, 28), TypeError,
     SHAPE_TUPLE + "(28, 28)); got extra positional argument 28")
case("input-shape-spread-four", "Input(1, 28, 28, 1)", lambda: Input(1, 28, 28, 1), TypeError,
     SHAPE_TUPLE + "(1, 28, 28, 1)); got extra positional arguments 28, 28, 1")


# ============================================================================================
# labels that fit another loss: the check before the first forward pass names it
# ============================================================================================
def one_unit(loss: str) -> tn.Sequential:
    """A compiled model with one sigmoid output unit."""
    model = tn.Sequential([Input((4,)), Dense(1, activation="sigmoid")])
    model.compile(optimizer="sgd", loss=loss)
    return model


ONE_HOT = to_categorical(LABELS, 3)
SPARSE = "SparseCategoricalCrossentropy (loss='sparse_categorical_crossentropy')"
CATEGORICAL = "CategoricalCrossentropy (loss='categorical_crossentropy')"
case("fit-one-hot-sparse-loss", "model.fit(x, one-hot y) with sparse_categorical_crossentropy",
     lambda: fit(compiled("sparse_categorical_crossentropy"), X, ONE_HOT), ValueError,
     "Sequential.fit: SparseCategoricalCrossentropy: y_true shape (5, 3) matches y_pred shape "
     "(5, 3), as one-hot labels do, but this loss expects integer class labels of shape (5,) "
     f"or (5, 1); for one-hot labels use {CATEGORICAL}, or pass the class indices, "
     "y.argmax(axis=-1)")
case("evaluate-one-hot-sparse-loss", "model.evaluate(x, one-hot y), sparse loss",
     lambda: compiled("sparse_categorical_crossentropy").evaluate(X, ONE_HOT, verbose=0),
     ValueError, "Sequential.evaluate: SparseCategoricalCrossentropy: y_true shape (5, 3) "
     "matches y_pred shape (5, 3)", f"use {CATEGORICAL}")
case("fit-validation-one-hot-sparse-loss", "model.fit(x, labels, validation_data=(x, one-hot))",
     lambda: fit(compiled("sparse_categorical_crossentropy"), X, LABELS,
                 validation_data=(X, ONE_HOT)), ValueError,
     "Sequential.fit (validation_data): SparseCategoricalCrossentropy: y_true shape (5, 3) "
     "matches y_pred shape (5, 3)", f"use {CATEGORICAL}")
case("fit-labels-categorical-loss", "model.fit(x, labels (5,)) with categorical_crossentropy",
     lambda: fit(compiled("categorical_crossentropy"), X, LABELS), ValueError,
     "Sequential.fit: CategoricalCrossentropy: y_true shape (5,) holds one label per sample, "
     "but this loss expects one-hot labels of y_pred's shape (5, 3); for integer class labels "
     f"use {SPARSE}, or one-hot them with tinynet.utils.to_categorical(y, 3)")
case("fit-label-column-categorical-loss", "model.fit(x, labels (5, 1)), categorical loss",
     lambda: fit(compiled("categorical_crossentropy"), X, LABELS[:, None]), ValueError,
     "Sequential.fit: CategoricalCrossentropy: y_true shape (5, 1) holds one label per sample",
     f"use {SPARSE}")
case("fit-labels-categorical-focal", "model.fit(x, labels) with categorical_focal_crossentropy",
     lambda: fit(compiled("categorical_focal_crossentropy"), X, LABELS), ValueError,
     "Sequential.fit: CategoricalFocalCrossentropy: y_true shape (5,) holds one label per "
     "sample", "for integer class labels one-hot them with tinynet.utils.to_categorical(y, 3)")
case("fit-labels-binary-loss-3-units", "model.fit(x, labels) with 3 units, binary_crossentropy",
     lambda: fit(compiled("binary_crossentropy"), X, LABELS), ValueError,
     "Sequential.fit: BinaryCrossentropy: y_true shape (5,) holds one label per sample, but "
     "y_pred shape (5, 3) has 3 units (one 0/1 label each); for integer class labels use "
     f"{SPARSE}; for binary labels give the model one sigmoid unit")
case("fit-class-ids-binary-loss", "model.fit(x, labels 0..2) with 1 unit, binary_crossentropy",
     lambda: fit(one_unit("binary_crossentropy"), X, LABELS), ValueError,
     "Sequential.fit: BinaryCrossentropy: y_true must hold binary labels in [0, 1] (or "
     f"probabilities), got 2; for integer class labels use {SPARSE} with one softmax unit per "
     "class")
case("fit-minus-one-labels-binary-loss", "model.fit(x, -1/1 labels) with binary_crossentropy",
     lambda: fit(one_unit("binary_crossentropy"), X, np.array([1, -1, 1, -1, 1])), ValueError,
     "Sequential.fit: BinaryCrossentropy: y_true must hold binary labels in [0, 1] (or "
     "probabilities), got -1; for -1/1 labels use Hinge (loss='hinge')")
case("fit-one-hot-binary-loss-1-unit", "model.fit(x, one-hot (5, 2)) with 1 unit, binary loss",
     lambda: fit(one_unit("binary_crossentropy"), X, to_categorical(LABELS % 2, 2)),
     ValueError, "Sequential.fit: BinaryCrossentropy: y_true shape (5, 2) has 2 columns, as "
     "one-hot labels do, but y_pred shape (5, 1) has one unit; for one-hot labels use "
     f"{CATEGORICAL} with 2 softmax units; for binary labels pass one 0/1 column")
case("fit-categorical-loss-1-unit", "model.fit(x, 0/1 (5, 1)) with 1 unit, categorical loss",
     lambda: fit(one_unit("categorical_crossentropy"), X, (LABELS % 2)[:, None]), ValueError,
     "Sequential.fit: CategoricalCrossentropy: y_pred shape (5, 1) has one unit, so this loss "
     "is 0 whatever the model predicts; for binary labels use BinaryCrossentropy "
     "(loss='binary_crossentropy') with one sigmoid unit")
case("fit-sparse-loss-1-unit", "model.fit(x, 0/1 labels) with 1 unit, sparse loss",
     lambda: fit(one_unit("sparse_categorical_crossentropy"), X, LABELS % 2), ValueError,
     "Sequential.fit: SparseCategoricalCrossentropy: label 1 is out of range for 1 classes "
     "(expected 0 <= label < 1); y_pred has one unit: for binary labels use BinaryCrossentropy "
     "(loss='binary_crossentropy') with one sigmoid unit")
case("model-fit-output-one-hot-sparse", "two-output model, one-hot y for a sparse output",
     lambda: (lambda a: (lambda m: (m.compile("sgd", ["mse", "sparse_categorical_crossentropy"]),
                                     m.fit(X, [Y, ONE_HOT], verbose=0)))(
         tn.Model(a, [Dense(3, name="p")(a), Dense(3, name="q")(a)])))(Input((4,))),
     ValueError, "Model.fit: output 'q': SparseCategoricalCrossentropy: y_true shape (5, 3) "
     "matches y_pred shape (5, 3)", f"use {CATEGORICAL}")
case("loss-scce-one-hot", "SparseCategoricalCrossentropy()(one-hot, y_pred)",
     lambda: losses.SparseCategoricalCrossentropy()(ONE_HOT, np.full((5, 3), 1 / 3)),
     ValueError, "SparseCategoricalCrossentropy: y_true shape (5, 3) matches y_pred shape "
     f"(5, 3), as one-hot labels do", f"use {CATEGORICAL}")
case("loss-bce-labels-3-units", "BinaryCrossentropy()(labels (5,), y_pred (5, 3))",
     lambda: losses.BinaryCrossentropy()(LABELS, np.full((5, 3), 0.5)), ValueError,
     "BinaryCrossentropy: y_true shape (5,) holds one label per sample, but y_pred shape "
     f"(5, 3) has 3 units", f"use {SPARSE}")


# ============================================================================================
# files: save's suffixes, and errors that name the user's path
# ============================================================================================
case("save-suffix-h5", "model.save('model.h5')", lambda: mlp().save("model.h5"), ValueError,
     "save_model: path " + SUFFIX, "got 'model.h5'; e.g. 'model.safetensors'")
case("save-suffix-keras", "model.save_weights('model.keras') (.keras holds a whole model)",
     lambda: mlp().save_weights("model.keras"), ValueError,
     "save_weights: path " + WEIGHTS_SUFFIX, "got 'model.keras'; e.g. 'model.safetensors'")
case("save-suffix-none", "model.save('model')", lambda: mlp().save("model"), ValueError,
     "save_model: path " + SUFFIX, "got 'model'; e.g. 'model.safetensors'")
case("save-weights-suffix", "model.save_weights('weights.h5')",
     lambda: mlp().save_weights("weights.h5"), ValueError,
     "save_weights: path " + WEIGHTS_SUFFIX, "got 'weights.h5'; e.g. 'weights.safetensors'")
case("save-missing-folder", "model.save('no_such_folder/model.safetensors')",
     lambda: mlp().save("no_such_folder/model.safetensors"), FileNotFoundError,
     "save_model: cannot write 'no_such_folder/model.safetensors': the folder "
     "'no_such_folder' does not exist")
case("save-weights-missing-folder", "save_weights(model, 'no_such_folder/w.safetensors')",
     lambda: saving.save_weights(mlp(), "no_such_folder/w.safetensors"), FileNotFoundError,
     "save_weights: cannot write 'no_such_folder/w.safetensors': the folder 'no_such_folder' "
     "does not exist")
case("load-model-missing-folder", "tn.load_model('no_such_folder/model.safetensors')",
     lambda: tn.load_model("no_such_folder/model.safetensors"), FileNotFoundError,
     "load_model: cannot read 'no_such_folder/model.safetensors': the folder 'no_such_folder' "
     "does not exist")
case("load-model-missing-file", "tn.load_model('no_such_model.safetensors')",
     lambda: tn.load_model("no_such_model.safetensors"), FileNotFoundError,
     "load_model: cannot read 'no_such_model.safetensors': No such file or directory")
case("load-weights-missing-file", "model.load_weights('no_such_weights.safetensors')",
     lambda: mlp().load_weights("no_such_weights.safetensors"), FileNotFoundError,
     "load_weights: cannot read 'no_such_weights.safetensors': No such file or directory")


# ============================================================================================
# custom code in files: registered names, custom_objects, custom_object_scope (issue 44)
# ============================================================================================
class Scaled(tn.layers.Layer):  # a Keras-style call() layer without get_config
    def __init__(self, scale=1.0, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale

    def call(self, x):
        return x * self.scale


def _register_twice() -> None:
    """Two functions under one registered name (in a private copy of the registry)."""
    from unittest import mock

    from tinynet import custom_objects as objects

    def first(y_true, y_pred):
        return y_pred

    def second(y_true, y_pred):
        return y_pred

    with mock.patch.dict(objects._GLOBAL), mock.patch.dict(objects._NAMES):
        saving.register_keras_serializable(package="Mine", name="fn")(first)
        saving.register_keras_serializable(package="Mine", name="fn")(second)


REGISTERED = "register it with @tinynet.saving.register_keras_serializable() or pass it in " \
             "custom_objects"
case("register-serializable-package-int", "register_keras_serializable(package=3)",
     lambda: saving.register_keras_serializable(package=3), TypeError,
     "register_keras_serializable: package must be a non-empty str, got 3")
case("register-serializable-name-empty", "register_keras_serializable(name='')",
     lambda: saving.register_keras_serializable(name=""), TypeError,
     "register_keras_serializable: name must be a non-empty str or None, got ''")
case("register-serializable-taken", "register_keras_serializable(name='fn') on two functions",
     _register_twice, ValueError,
     "register_keras_serializable: 'Mine>fn' is already registered for <function")
case("custom-object-scope-list", "custom_object_scope([Dense])",
     lambda: saving.custom_object_scope([Dense]), TypeError,
     "custom_object_scope: custom_objects must be a dict {name: class or function} or None, "
     "got list")
case("custom-object-scope-key-int", "custom_object_scope({3: Dense})",
     lambda: saving.custom_object_scope({3: Dense}), TypeError,
     "custom_object_scope: custom_objects keys must be non-empty str names, got 3")
case("load-model-custom-objects-list", "tn.load_model('m.safetensors', custom_objects=[Dense])",
     lambda: tn.load_model("m.safetensors", custom_objects=[Dense]), TypeError,
     "load_model: custom_objects must be a dict {name: class or function} or None, got list")
case("losses-get-unknown-class", "losses.get({'class_name': 'os>system', 'config': {}})",
     lambda: losses.get({"class_name": "os>system", "config": {}}), ValueError,
     "Unknown loss 'os>system': not a built-in loss", "nor a Loss subclass registered with "
     "@tinynet.saving.register_keras_serializable() or passed in custom_objects")
case("losses-get-unknown-fn", "losses.get({'class_name': 'LossFunctionWrapper', "
     "'config': {'fn': 'my_loss'}})",
     lambda: losses.get({"class_name": "LossFunctionWrapper", "config": {"fn": "my_loss"}}),
     ValueError, f"LossFunctionWrapper: fn: unknown object 'my_loss'; {REGISTERED}")
case("metric-wrapper-unknown-fn", "MeanMetricWrapper.from_config({'fn': 'os>system'})",
     lambda: metrics.MeanMetricWrapper.from_config({"fn": "os>system"}), ValueError,
     f"MeanMetricWrapper: fn: unknown object 'os>system'; {REGISTERED}")
case("save-call-layer-config-not-json", "model.save(...) with Scaled(scale=np.float32(2))",
     lambda: tn.Sequential([Input((4,)), Scaled(np.float32(2))]).save("m.safetensors"),
     ValueError, "save_model: Scaled 'scaled': cannot make its config: it was created with "
     "arguments that are not JSON-able (scale=np.float32(2.0)); define get_config(self) "
     "returning its constructor arguments")



# ============================================================================================
# regularizers, custom metrics, Lambda (issue 44)
# ============================================================================================
class _Hits(metrics.Metric):  # a Keras-style metric (update_state/result, variables)
    def update_state(self, y_true, y_pred, sample_weight=None):
        pass

    def result(self):
        return 0.0


def _unregistered_tanh(x):  # a Lambda with it cannot be saved
    return tn.ops.tanh(x)


REGULARIZER_NAMES = "expected one of 'l1', 'l2', 'l1l2' (or 'L1', 'L2', 'L1L2'), a Regularizer " \
                    "or a callable"
case("regularizer-l1-negative", "regularizers.L1(-1.0)", lambda: tn.regularizers.L1(-1.0),
     ValueError, "L1: l1 must be a non-negative finite float, got -1.0")
case("regularizer-l2-str", "regularizers.L2('0.1')", lambda: tn.regularizers.L2("0.1"),
     TypeError, "L2: l2 must be a non-negative float, got '0.1'")
case("regularizer-l1l2-nan", "regularizers.L1L2(l1=nan)", lambda: tn.regularizers.L1L2(l1=NAN),
     ValueError, "L1L2: l1 must be a non-negative finite float, got nan")
case("regularizers-get-unknown", "regularizers.get('l3')", lambda: tn.regularizers.get("l3"),
     ValueError, f"regularizers.get: unknown regularizer 'l3'; {REGULARIZER_NAMES}")
case("regularizers-get-int", "regularizers.get(3)", lambda: tn.regularizers.get(3), TypeError,
     "regularizers.get: regularizer must be None, a name, a Regularizer or a callable, got 3")
case("regularizers-deserialize-unknown", "regularizers.deserialize({'class_name': "
     "'os>system'})",
     lambda: tn.regularizers.deserialize({"class_name": "os>system", "config": {}}), ValueError,
     "regularizers.deserialize: unknown regularizer class 'os>system'; expected one of L1, L2, "
     "L1L2 or a registered Regularizer subclass")
case("regularizers-deserialize-unregistered", "regularizers.deserialize({..., "
     "'registered_name': 'os>system'})",
     lambda: tn.regularizers.deserialize({"class_name": "L2", "registered_name": "os>system",
                                          "config": {}}), ValueError,
     f"regularizers.deserialize: registered class: unknown object 'os>system'; {REGISTERED}")
case("regularizers-serialize-lambda", "regularizers.serialize(lambda w: w)",
     lambda: tn.regularizers.serialize(lambda w: w), ValueError,
     "regularizers.serialize: cannot serialize the function '<lambda>': register it with "
     "@tinynet.saving.register_keras_serializable()")
case("dense-kernel-regularizer-unknown", "Dense(2, kernel_regularizer='l3')",
     lambda: Dense(2, kernel_regularizer="l3"), ValueError,
     f"Dense: kernel_regularizer: unknown regularizer 'l3'; {REGULARIZER_NAMES}")
case("conv2d-activity-regularizer-int", "Conv2D(2, 3, activity_regularizer=3)",
     lambda: Conv2D(2, 3, activity_regularizer=3), TypeError,
     "Conv2D: activity_regularizer: regularizer must be None, a name, a Regularizer or a "
     "callable, got 3")
case("separable-pointwise-regularizer-unknown",
     "SeparableConv2D(2, 3, pointwise_regularizer='big')",
     lambda: SeparableConv2D(2, 3, pointwise_regularizer="big"), ValueError,
     f"SeparableConv2D: pointwise_regularizer: unknown regularizer 'big'; {REGULARIZER_NAMES}")
case("depthwise-regularizer-bad-factor", "DepthwiseConv2D(3, depthwise_regularizer='l1') with "
     "L2(-2.0)", lambda: DepthwiseConv2D(3, depthwise_regularizer=tn.regularizers.L2(-2.0)),
     ValueError, "L2: l2 must be a non-negative finite float, got -2.0")
case("metric-add-variable-negative", "Metric.add_variable(shape=(-1,))",
     lambda: _Hits().add_variable(shape=(-1,)), ValueError,
     "_Hits.add_variable: shape must hold non-negative ints, got (-1,)")
case("metric-add-variable-shape-str", "Metric.add_variable(shape='3')",
     lambda: _Hits().add_variable(shape="3"), TypeError,
     "_Hits.add_variable: shape must be a tuple of ints, got '3'")
case("metric-add-variable-initializer", "Metric.add_variable((), initializer='glorot_uniform')",
     lambda: _Hits().add_variable((), initializer="glorot_uniform"), ValueError,
     "_Hits.add_variable: initializer must be 'zeros', 'ones', a number or a callable "
     "(shape, dtype) -> array, got 'glorot_uniform'")
case("metric-add-weight-initializer-object", "Metric.add_weight((2,), initializer=object())",
     lambda: _Hits().add_weight((2,), initializer=object()), TypeError,
     "_Hits.add_variable: initializer must be 'zeros', 'ones', a number or a callable")
case("metric-add-variable-dtype", "Metric.add_variable((), dtype='string')",
     lambda: _Hits().add_variable((), dtype="string"), ValueError,
     "_Hits.add_variable: dtype must be a bool, integer or float dtype name (e.g. 'float32', "
     "'int32'), got 'string'")
case("metric-add-variable-aggregation", "Metric.add_variable((), aggregation='max')",
     lambda: _Hits().add_variable((), aggregation="max"), ValueError,
     "_Hits.add_variable: aggregation must be one of 'none', 'mean', 'sum', "
     "'only_first_replica', got 'max'")
case("metric-dtype-complex", "Metric(dtype='complex64')", lambda: _Hits(dtype="complex64"),
     ValueError, "_Hits: dtype must be a bool, integer or float dtype name (e.g. 'float32', "
     "'int32'), got 'complex64'")
case("metric-variable-assign-shape", "variable.assign([1, 2, 3]) on shape (2,)",
     lambda: _Hits().add_variable((2,)).assign([1.0, 2.0, 3.0]), ValueError,
     "Variable 'variable'.assign: the value must have the variable's shape (2,), got (3,)")
case("metric-variable-assign-add-str", "variable.assign_add('a')",
     lambda: _Hits().add_variable(()).assign_add("a"), TypeError,
     "Variable 'variable'.assign_add: expected numbers, got 'a' (dtype <U1)")
case("lambda-function-int", "Lambda(3)", lambda: tn.layers.Lambda(3), TypeError,
     "Lambda: function must be a function (written with tinynet.ops), got 3")
case("lambda-output-shape-str", "Lambda(ops.tanh, output_shape='x')",
     lambda: tn.layers.Lambda(tn.ops.tanh, output_shape="x"), TypeError,
     "Lambda: output_shape must be None, a tuple of ints (the output shape without the batch "
     "axis), a list of such tuples or a callable input_shape -> output_shape, got 'x'")
case("lambda-output-shape-negative", "Lambda(ops.tanh, output_shape=(3, -1))",
     lambda: tn.layers.Lambda(tn.ops.tanh, output_shape=(3, -1)), ValueError,
     "Lambda: output_shape must be None, a tuple of ints", "got (3, -1)")
case("lambda-arguments-list", "Lambda(ops.tanh, arguments=[1])",
     lambda: tn.layers.Lambda(tn.ops.tanh, arguments=[1]), TypeError,
     "Lambda: arguments must be a dict of keyword arguments for the function, got [1]")
case("lambda-mask-int", "Lambda(ops.tanh, mask=3)",
     lambda: tn.layers.Lambda(tn.ops.tanh, mask=3), TypeError,
     "Lambda: mask must be None or a callable, got 3")
case("lambda-save-python-lambda", "model.save(...) with Lambda(lambda t: ops.tanh(t))",
     lambda: tn.Sequential([Input((3,)), tn.layers.Lambda(lambda t: tn.ops.tanh(t))]).save(
         "m.safetensors"), ValueError,
     "Lambda 'lambda': cannot save its function, a Python lambda: tinynet never stores code "
     "in a file", "Register the function with @tinynet.saving.register_keras_serializable() "
     "so that the file names it, or write a custom layer instead")
case("lambda-save-unregistered-function", "model.save(...) with Lambda(my_function)",
     lambda: tn.Sequential([Input((3,)), tn.layers.Lambda(_unregistered_tanh)]).save(
         "m.safetensors"), ValueError,
     "Lambda 'lambda': cannot save its function, the function '_unregistered_tanh'")
case("lambda-from-config-bytecode", "Lambda.from_config({'function': {'class_name': "
     "'__lambda__', ...}})",
     lambda: tn.layers.Lambda.from_config({"function": {"class_name": "__lambda__",
                                                        "config": {"code": "..."}}}),
     ValueError, "Lambda.from_config: function is a Python lambda stored as bytecode (a Keras "
     "file); tinynet never runs code from a file")
case("compile-no-loss-no-added-loss", "compile(optimizer='sgd') then fit on plain Dense",
     lambda: fit(_no_loss_model()), ValueError,
     "fit: no loss to compute; pass loss= to compile()")

def _no_loss_model() -> tn.Sequential:
    model = mlp()
    model.compile(optimizer="sgd")
    return model


# ============================================================================================
# tinynet.ops, tinynet.random, tinynet.initializers, add_weight and call() layers,
# activations and losses (the Keras-3 surfaces): an op's argument errors are OpError (a
# ValueError naming the op, its argument and the shapes)
# ============================================================================================
V23 = np.ones((2, 3), dtype=np.float32)
case("ops-add-broadcast", "ops.add(x (2, 3), y (4,))", lambda: tn.ops.add(V23, z(4)), OpError,
     "add: shapes do not broadcast: x1 (2, 3), x2 (4,)")
case("ops-add-str", "ops.add('a', x)", lambda: tn.ops.add("a", V23), TypeError,
     "add: x1 must be a real-valued tensor, got str of dtype <U1")
case("ops-multiply-none", "ops.multiply(x, None)", lambda: tn.ops.multiply(V23, None), TypeError,
     "multiply: x2 must be a tensor, an array or a number, got None")
case("ops-matmul-inner", "ops.matmul(x (2, 3), y (4, 5))",
     lambda: tn.ops.matmul(V23, z(4, 5)), OpError,
     "matmul: inner sizes differ: x1 (2, 3), x2 (4, 5)")
case("ops-reshape-size", "ops.reshape(x (2, 3), (4, 2))",
     lambda: tn.ops.reshape(V23, (4, 2)), OpError,
     "reshape: cannot reshape x of shape (2, 3) (6 entries) into (4, 2)")
case("ops-sum-axis", "ops.sum(x (2, 3), axis=2)", lambda: tn.ops.sum(V23, axis=2), OpError,
     "sum: axis 2 is out of range for a tensor of rank 2")
case("ops-max-axis-float", "ops.max(x, axis=1.0)", lambda: tn.ops.max(V23, axis=1.0), TypeError,
     "max: axis must be None, an int or a tuple of ints, got 1.0")
case("ops-concatenate-shapes", "ops.concatenate([x (2, 3), y (2, 4)])",
     lambda: tn.ops.concatenate([V23, z(2, 4)]), OpError,
     "concatenate: shapes (2, 3), (2, 4) do not match outside axis 0")
case("ops-einsum-term", "ops.einsum('ijk->k', x (2, 3))",
     lambda: tn.ops.einsum("ijk->k", V23), OpError,
     "einsum: term 'ijk' names 3 axes, but its operand has shape (2, 3)")
case("ops-conv-channels", "ops.conv(x (2, 5, 5, 4), kernel (3, 3, 3, 8))",
     lambda: tn.ops.conv(z(2, 5, 5, 4), z(3, 3, 3, 8)), OpError,
     "conv: kernel has 3 input channels but inputs have 4 (inputs (2, 5, 5, 4), kernel "
     "(3, 3, 3, 8))")
case("ops-max-pool-size", "ops.max_pool(x (2, 5, 5, 4), 6)",
     lambda: tn.ops.max_pool(z(2, 5, 5, 4), 6), OpError,
     "max_pool: the pool_size 6 does not fit the inputs with padding 'valid' (the output "
     "would be empty) (inputs (2, 5, 5, 4))")
case("ops-one-hot-zero-classes", "ops.one_hot([1], 0)",
     lambda: tn.ops.one_hot(np.array([1]), 0), OpError,
     "one_hot: num_classes must be a positive int, got 0")
case("ops-take-out-of-range", "ops.take(x (2, 3), [0, 3], axis=1)",
     lambda: tn.ops.take(V23, np.array([0, 3]), axis=1), IndexError,
     "take: indices must lie in [-3, 3) for axis 1 of length 3, got values from 0 to 3")
case("ops-cast-dtype", "ops.cast(x, 'nonsense')", lambda: tn.ops.cast(V23, "nonsense"), TypeError,
     "cast: dtype must be a NumPy dtype name such as 'float32', got 'nonsense'")
case("ops-where-one-branch", "ops.where(x > 0, x)", lambda: tn.ops.where(V23 > 0, V23), OpError,
     "where: give both x1 and x2, or neither")
case("ops-pad-mode", "ops.pad(x, 1, mode='wrap')", lambda: tn.ops.pad(V23, 1, mode="wrap"),
     OpError, "pad: mode must be 'constant', 'reflect', 'symmetric' or 'edge', got 'wrap'")
case("ops-zeros-shape-str", "ops.zeros('a')", lambda: tn.ops.zeros("a"), TypeError,
     "zeros: shape must be an int or a tuple of ints, got 'a'")

RANDOM_SEED = "seed must be a keras.random.SeedGenerator (tinynet.random.SeedGenerator), a " \
              "non-negative int or None"
case("random-normal-shape-negative", "random.normal((2, -1))",
     lambda: tn.random.normal((2, -1)), ValueError,
     "random.normal: shape must hold known non-negative ints, got (2, -1)")
case("random-normal-shape-none", "random.normal((2, None))",
     lambda: tn.random.normal((2, None)), ValueError,
     "random.normal: shape must hold known non-negative ints, got (2, None)")
case("random-normal-shape-str", "random.normal('3')", lambda: tn.random.normal("3"), TypeError,
     "random.normal: shape must be a tuple of ints, got '3'")
case("random-normal-seed-negative", "random.normal(3, seed=-1)",
     lambda: tn.random.normal(3, seed=-1), ValueError,
     "random.normal: seed must be None or a non-negative int, got -1")
case("random-normal-seed-float", "random.normal(3, seed=1.5)",
     lambda: tn.random.normal(3, seed=1.5), TypeError, f"random.normal: {RANDOM_SEED}, got 1.5")
case("random-normal-dtype-int", "random.normal(3, dtype='int32')",
     lambda: tn.random.normal(3, dtype="int32"), TypeError,
     "random.normal: dtype must be a float dtype, got 'int32'")
case("random-normal-dtype-unknown", "random.normal(3, dtype='bogus')",
     lambda: tn.random.normal(3, dtype="bogus"), TypeError,
     "random.normal: dtype must be a float dtype, got 'bogus'")
case("random-normal-stddev-str", "random.normal(3, stddev='a')",
     lambda: tn.random.normal(3, stddev="a"), TypeError,
     "random.normal: stddev must be a real number, got 'a'")
case("random-uniform-bounds-order", "random.uniform(3, minval=1, maxval=0)",
     lambda: tn.random.uniform(3, minval=1, maxval=0), ValueError,
     "random.uniform: minval must not exceed maxval, got minval=1.0 and maxval=0.0")
case("random-uniform-minval-nan", "random.uniform(3, minval=nan)",
     lambda: tn.random.uniform(3, minval=NAN), ValueError,
     "random.uniform: minval must be a finite number, got nan")
case("random-truncated-normal-dtype-bool", "random.truncated_normal(3, dtype='bool')",
     lambda: tn.random.truncated_normal(3, dtype="bool"), TypeError,
     "random.truncated_normal: dtype must be a float dtype, got 'bool'")
case("random-truncated-normal-seed-str", "random.truncated_normal(3, seed='a')",
     lambda: tn.random.truncated_normal(3, seed="a"), TypeError,
     f"random.truncated_normal: {RANDOM_SEED}, got 'a'")
case("random-randint-empty-range", "random.randint(3, 5, 2)",
     lambda: tn.random.randint(3, 5, 2), ValueError,
     "random.randint: minval must be less than maxval (the range [minval, maxval) must not be "
     "empty), got minval=5 and maxval=2")
case("random-randint-minval-float", "random.randint(3, 0.5, 5)",
     lambda: tn.random.randint(3, 0.5, 5), TypeError,
     "random.randint: minval must be an int, got 0.5")
case("random-randint-dtype-float", "random.randint(3, 0, 5, dtype='float32')",
     lambda: tn.random.randint(3, 0, 5, dtype="float32"), TypeError,
     "random.randint: dtype must be an integer dtype, got 'float32'")
case("random-dropout-rate-one", "random.dropout(x, 1.0)",
     lambda: tn.random.dropout(V23, 1.0), ValueError,
     "random.dropout: rate must be a float in [0, 1), got 1.0")
case("random-dropout-rate-str", "random.dropout(x, '0.5')",
     lambda: tn.random.dropout(V23, "0.5"), TypeError,
     "random.dropout: rate must be a float in [0, 1), got '0.5'")
case("random-dropout-noise-shape", "random.dropout(x (2, 3), 0.5, noise_shape=(3, 3))",
     lambda: tn.random.dropout(V23, 0.5, noise_shape=(3, 3)), ValueError,
     "random.dropout: noise_shape must be None or a tuple of 2 entries, each None, 1 or the "
     "size of that axis of inputs (2, 3), got (3, 3)")
case("random-dropout-noise-shape-rank", "random.dropout(x (2, 3), 0.5, noise_shape=(2,))",
     lambda: tn.random.dropout(V23, 0.5, noise_shape=(2,)), ValueError,
     "random.dropout: noise_shape must be None or a tuple of 2 entries", "got (2,)")
case("random-shuffle-axis", "random.shuffle(x (2, 3), axis=2)",
     lambda: tn.random.shuffle(V23, axis=2), ValueError,
     "random.shuffle: axis 2 is out of range for x of rank 2 (shape (2, 3))")
case("random-shuffle-scalar", "random.shuffle(3)", lambda: tn.random.shuffle(3), ValueError,
     "random.shuffle: x must have rank >= 1, got a scalar")
case("random-shuffle-seed-bool", "random.shuffle(x, seed=True)",
     lambda: tn.random.shuffle(V23, seed=True), TypeError,
     f"random.shuffle: {RANDOM_SEED}, got True")
case("random-seed-generator-negative", "random.SeedGenerator(-1)",
     lambda: tn.random.SeedGenerator(-1), ValueError,
     "SeedGenerator: seed must be None or a non-negative int, got -1")
case("random-seed-generator-str", "random.SeedGenerator('a')",
     lambda: tn.random.SeedGenerator("a"), TypeError,
     "SeedGenerator: seed must be None or a non-negative int, got 'a'")
kw("random-seed-generator-keyword", "random.SeedGenerator(seed=1, sed=2)",
   lambda: tn.random.SeedGenerator(seed=1, sed=2),
   f"SeedGenerator {GOT} 'sed'; did you mean 'seed'?")

INIT = tn.initializers
INIT_NAMES = "expected one of glorot_uniform, glorot_normal, he_uniform, he_normal, zeros, " \
             "ones, lecun_uniform, lecun_normal, uniform, random_uniform, normal, random_normal, " \
             "orthogonal"
case("init-random-normal-stddev-str", "initializers.RandomNormal(stddev='a')",
     lambda: INIT.RandomNormal(stddev="a"), TypeError,
     "RandomNormal: stddev must be a real number, got 'a'")
case("init-random-normal-seed-negative", "initializers.RandomNormal(seed=-1)",
     lambda: INIT.RandomNormal(seed=-1), ValueError,
     "RandomNormal: seed must be None or a non-negative int, got -1")
case("init-random-uniform-bounds-order", "initializers.RandomUniform(1.0, 0.0)",
     lambda: INIT.RandomUniform(1.0, 0.0), ValueError,
     "RandomUniform: minval must not exceed maxval, got minval=1.0 and maxval=0.0")
case("init-random-uniform-seed-float", "initializers.RandomUniform(seed=1.5)",
     lambda: INIT.RandomUniform(seed=1.5), TypeError,
     "RandomUniform: seed must be None or a non-negative int, got 1.5")
case("init-truncated-normal-mean-inf", "initializers.TruncatedNormal(mean=inf)",
     lambda: INIT.TruncatedNormal(mean=INF), ValueError,
     "TruncatedNormal: mean must be a finite number, got inf")
case("init-constant-list", "initializers.Constant([1, 2])", lambda: INIT.Constant([1, 2]),
     TypeError, "Constant: value must be a real number, got [1, 2]")
case("init-he-normal-seed-str", "initializers.HeNormal(seed='x')",
     lambda: INIT.HeNormal(seed="x"), TypeError,
     "HeNormal: seed must be None or a non-negative int, got 'x'")
case("init-he-normal-shape-negative", "initializers.HeNormal()((2, -1))",
     lambda: INIT.HeNormal()((2, -1)), ValueError,
     "HeNormal: shape must hold known non-negative ints, got (2, -1)")
case("init-glorot-uniform-dtype-int", "initializers.GlorotUniform()((2, 3), dtype='int32')",
     lambda: INIT.GlorotUniform()((2, 3), dtype="int32"), TypeError,
     "GlorotUniform: dtype must be a float dtype, got 'int32'")
case("init-zeros-shape-str", "initializers.Zeros()('3')", lambda: INIT.Zeros()("3"), TypeError,
     "Zeros: shape must be a tuple of ints, got '3'")
case("init-base-call", "initializers.Initializer()((2,))",
     lambda: INIT.Initializer()((2,)), NotImplementedError,
     "Initializer: define __call__(shape, dtype=None)")
case("init-get-unknown", "initializers.get('he_normall')", lambda: INIT.get("he_normall"),
     ValueError, f"unknown initializer 'he_normall'; {INIT_NAMES}")
case("init-get-int", "initializers.get(3)", lambda: INIT.get(3), TypeError,
     "initializer must be a name, a config dict, an Initializer or a callable shape -> array, "
     "got 3")
case("init-deserialize-unknown-class", "initializers.deserialize({'class_name': 'Bogus', ...})",
     lambda: INIT.deserialize({"class_name": "Bogus", "config": {}}), ValueError,
     "initializers.deserialize: unknown initializer class 'Bogus'; expected one of Zeros, Ones, "
     "Constant, RandomNormal, RandomUniform, TruncatedNormal, GlorotUniform, GlorotNormal, "
     "HeUniform, HeNormal, LecunUniform, LecunNormal, Orthogonal or one in custom_objects")
case("init-deserialize-int", "initializers.deserialize(3)", lambda: INIT.deserialize(3),
     ValueError, "initializers.deserialize: expected a name or a dict with 'class_name' and "
     "'config', got 3")
case("init-deserialize-config-list", "initializers.deserialize({..., 'config': [1]})",
     lambda: INIT.deserialize({"class_name": "RandomNormal", "config": [1]}), ValueError,
     "initializers.deserialize: 'config' must be a dict, got [1]")
kw("init-deserialize-config-keyword", "initializers.deserialize({'class_name': "
   "'RandomNormal', 'config': {'stdev': 1}})",
   lambda: INIT.deserialize({"class_name": "RandomNormal", "config": {"stdev": 1.0}}),
   f"RandomNormal.from_config {GOT} 'stdev'; did you mean 'stddev'?")
case("init-serialize-function", "initializers.serialize(lambda shape: ...)",
     lambda: INIT.serialize(_unregistered_tanh), TypeError,
     "initializers.serialize: cannot serialize <function _unregistered_tanh", "only names and "
     "Initializer objects have a config")


class PlainCall(tn.layers.Layer):  # a call() layer, for add_weight
    def call(self, inputs):
        return inputs


class NoComputation(tn.layers.Layer):  # neither call() nor forward()/backward()
    pass


class NumpyInCall(tn.layers.Layer):  # call() leaves tinynet.ops for NumPy
    def call(self, inputs):
        return tn.ops.convert_to_tensor(np.asarray(inputs) * 2)


class SubclassNet(tn.Model):  # a subclassed model
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = Dense(2)

    def call(self, inputs):
        return self.dense(inputs)


def _backward_through_numpy() -> Any:
    layer = NumpyInCall()
    layer(V23)
    return layer.backward(V23)


ADD_WEIGHT = "PlainCall 'plain_call': add_weight"
case("layer-add-weight-shape-negative", "layer.add_weight(shape=(2, -1))",
     lambda: PlainCall().add_weight(shape=(2, -1)), ValueError,
     f"{ADD_WEIGHT}: shape must hold known non-negative ints, got (2, -1)")
case("layer-add-weight-shape-str", "layer.add_weight(shape='3')",
     lambda: PlainCall().add_weight(shape="3"), TypeError,
     f"{ADD_WEIGHT}: shape must be a tuple of ints, got '3'")
case("layer-add-weight-initializer-unknown", "layer.add_weight((2,), initializer='bogus')",
     lambda: PlainCall().add_weight(shape=(2,), initializer="bogus"), ValueError,
     f"{ADD_WEIGHT}: initializer: unknown initializer 'bogus'; {INIT_NAMES}")
case("layer-add-weight-initializer-int", "layer.add_weight((2,), initializer=3)",
     lambda: PlainCall().add_weight(shape=(2,), initializer=3), TypeError,
     f"{ADD_WEIGHT}: initializer must be an initializer name, None or a callable shape -> "
     "array, got 3")
case("layer-add-weight-name-empty", "layer.add_weight((2,), name='')",
     lambda: PlainCall().add_weight(shape=(2,), name=""), TypeError,
     f"{ADD_WEIGHT}: name must be a non-empty str or None, got ''")
case("layer-no-computation", "a Layer subclass with neither call() nor forward(), called",
     lambda: NoComputation()(V23), NotImplementedError,
     "NoComputation 'no_computation' has no computation: define call(self, inputs) with "
     "tinynet.ops (backward is derived), or forward(self, x, training=False) and "
     "backward(self, grad_output)")
case("layer-call-numpy", "backward of a call() layer that used np.asarray inside call()",
     _backward_through_numpy, RuntimeError,
     "NumpyInCall 'numpy_in_call': cannot run backward: it turned a tensor of shape (2, 3) "
     "into a NumPy array inside call(), which cuts the record of the ops; write call() with "
     "tinynet.ops (ops.matmul, ops.relu, ...) or Tensor operators, not NumPy")
case("layer-two-positional-tensors", "Dense(2)(x, x)", lambda: Dense(2)(V23, V23), TypeError,
     "Dense 'dense': called with 2 positional arguments; pass several inputs as one list, "
     "layer([a, b]), and training as a keyword, training=True")
kw("model-subclass-keyword", "tn.Model subclass SubclassNet(nmae='net')",
   lambda: SubclassNet(nmae="net"),
   f"SubclassNet {GOT} 'nmae'; did you mean 'name'?")
case("activations-softmax-axis", "activations.softmax(x (2, 3), axis=2)",
     lambda: tn.activations.softmax(V23, axis=2), OpError,
     "softmax: axis 2 is out of range for a tensor of rank 2")
case("activations-get-unknown", "activations.get('bogus')",
     lambda: tn.activations.get("bogus"), ValueError,
     "activation must be one of 'elu', 'gelu', 'leaky_relu', 'linear', 'relu', 'sigmoid', "
     "'silu', 'softmax', 'tanh', got 'bogus'")
case("losses-loss-reduction", "losses.Loss(reduction='bogus')",
     lambda: losses.Loss(reduction="bogus"), ValueError,
     "Loss: reduction must be one of 'sum_over_batch_size', 'sum', 'mean', "
     "'mean_with_sample_weight', 'none', None, got 'bogus'")
case("losses-function-wrapper-int", "losses.LossFunctionWrapper(3)",
     lambda: losses.LossFunctionWrapper(3), TypeError,
     "LossFunctionWrapper: fn must be callable, got 3")
case("utils-pad-sequences-padding", "utils.pad_sequences([[1]], padding='left')",
     lambda: tn.utils.pad_sequences([[1]], padding="left"), ValueError,
     "pad_sequences: padding must be 'pre' or 'post', got 'left'")
case("utils-pad-sequences-str-value", "utils.pad_sequences([[1]], value='x')",
     lambda: tn.utils.pad_sequences([[1]], value="x"), ValueError,
     "pad_sequences: value 'x' is a string but dtype is int32; use dtype=object")
case("utils-normalize-axis", "utils.normalize(x (2, 3), axis=2)",
     lambda: tn.utils.normalize(z(2, 3), axis=2), ValueError,
     "normalize: axis must be in [-2, 2) for x of shape (2, 3), got 2")
case("utils-split-dataset-no-size", "utils.split_dataset(np.arange(10))",
     lambda: tn.utils.split_dataset(np.arange(10)), ValueError,
     "split_dataset: at least one of left_size and right_size must be given")
case("utils-split-dataset-left-size", "utils.split_dataset(np.arange(10), left_size=1.5)",
     lambda: tn.utils.split_dataset(np.arange(10), left_size=1.5), ValueError,
     "split_dataset: left_size must be a float in (0, 1)", "got 1.5")
case("utils-timeseries-sampling-rate", "utils.timeseries_dataset_from_array(x, None, 3, "
     "sampling_rate=0)",
     lambda: tn.utils.timeseries_dataset_from_array(np.arange(20), None, 3, sampling_rate=0),
     ValueError, "timeseries_dataset_from_array: sampling_rate must be an int >= 1, got 0")
case("utils-set-random-seed-float", "utils.set_random_seed(1.5)",
     lambda: tn.utils.set_random_seed(1.5), TypeError,
     "set_random_seed: seed must be a non-negative int, got 1.5")


# -- issue 45 surfaces: metrics, small layers and merge functions, tn.models/saving ---------
case('metric-tp-thresholds-high', 'tn.metrics.TruePositives(thresholds=1.5)',
     lambda: tn.metrics.TruePositives(thresholds=1.5), ValueError,
     'TruePositives: thresholds must be None, a float in [0, 1] or a list of floats in [0, 1], got 1.5')
case('metric-fp-thresholds-negative', 'tn.metrics.FalsePositives(thresholds=[0.2, -0.1])',
     lambda: tn.metrics.FalsePositives(thresholds=[0.2, -0.1]), ValueError,
     'FalsePositives: thresholds must be None, a float in [0, 1] or a list of floats in [0, 1], got [0.2, -0.1]')
case('metric-tn-thresholds-str', "tn.metrics.TrueNegatives(thresholds='0.5')",
     lambda: tn.metrics.TrueNegatives(thresholds='0.5'), TypeError,
     "TrueNegatives: thresholds must be None, a float in [0, 1] or a list of floats in [0, 1], got '0.5'")
case('metric-fn-thresholds-empty', 'tn.metrics.FalseNegatives(thresholds=[])',
     lambda: tn.metrics.FalseNegatives(thresholds=[]), ValueError,
     'FalseNegatives: thresholds must be None, a float in [0, 1] or a list of floats in [0, 1], got []')
case('metric-fbeta-average', "tn.metrics.FBetaScore(average='mean')",
     lambda: tn.metrics.FBetaScore(average='mean'), ValueError,
     "FBetaScore: average must be one of None, 'micro', 'macro', 'weighted', got 'mean'")
case('metric-fbeta-beta-zero', 'tn.metrics.FBetaScore(beta=0.0)',
     lambda: tn.metrics.FBetaScore(beta=0.0), ValueError,
     'FBetaScore: beta must be a float > 0, got 0.0')
case('metric-fbeta-beta-str', "tn.metrics.FBetaScore(beta='2')",
     lambda: tn.metrics.FBetaScore(beta='2'), TypeError,
     "FBetaScore: beta must be a float > 0, got '2'")
case('metric-f1-threshold-zero', 'tn.metrics.F1Score(threshold=0.0)',
     lambda: tn.metrics.F1Score(threshold=0.0), ValueError,
     'F1Score: threshold must be None or a float in (0, 1], got 0.0')
case('metric-cosine-axis-float', 'tn.metrics.CosineSimilarity(axis=1.0)',
     lambda: tn.metrics.CosineSimilarity(axis=1.0), TypeError,
     'CosineSimilarity: axis must be an int, got 1.0')
case('metric-f1-update-rank', 'tn.metrics.F1Score().update_state(np.ones(3), np.ones(3))',
     lambda: tn.metrics.F1Score().update_state(np.ones(3), np.ones(3)), ValueError,
     'F1Score: y_true and y_pred must be 2-D (batch, classes), got shapes (3,) and (3,)')
case('dot-axes-str', "tn.layers.Dot(axes='1')",
     lambda: tn.layers.Dot(axes='1'), TypeError,
     "Dot: axes must be an int or a tuple of two ints, got '1'")
case('dot-axes-triple', 'tn.layers.Dot(axes=(1, 2, 3))',
     lambda: tn.layers.Dot(axes=(1, 2, 3)), ValueError,
     'Dot: axes must be an int or a tuple of two ints, got (1, 2, 3)')
case('dot-normalize-str', "tn.layers.Dot(1, normalize='yes')",
     lambda: tn.layers.Dot(1, normalize='yes'), TypeError,
     "Dot: normalize must be a bool, got 'yes'")
case('permute-dims-short', 'tn.layers.Permute((1, 3))',
     lambda: tn.layers.Permute((1, 3)), ValueError,
     'Permute: dims must be a tuple holding each of 1, ..., n once (the batch axis 0 is not permuted), got (1, 3)')
case('permute-dims-int', 'tn.layers.Permute(2)',
     lambda: tn.layers.Permute(2), TypeError,
     'Permute: dims must be a tuple holding each of 1, ..., n once (the batch axis 0 is not permuted), got 2')
case('repeat-vector-zero', 'tn.layers.RepeatVector(0)',
     lambda: tn.layers.RepeatVector(0), ValueError,
     'RepeatVector: n must be a positive int, got 0')
case('repeat-vector-float', 'tn.layers.RepeatVector(2.0)',
     lambda: tn.layers.RepeatVector(2.0), TypeError,
     'RepeatVector: n must be a positive int, got 2.0')
case('unit-normalization-axis-str', "tn.layers.UnitNormalization(axis='x')",
     lambda: tn.layers.UnitNormalization(axis='x'), TypeError,
     "UnitNormalization: axis must be an int or a tuple of ints, got 'x'")
case('activity-regularization-negative', 'tn.layers.ActivityRegularization(l1=-1.0)',
     lambda: tn.layers.ActivityRegularization(l1=-1.0), ValueError,
     'ActivityRegularization: l1 must be a non-negative finite float, got -1.0')
case('gaussian-noise-stddev', 'tn.layers.GaussianNoise(1.5)',
     lambda: tn.layers.GaussianNoise(1.5), ValueError,
     'GaussianNoise: stddev must be a float in [0, 1], got 1.5')
case('gaussian-dropout-rate-one', 'tn.layers.GaussianDropout(1.0)',
     lambda: tn.layers.GaussianDropout(1.0), ValueError,
     'GaussianDropout: rate must be a float in [0, 1), got 1.0')
case('merge-add-not-list', 'tn.layers.add(np.ones((2, 3), np.float32))',
     lambda: tn.layers.add(np.ones((2, 3), np.float32)), TypeError,
     'add: inputs must be a list of tensors, got ndarray')
case('model-from-json-int', 'tn.models.model_from_json(3)',
     lambda: tn.models.model_from_json(3), TypeError,
     'model_from_json: json_string must be a str (from model.to_json()), got int: 3')
case('model-from-json-bad', "tn.models.model_from_json('{bad')",
     lambda: tn.models.model_from_json('{bad'), ValueError,
     'model_from_json: json_string is not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))')
case('model-from-json-unknown-class', 'tn.models.model_from_json(\'{"class_name": "Nope", "config": {}}\')',
     lambda: tn.models.model_from_json('{"class_name": "Nope", "config": {}}'), ValueError,
     "model_from_json: unknown model class 'Nope'; decorate the class with @tinynet.saving.register_keras_serializable(), or pass it to model_from_json in custom_objects={'Nope': Nope}")
case('clone-model-str', "tn.models.clone_model('x')",
     lambda: tn.models.clone_model('x'), TypeError,
     "clone_model: expected a tinynet model (Sequential or Model), got str: 'x'")
case('serialize-object', 'tn.saving.serialize_keras_object(object())',
     lambda: tn.saving.serialize_keras_object(object()), TypeError,
     'serialize_keras_object: cannot serialize object <object object>; supported: None, bool, int, float, str, lists, dicts, layers and models, losses, optimizers, metrics and functions registered with @tinynet.saving.register_keras_serializable()')
case('layers-deserialize-no-class', "tn.layers.deserialize({'config': {}})",
     lambda: tn.layers.deserialize({'config': {}}), ValueError,
     "layers.deserialize: config needs a 'class_name' str, got keys ['config']")
case('layers-serialize-non-layer', 'tn.layers.serialize(3)',
     lambda: tn.layers.serialize(3), TypeError,
     'layers.serialize: expected a tinynet Layer, got int: 3')



# ============================================================================================
# text and categorical preprocessing (issue 45, item 7): TextVectorization, StringLookup,
# IntegerLookup, CategoryEncoding, Hashing, Discretization
# ============================================================================================
TV = tn.layers.TextVectorization
SL = tn.layers.StringLookup
IL = tn.layers.IntegerLookup
CE = tn.layers.CategoryEncoding
HS = tn.layers.Hashing
DZ = tn.layers.Discretization


def _unregistered_standardize(x):
    return x


case('tv-standardize-unknown', 'TextVectorization(standardize="upper")',
     lambda: TV(standardize="upper"), ValueError,
     "TextVectorization: standardize must be one of 'lower_and_strip_punctuation', 'lower', "
     "'strip_punctuation' or None or a callable, got 'upper'")
case('tv-split-unknown', 'TextVectorization(split="comma")',
     lambda: TV(split="comma"), ValueError,
     "TextVectorization: split must be one of 'whitespace', 'character' or None or a "
     "callable, got 'comma'")
case('tv-ngrams-zero', 'TextVectorization(ngrams=0)', lambda: TV(ngrams=0), ValueError,
     "TextVectorization: ngrams must be None, an int >= 1 or a tuple of them, got 0")
case('tv-ngrams-str', 'TextVectorization(ngrams="2")', lambda: TV(ngrams="2"), ValueError,
     "TextVectorization: ngrams must be None, an int >= 1 or a tuple of them, got '2'")
case('tv-output-mode-unknown', 'TextVectorization(output_mode="bag")',
     lambda: TV(output_mode="bag"), ValueError,
     "TextVectorization: output_mode must be one of 'int', 'one_hot', 'multi_hot', 'count', "
     "'tf_idf', got 'bag'")
case('tv-sequence-length-with-counts',
     'TextVectorization(output_mode="count", output_sequence_length=5)',
     lambda: TV(output_mode="count", output_sequence_length=5), ValueError,
     "TextVectorization: output_sequence_length needs output_mode='int', got "
     "output_mode='count'")
case('tv-sequence-length-zero', 'TextVectorization(output_sequence_length=0)',
     lambda: TV(output_sequence_length=0), ValueError,
     "TextVectorization: output_sequence_length must be None or an int >= 1, got 0")
case('tv-sequence-length-str', 'TextVectorization(output_sequence_length="5")',
     lambda: TV(output_sequence_length="5"), TypeError,
     "TextVectorization: output_sequence_length must be None or an int >= 1, got '5'")
case('tv-ragged-with-counts', 'TextVectorization(output_mode="multi_hot", ragged=True)',
     lambda: TV(output_mode="multi_hot", ragged=True), ValueError,
     "TextVectorization: ragged=True needs output_mode='int', got output_mode='multi_hot'")
case('tv-max-tokens-one', 'TextVectorization(max_tokens=1)', lambda: TV(max_tokens=1),
     ValueError, "TextVectorization 'text_vectorization", "max_tokens must be None or an int "
     ">= 2, got 1")
case('tv-pad-without-max-tokens', 'TextVectorization(pad_to_max_tokens=True)',
     lambda: TV(pad_to_max_tokens=True), ValueError,
     "pad_to_max_tokens=True needs max_tokens, got max_tokens=None")
case('tv-tf-idf-vocabulary-without-idf', 'TextVectorization(output_mode="tf_idf", vocabulary=["a"])',
     lambda: TV(output_mode="tf_idf", vocabulary=["a"]), ValueError,
     "output_mode='tf_idf' with a vocabulary needs idf_weights too, got idf_weights=None")
case('tv-idf-without-tf-idf', 'TextVectorization(vocabulary=["a"], idf_weights=[1.0])',
     lambda: TV(vocabulary=["a"], idf_weights=[1.0]), ValueError,
     "idf_weights needs output_mode='tf_idf', got output_mode='int'")
case('tv-sparse', 'TextVectorization(sparse=True)', lambda: TV(sparse=True), ValueError,
     "sparse=True is not supported (tinynet has no sparse tensors)")
case('tv-encoding-unknown', 'TextVectorization(encoding="klingon")',
     lambda: TV(encoding="klingon"), ValueError,
     "encoding must name a Python codec, got 'klingon'")
case('tv-vocabulary-repeated', 'TextVectorization(vocabulary=["a", "b", "a"])',
     lambda: TV(vocabulary=["a", "b", "a"]), ValueError,
     "set_vocabulary: vocabulary has repeated tokens ['a']")
case('tv-vocabulary-empty', 'TextVectorization(vocabulary=[])', lambda: TV(vocabulary=[]),
     ValueError, "set_vocabulary: vocabulary must not be empty")
case('tv-vocabulary-too-large', 'TextVectorization(max_tokens=3, vocabulary=["a", "b"])',
     lambda: TV(max_tokens=3, vocabulary=["a", "b"]), ValueError,
     "a vocabulary of 4 entries (special tokens included) exceeds max_tokens=3")
case('tv-vocabulary-mask-inside', 'TextVectorization(vocabulary=["a", ""])',
     lambda: TV(vocabulary=["a", ""]), ValueError,
     "the mask_token '' is at index 1 of the vocabulary; give the special tokens only at the "
     "start, in the order ['', '[UNK]'], or not at all")
case('tv-vocabulary-file-missing', 'TextVectorization(vocabulary="/nonexistent/vocab.txt")',
     lambda: TV(vocabulary="/nonexistent/vocab.txt"), ValueError,
     "vocabulary file '/nonexistent/vocab.txt' does not exist")
case('tv-call-ints', 'TextVectorization(vocabulary=["a"])(np.array([1, 2]))',
     lambda: TV(vocabulary=["a"])(np.array([1, 2])), TypeError,
     "inputs must be strings (str or bytes: a list or a NumPy str/bytes/object array), got "
     "dtype int64")
case('tv-call-wide-batch', 'TextVectorization(vocabulary=["a"])([["a b", "c"]])',
     lambda: TV(vocabulary=["a"])([["a b", "c"]]), ValueError,
     "to split strings the input must be [batch] or [batch, 1], got shape (1, 2)")
case('tv-call-ragged-list', 'TextVectorization(vocabulary=["a"])([["a"], ["b", "c"]])',
     lambda: TV(vocabulary=["a"])([["a"], ["b", "c"]]), ValueError,
     "inputs must be rectangular (use lists of equal length)")
case('tv-multi-hot-before-vocabulary', 'TextVectorization(output_mode="multi_hot")(["a"])',
     lambda: TV(output_mode="multi_hot")(["a"]), RuntimeError,
     "output_mode='multi_hot' without pad_to_max_tokens needs a vocabulary before the call: "
     "pass vocabulary= or call adapt()")
case('tv-one-hot-after-split', 'TextVectorization(output_mode="one_hot", vocabulary=["a"])(["a"])',
     lambda: TV(output_mode="one_hot", vocabulary=["a"])(["a"]), ValueError,
     "output_mode='one_hot' needs split=None (one token per string)")
case('tv-standardize-changes-shape', 'TextVectorization(standardize=lambda x: x[:1])(["a", "b"])',
     lambda: TV(standardize=lambda x: x[:1])(["a", "b"]), ValueError,
     "standardize must keep the shape (2,), returned (1,)")
case('tv-split-wrong-count', 'TextVectorization(split=lambda x: [["a"]])(["a", "b"])',
     lambda: TV(split=lambda x: [["a"]])(["a", "b"]), ValueError,
     "split must return one token list per string (2), returned 1")
case('tv-adapt-str', 'TextVectorization().adapt("some text")',
     lambda: TV().adapt("some text"), TypeError,
     "adapt() takes a list or array of samples or an iterable of batches, got str")
case('tv-adapt-steps-zero', 'TextVectorization().adapt(["a"], steps=0)',
     lambda: TV().adapt(["a"], steps=0), ValueError,
     "adapt: steps must be None or an int >= 1, got 0")
case('tv-adapt-given-vocabulary', 'TextVectorization(vocabulary=["a"]).adapt(["a b"])',
     lambda: TV(vocabulary=["a"]).adapt(["a b"]), ValueError,
     "cannot adapt a layer given a vocabulary (the vocabulary argument or set_vocabulary())")
case('tv-set-vocabulary-tf-idf-without-idf',
     'TextVectorization(output_mode="tf_idf").set_vocabulary(["a"])',
     lambda: TV(output_mode="tf_idf").set_vocabulary(["a"]), ValueError,
     "set_vocabulary: output_mode='tf_idf' needs idf_weights, got None")
case('tv-set-vocabulary-idf-length',
     'TextVectorization(output_mode="tf_idf").set_vocabulary(["a", "b"], idf_weights=[1.0])',
     lambda: TV(output_mode="tf_idf").set_vocabulary(["a", "b"], idf_weights=[1.0]), ValueError,
     "idf_weights must be 1-D with one weight per vocabulary entry (2), got shape (1,)")
case('tv-config-unregistered-callable',
     'TextVectorization(standardize=<unregistered function>).get_config()',
     lambda: TV(standardize=_unregistered_standardize).get_config(), ValueError,
     "TextVectorization: cannot save standardize=the function '_unregistered_standardize': "
     "register the function with @tinynet.saving.register_keras_serializable()")
case('tv-symbolic-input', 'TextVectorization()(tn.Input((1,)))',
     lambda: TV()(tn.Input((1,))), TypeError,
     "TextVectorization 'text_vectorization", "takes strings, so on a model input it needs "
     "tn.Input(..., dtype='string'), got a tensor of dtype 'float32'")
case('sl-symbolic-input', 'StringLookup()(tn.Input((3,)))',
     lambda: SL()(tn.Input((3,))), TypeError,
     "StringLookup 'string_lookup", "takes strings, so on a model input it needs "
     "tn.Input(..., dtype='string')")
case('tv-config-vocabulary-file', 'TextVectorization.from_config({"vocabulary": "/etc/passwd"})',
     lambda: TV.from_config({"vocabulary": "/etc/passwd"}), ValueError,
     "TextVectorization.from_config: the config names a vocabulary file '/etc/passwd'; a "
     "config must hold the vocabulary itself (loading never reads other files)")
case('sl-config-vocabulary-file', 'StringLookup.from_config({"vocabulary": "vocab.txt"})',
     lambda: SL.from_config({"vocabulary": "vocab.txt"}), ValueError,
     "StringLookup.from_config: the config names a vocabulary file 'vocab.txt'")
case('tv-unknown-keyword', 'TextVectorization(max_token=5)', lambda: TV(max_token=5),
     TypeError, "TextVectorization got an unexpected keyword argument 'max_token'; did you "
     "mean 'max_tokens'?")

case('sl-num-oov-negative', 'StringLookup(num_oov_indices=-1)',
     lambda: SL(num_oov_indices=-1), ValueError,
     "StringLookup: num_oov_indices must be None or an int >= 0, got -1")
case('sl-invert-multi-hot', 'StringLookup(invert=True, output_mode="multi_hot")',
     lambda: SL(invert=True, output_mode="multi_hot"), ValueError,
     "StringLookup: invert=True needs output_mode='int', got output_mode='multi_hot'")
case('sl-oov-token-int', 'StringLookup(oov_token=3)', lambda: SL(oov_token=3), TypeError,
     "StringLookup: oov_token must be a str or None, got 3")
case('sl-salt-triple', 'StringLookup(salt=[1, 2, 3])', lambda: SL(salt=[1, 2, 3]),
     ValueError, "StringLookup: salt must be None, an int or a pair of ints, got [1, 2, 3]")
case('sl-unknown-without-oov', 'StringLookup(vocabulary=["a"], num_oov_indices=0)(["a", "b"])',
     lambda: SL(vocabulary=["a"], num_oov_indices=0)(["a", "b"]), ValueError,
     "StringLookup 'string_lookup", "with num_oov_indices=0 every input must be in the "
     "vocabulary, got unknown values ['b']")
case('sl-invert-strings', 'StringLookup(vocabulary=["a"], invert=True)(["a"])',
     lambda: SL(vocabulary=["a"], invert=True)(["a"]), TypeError,
     "invert=True takes integer indices, got dtype <U1")
case('sl-set-vocabulary-2d', 'StringLookup().set_vocabulary([["a"], ["b"]])',
     lambda: SL().set_vocabulary([["a"], ["b"]]), ValueError,
     "set_vocabulary: vocabulary must be a 1-D list or array of tokens, got shape (2, 1)")
case('sl-set-vocabulary-idf-not-tf-idf', 'StringLookup().set_vocabulary(["a"], idf_weights=[1.0])',
     lambda: SL().set_vocabulary(["a"], idf_weights=[1.0]), ValueError,
     "set_vocabulary: idf_weights needs output_mode='tf_idf', got output_mode='int'")
case('sl-tf-idf-file', 'StringLookup(output_mode="tf_idf").set_vocabulary("vocab.txt", [1.0])',
     lambda: SL(output_mode="tf_idf").set_vocabulary("vocab.txt", idf_weights=[1.0]),
     ValueError, "set_vocabulary: output_mode='tf_idf' cannot read the vocabulary from a file, "
     "got 'vocab.txt'")
case('sl-adapt-numbers', 'StringLookup().adapt(np.array([1, 2]))',
     lambda: SL().adapt(np.array([1, 2])), TypeError,
     "inputs must be strings (str or bytes: a list or a NumPy str/bytes/object array), got "
     "dtype int64")

case('il-vocabulary-dtype', 'IntegerLookup(vocabulary_dtype="int32")',
     lambda: IL(vocabulary_dtype="int32"), ValueError,
     "IntegerLookup: vocabulary_dtype must be 'int64', got 'int32'")
case('il-salt-floormod', 'IntegerLookup(salt=3)', lambda: IL(salt=3), ValueError,
     "IntegerLookup: salt needs oov_method='farmhash', got oov_method='floormod'")
case('il-oov-method-unknown', 'IntegerLookup(oov_method="mod")',
     lambda: IL(oov_method="mod"), ValueError,
     "IntegerLookup: oov_method must be one of 'floormod', 'farmhash', got 'mod'")
case('il-mask-token-str', 'IntegerLookup(mask_token="0")', lambda: IL(mask_token="0"),
     TypeError, "IntegerLookup: mask_token must be an int or None, got '0'")
case('il-call-strings', 'IntegerLookup(vocabulary=[1])(["1"])',
     lambda: IL(vocabulary=[1])(["1"]), TypeError,
     "IntegerLookup 'integer_lookup", "inputs must be integers, got dtype <U1")
case('il-call-fractions', 'IntegerLookup(vocabulary=[1])(np.array([1.5]))',
     lambda: IL(vocabulary=[1])(np.array([1.5])), ValueError,
     "inputs must be integers, got non-integer floats")
case('il-adapt-steps-str', 'IntegerLookup().adapt([1, 2], steps="1")',
     lambda: IL().adapt([1, 2], steps="1"), TypeError,
     "adapt: steps must be None or an int >= 1, got '1'")

case('ce-num-tokens-missing', 'CategoryEncoding()', lambda: CE(), ValueError,
     "CategoryEncoding: num_tokens must be set (an int >= 1), got None; for an unknown number "
     "of ids use IntegerLookup")
case('ce-num-tokens-zero', 'CategoryEncoding(0)', lambda: CE(0), ValueError,
     "CategoryEncoding: num_tokens must be a positive int, got 0")
case('ce-num-tokens-float', 'CategoryEncoding(3.0)', lambda: CE(3.0), TypeError,
     "CategoryEncoding: num_tokens must be a positive int, got 3.0")
case('ce-output-mode-tf-idf', 'CategoryEncoding(3, output_mode="tf_idf")',
     lambda: CE(3, output_mode="tf_idf"), ValueError,
     "CategoryEncoding: output_mode must be one of 'one_hot', 'multi_hot', 'count', got "
     "'tf_idf'")
case('ce-sparse', 'CategoryEncoding(3, sparse=True)', lambda: CE(3, sparse=True), ValueError,
     "CategoryEncoding: sparse=True is not supported (tinynet has no sparse tensors)")
case('ce-count-weights-multi-hot', 'CategoryEncoding(3)([[0, 1]], count_weights=[[1.0, 2.0]])',
     lambda: CE(3)([[0, 1]], count_weights=[[1.0, 2.0]]), ValueError,
     "count_weights needs output_mode='count', got output_mode='multi_hot'")
case('ce-count-weights-shape',
     'CategoryEncoding(3, output_mode="count")([[0, 1]], count_weights=[1.0])',
     lambda: CE(3, output_mode="count")([[0, 1]], count_weights=[1.0]), ValueError,
     "count_weights must have the inputs' shape (1, 2), got (1,)")
case('ce-call-strings', 'CategoryEncoding(3)(["a"])', lambda: CE(3)(["a"]), TypeError,
     "CategoryEncoding 'category_encoding", "inputs must be integers, got dtype <U1")

case('hash-num-bins-zero', 'Hashing(0)', lambda: HS(0), ValueError,
     "Hashing: num_bins must be a positive int, got 0")
case('hash-num-bins-none', 'Hashing(None)', lambda: HS(None), TypeError,
     "Hashing: num_bins must be a positive int, got None")
case('hash-mask-value-float', 'Hashing(3, mask_value=1.5)', lambda: HS(3, mask_value=1.5),
     TypeError, "Hashing: mask_value must be None, a str or an int, got 1.5")
case('hash-salt-str', 'Hashing(3, salt="x")', lambda: HS(3, salt="x"), ValueError,
     "Hashing: salt must be None, an int or a pair of ints, got 'x'")
case('hash-output-mode-tf-idf', 'Hashing(3, output_mode="tf_idf")',
     lambda: HS(3, output_mode="tf_idf"), ValueError,
     "Hashing: output_mode must be one of 'int', 'one_hot', 'multi_hot', 'count', got "
     "'tf_idf'")
case('hash-call-bools', 'Hashing(3)(np.array([True]))', lambda: HS(3)(np.array([True])),
     TypeError, "inputs must be strings or numbers, got dtype bool")

case('dz-neither', 'Discretization()', lambda: DZ(), ValueError,
     "Discretization: give num_bins (then adapt) or bin_boundaries, got neither")
case('dz-both', 'Discretization([0.0], num_bins=3)', lambda: DZ([0.0], num_bins=3),
     ValueError, "Discretization: give num_bins or bin_boundaries, not both, got num_bins=3 "
     "and bin_boundaries=[0.0]")
case('dz-num-bins-negative', 'Discretization(num_bins=-1)', lambda: DZ(num_bins=-1),
     ValueError, "Discretization: num_bins must be None or an int >= 0, got -1")
case('dz-epsilon-zero', 'Discretization(num_bins=3, epsilon=0)',
     lambda: DZ(num_bins=3, epsilon=0), ValueError,
     "Discretization: epsilon must be a float in (0, 1], got 0")
case('dz-boundaries-unsorted', 'Discretization([1.0, 0.0])', lambda: DZ([1.0, 0.0]),
     ValueError, "Discretization: bin_boundaries must be a sorted 1-D list of finite numbers, "
     "got [1.0, 0.0]")
case('dz-boundaries-strings', 'Discretization(["a"])', lambda: DZ(["a"]), TypeError,
     "Discretization: bin_boundaries must be a list of numbers, got ['a']")
case('dz-adapt-with-boundaries', 'Discretization([0.0]).adapt(np.zeros(3))',
     lambda: DZ([0.0]).adapt(np.zeros(3)), ValueError,
     "adapt() needs num_bins; the layer was given bin_boundaries")
case('dz-call-before-adapt', 'Discretization(num_bins=3)(np.zeros(2))',
     lambda: DZ(num_bins=3)(np.zeros(2)), ValueError,
     "no bin_boundaries yet: pass them or call adapt() before using the layer")
case('dz-call-strings', 'Discretization([0.0])(["a"])', lambda: DZ([0.0])(["a"]), TypeError,
     "Discretization 'discretization", "inputs must be numbers, got dtype <U1")
case('dz-adapt-strings', 'Discretization(num_bins=2).adapt(np.array(["a"]))',
     lambda: DZ(num_bins=2).adapt(np.array(["a"])), TypeError,
     "adapt() data must be numbers, got dtype <U1")
case('dz-sparse', 'Discretization([0.0], sparse=True)', lambda: DZ([0.0], sparse=True),
     ValueError, "Discretization: sparse=True is not supported (tinynet has no sparse tensors)")

# ============================================================================================
# recurrent layers: SimpleRNN, LSTM, GRU (issue 46)
# ============================================================================================
RNN_ACTS = "must be one of 'tanh', 'sigmoid', 'relu', 'hard_sigmoid', 'linear' or None"


def _rnn(cls_name: str, *args: Any, **kwargs: Any) -> Any:
    return getattr(tn.layers, cls_name)(*args, **kwargs)


case("lstm-units-zero", "LSTM(0)", lambda: _rnn("LSTM", 0), ValueError,
     "LSTM: units", POS_INT, "got 0")
case("gru-units-negative", "GRU(-3)", lambda: _rnn("GRU", -3), ValueError,
     "GRU: units", POS_INT, "got -3")
case("simple-rnn-units-float", "SimpleRNN(2.5)", lambda: _rnn("SimpleRNN", 2.5), TypeError,
     "SimpleRNN: units", POS_INT, "got 2.5")
case("lstm-activation-softmax", "LSTM(4, activation='softmax')",
     lambda: _rnn("LSTM", 4, activation="softmax"), ValueError,
     "LSTM: activation " + RNN_ACTS, "got 'softmax'")
case("gru-recurrent-activation-int", "GRU(4, recurrent_activation=3)",
     lambda: _rnn("GRU", 4, recurrent_activation=3), TypeError,
     "GRU: recurrent_activation " + RNN_ACTS, "got 3")
case("lstm-dropout-one", "LSTM(4, dropout=1.0)", lambda: _rnn("LSTM", 4, dropout=1.0),
     ValueError, "LSTM: dropout must be a float in [0, 1), got 1.0")
case("gru-recurrent-dropout-negative", "GRU(4, recurrent_dropout=-0.1)",
     lambda: _rnn("GRU", 4, recurrent_dropout=-0.1), ValueError,
     "GRU: recurrent_dropout must be a float in [0, 1), got -0.1")
case("simple-rnn-dropout-str", "SimpleRNN(4, dropout='0.2')",
     lambda: _rnn("SimpleRNN", 4, dropout="0.2"), TypeError,
     "SimpleRNN: dropout must be a float in [0, 1), got '0.2'")
case("lstm-stateful", "LSTM(4, stateful=True)", lambda: _rnn("LSTM", 4, stateful=True),
     ValueError, "LSTM: stateful=True is not supported", "got stateful=True")
case("gru-reset-after-str", "GRU(4, reset_after='yes')",
     lambda: _rnn("GRU", 4, reset_after="yes"), TypeError, "GRU: reset_after", "'yes'")
case("lstm-use-cudnn", "LSTM(4, use_cudnn='always')",
     lambda: _rnn("LSTM", 4, use_cudnn="always"), ValueError,
     "LSTM: use_cudnn must be 'auto', True or False, got 'always'")
case("lstm-recurrent-initializer", "LSTM(4, recurrent_initializer='eye')",
     lambda: _rnn("LSTM", 4, recurrent_initializer="eye"), ValueError,
     "LSTM: recurrent_initializer: unknown initializer 'eye'")
case("lstm-input-rank-2", "LSTM(4)(zeros(2, 3))", lambda: _rnn("LSTM", 4)(z(2, 3)),
     ValueError, "LSTM 'lstm': input must have rank 3 [batch, timesteps, features], "
     "got shape (None, 3)")
case("gru-input-rank-4", "GRU(4)(zeros(2, 3, 4, 5))", lambda: _rnn("GRU", 4)(z(2, 3, 4, 5)),
     ValueError, "GRU 'gru': input must have rank 3", "got shape (None, 3, 4, 5)")
case("lstm-features-changed", "LSTM(4) built on 3 features, called on 5",
     lambda: (lambda l: (l(z(2, 3, 3)), l(z(2, 3, 5))))(_rnn("LSTM", 4)), ValueError,
     "LSTM 'lstm': expected input of shape (batch, timesteps, 3), got shape (2, 3, 5)")
case("simple-rnn-no-steps", "SimpleRNN(4)(zeros(2, 0, 3))",
     lambda: _rnn("SimpleRNN", 4)(z(2, 0, 3)), ValueError,
     "SimpleRNN 'simple_rnn': the input must have at least one timestep, got shape (2, 0, 3)")
case("lstm-initial-state-one", "LSTM(4)(zeros(2, 3, 3), initial_state=[zeros(2, 4)])",
     lambda: _rnn("LSTM", 4)(z(2, 3, 3), initial_state=[z(2, 4)]), ValueError,
     "LSTM 'lstm': initial_state must be a list of 2 array(s) of shape (2, 4), got 1")
case("gru-initial-state-shape", "GRU(4)(zeros(2, 3, 3), initial_state=zeros(2, 5))",
     lambda: _rnn("GRU", 4)(z(2, 3, 3), initial_state=z(2, 5)), ValueError,
     "GRU 'gru': initial_state must be array(s) of shape (2, 4) (batch, units), got (2, 5)")
case("lstm-initial-state-symbolic", "LSTM(4)(Input((3, 3)), initial_state=[...])",
     lambda: _rnn("LSTM", 4)(Input((3, 3)), initial_state=[z(1, 4), z(1, 4)]), ValueError,
     "LSTM 'lstm': initial_state is taken on arrays only")
case("lstm-return-state-grads", "LSTM(4, return_state=True).backward(one array)",
     lambda: (lambda l: (l(z(2, 3, 3)), l.backward(z(2, 4))))(
         _rnn("LSTM", 4, return_state=True)), ValueError,
     "LSTM 'lstm': grad_output must be a list of 3 arrays (output and states), got one "
     "array of shape (2, 4)")
case("simple-rnn-backward-first", "SimpleRNN(4).backward(...) before forward",
     lambda: _rnn("SimpleRNN", 4).backward(z(2, 4)), RuntimeError,
     "SimpleRNN 'simple_rnn': backward called before forward")
case("orthogonal-rank-1", "initializers.Orthogonal()((3,))",
     lambda: tn.initializers.Orthogonal()((3,)), ValueError,
     "Orthogonal: shape must have rank >= 2, got (3,)")
case("bidirectional-merge-mode", "Bidirectional(LSTM(4), merge_mode='max')",
     lambda: _rnn("Bidirectional", _rnn("LSTM", 4), merge_mode="max"), ValueError,
     "Bidirectional: merge_mode must be 'concat', 'sum', 'mul', 'ave' or None, got 'max'")
case("bidirectional-dense", "Bidirectional(Dense(4))",
     lambda: _rnn("Bidirectional", Dense(4)), TypeError,
     "Bidirectional: layer must be a recurrent layer (SimpleRNN, LSTM or GRU), got Dense")
case("bidirectional-not-layer", "Bidirectional('lstm')",
     lambda: _rnn("Bidirectional", "lstm"), TypeError,
     "Bidirectional: layer must be a tinynet Layer instance, got str")
case("bidirectional-same-direction", "Bidirectional(LSTM(4), backward_layer=LSTM(4))",
     lambda: _rnn("Bidirectional", _rnn("LSTM", 4), backward_layer=_rnn("LSTM", 4)),
     ValueError, "Bidirectional: the forward and backward layers must have different "
     "go_backwards, got False for both")
case("bidirectional-return-state-mismatch",
     "Bidirectional(LSTM(4, return_state=True), backward_layer=LSTM(4, go_backwards=True))",
     lambda: _rnn("Bidirectional", _rnn("LSTM", 4, return_state=True),
                  backward_layer=_rnn("LSTM", 4, go_backwards=True)), ValueError,
     "Bidirectional: the forward and backward layers must have the same return_state, "
     "got True and False")
case("bidirectional-state-grads", "Bidirectional(LSTM(4, return_state=True)).backward(one array)",
     lambda: (lambda l: (l(z(2, 3, 3)), l.backward(z(2, 8))))(
         _rnn("Bidirectional", _rnn("LSTM", 4, return_state=True))), ValueError,
     "Bidirectional 'bidirectional': grad_output must be a list of 5 arrays (outputs, then "
     "states), got one array of shape (2, 8)")
case("time-distributed-not-layer", "TimeDistributed(Dense)",
     lambda: _rnn("TimeDistributed", Dense), TypeError,
     "TimeDistributed: layer must be a tinynet Layer instance, got type")
case("time-distributed-rank-2", "TimeDistributed(Dense(2))(zeros(4, 3))",
     lambda: _rnn("TimeDistributed", Dense(2))(z(4, 3)), ValueError,
     "TimeDistributed 'time_distributed': input must have rank >= 3 [batch, timesteps, ...], "
     "got shape (None, 3)")
case("time-distributed-multi-input", "TimeDistributed(Add())",
     lambda: _rnn("TimeDistributed", Add()), ValueError,
     "TimeDistributed: layer must take one input, got Add (several inputs)")

# ============================================================================================
# issue 49 (Hardening III), the API half: one array to a merging layer, schedules that
# break fit later, ints too large for a float, NumPy internals, names with "/", silent
# nonsense, invalid weight-decay patterns
# ============================================================================================
ONE_ARRAY = "expects a list of inputs (layer([a, b])), got one ndarray of shape (2, 3, 4)"
for _cls in ("Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate"):
    case(f"h49-merge-{_cls.lower()}-one-array", f"tn.layers.{_cls}()(np.ones((2, 3, 4)))",
         lambda cls=_cls: getattr(tn.layers, cls)()(np.ones((2, 3, 4))), ValueError,
         f"{_cls} '{_cls.lower()}': {ONE_ARRAY}")
case("h49-dot-one-array", "tn.layers.Dot(1)(np.ones((2, 3, 4)))",
     lambda: tn.layers.Dot(1)(np.ones((2, 3, 4))), ValueError, f"Dot 'dot': {ONE_ARRAY}")
case("h49-add-one-tensor", "tn.layers.Add()(tn.Tensor(np.ones((2, 3))))",
     lambda: Add()(tn.Tensor(np.ones((2, 3)))), ValueError,
     "Add 'add': expects a list of inputs (layer([a, b])), got one Tensor of shape (2, 3)")

SCHED = optimizers.schedules
case("h49-schedule-exp-decay-rate-negative", "schedules.ExponentialDecay(0.1, 10, -0.5)",
     lambda: SCHED.ExponentialDecay(0.1, 10, -0.5), ValueError,
     "ExponentialDecay: decay_rate must be a finite float >= 0, got -0.5")
case("h49-schedule-polynomial-power-negative", "schedules.PolynomialDecay(0.1, 10, power=-1.0)",
     lambda: SCHED.PolynomialDecay(0.1, 10, power=-1.0), ValueError,
     "PolynomialDecay: power must be a finite float >= 0, got -1.0")
case("h49-schedule-inverse-time-rate-negative",
     "schedules.InverseTimeDecay(0.1, 10, decay_rate=-1.0)",
     lambda: SCHED.InverseTimeDecay(0.1, 10, decay_rate=-1.0), ValueError,
     "InverseTimeDecay: decay_rate must be a finite float >= 0, got -1.0")
case("h49-schedule-restarts-t-mul-below-one", "schedules.CosineDecayRestarts(0.1, 10, t_mul=0.5)",
     lambda: SCHED.CosineDecayRestarts(0.1, 10, t_mul=0.5), ValueError,
     "CosineDecayRestarts: t_mul must be a finite float >= 1, got 0.5")
case("h49-schedule-restarts-m-mul-negative", "schedules.CosineDecayRestarts(0.1, 10, m_mul=-1.0)",
     lambda: SCHED.CosineDecayRestarts(0.1, 10, m_mul=-1.0), ValueError,
     "CosineDecayRestarts: m_mul must be a finite float >= 0, got -1.0")
case("h49-schedule-initial-rate-negative", "schedules.ExponentialDecay(-0.1, 10, 0.5)",
     lambda: SCHED.ExponentialDecay(-0.1, 10, 0.5), ValueError,
     "ExponentialDecay: initial_learning_rate must be a non-negative float no larger than "
     "float32's largest (3.4028235e+38), got -0.1")
case("h49-schedule-end-rate-negative", "schedules.PolynomialDecay(0.1, 10, end_learning_rate=-1e-4)",
     lambda: SCHED.PolynomialDecay(0.1, 10, end_learning_rate=-1e-4), ValueError,
     "PolynomialDecay: end_learning_rate must be a non-negative float", "got -0.0001")
case("h49-schedule-piecewise-value-negative", "schedules.PiecewiseConstantDecay([5], [0.1, -0.1])",
     lambda: SCHED.PiecewiseConstantDecay([5], [0.1, -0.1]), ValueError,
     "PiecewiseConstantDecay: values must be a non-negative float", "got -0.1")
case("h49-schedule-cosine-alpha-negative", "schedules.CosineDecay(0.1, 10, alpha=-0.5)",
     lambda: SCHED.CosineDecay(0.1, 10, alpha=-0.5), ValueError,
     "CosineDecay: alpha must be a finite float >= 0, got -0.5")
case("h49-schedule-cosine-warmup-steps-negative", "schedules.CosineDecay(0.1, 10, warmup_steps=-5)",
     lambda: SCHED.CosineDecay(0.1, 10, warmup_steps=-5), ValueError,
     "CosineDecay: warmup_steps must be a finite float >= 0, got -5")
case("h49-schedule-name-object", "schedules.ExponentialDecay(0.1, 10, 0.5, name=object())",
     lambda: SCHED.ExponentialDecay(0.1, 10, 0.5, name=object()), TypeError,
     "ExponentialDecay: name must be a str, got <object object>")


def _grown_rate() -> float:
    opt = optimizers.SGD(SCHED.ExponentialDecay(0.1, 1, 10.0))
    opt.iterations = 400
    return opt.learning_rate


case("h49-schedule-rate-overflows", "SGD(ExponentialDecay(0.1, 1, 10.0)) at iteration 400",
     _grown_rate, ValueError,
     "SGD: the learning rate schedule ExponentialDecay(initial_learning_rate=0.1, "
     "decay_steps=1, decay_rate=10.0, staircase=False, name='ExponentialDecay') gave inf at "
     "iteration 400; a learning rate must be a non-negative float no larger than float32's "
     "largest (3.4028235e+38)")
case("h49-sgd-lr-beyond-float32", "SGD(1e39)", lambda: optimizers.SGD(1e39), ValueError,
     "SGD: learning_rate must be a non-negative float no larger than float32's largest "
     "(3.4028235e+38) or a callable schedule, got 1e+39")

HUGE = 10**400
case("h49-huge-rescaling", "Rescaling(10**400)", lambda: Rescaling(HUGE), ValueError,
     "Rescaling: scale must be a finite float or an array of them, each within float32's "
     "range (|v| <= 3.402823e+38), got 1000000000")
case("h49-huge-focal-gamma", "BinaryFocalCrossentropy(gamma=-10**400)",
     lambda: losses.BinaryFocalCrossentropy(gamma=-HUGE), ValueError,
     "BinaryFocalCrossentropy: gamma must be a finite float >= 0, got -1000000000")
case("h49-huge-loss-weights", "compile(loss='mse', loss_weights=[10**400])",
     lambda: mlp().compile(optimizer="sgd", loss="mse", loss_weights=[HUGE]), ValueError,
     "Sequential.compile: loss_weights must hold finite numbers, got 1000000000")
case("h49-huge-sample-weight", "fit(x, y, sample_weight=[-10**400] * 5)",
     lambda: fit(compiled(), sample_weight=[-HUGE] * 5), ValueError,
     "Sequential.fit: sample_weight must be finite")
case("h49-huge-class-weight", "fit(x, labels, class_weight={0: 10**400, 1: 1, 2: 1})",
     lambda: fit(compiled("sparse_categorical_crossentropy"), y=LABELS,
                 class_weight={0: HUGE, 1: 1, 2: 1}), ValueError,
     "Sequential.fit: class_weight values must be finite numbers, got 1000000000")
case("h49-huge-regularizer", "tn.regularizers.L2(10**400)",
     lambda: tn.regularizers.L2(HUGE), ValueError,
     "L2: l2 must be a non-negative finite float, got 1000000000")
case("h49-huge-huber-delta", "losses.Huber(delta=10**400)",
     lambda: losses.Huber(delta=HUGE), ValueError,
     "Huber: delta must be a finite float > 0, got 1000000000")
case("h49-huge-gaussian-noise", "GaussianNoise(10**400)",
     lambda: tn.layers.GaussianNoise(HUGE), ValueError,
     "GaussianNoise: stddev must be a float in [0, 1], got 1000000000")
case("h49-huge-random-rotation-fill", "RandomRotation(0.1, fill_value=10**400)",
     lambda: RandomRotation(0.1, fill_value=HUGE), ValueError,
     "RandomRotation: fill_value must be a finite number, got 1000000000")
case("h49-huge-auc-thresholds", "metrics.AUC(num_thresholds=10**400)",
     lambda: metrics.AUC(num_thresholds=HUGE), ValueError,
     "AUC: num_thresholds must be an int > 1 (and < 2**31), got 1000000000")
case("h49-huge-normalization-mean", "Normalization(mean=10**400, variance=1.0)",
     lambda: Normalization(mean=HUGE, variance=1.0), ValueError,
     "Normalization: mean must be finite and variance finite and >= 0")
case("h49-huge-ops-add", "tn.ops.add(np.ones(2), 10**400)",
     lambda: tn.ops.add(np.ones(2), HUGE), OpError,
     "add: x2 must be a number within the float range, got an int of 401 digits")

case("h49-normalization-axis-repeated", "Normalization(axis=(1, 1))",
     lambda: Normalization(axis=(1, 1)), ValueError,
     "Normalization: axis must not repeat an axis, got (1, 1)")
case("h49-normalization-axis-same-after-wrap", "Normalization(axis=(1, -2))(z(2, 3, 4))",
     lambda: Normalization(axis=(1, -2))(z(2, 3, 4)), ValueError,
     "Normalization 'normalization': axis (1, -2) names one axis twice for inputs of rank 3")
for _cls, _make in (("DepthwiseConv2D", lambda: DepthwiseConv2D(3)),
                    ("SeparableConv2D", lambda: SeparableConv2D(2, 3)),
                    ("Conv2DTranspose", lambda: Conv2DTranspose(2, 3)),
                    ("Conv2D", lambda: Conv2D(2, 3))):
    _snake = re.sub(r"(?<!^)(?=[A-Z])", "_", _cls).lower().replace("conv2_d", "conv2d")
    case(f"h49-{_cls.lower()}-zero-channels", f"{_cls}(...)(np.ones((1, 5, 5, 0)))",
         lambda make=_make: make()(z(1, 5, 5, 0)), ValueError,
         f"{_cls} '", "': the channel axis must be known and hold at least 1 channel, got shape "
         "(None, 5, 5, 0)")
case("h49-conv-dilation-huge", "Conv2D(2, 3, dilation_rate=10**29)",
     lambda: Conv2D(2, 3, dilation_rate=10**29), ValueError,
     "Conv2D: dilation_rate must be at most 2**31 - 1 (a size NumPy can allocate), got "
     "(100000000000000000000000000000, 100000000000000000000000000000)")
case("h49-conv1d-dilation-huge", "Conv1D(2, 3, dilation_rate=2**40)",
     lambda: Conv1D(2, 3, dilation_rate=2**40), ValueError,
     "Conv1D: dilation_rate must be at most 2**31 - 1 (a size NumPy can allocate), got "
     "1099511627776")
case("h49-pooling-size-huge", "MaxPooling2D(2**31)", lambda: MaxPooling2D(2**31), ValueError,
     "MaxPooling2D: pool_size must be at most 2**31 - 1", "got (2147483648, 2147483648)")
case("h49-embedding-set-weights-none", "Embedding(5, 2).set_weights(None) (built)",
     lambda: called_ids(Embedding(5, 2), [[1]]).set_weights(None), TypeError,
     "Layer 'embedding': set_weights expects a list of arrays (as get_weights() returns), got "
     "NoneType")
case("h49-model-set-weights-none", "Sequential(...).set_weights(None)",
     lambda: mlp().set_weights(None), TypeError,
     "Sequential.set_weights: expected a list of 2 arrays (as get_weights() returns), got "
     "NoneType")

SLASH = "name must not contain '/' (it separates the parts of saved weight paths, as in Keras)"
case("h49-dense-name-slash", "Dense(3, name='a/b')", lambda: Dense(3, name="a/b"), ValueError,
     f"Dense: {SLASH}, got 'a/b'")
case("h49-sequential-name-slash", "tn.Sequential(name='a/b')",
     lambda: tn.Sequential(name="a/b"), ValueError, f"Sequential: {SLASH}, got 'a/b'")
case("h49-model-name-slash", "tn.Model(inputs, outputs, name='a/b')",
     lambda: tn.Model(*(lambda i: (i, Dense(2)(i)))(Input((2,))), name="a/b"), ValueError,
     f"Model: {SLASH}, got 'a/b'")
case("h49-input-name-slash", "tn.Input((2,), name='a/b')",
     lambda: Input((2,), name="a/b"), ValueError, f"InputLayer: {SLASH}, got 'a/b'")


class _SlashWeight(tn.layers.Layer):
    def build(self, input_shape):
        self.w = self.add_weight(shape=(2,), name="a/b")

    def call(self, x):
        return x


case("h49-add-weight-name-slash", "self.add_weight(shape=(2,), name='a/b') in build",
     lambda: _SlashWeight()(z(1, 2)), ValueError, f"add_weight: {SLASH}, got 'a/b'")
case("h49-optimizer-name-slash", "SGD(name='a/b')", lambda: optimizers.SGD(name="a/b"),
     ValueError, f"SGD: {SLASH}, got 'a/b'")

case("h49-focal-gamma-inf", "BinaryFocalCrossentropy(gamma=inf)",
     lambda: losses.BinaryFocalCrossentropy(gamma=INF), ValueError,
     "BinaryFocalCrossentropy: gamma must be a finite float >= 0, got inf")
case("h49-categorical-focal-gamma-inf", "CategoricalFocalCrossentropy(gamma=inf)",
     lambda: losses.CategoricalFocalCrossentropy(gamma=INF), ValueError,
     "CategoricalFocalCrossentropy: gamma must be a finite float >= 0, got inf")
case("h49-rescaling-beyond-float32", "Rescaling([1e300])", lambda: Rescaling([1e300]),
     ValueError, "Rescaling: scale must be a finite float or an array of them, each within "
     "float32's range (|v| <= 3.402823e+38), got [1e+300]")
case("h49-csvlogger-separator-newline", "CSVLogger('log.csv', separator='\\n')",
     lambda: callbacks.CSVLogger("log.csv", separator="\n"), ValueError,
     "CSVLogger: separator must not be a line break or the quote character '\"', got '\\n'")
case("h49-fit-validation-freq-empty", "fit(x, y, validation_split=0.2, validation_freq=[])",
     lambda: fit(compiled(), validation_split=0.2, validation_freq=[]), ValueError,
     "Sequential.fit: validation_freq must be a positive int or a non-empty list of positive "
     "ints, got []")
case("h49-adamw-exclude-bad-regex", "AdamW().exclude_from_weight_decay(var_names=['('])",
     lambda: optimizers.AdamW().exclude_from_weight_decay(var_names=["("]), ValueError,
     "AdamW: exclude_from_weight_decay var_names must be regular expressions (plain "
     "substrings work), got '(': missing ), unterminated subpattern at position 0")

# ============================================================================================
# Keras 3 files (issue 47): .keras archives and .weights.h5, written and read. The files
# are tests/data/keras's (Keras-written; the hostile ones derived from them); none of
# these cases needs h5py or Keras.
# ============================================================================================
KERAS_DATA = os.path.relpath(os.path.join(os.path.dirname(__file__), "..", "data", "keras"))


def _tinynet_only_model() -> tn.Model:
    from tinynet.layers import InstanceNormalization

    inputs = Input((4, 4, 2))
    return tn.Model(inputs, InstanceNormalization(name="inorm")(inputs))


case("keras-save-tinynet-only-layer", "model.save('m.keras') with an InstanceNormalization",
     lambda: _tinynet_only_model().save("m.keras"), ValueError,
     "save_model: a Keras .keras file cannot hold these tinynet layers: 'inorm' "
     "(InstanceNormalization: Keras 3 has no InstanceNormalization layer); save as "
     ".safetensors (model.save('m.safetensors'), which keeps every tinynet layer and resumes "
     "training bitwise) or export for inference with model.export('m.onnx', format='onnx')")
def _without_h5py(call: Callable[[], Any]) -> Any:
    """``call()`` as if h5py were not installed."""
    saved = sys.modules.get("h5py")
    sys.modules["h5py"] = None  # import h5py now raises ImportError
    try:
        return call()
    finally:
        if saved is None:
            del sys.modules["h5py"]
        else:
            sys.modules["h5py"] = saved


case("keras-save-without-h5py", "model.save('m.keras') without h5py installed",
     lambda: _without_h5py(lambda: mlp().save("m.keras")), ImportError,
     "save_model: reading and writing Keras files (.keras, .weights.h5) needs h5py; install "
     "it with pip install 'tinynet[keras]' (or pip install h5py), or save as .safetensors, "
     "which needs nothing extra")
case("keras-checkpoint-weights-suffix", "ModelCheckpoint('m.keras', save_weights_only=True)",
     lambda: callbacks.ModelCheckpoint("m.keras", save_weights_only=True), ValueError,
     "ModelCheckpoint: filepath " + WEIGHTS_SUFFIX, "got 'm.keras'; e.g. 'm.safetensors'")
case("keras-load-unknown-layer", "load_model(a Keras-written file with an AlphaDropout layer)",
     lambda: tn.models.load_model(os.path.join(KERAS_DATA, "keras_unknown_layer.keras")),
     ValueError, "keras_unknown_layer.keras': layer 'alpha' has class 'AlphaDropout', which "
     "tinynet does not have (nor is it registered); tinynet reads the Keras layers it "
     "implements, and custom classes registered with "
     "@tinynet.saving.register_keras_serializable() or given in custom_objects")
case("keras-load-lambda", "load_model(a Keras-written file with a Lambda layer)",
     lambda: tn.models.load_model(os.path.join(KERAS_DATA, "keras_lambda.keras")),
     ValueError, "keras_lambda.keras': layer 'double' is a Lambda layer, whose function the "
     "file holds as Python bytecode; tinynet never runs code from a file")
case("keras-load-truncated", "load_model(the first half of a .keras file)",
     lambda: tn.models.load_model(os.path.join(KERAS_DATA, "keras_truncated.keras")),
     ValueError, "keras_truncated.keras' is not a .keras archive: not a zip file, or "
     "truncated")
case("keras-load-path-traversal", "load_model(a .keras zip with a member '../escaped.txt')",
     lambda: tn.models.load_model(os.path.join(KERAS_DATA, "keras_traversal.keras")),
     ValueError, "keras_traversal.keras': archive member '../escaped.txt' has a path outside "
     "the archive (absolute or with '..'); refusing the file")

# -- issue 45 (items 5, 6, 7, 9): the training loop's data, callbacks and weighted metrics ---
class _Batches(tn.utils.PyDataset):  # two batches of (X, Y)
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return X, Y


def _gen(*items: Any) -> Any:
    return iter(items)


case("fit-steps-per-epoch-zero", "model.fit(generator, steps_per_epoch=0)",
     lambda: compiled().fit(_gen((X, Y)), steps_per_epoch=0, verbose=0), ValueError,
     "Sequential.fit: steps_per_epoch must be None or a positive int, got 0")
case("fit-steps-per-epoch-str", "model.fit(generator, steps_per_epoch='2')",
     lambda: compiled().fit(_gen((X, Y)), steps_per_epoch="2", verbose=0), TypeError,
     "Sequential.fit: steps_per_epoch must be None or a positive int, got '2'")
case("fit-validation-steps-negative", "model.fit(x, y, validation_steps=-1)",
     lambda: fit(compiled(), validation_steps=-1), ValueError,
     "Sequential.fit: validation_steps must be None or a positive int, got -1")
case("fit-steps-with-arrays", "model.fit(x, y, steps_per_epoch=2)",
     lambda: fit(compiled(), steps_per_epoch=2), ValueError,
     "Sequential.fit: steps_per_epoch is for a PyDataset or a generator; with arrays every "
     "batch of batch_size samples is used, got steps_per_epoch=2")
case("fit-dataset-with-y", "model.fit(PyDataset(), y)",
     lambda: compiled().fit(_Batches(), Y, verbose=0), ValueError,
     "Sequential.fit: y must be None when x is a dataset (a PyDataset or a generator yields "
     "its own), got ndarray")
case("fit-dataset-with-sample-weight", "model.fit(PyDataset(), sample_weight=w)",
     lambda: compiled().fit(_Batches(), sample_weight=np.ones(5), verbose=0), ValueError,
     "Sequential.fit: sample_weight must be None when x is a dataset")
case("fit-dataset-validation-split", "model.fit(PyDataset(), validation_split=0.2)",
     lambda: compiled().fit(_Batches(), validation_split=0.2, verbose=0), ValueError,
     "Sequential.fit: validation_split is for arrays; with a dataset pass validation_data, "
     "got validation_split=0.2")
case("fit-dataset-batch-x-only", "model.fit(generator of x alone)",
     lambda: compiled().fit(_gen(X), verbose=0), ValueError,
     "Sequential.fit: a dataset batch must be (x, y) or (x, y, sample_weight); got x alone")
case("fit-dataset-batch-four", "model.fit(generator of (x, y, w, extra))",
     lambda: compiled().fit(_gen((X, Y, Y, Y)), verbose=0), ValueError,
     "Sequential.fit: a dataset batch must be (x,), (x, y) or (x, y, sample_weight), or x "
     "alone; got tuple of length 4")
case("fit-dataset-batch-int", "model.fit(generator of ints)",
     lambda: compiled().fit(_gen(3), verbose=0), ValueError,
     "Sequential.fit: a dataset batch must be (x,), (x, y) or (x, y, sample_weight), or x "
     "alone; got int")
case("fit-validation-dataset-bad-batch", "model.fit(x, y, validation_data=generator of x)",
     lambda: fit(compiled(), validation_data=_gen(X)), ValueError,
     "Sequential.fit (validation_data): a dataset batch must be (x, y) or (x, y, "
     "sample_weight); got x alone")
case("evaluate-steps-float", "model.evaluate(generator, steps=1.5)",
     lambda: compiled().evaluate(_gen((X, Y)), steps=1.5, verbose=0), TypeError,
     "Sequential.evaluate: steps must be None or a positive int, got 1.5")
case("evaluate-empty-generator", "model.evaluate(empty generator)",
     lambda: compiled().evaluate(_gen(), verbose=0), ValueError,
     "Sequential.evaluate: the data gave no batch (an empty or exhausted generator)")
case("evaluate-callbacks-int", "model.evaluate(x, y, callbacks=5)",
     lambda: compiled().evaluate(X, Y, callbacks=5, verbose=0), TypeError,
     "Sequential.evaluate: callbacks must be a list of Callback objects, got int")
case("predict-steps-zero", "model.predict(x, steps=0)",
     lambda: mlp().predict(X, steps=0, verbose=0), ValueError,
     "Sequential.predict: steps must be None or a positive int, got 0")
case("predict-callbacks-element", "model.predict(x, callbacks=[5])",
     lambda: mlp().predict(X, callbacks=[5], verbose=0), TypeError,
     "Sequential.predict: callbacks must be a list of Callback objects, got an element of "
     "type int")
case("predict-empty-generator", "model.predict(empty generator)",
     lambda: mlp().predict(_gen(), verbose=0), ValueError,
     "Sequential.predict: the data gave no batch (an empty or exhausted generator)")
case("compile-weighted-metrics-str", "model.compile(loss='mse', weighted_metrics='mae')",
     lambda: mlp().compile(loss="mse", weighted_metrics="mae"), TypeError,
     "Sequential.compile: weighted_metrics must be a list, got str: 'mae'")
case("compile-weighted-metrics-loss", "model.compile(loss='mse', weighted_metrics=['loss'])",
     lambda: mlp().compile(loss="mse", weighted_metrics=["loss"]), ValueError,
     "loss")
case("py-dataset-workers-zero", "PyDataset(workers=0)",
     lambda: tn.utils.PyDataset(workers=0), ValueError,
     "PyDataset: workers must be a positive int, got 0")
case("py-dataset-workers-float", "PyDataset(workers=1.5)",
     lambda: tn.utils.PyDataset(workers=1.5), TypeError,
     "PyDataset: workers must be a positive int, got 1.5")
case("py-dataset-queue-zero", "PyDataset(max_queue_size=0)",
     lambda: tn.utils.PyDataset(max_queue_size=0), ValueError,
     "PyDataset: max_queue_size must be a positive int, got 0")
case("py-dataset-multiprocessing-str", "PyDataset(use_multiprocessing='yes')",
     lambda: tn.utils.PyDataset(use_multiprocessing="yes"), TypeError,
     "PyDataset: use_multiprocessing must be a bool, got 'yes'")
case("py-dataset-no-len", "len(PyDataset())", lambda: len(tn.utils.PyDataset()),
     NotImplementedError, "PyDataset must define __len__(), the number of batches per epoch")
case("py-dataset-no-getitem", "PyDataset()[0]", lambda: tn.utils.PyDataset()[0],
     NotImplementedError, "PyDataset must define __getitem__(index), returning one batch")
case("auc-multi-label-str", "AUC(multi_label='yes')",
     lambda: tn.metrics.AUC(multi_label="yes"), TypeError, "AUC: multi_label must be a bool")
case("auc-multi-label-1d", "AUC(multi_label=True).update_state(ones(4), ones(4))",
     lambda: tn.metrics.AUC(multi_label=True).update_state(np.ones(4), np.ones(4)),
     ValueError, "AUC: multi_label=True needs predictions of shape (samples, labels), got "
     "shape (4,)")
case("auc-sample-weight-shape", "AUC().update_state(ones((4, 2)), ones((4, 2)), sample_weight=ones(3))",
     lambda: tn.metrics.AUC().update_state(np.ones((4, 2)), np.ones((4, 2)),
                                           sample_weight=np.ones(3)),
     ValueError, "AUC: sample_weight shape (3,) does not match the predictions' shape (4, 2)")
case("tensorboard", "callbacks.TensorBoard(log_dir='logs')",
     lambda: tn.callbacks.TensorBoard(log_dir="logs"), NotImplementedError,
     "TensorBoard: tinynet cannot write TensorBoard event files", "CSVLogger",
     "plot_history")
case("checkpoint-weights-only-keras", "ModelCheckpoint('m.keras', save_weights_only=True)",
     lambda: tn.callbacks.ModelCheckpoint("m.keras", save_weights_only=True), ValueError,
     "ModelCheckpoint: filepath " + WEIGHTS_SUFFIX, "got 'm.keras'")

# -- h46onnx: ONNX export of the recurrent layers ----------------------------------------------
case("export-unknown-size-conv1d",
     "export of Input((None, 4)) -> LSTM(return_sequences) -> Conv1D",
     lambda: tn.Sequential([Input((None, 4)), tn.layers.LSTM(3, return_sequences=True),
                            Conv1D(2, 3, name="conv")]).export("m.onnx"), ValueError,
     "Sequential.export: layer 'conv' (Conv1D) gets an input of shape (None, None, 3), and "
     "its export needs every size but the batch axis known", "give the Input a fixed shape")
case("export-unknown-size-wrapped", "export of Input((3, None, 4)) -> TimeDistributed(Conv1D)",
     lambda: tn.Sequential([Input((3, None, 4)), tn.layers.TimeDistributed(
         Conv1D(2, 2, name="conv"), name="td")]).export("m.onnx"), ValueError,
     "Sequential.export: layer 'td/conv' (Conv1D) gets an input of shape (None, None, 4)")


# -- h47rnnkeras: Keras files with vocabulary layers (assets), lookups' vocabulary_size -------
# (the archives derive from tests/data/keras/keras_vocabulary.keras; none needs h5py)
case("keras-load-vocabulary-too-large",
     "load_model(a Keras file whose IntegerLookup says vocabulary_size=2**40)",
     lambda: tn.models.load_model(os.path.join(KERAS_DATA, "keras_vocabulary_too_large.keras")),
     ValueError, "keras_vocabulary_too_large.keras': layer 'ids' (IntegerLookup) has "
     "vocabulary_size=1099511627776, more than the 4194304 tokens a file may give a layer; "
     "refused before allocating")
case("keras-load-vocabulary-not-utf8", "load_model(a Keras file whose vocabulary.txt is not UTF-8)",
     lambda: tn.models.load_model(os.path.join(KERAS_DATA, "keras_vocabulary_not_utf8.keras")),
     ValueError, "keras_vocabulary_not_utf8.keras': vocabulary "
     "'assets/layers/integer_lookup/vocabulary.txt' is not UTF-8 text")
case("keras-load-vocabulary-traversal",
     "load_model(a Keras file with an asset 'assets/../../escaped/vocabulary.txt')",
     lambda: tn.models.load_model(os.path.join(KERAS_DATA, "keras_vocabulary_traversal.keras")),
     ValueError, "keras_vocabulary_traversal.keras': archive member "
     "'assets/../../escaped/vocabulary.txt' has a path outside the archive (absolute or with "
     "'..'); refusing the file")
case("integer-lookup-vocabulary-size-negative", "IntegerLookup(vocabulary_size=-1)",
     lambda: tn.layers.IntegerLookup(vocabulary_size=-1), ValueError,
     "IntegerLookup: vocabulary_size must be None or an int >= 0, got -1")
case("string-lookup-vocabulary-size-str", "StringLookup(vocabulary_size='8')",
     lambda: tn.layers.StringLookup(vocabulary_size="8"), TypeError,
     "StringLookup: vocabulary_size must be None or an int >= 0, got '8'")

# -- h47strings: string inputs (tn.Input(dtype="string")) and the text layers on them -------
def _text_model(sequential: bool = False) -> Any:
    """An adapted TextVectorization -> Embedding -> GlobalAveragePooling1D -> Dense model on
    a string Input of shape (1,) named 'text'."""
    vectorize = TV(max_tokens=10, output_sequence_length=4)
    vectorize.adapt(["a b c", "b c d"])
    text = tn.Input((1,), dtype="string", name="text")
    tail = [tn.layers.Embedding(10, 2), tn.layers.GlobalAveragePooling1D(), tn.layers.Dense(1)]
    if sequential:
        return tn.Sequential([text, vectorize, *tail])
    x = vectorize(text)
    for layer in tail:
        x = layer(x)
    return tn.Model(text, x)


def _float_model() -> Any:
    x = tn.Input((1,), name="number")
    return tn.Model(x, tn.layers.Dense(1)(x))


case("string-input-numbers", "Model(Input((1,), dtype='string'), ...).predict(ones((2, 1)))",
     lambda: _text_model().predict(np.ones((2, 1)), verbose=0), TypeError,
     "Model.predict: input 'text' has dtype string and takes strings (str or bytes), got an "
     "array of dtype float64")
case("string-input-object-numbers",
     "Model(Input((1,), dtype='string'), ...).predict(array([['a'], [3]], dtype=object))",
     lambda: _text_model().predict(np.array([["a"], [3]], dtype=object), verbose=0), TypeError,
     "Model.predict: input 'text' has dtype string and takes strings (str or bytes), got int 3 "
     "in an object array")
case("string-input-sequential-numbers",
     "Sequential([Input((1,), dtype='string'), ...]).predict(ones((2, 1)))",
     lambda: _text_model(sequential=True).predict(np.ones((2, 1)), verbose=0), TypeError,
     "Sequential.predict: x has dtype string and takes strings (str or bytes), got an array of "
     "dtype float64")
case("float-input-strings", "Model(Input((1,)), ...).predict(array([['a'], ['b']]))",
     lambda: _float_model().predict(np.array([["a"], ["b"]]), verbose=0), TypeError,
     "Model.predict: input 'number' has dtype float32 and takes numbers, got an array of "
     "strings (dtype <U1); give the Input dtype='string' and a text layer (TextVectorization, "
     "StringLookup) to feed text")
case("string-lookup-invert-symbolic",
     "StringLookup(vocabulary=['a'], invert=True)(Input((1,), dtype='string'))",
     lambda: SL(vocabulary=["a"], invert=True)(tn.Input((1,), dtype="string")), TypeError,
     "StringLookup 'string_lookup", "with invert=True it returns strings, which no model "
     "layer takes")
case("string-input-onnx-export", "Model(Input((1,), dtype='string'), TextVectorization, ...)"
     ".export('m.onnx')",
     lambda: _text_model().export("refused_before_writing.onnx"), ValueError,
     "Model.export: input 'text' has dtype string, and layer 'text_vectorization' "
     "(TextVectorization) turns the text into ids in NumPy, which has no ONNX form; export the "
     "layers after it on an int Input (tn.Input(shape, dtype='int64')) and run the text layer "
     "on the data before the ONNX model")

# -- issue 46 (items 3, 9): sequence masks given to the recurrent layers and wrappers -------
_SEQ = np.zeros((2, 5, 3), np.float32)
case("lstm-mask-shape", "LSTM(2)(zeros((2, 5, 3)), mask=ones((2, 4)))",
     lambda: _rnn("LSTM", 2, name="lstm_m")(_SEQ, mask=np.ones((2, 4), bool)), ValueError,
     "LSTM 'lstm_m': mask must have shape (2, 5) (batch, timesteps of the input), got shape "
     "(2, 4)")
case("gru-mask-rank", "GRU(2)(zeros((2, 5, 3)), mask=ones((2, 5, 1)))",
     lambda: _rnn("GRU", 2, name="gru_m")(_SEQ, mask=np.ones((2, 5, 1), bool)), ValueError,
     "GRU 'gru_m': mask must have shape (2, 5)", "got shape (2, 5, 1)")
case("simple-rnn-mask-values", "SimpleRNN(2)(zeros((2, 5, 3)), mask=full((2, 5), 0.5))",
     lambda: _rnn("SimpleRNN", 2, name="rnn_m")(_SEQ, mask=np.full((2, 5), 0.5)), ValueError,
     "SimpleRNN 'rnn_m': mask must hold booleans (or 0/1 numbers), got dtype float64 with "
     "values other than 0 and 1")
case("lstm-mask-strings", "LSTM(2)(zeros((2, 5, 3)), mask=full((2, 5), 'x'))",
     lambda: _rnn("LSTM", 2, name="lstm_s")(_SEQ, mask=np.full((2, 5), "x")), ValueError,
     "LSTM 'lstm_s': mask must hold booleans (or 0/1 numbers), got dtype <U1")
case("bidirectional-mask-shape", "Bidirectional(LSTM(2))(zeros((2, 5, 3)), mask=ones(5))",
     lambda: tn.layers.Bidirectional(_rnn("LSTM", 2, name="bi_inner"))(
         _SEQ, mask=np.ones(5, bool)), ValueError,
     "LSTM 'forward_bi_inner': mask must have shape (2, 5)", "got shape (5,)")
case("time-distributed-mask-shape", "TimeDistributed(Dense(2))(zeros((2, 5, 3)), mask=ones((2, 4)))",
     lambda: tn.layers.TimeDistributed(tn.layers.Dense(2), name="td_m")(
         _SEQ, mask=np.ones((2, 4), bool)), ValueError,
     "TimeDistributed 'td_m': mask must have shape (2, 5, ...) (batch, timesteps of the "
     "input), got shape (2, 4)")

# ============================================================================================
# issue 44 item 5 (h44house): the operation layer's names for what the kernels compute
# ============================================================================================
case("h44house-activation-fn-form", "activations.ActivationFn('mine', 'swish3', ...)",
     lambda: tn.activations.ActivationFn("mine", "swish3", uses_input=True, uses_output=False),
     ValueError, "ActivationFn: form must be one of ('linear', 'relu', 'leaky_relu', "
     "'relu_general', 'sigmoid', 'tanh', 'elu', 'gelu', 'silu', 'softmax', 'function'), "
     "got 'swish3'")

# ============================================================================================
# Attention layers (issue 46): MultiHeadAttention, Attention, AdditiveAttention
# ============================================================================================
def _q(shape=(2, 4, 6)) -> np.ndarray:
    return np.zeros(shape, np.float32)


case('mha-num-heads-zero', 'MultiHeadAttention(num_heads=0, key_dim=4)',
     lambda: tn.layers.MultiHeadAttention(0, 4), ValueError,
     'MultiHeadAttention: num_heads must be a positive int, got 0')
case('mha-num-heads-float', 'MultiHeadAttention(num_heads=2.0, key_dim=4)',
     lambda: tn.layers.MultiHeadAttention(2.0, 4), TypeError,
     'MultiHeadAttention: num_heads must be a positive int, got 2.0')
case('mha-key-dim-zero', 'MultiHeadAttention(2, key_dim=0)',
     lambda: tn.layers.MultiHeadAttention(2, 0), ValueError,
     'MultiHeadAttention: key_dim must be a positive int, got 0')
case('mha-key-dim-negative', 'MultiHeadAttention(2, key_dim=-3)',
     lambda: tn.layers.MultiHeadAttention(2, -3), ValueError,
     'MultiHeadAttention: key_dim must be a positive int, got -3')
case('mha-value-dim-zero', 'MultiHeadAttention(2, 4, value_dim=0)',
     lambda: tn.layers.MultiHeadAttention(2, 4, value_dim=0), ValueError,
     'MultiHeadAttention: value_dim must be a positive int, got 0')
case('mha-dropout-one', 'MultiHeadAttention(2, 4, dropout=1.0)',
     lambda: tn.layers.MultiHeadAttention(2, 4, dropout=1.0), ValueError,
     'MultiHeadAttention: dropout must be a float in [0, 1), got 1.0')
case('mha-output-shape-zero', 'MultiHeadAttention(2, 4, output_shape=0)',
     lambda: tn.layers.MultiHeadAttention(2, 4, output_shape=0), ValueError,
     'MultiHeadAttention: output_shape must be None, a positive int or a tup'
     'le of positive ints, got 0')
case('mha-attention-axes-two', 'MultiHeadAttention(2, 4, attention_axes=(1, 2))',
     lambda: tn.layers.MultiHeadAttention(2, 4, attention_axes=(1, 2)), ValueError,
     'MultiHeadAttention: attention_axes must be None, 1 or -2 (attention ov'
     'er the steps of rank-3 inputs), got (1, 2)')
case('mha-use-gate', 'MultiHeadAttention(2, 4, use_gate=True)',
     lambda: tn.layers.MultiHeadAttention(2, 4, use_gate=True), ValueError,
     'MultiHeadAttention: use_gate=True is not supported, got use_gate=True')
case('mha-query-rank-2', 'MultiHeadAttention(2, 4)(zeros((2, 6)), zeros((2, 5, 6)))',
     lambda: tn.layers.MultiHeadAttention(2, 4)(_q((2, 6)), _q((2, 5, 6))), ValueError,
     "MultiHeadAttention 'multi_head_attention': query must have rank 3 [bat"
     'ch, steps, features], got shape (None, 6)')
case('mha-value-rank-4', 'MultiHeadAttention(2, 4)(zeros((2, 4, 6)), zeros((2, 5, 3, 6)))',
     lambda: tn.layers.MultiHeadAttention(2, 4)(_q(), _q((2, 5, 3, 6))), ValueError,
     "MultiHeadAttention 'multi_head_attention': value must have rank 3 [bat"
     'ch, steps, features], got shape (None, 5, 3, 6)')
case('mha-key-steps', 'MultiHeadAttention(2, 4)(q, zeros((2, 5, 6)), key=zeros((2, 3, 6)))',
     lambda: tn.layers.MultiHeadAttention(2, 4)(_q(), _q((2, 5, 6)), _q((2, 3, 6))), ValueError,
     "MultiHeadAttention 'multi_head_attention': All dimensions of `value` a"
     'nd `key`, except the last one, must be equal. Received: value_shape=(N'
     'one, 5, 6) and key_shape=(None, 3, 6)')
case('mha-no-value', 'MultiHeadAttention(2, 4)(q)',
     lambda: tn.layers.MultiHeadAttention(2, 4)(_q()), ValueError,
     "MultiHeadAttention 'multi_head_attention': expects query and value (la"
     'yer(query, value)), got only one input')
case('mha-attention-mask-shape', 'MultiHeadAttention(2, 4)(q, q, attention_mask=ones((2, 4, 5)))',
     lambda: tn.layers.MultiHeadAttention(2, 4)(_q(), _q(),
                                               attention_mask=np.ones((2, 4, 5), bool)),
     ValueError,
     "MultiHeadAttention 'multi_head_attention': attention_mask must have sh"
     'ape (2, 4, 4) [batch, query steps, key steps], got (2, 4, 5)')
case('mha-value-mask-shape', 'MultiHeadAttention(2, 4)(q, q, value_mask=ones((2, 3)))',
     lambda: tn.layers.MultiHeadAttention(2, 4)(_q(), _q(), value_mask=np.ones((2, 3), bool)),
     ValueError,
     "MultiHeadAttention 'multi_head_attention': value_mask: mask must have "
     "shape (2, 4) (the input's shape without its last axis), got (2, 3)")
case('mha-causal-not-bool', "MultiHeadAttention(2, 4)(q, q, use_causal_mask='yes')",
     lambda: tn.layers.MultiHeadAttention(2, 4)(_q(), _q(), use_causal_mask="yes"), TypeError,
     "MultiHeadAttention 'multi_head_attention': use_causal_mask must be a b"
     "ool, got 'yes'")
case('mha-unknown-call-arg', 'MultiHeadAttention(2, 4)(q, q, causal=True)',
     lambda: tn.layers.MultiHeadAttention(2, 4)(_q(), _q(), causal=True), TypeError,
     "MultiHeadAttention 'multi_head_attention': unexpected call arguments ["
     "'causal']; expected some of ['attention_mask', 'key_mask', 'query_mask"
     "', 'return_attention_scores', 'use_causal_mask', 'value_mask']")
case('attention-score-mode', "Attention(score_mode='general')",
     lambda: tn.layers.Attention(score_mode="general"), ValueError,
     "Attention: score_mode must be one of 'dot', 'concat', got 'general'")
case('attention-use-scale-str', "Attention(use_scale='yes')",
     lambda: tn.layers.Attention(use_scale="yes"), TypeError,
     "Attention: use_scale must be a bool, got 'yes'")
case('attention-not-a-list', 'Attention()(zeros((2, 4, 6)))',
     lambda: tn.layers.Attention()(_q()), ValueError,
     "Attention 'attention': must be called on a list of inputs, namely [que"
     'ry, value] or [query, value, key], got ndarray')
case('attention-one-input', 'Attention()([zeros((2, 4, 6))])',
     lambda: tn.layers.Attention()([_q()]), ValueError,
     "Attention 'attention': expects [query, value] or [query, value, key], "
     'got 1 inputs')
case('attention-query-key-dims', 'Attention()([zeros((2, 4, 6)), zeros((2, 5, 3))])',
     lambda: tn.layers.Attention()([_q(), _q((2, 5, 3))]), ValueError,
     "Attention 'attention': the last axes of query and key must be equal (t"
     'he scores compare them), got query shape (None, 4, 6) and key shape (N'
     'one, 5, 3)')
case('attention-mask-shape', 'Attention()([q, q], mask=[ones((2, 5)), None])',
     lambda: tn.layers.Attention()([_q(), _q()], mask=[np.ones((2, 5), bool), None]), ValueError,
     "Attention 'attention': query_mask: mask must have shape (2, 4) (the in"
     "put's shape without its last axis), got (2, 5)")
case('attention-mask-not-list', 'Attention()([q, q], mask=ones((2, 4)))',
     lambda: tn.layers.Attention()([_q(), _q()], mask=np.ones((2, 4), bool)), ValueError,
     "Attention 'attention': mask must be a list [query_mask, value_mask] (o"
     'r with a key_mask), got ndarray of shape (2, 4)')
case('attention-unknown-call-arg', 'Attention()([q, q], attention_mask=ones((2, 4, 4)))',
     lambda: tn.layers.Attention()([_q(), _q()], attention_mask=np.ones((2, 4, 4))), TypeError,
     "Attention 'attention': unexpected call arguments ['attention_mask']; e"
     "xpected some of ['training', 'mask', 'return_attention_scores', 'use_c"
     "ausal_mask']")
case('additive-dropout-negative', 'AdditiveAttention(dropout=-0.1)',
     lambda: tn.layers.AdditiveAttention(dropout=-0.1), ValueError,
     'AdditiveAttention: dropout must be a float in [0, 1), got -0.1')
case('additive-query-rank-2', 'AdditiveAttention()([zeros((2, 6)), zeros((2, 5, 6))])',
     lambda: tn.layers.AdditiveAttention()([_q((2, 6)), _q((2, 5, 6))]), ValueError,
     "AdditiveAttention 'additive_attention': query must have rank 3 [batch,"
     ' steps, features], got shape (None, 6)')


# -- h47mha: MultiHeadAttention in .keras files (call arguments in Keras's nodes) ----------
def _mha_model(**call: Any) -> tn.Model:
    inputs = Input((5, 6))
    return tn.Model(inputs, tn.layers.MultiHeadAttention(2, 4, name="mha")(
        inputs, inputs, **call))


def _node(entry: dict) -> dict:
    return entry["inbound_nodes"][0]


def _load_edited(model: tn.Model, edit: Callable[[dict], None]) -> Any:
    """load_model of ``model`` saved as a .keras file whose second layer entry ``edit``
    changes (as a Keras-written file could have it); skipped without h5py, which writing
    the file needs."""
    import json
    import tempfile
    import zipfile

    pytest.importorskip("h5py")

    with tempfile.TemporaryDirectory() as folder:
        source, target = os.path.join(folder, "m.keras"), os.path.join(folder, "e.keras")
        model.save(source)
        with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w") as zout:
            for info in zin.infolist():
                data = zin.read(info)
                if info.filename == "config.json":
                    config = json.loads(data)
                    edit(config["config"]["layers"][1])
                    data = json.dumps(config).encode()
                zout.writestr(info.filename, data)
        here = os.getcwd()
        os.chdir(folder)  # a relative name keeps the message (and docs/errors.md) stable
        try:
            return tn.models.load_model("e.keras")
        finally:
            os.chdir(here)


def _load_mha_edited(edit: Callable[[dict], None]) -> Any:
    """:func:`_load_edited` of the MultiHeadAttention model."""
    return _load_edited(_mha_model(), edit)


case("keras-save-mha-constant-mask", "model.save('m.keras') of MultiHeadAttention(...)(q, v, "
     "attention_mask=ones((1, 5, 5)))",
     lambda: _mha_model(attention_mask=np.ones((1, 5, 5), bool)).save("m.keras"), ValueError,
     "save_model: a Keras .keras file cannot hold these tinynet layers: 'mha' "
     "(MultiHeadAttention called with the constant attention_mask, which a Keras node holds "
     "only as a model input)")
case("keras-load-mha-mask-kwarg", "load_model(a Keras file calling MultiHeadAttention with "
     "query_mask=<tensor>)",
     lambda: _load_mha_edited(
         lambda e: _node(e)["kwargs"].update(query_mask=_node(e)["args"][0])),
     ValueError, "layer 'mha' (MultiHeadAttention) is called with ['query_mask'], which "
     "tinynet does not take from a .keras file; call it without them, or give the inputs "
     "their own masks")
case("keras-load-mha-flag-type", "load_model(a Keras file calling MultiHeadAttention with "
     "use_causal_mask=1)",
     lambda: _load_mha_edited(lambda e: _node(e)["kwargs"].update(use_causal_mask=1)),
     ValueError,
     "layer 'mha' (MultiHeadAttention) has call arguments {'use_causal_mask': 1}; expected "
     "True or False")
case("keras-load-mha-value-twice", "load_model(a Keras file giving MultiHeadAttention value "
     "positionally and as value=)",
     lambda: _load_mha_edited(
         lambda e: _node(e)["kwargs"].update(value=_node(e)["args"][1])),
     ValueError,
     "layer 'mha' (MultiHeadAttention) is given its value twice")
case("keras-load-mha-no-query", "load_model(a Keras file with a MultiHeadAttention node "
     "without arguments)",
     lambda: _load_mha_edited(lambda e: _node(e).update(args=[])), ValueError,
     "layer 'mha' (MultiHeadAttention) has a node without its query")
case("keras-load-mha-nodes-differ", "load_model(a Keras file calling one MultiHeadAttention "
     "twice, with and without use_causal_mask)",
     lambda: _load_mha_edited(lambda e: e["inbound_nodes"].append(
         {**_node(e), "kwargs": {"use_causal_mask": True}})), ValueError,
     "layer 'mha' (MultiHeadAttention) is called with different call arguments in different "
     "nodes, which tinynet's layer does not keep")


# -- h47attn: Attention and AdditiveAttention in .keras files (call arguments in the nodes) --
def _attention_model(**call: Any) -> tn.Model:
    inputs = Input((5, 6))
    return tn.Model(inputs, tn.layers.Attention(name="att")([inputs, inputs], **call))


def _load_attention_edited(edit: Callable[[dict], None]) -> Any:
    """:func:`_load_edited` of the Attention model."""
    return _load_edited(_attention_model(), edit)


_KERAS_ONES = {"class_name": "__numpy__", "config": {"value": [[True] * 5], "dtype": "bool"}}

case("keras-save-attention-constant-mask", "model.save('m.keras') of Attention()([q, q], "
     "mask=[None, ones((2, 5))])",
     lambda: _attention_model(mask=[None, np.ones((2, 5), bool)]).save("m.keras"), ValueError,
     "save_model: a Keras .keras file cannot hold these tinynet layers: 'att' (Attention "
     "called with a constant mask, which tinynet does not write to a .keras file; give its "
     "inputs their own masks, e.g. from Embedding(mask_zero=True))")
case("keras-load-attention-mask-tensor", "load_model(a Keras file calling Attention with "
     "mask=[<tensor>, <tensor>])",
     lambda: _load_attention_edited(lambda e: _node(e)["kwargs"].update(
         mask=_node(e)["args"][0])),
     ValueError, "layer 'att' (Attention) is called with a mask tensor (mask=), which tinynet "
     "does not take from a .keras file; tinynet's layer takes the masks its inputs carry "
     "(e.g. from Embedding(mask_zero=True)): call it without mask=")
case("keras-load-attention-constant-mask", "load_model(a Keras file calling Attention with "
     "mask=[None, <__numpy__ constant>])",
     lambda: _load_attention_edited(lambda e: _node(e)["kwargs"].update(
         mask=[None, _KERAS_ONES])),
     ValueError, "layer 'att' (Attention) is called with a constant mask (mask=), which "
     "tinynet does not take from a .keras file")
case("keras-load-attention-flag-type", "load_model(a Keras file calling Attention with "
     "return_attention_scores='yes')",
     lambda: _load_attention_edited(
         lambda e: _node(e)["kwargs"].update(return_attention_scores="yes")),
     ValueError, "layer 'att' (Attention) has call arguments {'return_attention_scores': "
     "'yes'}; expected True or False")
case("keras-load-attention-no-inputs", "load_model(a Keras file with an Attention node "
     "without arguments)",
     lambda: _load_attention_edited(lambda e: _node(e).update(args=[])), ValueError,
     "layer 'att' (Attention) has a node without its inputs [query, value]")
case("keras-load-attention-not-a-list", "load_model(a Keras file calling Attention on one "
     "tensor)",
     lambda: _load_attention_edited(lambda e: _node(e).update(args=_node(e)["args"][0][:1])),
     ValueError, "layer 'att' (Attention) is called on one tensor; expected a list [query, "
     "value] or [query, value, key]")
case("keras-load-attention-flag-twice", "load_model(a Keras file giving Attention "
     "use_causal_mask positionally and as use_causal_mask=)",
     lambda: _load_attention_edited(lambda e: _node(e).update(
         args=_node(e)["args"] + [None, None, False, True],
         kwargs={"use_causal_mask": True})),
     ValueError, "layer 'att' (Attention) is given its use_causal_mask twice")
case("keras-load-attention-too-many-args", "load_model(a Keras file calling Attention with "
     "6 positional arguments)",
     lambda: _load_attention_edited(lambda e: _node(e).update(
         args=_node(e)["args"] + [None] * 5)),
     ValueError, "layer 'att' (Attention) has a node with 6 positional arguments; expected "
     "at most 5")


# -- h44speed: the models' one graph walk (layer_graph), as the exporter reads it -------------
def _subclassed_model():
    class Net(tn.Model):
        def __init__(self):
            super().__init__()
            self.dense = tn.layers.Dense(2)

        def call(self, x):
            return self.dense(x)

    net = Net()
    net(np.ones((1, 3), np.float32))
    return net


case("export-subclassed-model", "a subclassed tn.Model's export('m.onnx')",
     lambda: _subclassed_model().export("m.onnx"), ValueError,
     "Net.export: Net 'net' is a subclassed model: its call() runs Python code, which has no "
     "ONNX form; build it as a Sequential or functional Model of built-in layers to export it")

# ============================================================================================
# the tests
# ============================================================================================
@pytest.fixture(autouse=True)
def _clean_state():
    tuning.reset()
    yield
    tuning.reset()


def test_table_is_large_and_ids_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(CASES) >= 120


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case: Case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as info:
            case.call()
    assert type(info.value) is case.exc, f"raised {type(info.value).__name__}: {info.value}"
    assert re.search(case.pattern, str(info.value), re.DOTALL), str(info.value)


@pytest.mark.parametrize("call", [
    lambda: Dense(3).backward(z(2, 3)),
    lambda: GroupNormalization(2).backward(z(2, 4)),
    lambda: Flatten().backward(z(2)),
], ids=["dense", "group-norm", "flatten"])
def test_backward_before_forward_is_runtime_error(call):
    with pytest.raises(RuntimeError, match="backward called before forward"):
        call()


def test_fit_before_compile_is_runtime_error():
    with pytest.raises(RuntimeError, match=re.escape("Sequential.fit: model 'sequential' is "
                                                     "not compiled; call compile() first")):
        mlp().fit(X, Y, verbose=0)


# -- docs/errors.md -------------------------------------------------------------------------
def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _message(case: Case) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            case.call()
        except case.exc as exc:
            return str(exc.args[0]) if isinstance(exc, KeyError) else str(exc)
        finally:
            tuning.reset()
    raise AssertionError(f"{case.id} did not raise")


def render_errors_md() -> str:
    """docs/errors.md: one table row per case of the bad-input matrix."""
    lines = [
        "# Error messages",
        "",
        "What tinynet raises for bad arguments and bad inputs: every row is a case of the",
        "bad-input matrix in `tests/hardening/test_bad_inputs.py` (the test checks the",
        "exception type and the message). Regenerate this file with",
        "`python tests/hardening/test_bad_inputs.py`. See [reliability.md](reliability.md)",
        "for the contract.",
        "",
        f"{len(CASES)} cases.",
        "",
        "| id | what was passed | exception | message |",
        "|---|---|---|---|",
    ]
    for c in CASES:
        lines.append(f"| {c.id} | `{_cell(c.what)}` | {c.exc.__name__} | {_cell(_message(c))} |")
    return "\n".join(lines) + "\n"


def _doc_rows(text: str) -> dict[str, list[str]]:
    rows = {}
    for line in text.splitlines():
        if not line.startswith("| ") or line.startswith("| id |"):
            continue
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        rows[cells[0]] = cells
    return rows


def test_errors_doc_matches_table():
    """docs/errors.md lists every case with its exception, and each documented message
    matches the case's regex (messages that depend on the machine, such as the thread
    limit, may differ in their details)."""
    rows = _doc_rows(DOC.read_text(encoding="utf-8"))
    assert list(rows) == [c.id for c in CASES], "docs/errors.md is stale: regenerate it"
    for c in CASES:
        _, what, exc, message = rows[c.id]
        assert what == f"`{_cell(c.what)}`"
        assert exc == c.exc.__name__
        unescaped = message.replace("\\|", "|").replace("\\\\", "\\")
        assert re.search(c.pattern, unescaped, re.DOTALL), (c.id, message)


if __name__ == "__main__":
    DOC.write_text(render_errors_md(), encoding="utf-8")
    print(f"wrote {DOC} ({len(CASES)} cases)", file=sys.stderr)
