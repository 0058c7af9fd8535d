"""The one-layer models of the export tests: a few argument variants of every layer
class of ``tinynet.layers.__all__`` that computes something, with random weights and
inputs (no ``onnx`` needed here, so the contract test runs without it)."""

from __future__ import annotations

import numpy as np

import tinynet as tn
from tinynet import activations
from tinynet import layers as L


def normal(shape: tuple, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def randomize(model: tn.Sequential, seed: int = 0) -> None:
    """Random vectors (biases, gammas, betas, moving statistics; variances positive), so
    no weight hides behind a zeros-or-ones initializer; kernels and tables keep their
    own initializers' scale (as trained weights have it)."""
    rng = np.random.default_rng(seed)
    for path, p in model.named_parameters():
        statistic = "mean" in path or "variance" in path
        vector = statistic or path.endswith("bias")  # GRU's bias is [2, 3 * units]
        if p.value.ndim == 0 or (p.value.ndim > 1 and not vector):  # kernels, tables
            continue
        value = rng.standard_normal(p.value.shape).astype(np.float32)
        if "variance" in path:
            value = np.abs(value) + np.float32(0.5)
        p.value[...] = value


# name -> [(variant id, factory, per-sample input shape)]; a list of shapes for a merge
CASES: dict[str, list[tuple]] = {
    "Dense": [("units5", lambda: L.Dense(5), (6,)),
              ("gelu-nobias", lambda: L.Dense(4, activation="gelu", use_bias=False), (6,)),
              ("rank3-softmax", lambda: L.Dense(3, activation="softmax"), (4, 6))],
    "Activation": [(name, (lambda n: lambda: L.Activation(n))(name), (3, 5))
                   for name in activations.names()],
    "ReLU": [("default", lambda: L.ReLU(), (9,)),
             ("max", lambda: L.ReLU(max_value=0.5), (9,)),
             ("slope-threshold", lambda: L.ReLU(negative_slope=0.1, threshold=0.3), (9,)),
             ("all", lambda: L.ReLU(max_value=1.0, negative_slope=0.2, threshold=-0.0), (9,)),
             ("all2", lambda: L.ReLU(max_value=1.5, negative_slope=0.2, threshold=0.4), (9,))],
    "LeakyReLU": [("default", lambda: L.LeakyReLU(), (9,)),
                  ("slope", lambda: L.LeakyReLU(0.05), (9,))],
    "ELU": [("default", lambda: L.ELU(), (9,)), ("alpha", lambda: L.ELU(0.5), (9,))],
    "Sigmoid": [("default", lambda: L.Sigmoid(), (9,))],
    "Tanh": [("default", lambda: L.Tanh(), (9,))],
    "Softmax": [("last", lambda: L.Softmax(), (3, 5)),
                ("axis1", lambda: L.Softmax(axis=1), (3, 5))],
    "Conv2D": [("valid", lambda: L.Conv2D(4, 3), (7, 6, 3)),
               ("same-s2", lambda: L.Conv2D(4, 3, strides=2, padding="same"), (7, 6, 3)),
               ("same-k4-d2", lambda: L.Conv2D(3, 4, padding="same", dilation_rate=2), (7, 8, 2)),
               ("valid-s21-relu", lambda: L.Conv2D(5, (3, 2), strides=(2, 1), activation="relu"),
                (8, 7, 3)),
               ("same-softmax", lambda: L.Conv2D(4, (3, 2), padding="same", activation="softmax"),
                (5, 6, 2)),
               ("pointwise", lambda: L.Conv2D(6, 1, use_bias=False), (4, 5, 3)),
               ("filters16-same", lambda: L.Conv2D(16, 3, padding="same", activation="elu"),
                (6, 6, 4))],
    "Conv1D": [("valid", lambda: L.Conv1D(4, 3), (9, 3)),
               ("same-s2", lambda: L.Conv1D(4, 4, strides=2, padding="same"), (9, 3)),
               ("causal-d2", lambda: L.Conv1D(3, 3, padding="causal", dilation_rate=2,
                                              activation="tanh"), (9, 2)),
               ("causal-s2", lambda: L.Conv1D(3, 2, strides=2, padding="causal"), (8, 2))],
    "Conv2DTranspose": [
        ("k3-s2-same", lambda: L.Conv2DTranspose(3, 3, strides=2, padding="same"), (3, 4, 2)),
        ("k3-s2-valid", lambda: L.Conv2DTranspose(3, 3, strides=2), (3, 4, 2)),
        ("k2-s2-valid", lambda: L.Conv2DTranspose(4, 2, strides=2, activation="relu"), (3, 3, 2)),
        ("k3-s1-same", lambda: L.Conv2DTranspose(2, 3, padding="same"), (4, 4, 3)),
        ("k4-s2-same", lambda: L.Conv2DTranspose(2, 4, strides=2, padding="same"), (3, 4, 3)),
        ("k1-s3-valid", lambda: L.Conv2DTranspose(2, 1, strides=3), (3, 2, 2)),
        ("k1-s2-same", lambda: L.Conv2DTranspose(2, 1, strides=2, padding="same"), (3, 2, 2)),
        ("outpad-same", lambda: L.Conv2DTranspose(3, 3, strides=2, padding="same",
                                                  output_padding=1), (3, 3, 2)),
        ("outpad-valid", lambda: L.Conv2DTranspose(3, (3, 2), strides=(2, 3),
                                                   output_padding=(1, 2)), (3, 3, 2)),
        ("dilated", lambda: L.Conv2DTranspose(2, 3, dilation_rate=2), (4, 4, 2)),
        ("dilated-same", lambda: L.Conv2DTranspose(2, 2, dilation_rate=2, padding="same",
                                                   use_bias=False), (4, 5, 2))],
    "DepthwiseConv2D": [
        ("valid", lambda: L.DepthwiseConv2D(3), (6, 6, 3)),
        ("same-dm2-s2", lambda: L.DepthwiseConv2D(3, strides=2, padding="same",
                                                  depth_multiplier=2), (7, 6, 3)),
        ("dilated-dm3", lambda: L.DepthwiseConv2D((3, 2), padding="same", depth_multiplier=3,
                                                  dilation_rate=2, activation="relu"), (6, 7, 2))],
    "SeparableConv2D": [
        ("same", lambda: L.SeparableConv2D(4, 3, padding="same"), (6, 6, 3)),
        ("dm2-s2-relu", lambda: L.SeparableConv2D(5, 3, strides=2, depth_multiplier=2,
                                                  activation="relu"), (7, 7, 2)),
        ("nobias-softmax", lambda: L.SeparableConv2D(3, 2, use_bias=False,
                                                     activation="softmax"), (5, 5, 2))],
    "MaxPooling2D": [("valid", lambda: L.MaxPooling2D(2), (6, 7, 3)),
                     ("same-3s2", lambda: L.MaxPooling2D(3, strides=2, padding="same"), (7, 6, 2)),
                     ("same-rect", lambda: L.MaxPooling2D((2, 3), strides=(1, 2), padding="same"),
                      (5, 7, 2)),
                     ("valid-leftover", lambda: L.MaxPooling2D(3, strides=2), (8, 7, 2))],
    "AveragePooling2D": [
        ("valid", lambda: L.AveragePooling2D(2), (6, 7, 3)),
        ("same-3s2", lambda: L.AveragePooling2D(3, strides=2, padding="same"), (7, 6, 2)),
        ("same-rect", lambda: L.AveragePooling2D((2, 3), strides=(1, 2), padding="same"),
         (5, 7, 2)),
        ("same-s3", lambda: L.AveragePooling2D(2, strides=3, padding="same"), (7, 8, 2))],
    "MaxPooling1D": [("valid", lambda: L.MaxPooling1D(2), (7, 3)),
                     ("same-3s2", lambda: L.MaxPooling1D(3, strides=2, padding="same"), (8, 3))],
    "AveragePooling1D": [("valid", lambda: L.AveragePooling1D(2), (7, 3)),
                         ("same-3s2", lambda: L.AveragePooling1D(3, strides=2, padding="same"),
                          (7, 3))],
    "GlobalAveragePooling2D": [("flat", lambda: L.GlobalAveragePooling2D(), (4, 5, 3)),
                               ("keepdims", lambda: L.GlobalAveragePooling2D(keepdims=True),
                                (4, 5, 3))],
    "GlobalMaxPooling2D": [("flat", lambda: L.GlobalMaxPooling2D(), (4, 5, 3)),
                           ("keepdims", lambda: L.GlobalMaxPooling2D(keepdims=True), (4, 5, 3))],
    "GlobalAveragePooling1D": [("flat", lambda: L.GlobalAveragePooling1D(), (6, 3)),
                               ("keepdims", lambda: L.GlobalAveragePooling1D(keepdims=True),
                                (6, 3))],
    "GlobalMaxPooling1D": [("flat", lambda: L.GlobalMaxPooling1D(), (6, 3)),
                           ("keepdims", lambda: L.GlobalMaxPooling1D(keepdims=True), (6, 3))],
    "Flatten": [("rank4", lambda: L.Flatten(), (3, 2, 2))],
    "Reshape": [("flat", lambda: L.Reshape((6,)), (3, 2)),
                ("inferred", lambda: L.Reshape((-1, 2)), (3, 4))],
    "ZeroPadding2D": [("sides", lambda: L.ZeroPadding2D(((1, 0), (2, 1))), (3, 3, 2))],
    "Cropping2D": [("sides", lambda: L.Cropping2D(((1, 0), (0, 2))), (5, 5, 2))],
    "UpSampling2D": [("nearest", lambda: L.UpSampling2D((2, 3)), (3, 2, 2)),
                     ("bilinear", lambda: L.UpSampling2D(interpolation="bilinear"), (3, 4, 2)),
                     ("bilinear-3x2", lambda: L.UpSampling2D((3, 2), interpolation="bilinear"),
                      (4, 3, 2))],
    "Rescaling": [("scalar", lambda: L.Rescaling(1 / 255.0), (3, 2)),
                  ("per-channel", lambda: L.Rescaling([0.5, 2.0], offset=[-1.0, 0.25]), (3, 2))],
    "Normalization": [
        ("given", lambda: L.Normalization(mean=[0.5, -1.0], variance=[2.0, 0.25]), (3, 2)),
        ("weights", lambda: L.Normalization(), (4, 4, 3)),
        ("axis-none", lambda: L.Normalization(axis=None, mean=0.5, variance=4.0), (3, 2)),
        ("invert-axis12", lambda: L.Normalization(axis=(1, 2), invert=True), (3, 2, 2))],
    "Embedding": [("ids", lambda: L.Embedding(7, 3), (4,))],
    "Masking": [("steps", lambda: L.Masking(0.5), (5, 3))],
    "RandomCrop": [("crop", lambda: L.RandomCrop(3, 4, seed=1), (5, 6, 2)),
                   ("stretch", lambda: L.RandomCrop(6, 7, seed=1), (4, 5, 2)),
                   ("mixed", lambda: L.RandomCrop(3, 6, seed=1), (5, 4, 2)),
                   ("same", lambda: L.RandomCrop(4, 5, seed=1), (4, 5, 2))],
    "RandomFlip": [("default", lambda: L.RandomFlip(seed=1), (4, 5, 2))],
    "RandomTranslation": [("default", lambda: L.RandomTranslation(0.2, 0.3, seed=1), (4, 5, 2))],
    "RandomRotation": [("default", lambda: L.RandomRotation(0.2, seed=1), (4, 5, 2))],
    "RandomZoom": [("default", lambda: L.RandomZoom(0.3, seed=1), (4, 5, 2))],
    "RandomContrast": [("default", lambda: L.RandomContrast(0.5, seed=1), (4, 5, 2))],
    "Dropout": [("default", lambda: L.Dropout(0.5), (6,))],
    "SpatialDropout2D": [("default", lambda: L.SpatialDropout2D(0.5), (3, 3, 2))],
    "BatchNormalization": [
        ("rank4", lambda: L.BatchNormalization(), (3, 3, 4)),
        ("axis1", lambda: L.BatchNormalization(axis=1), (3, 4, 2)),
        ("no-affine", lambda: L.BatchNormalization(center=False, scale=False, epsilon=0.1),
         (5,))],
    "GroupNormalization": [
        ("groups2", lambda: L.GroupNormalization(2), (3, 3, 4)),
        ("instance", lambda: L.GroupNormalization(-1, epsilon=1e-5), (3, 3, 4)),
        ("axis1", lambda: L.GroupNormalization(2, axis=1), (4, 3, 2)),
        ("rank2-no-center", lambda: L.GroupNormalization(3, center=False), (6,))],
    "InstanceNormalization": [("rank4", lambda: L.InstanceNormalization(), (3, 4, 3)),
                              ("rank3", lambda: L.InstanceNormalization(), (5, 3)),
                              ("rank2", lambda: L.InstanceNormalization(scale=False), (3,))],
    "LayerNormalization": [
        ("last", lambda: L.LayerNormalization(), (5,)),
        ("chw", lambda: L.LayerNormalization(axis=(1, 2, 3)), (3, 3, 2)),
        ("axis1", lambda: L.LayerNormalization(axis=1, epsilon=1e-5), (4, 3)),
        ("axes13", lambda: L.LayerNormalization(axis=(1, 3), scale=False), (3, 2, 4))],
    "Add": [("two", lambda: L.Add(), [(3, 4), (3, 4)])],
    "Subtract": [("two", lambda: L.Subtract(), [(3, 4), (1, 4)])],
    "Multiply": [("three", lambda: L.Multiply(), [(5,), (5,), (5,)])],
    "Average": [("broadcast", lambda: L.Average(), [(3, 4), (1, 4), (3, 4)])],
    "Maximum": [("two", lambda: L.Maximum(), [(5,), (5,)])],
    "Minimum": [("three", lambda: L.Minimum(), [(5,), (5,), (5,)])],
    "Concatenate": [("axis1", lambda: L.Concatenate(axis=1), [(3, 4), (2, 4)]),
                    ("last", lambda: L.Concatenate(), [(3, 4), (3, 2), (3, 1)])],
    "SimpleRNN": [("last", lambda: L.SimpleRNN(4), (6, 5)),
                  ("seq-backwards-relu", lambda: L.SimpleRNN(3, "relu", return_sequences=True,
                                                             go_backwards=True), (6, 5)),
                  ("hard-sigmoid-nobias", lambda: L.SimpleRNN(3, "hard_sigmoid",
                                                              use_bias=False), (5, 2))],
    "LSTM": [("last", lambda: L.LSTM(4), (6, 5)),
             ("seq", lambda: L.LSTM(4, return_sequences=True), (6, 5)),
             ("seq-backwards", lambda: L.LSTM(3, return_sequences=True, go_backwards=True),
              (6, 5)),
             ("last-backwards", lambda: L.LSTM(3, go_backwards=True), (6, 5)),
             ("relu-hard-sigmoid", lambda: L.LSTM(3, "relu", "hard_sigmoid",
                                                  return_sequences=True), (6, 5)),
             ("linear-nobias", lambda: L.LSTM(3, None, use_bias=False), (4, 5))],
    "GRU": [("last", lambda: L.GRU(4), (6, 5)),
            ("seq-backwards", lambda: L.GRU(3, return_sequences=True, go_backwards=True),
             (6, 5)),
            ("reset-before-seq", lambda: L.GRU(4, reset_after=False, return_sequences=True),
             (6, 5)),
            ("reset-before-backwards", lambda: L.GRU(3, reset_after=False, go_backwards=True),
             (6, 5)),
            ("linear-hard-sigmoid", lambda: L.GRU(3, "linear", "hard_sigmoid",
                                                  return_sequences=True), (5, 4)),
            ("relu-nobias", lambda: L.GRU(3, "relu", use_bias=False), (5, 4)),
            ("reset-before-nobias", lambda: L.GRU(3, reset_after=False, use_bias=False),
             (5, 4))],
    "Bidirectional": [
        ("lstm-concat-seq", lambda: L.Bidirectional(L.LSTM(4, return_sequences=True)), (6, 5)),
        ("lstm-concat-last", lambda: L.Bidirectional(L.LSTM(4)), (6, 5)),
        ("gru-sum-last", lambda: L.Bidirectional(L.GRU(4), merge_mode="sum"), (6, 5)),
        ("gru-before-mul-seq", lambda: L.Bidirectional(L.GRU(3, reset_after=False,
                                                             return_sequences=True),
                                                       merge_mode="mul"), (6, 5)),
        ("rnn-ave-seq", lambda: L.Bidirectional(L.SimpleRNN(3, return_sequences=True),
                                                merge_mode="ave"), (6, 5)),
        ("lstm-ave-last", lambda: L.Bidirectional(L.LSTM(3), merge_mode="ave"), (6, 5)),
        # two operators: the layers do not mirror each other
        ("backward-layer-units", lambda: L.Bidirectional(
            L.LSTM(4, return_sequences=True),
            backward_layer=L.LSTM(2, return_sequences=True, go_backwards=True)), (6, 5)),
        ("backward-layer-gru-forms", lambda: L.Bidirectional(
            L.GRU(3), merge_mode="sum",
            backward_layer=L.GRU(3, reset_after=False, go_backwards=True)), (6, 5)),
        ("forward-goes-backwards", lambda: L.Bidirectional(
            L.GRU(3, go_backwards=True, return_sequences=True), merge_mode="concat",
            backward_layer=L.GRU(3, return_sequences=True)), (6, 5)),
        ("activations-differ", lambda: L.Bidirectional(
            L.LSTM(3, None, return_sequences=True),
            backward_layer=L.LSTM(3, "hard_sigmoid", "relu", go_backwards=True,
                                  return_sequences=True)), (6, 5))],
    "TimeDistributed": [
        ("dense", lambda: L.TimeDistributed(L.Dense(3, activation="relu")), (6, 5)),
        ("conv2d", lambda: L.TimeDistributed(L.Conv2D(3, 3, padding="same")), (3, 5, 5, 2)),
        ("lstm", lambda: L.TimeDistributed(L.LSTM(3, return_sequences=True)), (3, 4, 5)),
        ("flatten", lambda: L.TimeDistributed(L.Flatten()), (3, 2, 2, 2))],
    "MultiHeadAttention": [
        ("self", lambda: L.MultiHeadAttention(2, 4), [(5, 6), (5, 6)]),
        ("key_dims_no_bias", lambda: L.MultiHeadAttention(3, 2, value_dim=4, output_shape=(2, 3),
                                                          use_bias=False),
         [(4, 6), (5, 3), (5, 7)])],
    "Attention": [("dot", lambda: L.Attention(), [(4, 6), (5, 2), (5, 6)]),
                  ("dot_scale", lambda: L.Attention(use_scale=True), [(4, 6), (5, 6)]),
                  ("concat_scale", lambda: L.Attention(use_scale=True, score_mode="concat"),
                   [(4, 6), (5, 3), (5, 6)])],
    "AdditiveAttention": [("scale", lambda: L.AdditiveAttention(), [(4, 6), (5, 6)]),
                          ("no_scale", lambda: L.AdditiveAttention(use_scale=False),
                           [(4, 6), (5, 2), (5, 6)])],
}
NOT_COMPUTING = {"Layer", "Parameter", "Input", "InputLayer", "add", "subtract", "multiply",
                 "average", "maximum", "minimum", "concatenate", "dot"}
# Layers that compute but cannot export, and why (the exporter's error says so).
NO_EXPORT = {"Lambda": "runs a Python function, which has no ONNX form",
             **{name: "no ONNX converter yet (a call() layer)" for name in (
                 "Dot", "Permute", "RepeatVector", "Identity", "UnitNormalization",
                 "ActivityRegularization", "GaussianNoise", "GaussianDropout")},
             **{name: "no ONNX converter (a NumPy preprocessing layer: vocabularies, hashes "
                      "and bins run before the model)" for name in (
                 "TextVectorization", "StringLookup", "IntegerLookup", "CategoryEncoding",
                 "Hashing", "Discretization")}}


def one_layer_model(name: str, factory, shape) -> tuple:
    """The model and its inputs (32 samples each)."""
    tn.set_seed(0)
    layer = factory()
    if isinstance(shape, list):
        ins = [tn.Input(s) for s in shape]
        model = tn.Model(ins, layer(ins))
        xs = [normal((32, *s), seed=i) for i, s in enumerate(shape)]
    else:
        model = tn.Sequential([tn.Input(shape), layer])
        if name == "Embedding":
            ids = np.random.default_rng(0).integers(0, 7, (32, *shape))
            xs = [ids.astype(np.float32)]
        elif name == "Masking":  # some steps all padding, some with one padded feature
            x = normal((32, *shape))
            x[::2, 1:3] = 0.5
            x[1::2, 0, 0] = 0.5
            xs = [x]
        else:
            xs = [normal((32, *shape))]
    randomize(model)
    return model, xs
