"""The cores' reused per-thread scratch buffers never carry anything from one call to the next.

The kernels' partial sums live in buffers each thread keeps per size
(``plan.scratch``); layer norm's rows kernels merge their parameter partials
themselves. A call must give the bits of the same call made first in a new thread (whose
buffers are new), whatever ran before it, and threads calling at once must not share a buffer.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from tinynet.kernels.normalization import folds
from tinynet.kernels.normalization.backward import backward_kernel
from tinynet.kernels.normalization.forward import BLOCKS, CHUNKS, SERIAL
from tinynet.ops.arrays.normalization import gn_backward, gn_forward
from tinynet.ops.arrays.normalization_plan import plan_of
from tinynet.ops.arrays.normalization_plan import scratch as _scratch
from tinynet.kernels.normalization.rows import backward_rows_kernel

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
    a = _scratch((2, 3), np.float64)
    assert _scratch((2, 3), np.float64) is a
    assert _scratch((2, 3), np.float32) is not a
    assert _in_new_thread(lambda: _scratch((2, 3), np.float64)) is not a


_GENERAL = ("_backward_serial", "_backward_chunks_parallel", "_backward_blocks_parallel")
_ROWS = ("_backward_rows_serial", "_backward_rows_parallel")
_MODES = {"_backward_serial": SERIAL, "_backward_chunks_parallel": CHUNKS,
          "_backward_blocks_parallel": BLOCKS, "_backward_rows_serial": False,
          "_backward_rows_parallel": True}


def _kernel_call(name, plan, g, x, dx, mean, inv_std, gamma, gp, coeff, parts):
    """Runs the backward kernel ``name`` of ``plan`` (recomputing ``xn`` from ``x``)."""
    stats = np.stack([mean, inv_std])
    if plan.rows:
        kernel = backward_rows_kernel(plan.kind, True, _MODES[name])
        kernel(g, x, dx, plan.dims, True, False, False, gamma, stats, coeff, parts)
    else:
        kernel = backward_kernel(plan.layout, _MODES[name], True)
        kernel(g, x, dx, plan.dims_for(_MODES[name]), False, False, gamma, stats, gp, coeff,
               parts)


# Small samples pack several to a task (spc > 1) and only ever run the serial or chunk
# kernel: in the blocks kernel a task row would take blocks from two threads.
@pytest.mark.parametrize("shape,groups,names", [
    ((300, 1, 40), 1, _ROWS),              # layer norm's rows: 300 one-row samples
    ((6, 40, 16), 4, _GENERAL[:2]),        # small samples, several to a task (spc > 1)
    ((3, 2100, 8), 2, _GENERAL),           # samples of two fold blocks (nblk = 2)
], ids=["rows", "packed", "blocks"])
def test_backward_kernels_agree_on_partials(shape, groups, names):
    """The serial and parallel backward kernels of a path give the same dx and parameter
    partials; the partial rows need no zeroing beforehand (the first block of a row starts
    it: stale NaNs vanish). The rows kernels merge their partials themselves, with the bits
    of folds.merge_rows_serial / merge_rows_parallel."""
    rng = np.random.default_rng(5)
    plan = plan_of(shape, groups, "test")
    assert plan.rows == (names == _ROWS)
    assert plan.spc == 1 or '_backward_blocks_parallel' not in names
    assert plan.rows or ((plan.spc > 1) == (shape[1] == 40)
                         and (plan.nblk == 2) == (shape[1] == 2100))
    n, c = plan.batch * plan.groups, plan.channels
    x = rng.standard_normal(shape, dtype=np.float32).reshape(-1)
    g = rng.standard_normal(shape, dtype=np.float32).reshape(-1)
    mean = rng.standard_normal(n).astype(np.float32)
    inv_std = rng.random(n).astype(np.float32) + 0.5
    gamma = rng.standard_normal(c).astype(np.float32)
    results = []
    for name in names:
        parts = np.full((2, plan.ntasks, c), np.nan)  # stale contents must not leak in
        gp = np.full((2, plan.batch, plan.nblk, plan.groups), np.nan)
        coeff = np.full((2, c if plan.rows else n), np.nan, dtype=np.float32)
        dx = np.empty_like(g)
        _kernel_call(name, plan, g, x, dx, mean, inv_std, gamma, gp, coeff, parts)
        assert not np.isnan(parts).any(), name
        if plan.rows:  # coeff holds (grad_beta, grad_gamma)
            assert coeff.tobytes() == folds.merge_rows_serial(parts).tobytes(), name
            assert coeff.tobytes() == folds.merge_rows_parallel(parts).tobytes(), name
        results.append((name, dx.tobytes(), parts.tobytes(), coeff.tobytes()))
    for result in results[1:]:
        assert result[1:] == results[0][1:], result[0]
