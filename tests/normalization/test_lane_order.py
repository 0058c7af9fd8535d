"""The wide-row statistics and parameter gradients follow the documented fold order, bit
for bit.

For ``C`` dividing 32 the statistics lanes are ``32 // C`` copies of the channels:
position ``p`` of a block feeds copy ``p mod (32 // C)`` while it lies in a whole wide row
of ``64 // C`` positions, later positions feed copy 0, and the copies fold in order.
Block partials merge in block order in float64. With one group per channel each group's
sums are its channel's folded lanes, so the statistics and the parameter gradients can be
derived here in NumPy float32 (``np.cumsum`` adds in order) and compared for equality.
"""

from __future__ import annotations

import numpy as np
import pytest

from tinynet.ops.arrays import normalization as core
from tinynet.kernels.normalization import layout
from tinynet.kernels.normalization.folds import rows_per_block


def _seq_sum(v: np.ndarray) -> np.float32:
    """float32 sum of ``v`` in order (0 for an empty ``v``)."""
    return np.cumsum(v, dtype=np.float32)[-1] if v.size else np.float32(0.0)


def _lanes(t: np.ndarray, channels: int) -> np.ndarray:
    """The folded lane sums of the float32 terms ``t`` (``[positions, C]``) of one block,
    by the documented order (for ``C`` above 32: one lane set for the wide rows, ``reps``
    copies for the spans)."""
    if channels <= layout.HALF:  # wide rows folded into half-row lanes
        per_row, copies = layout.WIDE // channels, layout.HALF // channels
    elif layout.WIDE % channels == 0 or channels == 2 * layout.WIDE:  # one lane set
        per_row = copies = 1
    else:  # spans of ``reps`` positions, one lane copy each
        per_row = copies = max(layout.SPAN_ELEMS // channels, 1)
    whole = (t.shape[0] // per_row) * per_row
    out = np.empty(channels, np.float32)
    for c in range(channels):
        parts = []
        for k in range(copies):
            idx = np.arange(k, whole, copies)
            if k == 0:  # positions short of a whole row go to copy 0, after the rows
                idx = np.concatenate([idx, np.arange(whole, t.shape[0])])
            parts.append(_seq_sum(t[idx, c]))
        out[c] = _seq_sum(np.array(parts, np.float32))
    return out


def _merged(t: np.ndarray, channels: int, gamma: np.ndarray | None = None) -> np.ndarray:
    """Block lanes of ``t`` summed in block order in float64 (block and task partials);
    with ``gamma``, each block's lanes times ``gamma`` in float32 first (one group per
    channel: a group's partial of ``dx``'s sums is its channel's product)."""
    block = rows_per_block(channels)
    total = np.zeros(channels)
    for p0 in range(0, t.shape[0], block):
        lanes = _lanes(t[p0:p0 + block], channels)
        total += (lanes if gamma is None else gamma * lanes).astype(np.float64)
    return total


CASES = [
    (32, 7), (32, 512), (32, 701),   # one copy; one block, a leftover, two blocks
    (16, 9), (16, 1030),             # two copies; leftovers in copy 0; two blocks
    (8, 13), (4, 61), (1, 100),      # 4, 8 and 32 copies
]


@pytest.mark.parametrize("channels,positions", CASES)
def test_statistics_follow_the_half_lane_order(channels, positions):
    rng = np.random.default_rng(channels * 1000 + positions)
    x = (rng.standard_normal((1, positions, channels)) * 2 + 5).astype(np.float32)
    gamma = np.ones(channels, np.float32)
    beta = np.zeros(channels, np.float32)
    eps = 1e-3
    _, _, mean, var, inv_std = core.gn_forward(x, channels, gamma, beta, eps, want_xn=False)
    shift = x[0, 0]
    d = x[0] - shift  # float32, as the kernels subtract
    m = _merged(d, channels) / positions
    v = np.maximum(_merged(d * d, channels) / positions - m * m, 0.0)
    assert mean.tobytes() == (shift.astype(np.float64) + m).astype(np.float32).tobytes()
    assert var.tobytes() == v.astype(np.float32).tobytes()
    assert inv_std.tobytes() == (1.0 / np.sqrt(v + eps)).astype(np.float32).tobytes()


@pytest.mark.parametrize("channels,positions", CASES)
def test_parameter_gradients_follow_the_half_lane_order(channels, positions):
    """``grad_beta`` and ``grad_gamma`` are the lanes of ``g`` and ``g * xn`` (``xn``
    recomputed from ``x`` in float32) in the same order."""
    rng = np.random.default_rng(channels * 1000 + positions + 1)
    x = (rng.standard_normal((1, positions, channels)) * 2 + 5).astype(np.float32)
    g = rng.standard_normal((1, positions, channels)).astype(np.float32)
    gamma = rng.standard_normal(channels).astype(np.float32)
    beta = np.zeros(channels, np.float32)
    _, _, mean, _, inv_std = core.gn_forward(x, channels, gamma, beta, 1e-3, want_xn=False)
    _, dgamma, dbeta = core.gn_backward(g, x, inv_std, channels, gamma, mean=mean)
    xn = (x[0] - mean) * inv_std  # one group per channel: the statistics are per channel
    assert dbeta.tobytes() == _merged(g[0], channels).astype(np.float32).tobytes()
    assert dgamma.tobytes() == _merged(g[0] * xn, channels).astype(np.float32).tobytes()


# C dividing 64 packs positions into wide rows of 64 floats, C = 128 is two per row,
# C = 48 takes the spans; 16, 32, 64 and 128 channels can stream
MAP_CASES = CASES + [(64, 9), (64, 300), (128, 70), (48, 11)]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("channels,positions", MAP_CASES)
def test_element_wise_passes_give_the_span_expressions_bits(channels, positions, stream,
                                                            monkeypatch):
    """The forward sweep and ``dx`` compute each element with the span expression,
    whatever the row layout and with or without streaming stores:
    ``out = (x - mean) * (inv_std * gamma) + beta``, ``xn = (x - mean) * inv_std`` and
    ``dx = (inv_std * gamma) * g - (inv_std * sum_g / n + (inv_std * sum_gxn / n * inv_std)
    * (x - mean))`` (``* xn`` for a given ``xn``), every operation in float32."""
    from tinynet.ops.arrays import streaming

    monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", 0 if stream else 1 << 62)
    rng = np.random.default_rng(channels * 1000 + positions + 2)
    x = (rng.standard_normal((1, positions, channels)) * 2 + 5).astype(np.float32)
    g = rng.standard_normal((1, positions, channels)).astype(np.float32)
    gamma = rng.standard_normal(channels).astype(np.float32)
    beta = rng.standard_normal(channels).astype(np.float32)
    out, xn, mean, _, inv = core.gn_forward(x, channels, gamma, beta, 1e-3, want_xn=True)
    out2 = core.gn_forward(x, channels, gamma, beta, 1e-3, want_xn=False)[0]
    d = x[0] - mean
    assert out.tobytes() == (d * (inv * gamma) + beta).tobytes()
    assert out2.tobytes() == out.tobytes()
    assert xn.tobytes() == (d * inv).tobytes()
    n = np.float64(positions)
    sg = (_merged(g[0], channels, gamma) / n).astype(np.float32)
    sgx = (_merged(g[0] * xn[0], channels, gamma) / n).astype(np.float32)
    for source, kwargs, term, scale in ((x, {"mean": mean}, d, inv),
                                        (xn, {}, xn[0], np.float32(1.0))):
        dx = core.gn_backward(g, source, inv, channels, gamma, **kwargs)[0]
        want = (inv * gamma) * g[0] - (inv * sg + inv * sgx * scale * term)
        assert dx.tobytes() == want.tobytes()


def _segment_sum(v: np.ndarray) -> np.float32:
    """The group fold of one segment of channel lanes: in order below 8 channels, else 8
    lanes (lane ``i`` adds elements ``i, i + 8, ...``) added up in lane order."""
    if v.size < 8:
        return _seq_sum(v)
    lanes = [_seq_sum(v[i::8]) for i in range(8)]
    return _seq_sum(np.array(lanes, np.float32))


# One position per sample ([batch, C] input with several groups): each block is one
# position, whose lanes are copy 0 alone, on every layout.
SINGLE = [(8, 4), (16, 8), (16, 2), (48, 3), (64, 4), (128, 8), (128, 2)]


@pytest.mark.parametrize("channels,groups", SINGLE)
def test_single_position_samples_follow_the_group_fold(channels, groups):
    rng = np.random.default_rng(channels * 100 + groups)
    x = (rng.standard_normal((5, channels)) * 2 + 5).astype(np.float32)
    g = rng.standard_normal((5, channels)).astype(np.float32)
    gamma = rng.standard_normal(channels).astype(np.float32)
    beta = np.zeros(channels, np.float32)
    eps = 1e-3
    _, _, mean, var, inv_std = core.gn_forward(x, groups, gamma, beta, eps, want_xn=False)
    cpg = channels // groups
    n = np.float64(cpg)
    for b in range(5):
        for k in range(groups):
            seg = x[b, k * cpg:(k + 1) * cpg]
            d = seg - seg[0]  # float32, shifted by the group's first element
            m = np.float64(_segment_sum(d)) / n
            v = max(np.float64(_segment_sum(d * d)) / n - m * m, 0.0)
            i = b * groups + k
            assert mean[i] == np.float32(np.float64(seg[0]) + m)
            assert var[i] == np.float32(v)
            assert inv_std[i] == np.float32(1.0 / np.sqrt(v + eps))
    _, dgamma, dbeta = core.gn_backward(g, x, inv_std, groups, gamma, mean=mean)
    m_c = np.repeat(mean.reshape(5, groups), cpg, axis=1)
    k_c = np.repeat(inv_std.reshape(5, groups), cpg, axis=1)
    xn = (x - m_c) * k_c  # float32, as the kernels recompute it
    # the samples' lanes are added in sample order in float64, then rounded once
    assert dbeta.tobytes() == np.cumsum(g.astype(np.float64), axis=0)[-1].astype(
        np.float32).tobytes()
    assert dgamma.tobytes() == np.cumsum((g * xn).astype(np.float64), axis=0)[-1].astype(
        np.float32).tobytes()
