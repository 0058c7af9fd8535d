"""Fused optimizer update kernels (Keras 3 update rules, float32).

Each kernel family (SGD; the first-moment optimizers Adam, AdamW, Nadam, Adamax and Lion,
one ``rule`` argument apart; RMSprop; Adagrad) has one compiled kernel, ``*_blocks``, that
updates blocks ``b0..b1`` of ``UPDATE_BLOCK`` elements of a flat parameter in a single
pass: gradient scaling/clipping, decoupled weight decay, the slot updates and the
parameter update. The serial variant calls it from Python on every block (one loop over
all elements); the parallel variant runs it one block a task over Numba's threads through
its address (:func:`tinynet.kernels.address.run_parallel`), so no parallel copy of the
body is compiled. Every element is computed by the same float32 expression in both, so the
results are bitwise identical for any gate value and thread count. ``adam_check_*``
compute Adam's new weights (the same element expressions) without writing anything and
find the first non-finite one, so a training step can be tested before it is taken.
Adam without AMSGrad, clipping or decay (the common case) has kernels of its own
(``adam_plain_*``), picked by the serial and parallel wrappers: a model trained with it
compiles only that loop, not every rule's. The operations that pick a variant are in
:mod:`tinynet.ops.arrays.optimizers`.

Common arguments (all float32 scalars unless noted):
    gscale: gradient scale from clipnorm/global_clipnorm (exactly 1 when not clipping).
    do_clip (bool), clipvalue: clip the scaled gradient to ``[-clipvalue, clipvalue]``.
    do_decay (bool), wd, lr: decoupled weight decay ``w = w - (w * wd) * lr`` first.
"""

from __future__ import annotations

import numpy as np

from tinynet.kernels._jit import njit
from tinynet.kernels.address import run_parallel

__all__ = ["UPDATE_BLOCK", "nblocks", "sgd_blocks", "moments_blocks", "adam_check_blocks",
           "rmsprop_blocks", "adagrad_blocks", "ADAM", "NADAM", "ADAMAX", "LION", "sgd_serial",
           "sgd_parallel",
           "moments_serial", "moments_parallel", "adam_check_serial", "adam_check_parallel",
           "rmsprop_serial", "rmsprop_parallel",
           "adagrad_serial", "adagrad_parallel"]

UPDATE_BLOCK = 16384


def nblocks(size: int) -> int:
    """How many blocks of :data:`UPDATE_BLOCK` elements cover ``size`` elements."""
    return (size + UPDATE_BLOCK - 1) // UPDATE_BLOCK


@njit(cache=True, inline="always", error_model="numpy")
def _span(size, b0, b1):
    """The elements ``[start, stop)`` of blocks ``b0..b1`` of a ``size``-element array."""
    return b0 * UPDATE_BLOCK, min(b1 * UPDATE_BLOCK, size)


# -- shared element helpers ------------------------------------------------------------
@njit(callee=True, cache=True, error_model="numpy")
def _grad(g, i, gscale, do_clip, clipvalue):
    gi = g[i] * gscale
    if do_clip:
        if gi > clipvalue:
            gi = clipvalue
        elif gi < -clipvalue:
            gi = -clipvalue
    return gi


@njit(callee=True, cache=True, error_model="numpy")
def _decayed(w, i, do_decay, wd, lr):
    wi = w[i]
    if do_decay:
        wi = wi - (wi * wd) * lr
    return wi


# -- SGD ---------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def sgd_blocks(w, g, m, lr, momentum, use_momentum, nesterov,
               gscale, do_clip, clipvalue, do_decay, wd, b0, b1):
    """The SGD update of blocks ``b0..b1`` of ``w`` (one loop over their elements)."""
    start, stop = _span(w.size, b0, b1)
    # views indexed from 0: a computed flat index would block vectorization
    w_ = w[start:stop]
    g_ = g[start:stop]
    m_ = m[start:stop]
    for i in range(stop - start):
        gi = _grad(g_, i, gscale, do_clip, clipvalue)
        wi = _decayed(w_, i, do_decay, wd, lr)
        if use_momentum:
            mi = m_[i] * momentum - gi * lr
            m_[i] = mi
            if nesterov:
                wi = wi + (mi * momentum - gi * lr)
            else:
                wi = wi + mi
        else:
            wi = wi - gi * lr
        w_[i] = wi


def sgd_serial(w, g, m, lr, momentum, use_momentum, nesterov,
                gscale, do_clip, clipvalue, do_decay, wd):
    """The SGD update of all of ``w`` on the calling thread."""
    sgd_blocks(w, g, m, lr, momentum, use_momentum, nesterov,
               gscale, do_clip, clipvalue, do_decay, wd, 0, nblocks(w.size))


def sgd_parallel(w, g, m, lr, momentum, use_momentum, nesterov,
                  gscale, do_clip, clipvalue, do_decay, wd):
    """:func:`sgd_serial` with the blocks spread over threads (the same bits)."""
    run_parallel(sgd_blocks, nblocks(w.size), w, g, m, lr, momentum, use_momentum, nesterov,
                 gscale, do_clip, clipvalue, do_decay, wd)


# -- Adam / AdamW / Nadam / Adamax / Lion: the first-moment optimizers --------------------------
#: The rules of the moments kernel (its ``rule`` argument).
ADAM, NADAM, ADAMAX, LION = 0, 1, 2, 3


@njit(callee=True, cache=True, error_model="numpy")
def _maximum(a, b):
    """``max(a, b)``, NaN if either is (as ``torch.maximum`` and ``np.maximum``)."""
    return a if (a > b or a != a) else b


@njit(callee=True, cache=True, error_model="numpy")
def _sign(x):
    """1, -1 or 0 (+0 for either zero); NaN stays NaN, as NumPy's, JAX's and TensorFlow's
    sign (torch's gives 0)."""
    if x > 0:
        return np.float32(1.0)
    if x < 0:
        return np.float32(-1.0)
    if x == 0:
        return np.float32(0.0)
    return x


@njit(callee=True, cache=True, error_model="numpy")
def _adam_mv(mi, vi, gi, one_minus_b1, one_minus_b2):
    """Adam's new first and second moments of one element."""
    return mi + (gi - mi) * one_minus_b1, vi + (gi * gi - vi) * one_minus_b2


@njit(callee=True, cache=True, error_model="numpy")
def _adam_w(wi, mi, vi, k0, eps):
    """Adam's new weight of one element from its new moments."""
    return wi - (mi * k0) / (np.sqrt(vi) + eps)


@njit(callee=True, cache=True, error_model="numpy")
def _adam_moments(m, v, i, gi, one_minus_b1, one_minus_b2):
    """Adam's first and second moments of element ``i``, stored and returned."""
    mi, vi = _adam_mv(m[i], v[i], gi, one_minus_b1, one_minus_b2)
    m[i] = mi
    v[i] = vi
    return mi, vi


@njit(cache=True, error_model="numpy")
def moments_blocks(w, g, m, v, vhat, rule, one_minus_b1, b2, k0, k1, k2, k3, k4, eps, amsgrad,
                   lr, gscale, do_clip, clipvalue, do_decay, wd, b0, b1):
    """One step of Adam (AMSGrad too), Nadam, Adamax or Lion (``rule``) on blocks ``b0..b1``
    of ``w`` (one loop over their elements): Keras 3's elementwise operations in Keras's
    order, the per-step scalars ``k0 .. k4`` computed by the optimizer (as scalars: a tuple
    in a tuple cannot reach the parallel driver's threads)::

        Adam     m = m + (g - m) * one_minus_b1
                 v = v + (g*g - v) * b2                     b2 = 1 - beta_2
                 amsgrad: vhat = max(vhat, v); v = vhat
                 w = w - (m * k0) / (sqrt(v) + eps)         k0 = alpha
        Nadam    m, v as Adam
                 m_hat = (k0 * m) / k1 + (k2 * g) / k3      k0 = u(t+1), k1 = 1 - u(1)...u(t+1),
                                                            k2 = 1 - u(t), k3 = 1 - u(1)...u(t)
                 w = w - (m_hat * lr) / (sqrt(v / k4) + eps)   k4 = 1 - beta_2**t
        Adamax   m as Adam
                 v = max(b2 * v, |g|)                       b2 = beta_2 (slot "norm")
                 w = w - (lr * m) / (k0 * (v + eps))        k0 = 1 - beta_1**t
        Lion     w = w - lr * sign(m * k0 + g * one_minus_b1)   k0 = beta_1
                 m = m * b2 + g * k1                        b2 = beta_2, k1 = 1 - beta_2
    """
    start, stop = _span(w.size, b0, b1)
    # views indexed from 0: a computed flat index would block vectorization
    w_ = w[start:stop]
    g_ = g[start:stop]
    m_ = m[start:stop]
    v_ = v[start:stop]
    vhat_ = vhat[start:stop]
    # one loop per rule (and Adam's common case branch-free): each vectorizes on its own
    n = stop - start
    if rule == LION:
        for i in range(n):
            gi = _grad(g_, i, gscale, do_clip, clipvalue)
            wi = _decayed(w_, i, do_decay, wd, lr)
            mi = m_[i]
            w_[i] = wi - lr * _sign(mi * k0 + gi * one_minus_b1)
            m_[i] = mi * b2 + gi * k1
    elif rule == ADAMAX:
        for i in range(n):
            gi = _grad(g_, i, gscale, do_clip, clipvalue)
            wi = _decayed(w_, i, do_decay, wd, lr)
            mi = m_[i] + (gi - m_[i]) * one_minus_b1
            vi = _maximum(b2 * v_[i], np.abs(gi))
            m_[i] = mi
            v_[i] = vi
            w_[i] = wi - (lr * mi) / (k0 * (vi + eps))
    elif rule == NADAM:
        for i in range(n):
            gi = _grad(g_, i, gscale, do_clip, clipvalue)
            wi = _decayed(w_, i, do_decay, wd, lr)
            mi, vi = _adam_moments(m_, v_, i, gi, one_minus_b1, b2)
            m_hat = (k0 * mi) / k1 + (k2 * gi) / k3
            w_[i] = wi - (m_hat * lr) / (np.sqrt(vi / k4) + eps)
    else:  # Adam (its common case runs in adam_plain_blocks: the same bits, faster)
        for i in range(n):
            gi = _grad(g_, i, gscale, do_clip, clipvalue)
            wi = _decayed(w_, i, do_decay, wd, lr)
            mi, vi = _adam_moments(m_, v_, i, gi, one_minus_b1, b2)
            if amsgrad:
                vi = _maximum(vhat_[i], vi)
                vhat_[i] = vi
            w_[i] = _adam_w(wi, mi, vi, k0, eps)


# -- Adam's common case: no AMSGrad, clipping or decay -------------------------------------
# A kernel of its own, so a model trained with a plain Adam compiles only this loop (not
# the other rules' loops and the general one). The expressions of _adam_mv and _adam_w
# written out: a call to a compiled helper in the loop keeps it from vectorizing (one call
# per element costs ~8x the pass).
@njit(cache=True, inline="always", error_model="numpy")
def _adam_plain_new(w_, g_, m_, v_, i, one_minus_b1, b2, k0, eps, gscale):
    """Adam's new moments and weight of element ``i`` (nothing stored)."""
    gi = g_[i] * gscale
    mi = m_[i] + (gi - m_[i]) * one_minus_b1
    vi = v_[i] + (gi * gi - v_[i]) * b2
    return mi, vi, w_[i] - (mi * k0) / (np.sqrt(vi) + eps)


@njit(cache=True, error_model="numpy")
def adam_plain_blocks(w, g, m, v, one_minus_b1, b2, k0, eps, gscale, b0, b1):
    """:func:`moments_blocks` for rule ADAM without AMSGrad, clipping or decay (the same
    bits) on blocks ``b0..b1``."""
    start, stop = _span(w.size, b0, b1)
    w_ = w[start:stop]
    g_ = g[start:stop]
    m_ = m[start:stop]
    v_ = v[start:stop]
    for i in range(stop - start):
        mi, vi, wn = _adam_plain_new(w_, g_, m_, v_, i, one_minus_b1, b2, k0, eps, gscale)
        m_[i] = mi
        v_[i] = vi
        w_[i] = wn


def _plain(rule, amsgrad, do_clip, do_decay) -> bool:
    """Whether a step runs on Adam's common-case kernels."""
    return rule == ADAM and not (amsgrad or do_clip or do_decay)


def moments_serial(w, g, m, v, vhat, rule, one_minus_b1, b2, k, eps, amsgrad, lr,
                   gscale, do_clip, clipvalue, do_decay, wd):
    """The moments update of all of ``w`` on the calling thread."""
    if _plain(rule, amsgrad, do_clip, do_decay):
        adam_plain_blocks(w, g, m, v, one_minus_b1, b2, k[0], eps, gscale, 0, nblocks(w.size))
        return
    moments_blocks(w, g, m, v, vhat, rule, one_minus_b1, b2, *k, eps, amsgrad, lr,
                   gscale, do_clip, clipvalue, do_decay, wd, 0, nblocks(w.size))


def moments_parallel(w, g, m, v, vhat, rule, one_minus_b1, b2, k, eps, amsgrad, lr,
                     gscale, do_clip, clipvalue, do_decay, wd):
    """:func:`moments_serial` with the blocks spread over threads (the same bits)."""
    if _plain(rule, amsgrad, do_clip, do_decay):
        run_parallel(adam_plain_blocks, nblocks(w.size), w, g, m, v, one_minus_b1, b2, k[0],
                     eps, gscale)
        return
    run_parallel(moments_blocks, nblocks(w.size), w, g, m, v, vhat, rule, one_minus_b1, b2, *k,
                 eps, amsgrad, lr, gscale, do_clip, clipvalue, do_decay, wd)


# -- Adam's step, dry: would it keep every weight finite? ------------------------------
@njit(callee=True, cache=True, error_model="numpy")
def _adam_candidate(w_, g_, m_, v_, vhat_, i, one_minus_b1, b2, k0, eps, amsgrad, lr,
                    gscale, do_clip, clipvalue, do_decay, wd):
    """The weight element ``i`` would get from Adam's step (the expressions of
    :func:`moments_blocks`), computed without storing anything."""
    gi = _grad(g_, i, gscale, do_clip, clipvalue)
    wi = _decayed(w_, i, do_decay, wd, lr)
    mi, vi = _adam_mv(m_[i], v_[i], gi, one_minus_b1, b2)
    if amsgrad:
        vi = _maximum(vhat_[i], vi)
    return _adam_w(wi, mi, vi, k0, eps)


@njit(cache=True, error_model="numpy")
def adam_check_blocks(w, g, m, v, vhat, one_minus_b1, b2, k0, eps, amsgrad, lr,
                      gscale, do_clip, clipvalue, do_decay, wd, first, b0, b1):
    """``first[b0]``: the index in ``w`` of the first element of blocks ``b0..b1`` whose
    new weight from Adam's step (``rule`` ADAM of :func:`moments_blocks`, same arguments,
    the same bits) would be NaN or infinite, else -1. Nothing else is written: it is the
    test that lets a training step skip the copy an undo would need."""
    start, stop = _span(w.size, b0, b1)
    w_, g_, m_, v_, vhat_ = (w[start:stop], g[start:stop], m[start:stop], v[start:stop],
                             vhat[start:stop])
    n = stop - start
    first[b0] = -1
    bad = 0  # count of non-finite new weights (x - x is 0 for a finite x, else NaN)
    for i in range(n):
        wn = _adam_candidate(w_, g_, m_, v_, vhat_, i, one_minus_b1, b2, k0, eps, amsgrad,
                             lr, gscale, do_clip, clipvalue, do_decay, wd)
        bad += (wn - wn) != 0
    if bad == 0:
        return
    for i in range(n):  # rare: find the first one
        wn = _adam_candidate(w_, g_, m_, v_, vhat_, i, one_minus_b1, b2, k0, eps, amsgrad,
                             lr, gscale, do_clip, clipvalue, do_decay, wd)
        if (wn - wn) != 0:
            first[b0] = start + i
            return


@njit(cache=True, error_model="numpy")
def adam_plain_check_blocks(w, g, m, v, one_minus_b1, b2, k0, eps, gscale, first, b0, b1):
    """:func:`adam_check_blocks` for Adam's common case (:func:`adam_plain_blocks`'s
    step, the same bits)."""
    start, stop = _span(w.size, b0, b1)
    w_, g_, m_, v_ = w[start:stop], g[start:stop], m[start:stop], v[start:stop]
    n = stop - start
    first[b0] = -1
    bad = 0
    for i in range(n):
        wn = _adam_plain_new(w_, g_, m_, v_, i, one_minus_b1, b2, k0, eps, gscale)[2]
        bad += (wn - wn) != 0
    if bad == 0:
        return
    for i in range(n):  # rare: find the first one
        wn = _adam_plain_new(w_, g_, m_, v_, i, one_minus_b1, b2, k0, eps, gscale)[2]
        if (wn - wn) != 0:
            first[b0] = start + i
            return


def adam_check_serial(w, g, m, v, vhat, one_minus_b1, b2, k0, eps, amsgrad, lr,
                      gscale, do_clip, clipvalue, do_decay, wd):
    """The first index of ``w`` whose Adam step would give a non-finite weight, or -1,
    on the calling thread."""
    first = np.empty(1, dtype=np.int64)
    if _plain(ADAM, amsgrad, do_clip, do_decay):
        adam_plain_check_blocks(w, g, m, v, one_minus_b1, b2, k0, eps, gscale, first, 0,
                                nblocks(w.size))
    else:
        adam_check_blocks(w, g, m, v, vhat, one_minus_b1, b2, k0, eps, amsgrad, lr, gscale,
                          do_clip, clipvalue, do_decay, wd, first, 0, nblocks(w.size))
    return int(first[0])


def adam_check_parallel(w, g, m, v, vhat, one_minus_b1, b2, k0, eps, amsgrad, lr,
                        gscale, do_clip, clipvalue, do_decay, wd):
    """:func:`adam_check_serial` with the blocks spread over threads: the first hit in
    block order, the serial scan's."""
    count = nblocks(w.size)
    first = np.empty(count, dtype=np.int64)
    if _plain(ADAM, amsgrad, do_clip, do_decay):
        run_parallel(adam_plain_check_blocks, count, w, g, m, v, one_minus_b1, b2, k0, eps,
                     gscale, first)
    else:
        run_parallel(adam_check_blocks, count, w, g, m, v, vhat, one_minus_b1, b2, k0, eps,
                     amsgrad, lr, gscale, do_clip, clipvalue, do_decay, wd, first)
    hits = np.flatnonzero(first >= 0)
    return int(first[hits[0]]) if hits.size else -1


# -- RMSprop ---------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def rmsprop_blocks(w, g, vel, mom, avg, lr, rho, one_minus_rho, momentum,
                   use_momentum, centered, eps, gscale, do_clip, clipvalue, do_decay, wd, b0, b1):
    """The RMSprop update of blocks ``b0..b1`` of ``w`` (one loop over their elements)."""
    start, stop = _span(w.size, b0, b1)
    # views indexed from 0: a computed flat index would block vectorization
    w_ = w[start:stop]
    g_ = g[start:stop]
    vel_ = vel[start:stop]
    mom_ = mom[start:stop]
    avg_ = avg[start:stop]
    for i in range(stop - start):
        gi = _grad(g_, i, gscale, do_clip, clipvalue)
        wi = _decayed(w_, i, do_decay, wd, lr)
        vi = rho * vel_[i] + one_minus_rho * (gi * gi)
        vel_[i] = vi
        if centered:
            ai = rho * avg_[i] + one_minus_rho * gi
            avg_[i] = ai
            denom = (vi - ai * ai) + eps
        else:
            denom = vi + eps
        inc = (lr * gi) / np.sqrt(denom)
        if use_momentum:
            mi = momentum * mom_[i] + inc
            mom_[i] = mi
            wi = wi - mi
        else:
            wi = wi - inc
        w_[i] = wi


def rmsprop_serial(w, g, vel, mom, avg, lr, rho, one_minus_rho, momentum, use_momentum,
                    centered, eps, gscale, do_clip, clipvalue, do_decay, wd):
    """The RMSprop update of all of ``w`` on the calling thread."""
    rmsprop_blocks(w, g, vel, mom, avg, lr, rho, one_minus_rho, momentum, use_momentum,
                   centered, eps, gscale, do_clip, clipvalue, do_decay, wd, 0, nblocks(w.size))


def rmsprop_parallel(w, g, vel, mom, avg, lr, rho, one_minus_rho, momentum, use_momentum,
                      centered, eps, gscale, do_clip, clipvalue, do_decay, wd):
    """:func:`rmsprop_serial` with the blocks spread over threads (the same bits)."""
    run_parallel(rmsprop_blocks, nblocks(w.size), w, g, vel, mom, avg, lr, rho, one_minus_rho,
                 momentum, use_momentum, centered, eps, gscale, do_clip, clipvalue, do_decay, wd)


# -- Adagrad ---------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def adagrad_blocks(w, g, acc, lr, eps, gscale, do_clip, clipvalue, do_decay, wd, b0, b1):
    """The Adagrad update of blocks ``b0..b1`` of ``w`` (one loop over their elements)."""
    start, stop = _span(w.size, b0, b1)
    # views indexed from 0: a computed flat index would block vectorization
    w_ = w[start:stop]
    g_ = g[start:stop]
    acc_ = acc[start:stop]
    for i in range(stop - start):
        gi = _grad(g_, i, gscale, do_clip, clipvalue)
        wi = _decayed(w_, i, do_decay, wd, lr)
        ai = acc_[i] + gi * gi
        acc_[i] = ai
        w_[i] = wi - (lr * gi) / np.sqrt(ai + eps)


def adagrad_serial(w, g, acc, lr, eps, gscale, do_clip, clipvalue, do_decay, wd):
    """The Adagrad update of all of ``w`` on the calling thread."""
    adagrad_blocks(w, g, acc, lr, eps, gscale, do_clip, clipvalue, do_decay, wd, 0,
                   nblocks(w.size))


def adagrad_parallel(w, g, acc, lr, eps, gscale, do_clip, clipvalue, do_decay, wd):
    """:func:`adagrad_serial` with the blocks spread over threads (the same bits)."""
    run_parallel(adagrad_blocks, nblocks(w.size), w, g, acc, lr, eps, gscale, do_clip,
                 clipvalue, do_decay, wd)


# -- Python wrappers (the only place the gate is read) -------------------------------------
