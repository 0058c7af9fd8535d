"""Shared helpers for the optimizer tests."""

from __future__ import annotations

import numpy as np

from tinynet.layers.layer import Parameter


def make_param(values, name: str = "kernel", path: str | None = None) -> Parameter:
    p = Parameter(np.array(values, dtype=np.float32, copy=True), name)
    p.path = path if path is not None else f"dense/{name}"
    return p


def run_scalar(opt, grads, w0: float = 1.0, name: str = "kernel") -> list[float]:
    """Steps a one-element parameter through ``grads``; returns the value after each step."""
    p = make_param([w0], name)
    out = []
    for g in grads:
        p.grad = np.array([g], dtype=np.float32)
        opt.apply([p])
        out.append(float(p.value[0]))
    return out


def run_torch(torch_opt_factory, w0: np.ndarray, grads: list[np.ndarray]) -> np.ndarray:
    """Runs a torch optimizer on one tensor with the given gradient sequence."""
    import torch

    w = torch.tensor(w0.copy(), requires_grad=True)
    opt = torch_opt_factory([w])
    for g in grads:
        w.grad = torch.tensor(g.copy())
        opt.step()
    return w.detach().numpy().copy()


def run_tinynet(opt, w0: np.ndarray, grads: list[np.ndarray]) -> np.ndarray:
    p = make_param(w0)
    for g in grads:
        p.grad = g.copy()
        opt.apply([p])
    return p.value.copy()
