"""The wide-row statistics follow the documented fold order, bit for bit.

For ``C`` dividing 32 the statistics lanes are ``32 // C`` copies of the channels:
position ``p`` of a block feeds copy ``p mod (32 // C)`` while it lies in a whole wide row
of ``64 // C`` positions, later positions feed copy 0, and the copies fold in order.
Block partials merge in block order in float64. With one group per channel each group's
sums are its channel's folded lanes, so the statistics can be derived here in NumPy
float32 (``np.cumsum`` adds in order) and compared for equality.
"""

from __future__ import annotations

import numpy as np
import pytest

from tinynet.layers.regularization.normalization import group_norm_core as core
from tinynet.layers.regularization.normalization.folds import rows_per_block


def _seq_sum(v: np.ndarray) -> np.float32:
    """float32 sum of ``v`` in order (0 for an empty ``v``)."""
    return np.cumsum(v, dtype=np.float32)[-1] if v.size else np.float32(0.0)


def _block_sums(d: np.ndarray, channels: int) -> tuple:
    """The folded lane sums of ``d`` and ``d * d`` (``[positions, C]``, float32) of one
    block, by the documented order."""
    per_row = core.WIDE // channels
    copies = core.HALF // channels
    whole = (d.shape[0] // per_row) * per_row
    s1 = np.empty(channels, np.float32)
    s2 = np.empty(channels, np.float32)
    for c in range(channels):
        col = d[:, c]
        sq = col * col
        parts1, parts2 = [], []
        for k in range(copies):
            idx = np.arange(k, whole, copies)
            if k == 0:  # positions short of a whole row go to copy 0, after the rows
                idx = np.concatenate([idx, np.arange(whole, d.shape[0])])
            parts1.append(_seq_sum(col[idx]))
            parts2.append(_seq_sum(sq[idx]))
        s1[c] = _seq_sum(np.array(parts1, np.float32))
        s2[c] = _seq_sum(np.array(parts2, np.float32))
    return s1, s2


@pytest.mark.parametrize("channels,positions", [
    (32, 7), (32, 512), (32, 701),   # one copy; one block, a leftover, two blocks
    (16, 9), (16, 1030),             # two copies; leftovers in copy 0; two blocks
    (8, 13), (4, 61), (1, 100),      # 4, 8 and 32 copies
])
def test_statistics_follow_the_half_lane_order(channels, positions):
    rng = np.random.default_rng(channels * 1000 + positions)
    x = (rng.standard_normal((1, positions, channels)) * 2 + 5).astype(np.float32)
    gamma = np.ones(channels, np.float32)
    beta = np.zeros(channels, np.float32)
    eps = 1e-3
    _, _, mean, var, inv_std = core.gn_forward(x, channels, gamma, beta, eps, want_xn=False)
    block = rows_per_block(channels)
    shift = x[0, 0]
    d = x[0] - shift  # float32, as the kernels subtract
    t1 = np.zeros(channels)
    t2 = np.zeros(channels)
    for p0 in range(0, positions, block):
        s1, s2 = _block_sums(d[p0:p0 + block], channels)
        t1 += s1.astype(np.float64)  # block partials merge in block order in float64
        t2 += s2.astype(np.float64)
    m = t1 / positions
    v = np.maximum(t2 / positions - m * m, 0.0)
    assert mean.tobytes() == (shift.astype(np.float64) + m).astype(np.float32).tobytes()
    assert var.tobytes() == v.astype(np.float32).tobytes()
    assert inv_std.tobytes() == (1.0 / np.sqrt(v + eps)).astype(np.float32).tobytes()
