"""Whole training: a digits-CNN epoch (``fit``) and one MNIST-shape ``train_on_batch`` step.

PyTorch runs the equivalent ``nn.Sequential`` (Keras epsilons and BN momentum, Adam
epsilon 1e-7) with a plain loop over the same batches, in NCHW and in channels-last; the
faster one is compared.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from harness import Context, GroupResult, run_comparisons, torch_layouts

NAME = "train"
TITLE = "Training (digits-CNN epoch, MNIST-shape step)"


def _digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[..., None]
    x_train, _, y_train, _ = train_test_split(x, digits.target, test_size=0.25, random_state=0)
    return np.ascontiguousarray(x_train), y_train.astype(np.int64)


def _tinynet_digits_model():
    import tinynet as tn
    from tinynet.layers import (
        BatchNormalization,
        Conv2D,
        Dense,
        Flatten,
        GroupNormalization,
        MaxPooling2D,
    )
    from tinynet.losses import SparseCategoricalCrossentropy
    from tinynet.optimizers import Adam

    model = tn.Sequential([
        Conv2D(16, 3, padding="same", activation="relu", input_shape=(8, 8, 1)),
        GroupNormalization(4), MaxPooling2D(2),
        Conv2D(32, 3, padding="same", activation="relu"),
        BatchNormalization(), MaxPooling2D(2),
        Flatten(), Dense(64, activation="relu"), Dense(10)])
    model.compile(optimizer=Adam(1e-3), loss=SparseCategoricalCrossentropy(from_logits=True))
    return model


def _tinynet_mnist_model():
    import tinynet as tn
    from tinynet.layers import Conv2D, Dense, Flatten, GroupNormalization, MaxPooling2D
    from tinynet.losses import SparseCategoricalCrossentropy
    from tinynet.optimizers import SGD

    model = tn.Sequential([
        Conv2D(32, 3, padding="same", activation="relu", input_shape=(28, 28, 1)),
        GroupNormalization(8), MaxPooling2D(2),
        Conv2D(64, 3, padding="same", activation="relu"),
        GroupNormalization(8), MaxPooling2D(2),
        Flatten(), Dense(128, activation="relu"), Dense(10)])
    model.compile(optimizer=SGD(0.01, momentum=0.9),
                  loss=SparseCategoricalCrossentropy(from_logits=True))
    return model


def _torch_digits_model():
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.GroupNorm(4, 16, eps=1e-3),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.BatchNorm2d(32, eps=1e-3, momentum=0.01),
        nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 2 * 2, 64), nn.ReLU(), nn.Linear(64, 10))


def _torch_mnist_model():
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.GroupNorm(8, 32, eps=1e-3),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.GroupNorm(8, 64, eps=1e-3),
        nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


def _torch_train_fns(make_model: Callable[[], Any], make_opt: Callable[[Any], Any],
                     x: np.ndarray, y: np.ndarray, batch_size: int) -> dict[str, Callable[[], Any]]:
    """One pass over ``x`` in batches (a whole epoch, or one step when it is one batch)."""
    import torch
    import torch.nn.functional as F

    yt = torch.from_numpy(y)
    fns = {}
    for layout, xt in torch_layouts(x).items():
        torch.manual_seed(0)
        model = make_model()
        if layout == "channels_last":
            model = model.to(memory_format=torch.channels_last)
        model.train()
        opt = make_opt(model.parameters())
        n = xt.shape[0]

        def epoch(model=model, opt=opt, xt=xt, n=n) -> float:
            total = 0.0
            for i in range(0, n, batch_size):
                xb, yb = xt[i:i + batch_size], yt[i:i + batch_size]
                opt.zero_grad(set_to_none=True)
                loss = F.cross_entropy(model(xb), yb)
                loss.backward()
                opt.step()
                total += loss.item() * xb.shape[0]
            return total / n

        fns[layout] = epoch
    return fns


def run(ctx: Context) -> GroupResult:
    import torch

    import tinynet as tn

    tn.Sequential  # noqa: B018  (ImportError -> the group is skipped)
    rng = np.random.default_rng(0)

    def digits_case():
        x, y = _digits()
        model = _tinynet_digits_model()

        def tn_fn() -> None:
            model.fit(x, y, batch_size=32, epochs=1, verbose=0, shuffle=False)

        torch_fns = _torch_train_fns(
            _torch_digits_model, lambda p: torch.optim.Adam(p, lr=1e-3, eps=1e-7), x, y, 32)
        return tn_fn, torch_fns

    def mnist_case():
        x = rng.random((64, 28, 28, 1), dtype=np.float32)
        y = rng.integers(0, 10, 64).astype(np.int64)
        model = _tinynet_mnist_model()

        def tn_fn() -> None:
            model.train_on_batch(x, y)

        torch_fns = _torch_train_fns(
            _torch_mnist_model, lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9), x, y, 64)
        return tn_fn, torch_fns

    items = [("digits CNN, 1 epoch (1347 samples, batch 32, Adam)", digits_case),
             ("MNIST-shape CNN, 1 step (batch 64, SGD momentum)", mnist_case)]
    table, gm = run_comparisons(ctx, "ratio = tinynet time / PyTorch time; < 1 is faster",
                                "torch ms (layout)", items)
    result = GroupResult(NAME, TITLE, [table], [("geomean ratio", gm)])
    result.notes.append("tinynet: Sequential.fit(verbose=0, shuffle=False) / train_on_batch; "
                        "PyTorch: zero_grad, forward, cross_entropy, backward, step per batch "
                        "(plus loss.item(), as fit records the epoch loss).")
    return result
