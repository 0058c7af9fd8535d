"""The cores' reused per-thread scratch buffers never carry anything from one call to the next.

The kernels' partial sums live in buffers each thread keeps per size
(``group_norm_core._scratch``); layer norm's rows kernels merge their parameter partials
themselves. A call must give the bits of the same call made first in a new thread (whose
buffers are new), whatever ran before it, and threads calling at once must not share a buffer.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from tinynet.layers.regularization.normalization import folds, group_norm_core
from tinynet.layers.regularization.normalization.group_norm_core import gn_backward, gn_forward

# (shape, groups): the general path (block partials zeroed per call), the packed path, and
# layer norm's rows path (partials merged inside the kernel).
CASES = [((2, 9, 9, 8), 2), ((6, 3, 16), 4), ((37, 1, 48), 1), ((5, 1, 7), 1)]


def _call(shape, groups, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape, dtype=np.float32) * 3 + 1
    g = rng.standard_normal(shape, dtype=np.float32)
    c = shape[-1]
    gamma = rng.standard_normal(c).astype(np.float32)
    beta = rng.standard_normal(c).astype(np.float32)
    out, _, mean, _var, inv_std = gn_forward(x, groups, gamma, beta, 1e-3, want_xn=False)
    dx, dgamma, dbeta = gn_backward(g, x, inv_std, groups, gamma, mean=mean)
    return [a.tobytes() for a in (out, mean, inv_std, dx, dgamma, dbeta)]


def _in_new_thread(fn):
    box = []
    t = threading.Thread(target=lambda: box.append(fn()))
    t.start()
    t.join()
    return box[0]


@pytest.mark.parametrize("shape,groups", CASES)
def test_a_call_after_another_gives_the_bits_of_a_first_call(shape, groups):
    fresh = _in_new_thread(lambda: _call(shape, groups, seed=2))
    _call(shape, groups, seed=1)  # fills this thread's buffers of these sizes
    assert _call(shape, groups, seed=2) == fresh


@pytest.mark.parametrize("shape,groups", CASES)
def test_threads_calling_at_once_get_their_own_buffers(shape, groups):
    want = {seed: _call(shape, groups, seed) for seed in range(4)}
    got: dict = {}
    barrier = threading.Barrier(4)

    def work(seed):
        barrier.wait()
        results = [_call(shape, groups, seed) for _ in range(5)]
        got[seed] = results

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for seed in range(4):
        assert all(r == want[seed] for r in got[seed])


def test_scratch_is_per_thread_and_reused():
    a = group_norm_core._scratch((2, 3), np.float64)
    assert group_norm_core._scratch((2, 3), np.float64) is a
    assert group_norm_core._scratch((2, 3), np.float32) is not a
    assert _in_new_thread(lambda: group_norm_core._scratch((2, 3), np.float64)) is not a


def test_rows_kernels_merge_like_merge_rows_serial():
    """The rows kernels' own merge gives folds.merge_rows_serial's bits on their partials."""
    rng = np.random.default_rng(5)
    rows, c = 300, 40
    plan = group_norm_core._plan((rows, 1, c), 1, "test")
    x = rng.standard_normal(rows * c, dtype=np.float32)
    g = rng.standard_normal(rows * c, dtype=np.float32)
    mean = rng.standard_normal(rows).astype(np.float32)
    inv_std = rng.random(rows).astype(np.float32) + 0.5
    gamma = rng.standard_normal(c).astype(np.float32)
    for kernel in (group_norm_core._backward_rows_serial, group_norm_core._backward_rows_parallel):
        parts = np.zeros((2, plan.ntasks, c))
        sums = np.empty((2, c), dtype=np.float32)
        kernel(g, x, np.empty_like(g), True, False, False, rows, 1, c, c, plan.block, plan.spc,
               mean, inv_std, gamma, group_norm_core._NO_PART[0], group_norm_core._NO_PART[1],
               sums[0], sums[1], parts)
        assert sums.tobytes() == folds.merge_rows_serial(parts).tobytes()
        assert sums.tobytes() == folds.merge_rows_parallel(parts).tobytes()
