"""Fused optimizer update kernels (Keras 3 update rules, float32).

Each optimizer has one block helper that updates ``[start, stop)`` of a flat parameter in
a single pass: gradient scaling/clipping, decoupled weight decay, the slot updates and the
parameter update. The serial variant runs the helper over the whole range; the parallel
variant runs it over fixed blocks of ``UPDATE_BLOCK`` elements under ``prange``. Every
element is computed by the same float32 expression in both, so the results are bitwise
identical for any gate value and thread count. The serial variant is the block helper
called from Python on the whole range (a compiled wrapper would only re-optimize the code
it links in); the Python ints it passes are the run-time int64 starts the parallel
variant passes, so the helper compiles once for both. The operations
that pick a variant are in :mod:`tinynet.optimizers.updates`.

Common arguments (all float32 scalars unless noted):
    gscale: gradient scale from clipnorm/global_clipnorm (exactly 1 when not clipping).
    do_clip (bool), clipvalue: clip the scaled gradient to ``[-clipvalue, clipvalue]``.
    do_decay (bool), wd, lr: decoupled weight decay ``w = w - (w * wd) * lr`` first.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from tinynet.kernels._jit import njit

__all__ = ["UPDATE_BLOCK", "sgd_serial", "sgd_parallel", "adam_serial", "adam_parallel",
           "rmsprop_serial", "rmsprop_parallel", "adagrad_serial", "adagrad_parallel"]

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


# -- Adam / AdamW ------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def _adam_block(w, g, m, v, vhat, start, stop, alpha, one_minus_b1, one_minus_b2, eps,
                amsgrad, lr, gscale, do_clip, clipvalue, do_decay, wd):
    # views indexed from 0: a computed flat index would block vectorization
    w_ = w[start:stop]
    g_ = g[start:stop]
    m_ = m[start:stop]
    v_ = v[start:stop]
    vhat_ = vhat[start:stop]
    if not (amsgrad or do_clip or do_decay):
        # the common case as a branch-free loop, so it vectorizes (the same expressions)
        for i in range(stop - start):
            gi = g_[i] * gscale
            mi = m_[i] + (gi - m_[i]) * one_minus_b1
            vi = v_[i] + (gi * gi - v_[i]) * one_minus_b2
            m_[i] = mi
            v_[i] = vi
            w_[i] = w_[i] - (mi * alpha) / (np.sqrt(vi) + eps)
        return
    for i in range(stop - start):
        gi = _grad(g_, i, gscale, do_clip, clipvalue)
        wi = _decayed(w_, i, do_decay, wd, lr)
        mi = m_[i] + (gi - m_[i]) * one_minus_b1
        vi = v_[i] + (gi * gi - v_[i]) * one_minus_b2
        m_[i] = mi
        v_[i] = vi
        if amsgrad:
            vh = vhat_[i]
            if vi > vh:
                vh = vi
            vhat_[i] = vh
            vi = vh
        w_[i] = wi - (mi * alpha) / (np.sqrt(vi) + eps)


def adam_serial(w, g, m, v, vhat, alpha, one_minus_b1, one_minus_b2, eps, amsgrad, lr,
                 gscale, do_clip, clipvalue, do_decay, wd):
    """The Adam update of all of ``w`` on the calling thread."""
    _adam_block(w, g, m, v, vhat, 0, w.size, alpha, one_minus_b1, one_minus_b2, eps,
                amsgrad, lr, gscale, do_clip, clipvalue, do_decay, wd)


@njit(cache=True, parallel=True, error_model="numpy")
def adam_parallel(w, g, m, v, vhat, alpha, one_minus_b1, one_minus_b2, eps, amsgrad, lr,
                   gscale, do_clip, clipvalue, do_decay, wd):
    nblocks = (w.size + UPDATE_BLOCK - 1) // UPDATE_BLOCK
    for b in prange(nblocks):
        _adam_block(w, g, m, v, vhat, b * UPDATE_BLOCK, min((b + 1) * UPDATE_BLOCK, w.size),
                    alpha, one_minus_b1, one_minus_b2, eps, amsgrad, lr,
                    gscale, do_clip, clipvalue, do_decay, wd)


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
