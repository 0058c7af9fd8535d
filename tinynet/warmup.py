"""``python -m tinynet.warmup``: compile (or load from the cache) every Numba kernel once.

Numba compiles a kernel on its first call and caches it on disk (``cache=True``). Run this
once after installing, so a user's first real run starts fast: it pushes small batches
through every layer, loss and optimizer, in both serial and parallel variants.
"""

from __future__ import annotations

import sys
import time

import numpy as np

__all__ = ["warmup", "main"]


def _layers():
    from tinynet import layers as L

    return [
        L.Conv2D(4, 3, padding="same", activation="relu"), L.Conv2D(4, 1),
        L.Conv2D(4, 3, strides=2), L.MaxPooling2D(2), L.AveragePooling2D(2, padding="same"),
        L.GlobalAveragePooling2D(), L.GlobalMaxPooling2D(),
        L.BatchNormalization(), L.GroupNormalization(2), L.InstanceNormalization(),
        L.LayerNormalization(), L.LayerNormalization(axis=(1, 2, 3)),
        L.Dropout(0.5), L.SpatialDropout2D(0.5), L.Flatten(), L.Reshape((-1,)),
        *[L.Activation(a) for a in ("relu", "sigmoid", "tanh", "softmax", "elu",
                                    "leaky_relu", "gelu", "silu")],
        L.ReLU(max_value=6.0), L.LeakyReLU(), L.ELU(), L.Softmax(),
    ]


def warmup(verbose: bool = True) -> float:
    """Runs every kernel family once in its serial and parallel variants.

    Returns:
        The seconds it took (compile time with an empty cache, load time with a warm one).
    """
    from tinynet import losses, optimizers, tuning
    from tinynet.layers import Conv2D, Dense
    from tinynet.layers.layer import Parameter
    from tinynet.layers.regularization.normalization import (group_norm_backward_core,
                                                             group_norm_forward_core)
    from tinynet.math.matmul import matmul
    from tinynet.math.reduction import det_reduce

    start = time.perf_counter()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 8, 8, 4)).astype(np.float32)
    for gate in (2**62, 0):  # serial, then parallel variants
        with tuning.override(**{name: gate for name in tuning.defaults()}):
            for layer in _layers():
                y = np.asarray(layer(x, training=True))
                layer.backward(np.ones_like(y))
                layer(x, training=False)
            conv = Conv2D(16, 3, padding="same")  # 16 channels: the direct convolution kernels
            x16 = np.repeat(x, 4, axis=3)
            conv.backward(np.ones_like(np.asarray(conv(x16, training=True))))
            dense = Dense(3, activation="relu")
            y = np.asarray(dense(x.reshape(2, -1)))
            dense.backward(np.ones_like(y))
            dense.backward_params(np.ones_like(y))
            out, xn, inv = group_norm_forward_core(x, 2, np.ones(4), np.zeros(4), 1e-3)
            group_norm_backward_core(out, xn, inv, 2, np.ones(4))
            matmul(x.reshape(32, 16), x.reshape(16, 32))
            det_reduce(x)
            logits = rng.standard_normal((4, 3)).astype(np.float32)
            for loss in (losses.SparseCategoricalCrossentropy(from_logits=True),
                         losses.CategoricalCrossentropy(), losses.BinaryCrossentropy(),
                         losses.MeanSquaredError(), losses.MeanAbsoluteError()):
                target = (np.array([0, 1, 2, 0]) if "Sparse" in type(loss).__name__
                          else np.eye(3, dtype=np.float32)[[0, 1, 2, 0]])
                loss.value_and_grad(target, 1.0 / (1.0 + np.exp(-logits)))
            for opt in (optimizers.SGD(momentum=0.9), optimizers.Adam(), optimizers.AdamW(),
                        optimizers.RMSprop(momentum=0.9), optimizers.Adagrad(),
                        optimizers.SGD(clipnorm=1.0), optimizers.Adam(global_clipnorm=1.0)):
                p = Parameter(rng.standard_normal(64).astype(np.float32), "kernel")
                p.grad = np.ones(64, dtype=np.float32)
                opt.apply([p])
    seconds = time.perf_counter() - start
    if verbose:
        print(f"tinynet kernels ready in {seconds:.1f} s")
    return seconds


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv:
        print("usage: python -m tinynet.warmup", file=sys.stderr)
        return 2
    warmup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
