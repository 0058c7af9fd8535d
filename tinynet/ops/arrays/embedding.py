"""The Embedding layer's table gradient (:mod:`tinynet.kernels.embedding`)."""

from __future__ import annotations

import numpy as np

from tinynet.kernels import embedding as K

__all__ = ["table_grad"]


def table_grad(ids: np.ndarray, grad: np.ndarray, rows: int) -> np.ndarray:
    """The dense gradient of an embedding table: ``out[ids[n]] += grad[n]`` in input
    order, from zeros (the bits of ``np.add.at``).

    Shape:
        ids: any shape, int ids in ``[0, rows)`` (not checked here); grad: ``[*ids.shape,
        width]``; returns ``[rows, width]`` float32.
    """
    flat = np.ascontiguousarray(ids, dtype=np.int64).reshape(-1)
    g = np.ascontiguousarray(grad, dtype=np.float32).reshape(flat.size, -1)
    out = np.zeros((rows, g.shape[1]), dtype=np.float32)
    K.scatter_add_rows(flat, g, out)
    return out
