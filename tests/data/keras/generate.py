"""Writes the Keras reference values the tests compare with (``keras_refs.npz``).

Run with Keras 3.15.1 on the PyTorch backend, outside the project's environment (Keras is
never a tinynet dependency), e.g.::

    pip install --target /tmp/kpkgs keras==3.15.1        # beside an installed torch
    KERAS_BACKEND=torch PYTHONPATH=/tmp/kpkgs python tests/data/keras/generate.py

Each case is a layer on a fixed input: its output and the input gradient of
``sum(output * g)`` for a fixed ``g`` (torch autograd), plus ``keras.utils.to_categorical``
on fixed labels.
"""

from __future__ import annotations

import os

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "torch")
import keras  # noqa: E402
import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
LAYERS = {
    "zero_padding_asym": (lambda: keras.layers.ZeroPadding2D(((1, 2), (0, 3))), (2, 3, 4, 2)),
    "zero_padding_int": (lambda: keras.layers.ZeroPadding2D(1), (1, 2, 2, 3)),
    "cropping_asym": (lambda: keras.layers.Cropping2D(((1, 0), (2, 1))), (2, 5, 6, 3)),
    "cropping_pair": (lambda: keras.layers.Cropping2D((1, 2)), (1, 4, 6, 2)),
    "up_sampling_nearest": (lambda: keras.layers.UpSampling2D((2, 3)), (2, 3, 4, 2)),
    "up_sampling_bilinear": (lambda: keras.layers.UpSampling2D((2, 3), interpolation="bilinear"),
                             (2, 3, 4, 2)),
    "up_sampling_bilinear_4": (lambda: keras.layers.UpSampling2D(4, interpolation="bilinear"),
                               (1, 2, 5, 3)),
    "max_pooling1d": (lambda: keras.layers.MaxPooling1D(3, strides=2), (2, 9, 3)),
    "average_pooling1d_same": (lambda: keras.layers.AveragePooling1D(2, padding="same"),
                               (2, 7, 3)),
    "global_average_pooling1d": (lambda: keras.layers.GlobalAveragePooling1D(), (2, 6, 4)),
    "global_max_pooling1d_keepdims": (lambda: keras.layers.GlobalMaxPooling1D(keepdims=True),
                                      (2, 6, 4)),
    "rescaling_255": (lambda: keras.layers.Rescaling(1.0 / 127.5, offset=-1.0), (2, 3, 3, 3)),
    "rescaling_channels": (lambda: keras.layers.Rescaling(np.array([0.5, 2.0, -1.5]),
                                                          offset=np.array([0.1, 0.0, -0.2])),
                           (2, 2, 2, 3)),
}
LABELS = {
    "labels_inferred": ([3, 0, 2, 1, 1], None),
    "labels_trailing_one": ([[1], [0], [3]], 5),
    "labels_2d": ([[0, 2], [1, 1]], 3),
}


def main() -> None:
    rng = np.random.default_rng(0)
    out = {"keras_version": np.array(keras.__version__)}
    for name, (make, shape) in LAYERS.items():
        x = (rng.standard_normal(shape) * (60 if "255" in name else 1)).astype(np.float32)
        if "255" in name:
            x = np.round(np.abs(x)).astype(np.float32)
        layer = make()
        xt = torch.tensor(x, requires_grad=True)
        y = layer(xt)
        g = rng.standard_normal(tuple(y.shape)).astype(np.float32)
        (y * torch.tensor(g)).sum().backward()
        out[f"{name}/x"] = x
        out[f"{name}/y"] = y.detach().cpu().numpy()
        out[f"{name}/g"] = g
        out[f"{name}/dx"] = xt.grad.cpu().numpy()
    for name, (labels, classes) in LABELS.items():
        out[f"{name}/y"] = keras.utils.to_categorical(labels, classes)
    np.savez(os.path.join(HERE, "keras_refs.npz"), **out)


if __name__ == "__main__":
    main()
