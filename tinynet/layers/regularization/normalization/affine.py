"""Per-channel affine kernels (Numba) for batch normalization in inference mode.

``y = (x - mean) * inv_std * gamma + beta`` and its input gradient
``dx = g * (gamma * inv_std)``, both flat sweeps over contiguous channel rows in fixed
row blocks; serial and parallel variants compute the same bits.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from tinynet import tuning
from tinynet.layers.regularization.normalization.folds import rows_per_block

__all__ = ["affine_rows", "scale_rows"]


@njit(cache=True)
def _affine_block(x, out, r0, r1, channels, mean_c, inv_c, gamma, beta):
    for r in range(r0, r1):
        row = r * channels
        for c in range(channels):
            out[row + c] = (x[row + c] - mean_c[c]) * inv_c[c] * gamma[c] + beta[c]


@njit(cache=True)
def _affine_serial(x, out, channels, block, mean_c, inv_c, gamma, beta):
    rows = x.size // channels
    for r0 in range(0, rows, block):
        _affine_block(x, out, r0, min(r0 + block, rows), channels, mean_c, inv_c, gamma, beta)


@njit(cache=True, parallel=True)
def _affine_parallel(x, out, channels, block, mean_c, inv_c, gamma, beta):
    rows = x.size // channels
    nblk = (rows + block - 1) // block
    for k in prange(nblk):
        _affine_block(x, out, k * block, min((k + 1) * block, rows), channels, mean_c, inv_c,
                      gamma, beta)


@njit(cache=True)
def _scale_block(g, dx, r0, r1, channels, coef):
    for r in range(r0, r1):
        row = r * channels
        for c in range(channels):
            dx[row + c] = g[row + c] * coef[c]


@njit(cache=True)
def _scale_serial(g, dx, channels, block, coef):
    rows = g.size // channels
    for r0 in range(0, rows, block):
        _scale_block(g, dx, r0, min(r0 + block, rows), channels, coef)


@njit(cache=True, parallel=True)
def _scale_parallel(g, dx, channels, block, coef):
    rows = g.size // channels
    nblk = (rows + block - 1) // block
    for k in prange(nblk):
        _scale_block(g, dx, k * block, min((k + 1) * block, rows), channels, coef)


def affine_rows(x: np.ndarray, mean_c: np.ndarray, inv_c: np.ndarray, gamma: np.ndarray,
                beta: np.ndarray, gate: str) -> np.ndarray:
    """``(x - mean_c) * inv_c * gamma + beta`` per channel of a channels-last float32 array."""
    channels = x.shape[-1]
    out = np.empty_like(x)
    if x.size:
        kernel = _affine_parallel if tuning.use_parallel(gate, x.size) else _affine_serial
        kernel(x.reshape(-1), out.reshape(-1), channels, rows_per_block(channels), mean_c,
               inv_c, gamma, beta)
    return out


def scale_rows(g: np.ndarray, coef: np.ndarray, gate: str) -> np.ndarray:
    """``g * coef`` per channel of a channels-last float32 array."""
    channels = g.shape[-1]
    dx = np.empty_like(g)
    if g.size:
        kernel = _scale_parallel if tuning.use_parallel(gate, g.size) else _scale_serial
        kernel(g.reshape(-1), dx.reshape(-1), channels, rows_per_block(channels), coef)
    return dx
