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
        layer: A tinynet ``Layer`` or model (anything with the same forward/backward
            contract); one with several inputs takes lists for ``input_shape`` and ``x``,
            and one with several outputs is probed on the weighted sum of all of them.
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
    multi_in = bool(getattr(layer, "multiple_inputs", False))
    if x is None:
        if input_shape is None:
            raise ValueError("check_gradients: give input_shape or x")
        x = ([rng.standard_normal(tuple(s)) for s in input_shape] if multi_in
             else rng.standard_normal(tuple(input_shape)))
    xs = [np.array(as_array(a), dtype=np.float32, copy=True) for a in (x if multi_in else [x])]
    if not layer.built:
        shapes = [(None, *a.shape[1:]) for a in xs]
        layer.build(shapes if multi_in else shapes[0])

    def run() -> list[np.ndarray]:
        out = layer.forward(xs if multi_in else xs[0], training=training)
        return [as_array(o) for o in out] if isinstance(out, list) else [as_array(out)]

    rs = [rng.standard_normal(y.shape).astype(np.float32) for y in run()]

    def loss() -> float:
        return float(sum(np.sum(o.astype(np.float64) * r) for o, r in zip(run(), rs)))

    # analytic gradients from one forward + backward at the unperturbed point
    run()
    back = layer.backward(rs if len(rs) > 1 else rs[0])
    dxs = [np.array(as_array(d), dtype=np.float64) for d in (back if multi_in else [back])]
    params = [p for p in layer.parameters() if p.trainable]
    pgrads = [np.array(p.grad, dtype=np.float64) for p in params]

    worst, where = 0.0, ""
    labels = [f"input {i}" if multi_in else "input" for i in range(len(xs))]
    targets = list(zip(labels, xs, dxs)) + [(p.name, p.value, g)
                                            for p, g in zip(params, pgrads)]
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
    run()  # leave the cache at the unperturbed point
    if raise_on_failure and worst > 1.0:
        raise GradientCheckError(
            f"check_gradients({type(layer).__name__} {getattr(layer, 'name', '')!r}): gradient "
            f"mismatch at {where} (error ratio {worst:.3g} > 1 with rtol={rtol}, atol={atol})")
    return worst
