"""The fast way: a layer with a hand-written forward and backward (a per-channel PReLU).

Run: python examples/custom_kernel_layer.py [--epochs 8] [--out DIR]

A layer written as ``call()`` with ``tinynet.ops`` gets its backward for free
(examples/custom_layer.py). When a layer is hot, write the two passes yourself, as every
built-in layer does: no recording, the cache holds exactly what the backward reads, and
the arithmetic can move into a Numba kernel of your own (docs/writing_a_layer.md, "The fast
way: forward and backward", has a deterministic kernel for this layer's ``alpha``
gradient). The script walks through the whole life of such a layer:

1. subclass ``tinynet.layers.Layer``: ``build`` creates the weight with ``add_weight``,
   ``forward`` caches what ``backward`` needs, ``backward`` fills ``Parameter.grad`` and
   returns dL/dx, plus ``output_shape`` and ``get_config``;
2. register it with ``@tinynet.saving.register_layer`` so ``tn.load_model`` can rebuild it;
3. prove ``backward`` with ``tinynet.testing.check_gradients`` (and watch it catch a
   deliberately wrong backward);
4. train it inside a ``Sequential`` on the digits;
5. save the model (in ``--out``, default ``outputs/custom_kernel_layer``), load it back,
   and check that predictions and one more epoch of training are bitwise the same as the
   original's.

See docs/writing_a_layer.md for the contract in full.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import numpy as np

import tinynet as tn
from tinynet.layers import Conv2D, Dense, Flatten, Input, Layer, MaxPooling2D
from tinynet.saving import register_layer
from tinynet.tensor import Tensor, as_array
from tinynet.testing import GradientCheckError, check_gradients


@register_layer
class ChannelPReLU(Layer):
    """Parametric ReLU with one learnable slope per channel (He et al., 2015).

    ``y = x`` where ``x > 0``, ``y = alpha[c] * x`` elsewhere, ``c`` the channel (last axis).

    Args:
        alpha_init: The slopes' starting value.
        **kwargs: ``name``, ``trainable``, ``input_shape`` (passed to ``Layer``).

    Shape:
        Input: ``[batch, ..., C]``; output: the same shape.
        alpha: ``[C]``.
    """

    def __init__(self, alpha_init: float = 0.25, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(alpha_init, bool) or not isinstance(alpha_init, (int, float)):
            raise TypeError(f"ChannelPReLU: alpha_init must be a float, got {alpha_init!r}")
        self.alpha_init = float(alpha_init)
        self.alpha = None

    def build(self, input_shape: tuple) -> None:
        channels = input_shape[-1]
        if channels is None:
            raise ValueError(f"ChannelPReLU {self.name!r}: the channel axis must be known, "
                             f"got input shape {tuple(input_shape)}")
        self.alpha = self.add_weight(
            "alpha", (channels,), lambda shape: np.full(shape, self.alpha_init, np.float32))
        super().build(input_shape)  # records the shape, sets self.built

    def output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def forward(self, x: Any, training: bool = False) -> Tensor:
        x = as_array(x)  # C-contiguous float32, no copy if it already is
        positive = x > 0
        self._cache = (x, positive)  # exactly what backward reads
        return Tensor(np.where(positive, x, x * self.alpha.value))

    def backward(self, grad_output: Any) -> Tensor:
        x, positive = self._require_cache()  # RuntimeError if forward never ran
        g = as_array(grad_output)
        if self.alpha.trainable:
            # dL/dalpha[c] = sum of g * x over every entry of channel c where x <= 0
            negative_part = np.where(positive, np.float32(0.0), g * x)
            self.alpha.grad = negative_part.reshape(-1, x.shape[-1]).sum(axis=0)
        else:
            self.alpha.grad = None
        return Tensor(np.where(positive, g, g * self.alpha.value))

    def get_config(self) -> dict:
        return {**super().get_config(), "alpha_init": self.alpha_init}


class ForgetfulPReLU(ChannelPReLU):
    """The same layer with a bug: backward forgets the slope on the negative side."""

    def backward(self, grad_output: Any) -> Tensor:
        super().backward(grad_output)  # alpha.grad is still right
        return Tensor(as_array(grad_output))  # wrong: dx is g * alpha where x <= 0


def away_from_kinks(shape: tuple, seed: int = 0) -> np.ndarray:
    """Random input with no entry within 0.1 of ReLU's kink at 0 (finite differences
    across a kink measure the average of two slopes, not the derivative)."""
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return x + np.float32(0.1) * np.sign(x)


def build_model() -> tn.Sequential:
    return tn.Sequential([
        Input((8, 8, 1)),
        Conv2D(16, 3, padding="same"),
        ChannelPReLU(),
        MaxPooling2D(2),
        Flatten(),
        Dense(10),
    ])


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--out", default=os.path.join("outputs", "custom_kernel_layer"),
                        help="folder for the model file (created if missing; "
                        "default: %(default)s)")
    args = parser.parse_args(argv)

    print("1. check_gradients on ChannelPReLU (input and alpha):")
    worst = check_gradients(ChannelPReLU(alpha_init=0.3), x=away_from_kinks((2, 5, 5, 3)))
    print(f"   worst error ratio {worst:.3g} (<= 1 passes)")
    try:
        check_gradients(ForgetfulPReLU(alpha_init=0.3), x=away_from_kinks((2, 5, 5, 3)))
    except GradientCheckError as exc:
        print(f"   and a wrong backward is caught:\n   {exc}")
    else:
        raise SystemExit("check_gradients missed the wrong backward")

    print("\n2. training it in a Sequential on the digits:")
    tn.set_seed(0)
    (x_train, y_train), (x_test, y_test) = tn.datasets.load_digits(test_size=0.25, seed=0)
    model = build_model()
    model.compile(optimizer=tn.optimizers.Adam(1e-3),
                  loss=tn.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.summary()
    model.fit(x_train, y_train, batch_size=32, epochs=args.epochs, verbose=2)
    _, accuracy = model.evaluate(x_test, y_test, verbose=0)
    alpha = model.layers[1].alpha.value
    print(f"test accuracy {accuracy:.4f}; learned slopes range {alpha.min():.3f}.."
          f"{alpha.max():.3f} (started at 0.25)")

    print("\n3. save, load, continue:")
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "custom_prelu.safetensors")
    model.save(path)
    reloaded = tn.load_model(path)
    print(f"   saved and reloaded {path}: layer 1 is a "
          f"{type(reloaded.layers[1]).__name__} again")
    same_predictions = np.array_equal(model.predict(x_test, verbose=0),
                                      reloaded.predict(x_test, verbose=0))
    for m in (model, reloaded):
        m.fit(x_train, y_train, batch_size=32, epochs=1, verbose=0)
    same_weights = all(np.array_equal(a, b) for a, b in
                       zip(model.get_weights(), reloaded.get_weights()))
    print(f"   predictions bitwise identical: {same_predictions}")
    print(f"   one more epoch each, weights bitwise identical: {same_weights}")
    if not (same_predictions and same_weights):
        raise SystemExit("the reloaded model diverged from the original")
    return float(accuracy)


if __name__ == "__main__":
    main()
