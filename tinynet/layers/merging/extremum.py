"""``Maximum`` and ``Minimum``'s shared fold: the running extremum and its gradient."""

from __future__ import annotations

import numpy as np

from tinynet.layers.merging.base_merge import Merge

__all__ = ["Extremum"]


class Extremum(Merge):
    """The element-wise maximum (or minimum) of the inputs, folded left to right:
    ``op(op(x0, x1), x2) ...``. In the backward each pairwise step sends the gradient to
    the larger (smaller) side and splits a tie in halves, as PyTorch and JAX
    differentiate ``maximum``/``minimum`` (Keras's backends).

    Shape:
        Inputs: a list of at least two arrays of one rank (size-1 axes broadcast);
        output: their broadcast shape.
    """

    _op = staticmethod(np.maximum)

    def _merge(self, arrays: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
        running = [arrays[0]]
        for a in arrays[1:]:
            running.append(self._op(running[-1], a))
        return running[-1], running[:-1]

    def _input_grads(self, g, arrays, state):
        grads: list = [None] * len(arrays)
        half = np.float32(0.5)
        for k in range(len(arrays) - 1, 0, -1):
            prev, x = state[k - 1], arrays[k]
            wins = self._op(prev, x) != prev  # x strictly beyond the running value
            tie = prev == x
            grads[k] = np.where(wins, g, np.where(tie, g * half, np.float32(0.0)))
            g = np.where(wins, np.float32(0.0), np.where(tie, g * half, g))
        grads[0] = g
        return grads
