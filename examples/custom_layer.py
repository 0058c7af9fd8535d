"""Write your own layer, loss and metric the Keras way: call(), tinynet.ops, add_weight.

Run: python examples/custom_layer.py [--epochs 12] [--out DIR]

Keras users write custom code in three shapes, and each runs on tinynet as written:

1. a **layer** that defines ``call()`` with ``tinynet.ops``: ``GatedResidual`` creates its
   weights with ``add_weight`` in ``build``, holds a built-in ``LayerNormalization`` as a
   sub-layer, and gets its backward from the recorded ops (``tinynet.testing.
   check_gradients`` proves it);
2. a **loss**, a ``tn.losses.Loss`` subclass with ``call(y_true, y_pred)``:
   ``SmoothedCrossentropy``, the crossentropy of logits against label-smoothed targets;
3. a **metric**, a ``tn.metrics.Metric`` subclass whose state lives in ``add_variable``
   variables: ``TopKHitRate``, the share of samples whose label is among the ``k`` largest
   logits.

All three are registered with ``@tn.saving.register_keras_serializable()``; the model
trains on scikit-learn's digits, is saved in ``--out`` (default ``outputs/custom_layer``),
reloaded with ``tn.load_model`` (layer, loss and metric rebuilt by their registered
names), and the reloaded model's predictions and metrics are checked bitwise equal to the
original's.

See docs/writing_a_layer.md; examples/custom_kernel_layer.py is the fast way (a
hand-written forward and backward).
"""

from __future__ import annotations

import argparse
import os

import numpy as np

import tinynet as tn
from tinynet import ops
from tinynet.layers import Dense, Flatten, Input, Layer, LayerNormalization
from tinynet.testing import check_gradients


@tn.saving.register_keras_serializable()
class GatedResidual(Layer):
    """``x + gate * gelu(norm(x) @ kernel + bias)``, one learnable gate per feature.

    The gates start at ``gate_init`` (0 by default: the block starts as the identity and
    training opens each feature's branch as far as it helps).

    Shape:
        Input: ``[batch, features]``; output: the same shape.
        kernel: ``[features, features]``; bias and gate: ``[features]``.
    """

    def __init__(self, gate_init=0.0, **kwargs):
        super().__init__(**kwargs)  # name, trainable, dtype
        self.gate_init = float(gate_init)
        self.norm = LayerNormalization()  # a sub-layer: tracked, its weights saved with ours

    def build(self, input_shape):
        features = input_shape[-1]
        self.kernel = self.add_weight(shape=(features, features),
                                      initializer="glorot_uniform", name="kernel")
        self.bias = self.add_weight(shape=(features,), initializer="zeros", name="bias")
        self.gate = self.add_weight(shape=(features,), name="gate",  # any shape -> array
                                    initializer=lambda shape: np.full(shape, self.gate_init))

    def call(self, x):
        branch = ops.gelu(ops.matmul(self.norm(x), self.kernel) + self.bias)
        return x + self.gate * branch

    def get_config(self):
        return {**super().get_config(), "gate_init": self.gate_init}


@tn.saving.register_keras_serializable()
class SmoothedCrossentropy(tn.losses.Loss):
    """Crossentropy of logits against targets smoothed towards uniform: the true class
    gets ``1 - smoothing + smoothing / classes``, every other ``smoothing / classes``."""

    def __init__(self, smoothing=0.1, **kwargs):
        super().__init__(**kwargs)  # name, reduction
        self.smoothing = float(smoothing)

    def call(self, y_true, y_pred):  # y_true: integer labels; y_pred: logits
        classes = ops.shape(y_pred)[-1]
        target = ops.one_hot(ops.cast(y_true, "int32"), classes)
        target = target * (1.0 - self.smoothing) + self.smoothing / classes
        return -ops.sum(target * ops.log_softmax(y_pred, axis=-1), axis=-1)  # per sample

    def get_config(self):
        return {**super().get_config(), "smoothing": self.smoothing}


@tn.saving.register_keras_serializable()
class TopKHitRate(tn.metrics.Metric):
    """The share of samples whose label is among the ``k`` largest logits."""

    def __init__(self, k=2, name=None, **kwargs):
        super().__init__(name=name or f"top{k}_hit_rate", **kwargs)
        self.k = k
        self.hits = self.add_variable(shape=(), initializer="zeros", name="hits")
        self.seen = self.add_variable(shape=(), initializer="zeros", name="seen")

    def update_state(self, y_true, y_pred, sample_weight=None):
        labels = ops.cast(ops.reshape(y_true, (-1,)), "int32")
        true_logit = ops.take_along_axis(y_pred, ops.expand_dims(labels, -1), axis=-1)
        above = ops.sum(ops.cast(y_pred > true_logit, "float32"), axis=-1)  # rank of the label
        self.hits.assign_add(ops.sum(ops.cast(above < self.k, "float32")))
        self.seen.assign_add(float(len(labels)))

    def result(self):
        return self.hits / ops.maximum(self.seen, 1.0)

    def get_config(self):
        return {**super().get_config(), "k": self.k}


def build_model():
    return tn.Sequential([
        Input((8, 8, 1)),
        Flatten(),
        Dense(32, activation="relu"),
        GatedResidual(),
        GatedResidual(),
        Dense(10),
    ])


def show(metrics: dict) -> str:
    return ", ".join(f"{key} {value:.4f}" for key, value in metrics.items())


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--out", default=os.path.join("outputs", "custom_layer"),
                        help="folder for the model file (created if missing; "
                        "default: %(default)s)")
    args = parser.parse_args(argv)
    tn.set_seed(0)  # every weight initializer and shuffle from here on is seeded

    print("1. check_gradients on GatedResidual (input, kernel, bias, gate and the norm's "
          "weights):")
    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    worst = check_gradients(GatedResidual(gate_init=0.5), x=x)
    print(f"   worst error ratio {worst:.3g} (<= 1 passes)")

    print("\n2. training on the digits with SmoothedCrossentropy and TopKHitRate:")
    (x_train, y_train), (x_test, y_test) = tn.datasets.load_digits(test_size=0.25, seed=0)
    model = build_model()
    model.compile(optimizer=tn.optimizers.Adam(3e-3), loss=SmoothedCrossentropy(0.1),
                  metrics=["accuracy", TopKHitRate(k=2)])
    model.summary()
    model.fit(x_train, y_train, batch_size=32, epochs=args.epochs, verbose=2)
    metrics = model.evaluate(x_test, y_test, verbose=0, return_dict=True)
    print(f"test: {show(metrics)}")
    for layer in model.layers:
        if isinstance(layer, GatedResidual):
            gate = layer.gate.value
            print(f"   {layer.name} gates: mean {gate.mean():.3f}, range {gate.min():.3f}.."
                  f"{gate.max():.3f} (started at 0)")

    print("\n3. save and reload:")
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "custom_layer.safetensors")
    model.save(path)
    reloaded = tn.load_model(path)  # the classes are found by their registered names
    print(f"   saved and reloaded {path}")
    print(f"   layers {', '.join(type(layer).__name__ for layer in reloaded.layers)}; "
          f"loss {type(reloaded.loss).__name__}; metrics {', '.join(reloaded.metrics_names)}")
    same_predictions = np.array_equal(model.predict(x_test, verbose=0),
                                      reloaded.predict(x_test, verbose=0))
    reloaded_metrics = reloaded.evaluate(x_test, y_test, verbose=0, return_dict=True)
    print(f"   reloaded test: {show(reloaded_metrics)}")
    print(f"   predictions bitwise identical: {same_predictions}")
    print(f"   metrics identical: {reloaded_metrics == metrics}")
    if not (same_predictions and reloaded_metrics == metrics):
        raise SystemExit("the reloaded model diverged from the original")
    return float(metrics["accuracy"])


if __name__ == "__main__":
    main()
