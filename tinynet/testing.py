"""``check_gradients``: a central finite-difference check of a layer's ``backward``.

For users' own layers as much as for tinynet's: it probes dL/dx and dL/dparam of the
scalar ``L = sum(forward(x) * r)`` (``r`` a fixed random weighting) against central
differences of ``forward``, computed in float64 from the layer's float32 outputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.tensor import as_array

__all__ = ["check_gradients", "GradientCheckError"]


class GradientCheckError(AssertionError):
    """Raised when an analytic gradient disagrees with the finite difference."""


def _numeric_grad(f, arr: np.ndarray, idx: np.ndarray, delta: float) -> np.ndarray:
    flat = arr.reshape(-1)
    out = np.empty(idx.size, dtype=np.float64)
    for k, i in enumerate(idx):
        old = flat[i]
        flat[i] = old + delta
        up = f()
        flat[i] = old - delta
        down = f()
        flat[i] = old
        out[k] = (up - down) / (2.0 * delta)
    return out


def check_gradients(layer: Any, input_shape: tuple | None = None, *, x: Any = None,
                    training: bool = False, seed: int = 0, delta: float = 1e-2,
                    rtol: float = 2e-2, atol: float = 1e-3, max_checks: int = 64,
                    raise_on_failure: bool = True) -> float:
    """Compares a layer's ``backward`` with central finite differences of ``forward``.

    The layer is built on ``input_shape`` if needed. Up to ``max_checks`` entries of the
    input and of every trainable parameter are probed (chosen with ``seed``).

    Args:
        layer: A tinynet ``Layer`` (or anything with the same forward/backward contract).
        input_shape: The input's shape, batch axis included (ignored when ``x`` is given).
        x: An explicit input (useful to keep away from kinks such as ReLU's 0).
        training: Passed to ``forward``.
        seed: Seeds the input, the output weighting and the probed indices.
        delta: The finite-difference step.
        rtol: Relative tolerance per entry.
        atol: Absolute tolerance per entry.
        max_checks: Most entries probed per array.
        raise_on_failure: Raise :class:`GradientCheckError` above tolerance.

    Returns:
        The worst error ratio ``|analytic - numeric| / (atol + rtol * |numeric|)``;
        at most 1.0 means every probed entry is within tolerance.

    Raises:
        ValueError: Neither ``x`` nor ``input_shape`` was given.
        GradientCheckError: An entry is out of tolerance (the message names it).
    """
    rng = np.random.default_rng(seed)
    if x is None:
        if input_shape is None:
            raise ValueError("check_gradients: give input_shape or x")
        x = rng.standard_normal(tuple(input_shape))
    x = np.array(as_array(x), dtype=np.float32, copy=True)
    if not layer.built:
        layer.build((None, *x.shape[1:]))
    y = as_array(layer.forward(x, training=training))
    r = rng.standard_normal(y.shape).astype(np.float32)

    def loss() -> float:
        out = as_array(layer.forward(x, training=training))
        return float(np.sum(out.astype(np.float64) * r))

    # analytic gradients from one forward + backward at the unperturbed point
    layer.forward(x, training=training)
    dx = np.array(as_array(layer.backward(r)), dtype=np.float64)
    params = [p for p in layer.parameters() if p.trainable]
    pgrads = [np.array(p.grad, dtype=np.float64) for p in params]

    worst, where = 0.0, ""
    targets = [("input", x, dx)] + [(p.name, p.value, g) for p, g in zip(params, pgrads)]
    for label, arr, analytic in targets:
        saved = arr.copy()
        n = arr.size
        idx = np.arange(n) if n <= max_checks else np.sort(rng.choice(n, max_checks, replace=False))
        numeric = _numeric_grad(loss, arr, idx, delta)
        arr[...] = saved
        got = analytic.reshape(-1)[idx]
        ratio = np.abs(got - numeric) / (atol + rtol * np.abs(numeric))
        k = int(np.argmax(ratio)) if ratio.size else 0
        if ratio.size and ratio[k] > worst:
            worst = float(ratio[k])
            where = (f"{label}[flat index {int(idx[k])}]: analytic {got[k]:.6g}, "
                     f"numeric {numeric[k]:.6g}")
    layer.forward(x, training=training)  # leave the cache at the unperturbed point
    if raise_on_failure and worst > 1.0:
        raise GradientCheckError(
            f"check_gradients({type(layer).__name__} {getattr(layer, 'name', '')!r}): gradient "
            f"mismatch at {where} (error ratio {worst:.3g} > 1 with rtol={rtol}, atol={atol})")
    return worst
