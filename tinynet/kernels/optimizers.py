"""Fused optimizer update kernels (Keras 3 update rules, float32).

Each kernel family (SGD; the first-moment optimizers Adam, AdamW, Nadam, Adamax and Lion,
one ``rule`` argument apart; RMSprop; Adagrad) has one block helper that updates
``[start, stop)`` of a flat parameter in a single pass: gradient scaling/clipping,
decoupled weight decay, the slot updates and the parameter update. The serial variant
runs the helper over the whole range; the parallel variant runs it over fixed blocks of
``UPDATE_BLOCK`` elements under ``prange``. Every element is computed by the same float32
expression in both, so the results are bitwise identical for any gate value and thread
count. The serial variant is the block helper called from Python on the whole range (a
compiled wrapper would only re-optimize the code it links in); the Python ints it passes
are the run-time int64 starts the parallel variant passes, so the helper compiles once
for both. ``adam_check_*`` compute Adam's new weights (the same element helpers) without
writing anything and find the first non-finite one, so a training step can be tested
before it is taken. The operations that pick a variant are in :mod:`tinynet.ops.arrays.optimizers`.

Common arguments (all float32 scalars unless noted):
    gscale: gradient scale from clipnorm/global_clipnorm (exactly 1 when not clipping).
    do_clip (bool), clipvalue: clip the scaled gradient to ``[-clipvalue, clipvalue]``.
    do_decay (bool), wd, lr: decoupled weight decay ``w = w - (w * wd) * lr`` first.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from tinynet.kernels._jit import njit

__all__ = ["UPDATE_BLOCK", "ADAM", "NADAM", "ADAMAX", "LION", "sgd_serial", "sgd_parallel",
           "moments_serial", "moments_parallel", "adam_check_serial", "adam_check_parallel",
           "rmsprop_serial", "rmsprop_parallel",
           "adagrad_serial", "adagrad_parallel"]

UPDATE_BLOCK = 16384


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
def _sgd_block(w, g, m, start, stop, lr, momentum, use_momentum, nesterov,
               gscale, do_clip, clipvalue, do_decay, wd):
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
    _sgd_block(w, g, m, 0, w.size, lr, momentum, use_momentum, nesterov,
               gscale, do_clip, clipvalue, do_decay, wd)


@njit(cache=True, parallel=True, error_model="numpy")
def sgd_parallel(w, g, m, lr, momentum, use_momentum, nesterov,
                  gscale, do_clip, clipvalue, do_decay, wd):
    nblocks = (w.size + UPDATE_BLOCK - 1) // UPDATE_BLOCK
    for b in prange(nblocks):
        _sgd_block(w, g, m, b * UPDATE_BLOCK, min((b + 1) * UPDATE_BLOCK, w.size), lr,
                   momentum, use_momentum, nesterov, gscale, do_clip, clipvalue, do_decay, wd)


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
def _moments_block(w, g, m, v, vhat, start, stop, rule, one_minus_b1, b2, k, eps, amsgrad, lr,
                   gscale, do_clip, clipvalue, do_decay, wd):
    """One step of Adam (AMSGrad too), Nadam, Adamax or Lion (``rule``) on ``[start,
    stop)``: Keras 3's elementwise operations in Keras's order, the per-step scalars
    ``k = (k0, k1, k2, k3, k4)`` computed by the optimizer::

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
    # views indexed from 0: a computed flat index would block vectorization
    w_ = w[start:stop]
    g_ = g[start:stop]
    m_ = m[start:stop]
    v_ = v[start:stop]
    vhat_ = vhat[start:stop]
    k0, k1, k2, k3, k4 = k
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
    elif not (amsgrad or do_clip or do_decay):
        # Adam's common case as a branch-free loop, the expressions of _adam_mv and
        # _adam_w written out: a helper is compiled on its own, and a call to it in the
        # loop keeps the loop from vectorizing (one call per element costs ~8x the pass)
        for i in range(n):
            gi = g_[i] * gscale
            mi = m_[i] + (gi - m_[i]) * one_minus_b1
            vi = v_[i] + (gi * gi - v_[i]) * b2
            m_[i] = mi
            v_[i] = vi
            w_[i] = w_[i] - (mi * k0) / (np.sqrt(vi) + eps)
    else:
        for i in range(n):
            gi = _grad(g_, i, gscale, do_clip, clipvalue)
            wi = _decayed(w_, i, do_decay, wd, lr)
            mi, vi = _adam_moments(m_, v_, i, gi, one_minus_b1, b2)
            if amsgrad:
                vi = _maximum(vhat_[i], vi)
                vhat_[i] = vi
            w_[i] = _adam_w(wi, mi, vi, k0, eps)


def moments_serial(w, g, m, v, vhat, rule, one_minus_b1, b2, k, eps, amsgrad, lr,
                   gscale, do_clip, clipvalue, do_decay, wd):
    """The moments update of all of ``w`` on the calling thread."""
    _moments_block(w, g, m, v, vhat, 0, w.size, rule, one_minus_b1, b2, k, eps, amsgrad, lr,
                   gscale, do_clip, clipvalue, do_decay, wd)


@njit(cache=True, parallel=True, error_model="numpy")
def moments_parallel(w, g, m, v, vhat, rule, one_minus_b1, b2, k, eps, amsgrad, lr,
                     gscale, do_clip, clipvalue, do_decay, wd):
    nblocks = (w.size + UPDATE_BLOCK - 1) // UPDATE_BLOCK
    for b in prange(nblocks):
        _moments_block(w, g, m, v, vhat, b * UPDATE_BLOCK, min((b + 1) * UPDATE_BLOCK, w.size),
                       rule, one_minus_b1, b2, k, eps, amsgrad, lr,
                       gscale, do_clip, clipvalue, do_decay, wd)


# -- Adam's step, dry: would it keep every weight finite? ------------------------------
@njit(callee=True, cache=True, error_model="numpy")
def _adam_candidate(w_, g_, m_, v_, vhat_, i, one_minus_b1, b2, k0, eps, amsgrad, lr,
                    gscale, do_clip, clipvalue, do_decay, wd):
    """The weight element ``i`` would get from Adam's step (the expressions of
    :func:`_moments_block`), computed without storing anything."""
    gi = _grad(g_, i, gscale, do_clip, clipvalue)
    wi = _decayed(w_, i, do_decay, wd, lr)
    mi, vi = _adam_mv(m_[i], v_[i], gi, one_minus_b1, b2)
    if amsgrad:
        vi = _maximum(vhat_[i], vi)
    return _adam_w(wi, mi, vi, k0, eps)


@njit(cache=True, error_model="numpy")
def _adam_check_block(w, g, m, v, vhat, start, stop, one_minus_b1, b2, k0, eps, amsgrad, lr,
                      gscale, do_clip, clipvalue, do_decay, wd):
    """The index (from ``start``) of the first element of ``[start, stop)`` whose new
    weight from Adam's step (``rule`` ADAM of :func:`_moments_block`, same arguments, the
    same bits) would be NaN or infinite, else -1. Nothing is written: it is the test that
    lets a training step skip the copy an undo would need."""
    w_ = w[start:stop]
    g_ = g[start:stop]
    m_ = m[start:stop]
    v_ = v[start:stop]
    vhat_ = vhat[start:stop]
    n = stop - start
    bad = 0  # count of non-finite new weights (x - x is 0 for a finite x, else NaN)
    if not (amsgrad or do_clip or do_decay):
        for i in range(n):  # the common case's loop of _moments_block, written out alike
            gi = g_[i] * gscale
            mi = m_[i] + (gi - m_[i]) * one_minus_b1
            vi = v_[i] + (gi * gi - v_[i]) * b2
            wn = w_[i] - (mi * k0) / (np.sqrt(vi) + eps)
            bad += (wn - wn) != 0
    else:
        for i in range(n):
            wn = _adam_candidate(w_, g_, m_, v_, vhat_, i, one_minus_b1, b2, k0, eps,
                                 amsgrad, lr, gscale, do_clip, clipvalue, do_decay, wd)
            bad += (wn - wn) != 0
    if bad == 0:
        return -1
    for i in range(n):  # rare: find the first one
        wn = _adam_candidate(w_, g_, m_, v_, vhat_, i, one_minus_b1, b2, k0, eps,
                             amsgrad, lr, gscale, do_clip, clipvalue, do_decay, wd)
        if (wn - wn) != 0:
            return i
    return -1


def adam_check_serial(w, g, m, v, vhat, one_minus_b1, b2, k0, eps, amsgrad, lr,
                      gscale, do_clip, clipvalue, do_decay, wd):
    """The first index of ``w`` whose Adam step would give a non-finite weight, or -1,
    on the calling thread."""
    return _adam_check_block(w, g, m, v, vhat, 0, w.size, one_minus_b1, b2, k0, eps,
                             amsgrad, lr, gscale, do_clip, clipvalue, do_decay, wd)


@njit(cache=True, parallel=True, error_model="numpy")
def adam_check_parallel(w, g, m, v, vhat, one_minus_b1, b2, k0, eps, amsgrad, lr,
                        gscale, do_clip, clipvalue, do_decay, wd):
    nblocks = (w.size + UPDATE_BLOCK - 1) // UPDATE_BLOCK
    first = np.empty(nblocks, dtype=np.int64)
    for b in prange(nblocks):
        first[b] = _adam_check_block(w, g, m, v, vhat, b * UPDATE_BLOCK,
                                     min((b + 1) * UPDATE_BLOCK, w.size), one_minus_b1, b2,
                                     k0, eps, amsgrad, lr, gscale, do_clip, clipvalue,
                                     do_decay, wd)
    for b in range(nblocks):  # block order: the first one, as the serial scan finds it
        if first[b] >= 0:
            return b * UPDATE_BLOCK + first[b]
    return np.int64(-1)


# -- RMSprop ---------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def _rmsprop_block(w, g, vel, mom, avg, start, stop, lr, rho, one_minus_rho, momentum,
                   use_momentum, centered, eps, gscale, do_clip, clipvalue, do_decay, wd):
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
    _rmsprop_block(w, g, vel, mom, avg, 0, w.size, lr, rho, one_minus_rho, momentum,
                   use_momentum, centered, eps, gscale, do_clip, clipvalue, do_decay, wd)


@njit(cache=True, parallel=True, error_model="numpy")
def rmsprop_parallel(w, g, vel, mom, avg, lr, rho, one_minus_rho, momentum, use_momentum,
                      centered, eps, gscale, do_clip, clipvalue, do_decay, wd):
    nblocks = (w.size + UPDATE_BLOCK - 1) // UPDATE_BLOCK
    for b in prange(nblocks):
        _rmsprop_block(w, g, vel, mom, avg, b * UPDATE_BLOCK,
                       min((b + 1) * UPDATE_BLOCK, w.size), lr, rho, one_minus_rho, momentum,
                       use_momentum, centered, eps, gscale, do_clip, clipvalue, do_decay, wd)


# -- Adagrad ---------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def _adagrad_block(w, g, acc, start, stop, lr, eps, gscale, do_clip, clipvalue, do_decay, wd):
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
    _adagrad_block(w, g, acc, 0, w.size, lr, eps, gscale, do_clip, clipvalue,
                   do_decay, wd)


@njit(cache=True, parallel=True, error_model="numpy")
def adagrad_parallel(w, g, acc, lr, eps, gscale, do_clip, clipvalue, do_decay, wd):
    nblocks = (w.size + UPDATE_BLOCK - 1) // UPDATE_BLOCK
    for b in prange(nblocks):
        _adagrad_block(w, g, acc, b * UPDATE_BLOCK, min((b + 1) * UPDATE_BLOCK, w.size), lr,
                       eps, gscale, do_clip, clipvalue, do_decay, wd)


# -- Python wrappers (the only place the gate is read) -------------------------------------
