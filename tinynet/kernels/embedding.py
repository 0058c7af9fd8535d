"""The Embedding table's gradient: every id's row of the output gradient added into that
id's row of the table gradient, in input order.

One serial kernel: the adds into one table row must follow the input order (the bits of
``np.add.at``), and the work (ids x width adds) is small next to zeroing the table, which
the caller does.
"""

from __future__ import annotations

from tinynet.kernels._jit import njit

__all__ = ["scatter_add_rows"]


@njit(cache=True, error_model="numpy", boundscheck=False)
def scatter_add_rows(ids, g, out):
    """``out[ids[n]] += g[n]`` for ``n`` in increasing order.

    Shape:
        ids: ``[N]`` int64, each in ``[0, out.shape[0])`` (the caller checks); g:
        ``[N, width]`` float32; out (in/out): ``[rows, width]`` float32.
    """
    width = g.shape[1]
    for n in range(ids.shape[0]):
        row = ids[n]
        for j in range(width):
            out[row, j] += g[n, j]
