"""Adam's tested step: ``apply_or_undo`` of Adam and AdamW computes the new weights
without writing anything (``ops.arrays.optimizers.adam_check``), and takes the step only
when every one is finite, instead of copying the weights and slots before every step.

Pinned here: the check finds exactly the elements whose real update is NaN or infinite
(a float32 NumPy reference of Keras's expressions, the kernel's own update, serial and
parallel, across blocks), and a checked step gives the bits of ``apply`` or leaves every
weight, slot, ``iterations`` and ``built`` as before, naming the first bad parameter in
the order given.
"""

from __future__ import annotations

import numpy as np
import pytest

from tinynet import tuning
from tinynet.kernels.optimizers import UPDATE_BLOCK
from tinynet.layers.layer import Parameter
from tinynet.ops.arrays import optimizers as updates
from tinynet.optimizers import SGD, Adam, AdamW, Nadam

F = np.float32
FMAX = np.finfo(np.float32).max


def _numpy_adam(w, g, m, v, vhat, c1, c2, k0, eps, amsgrad, lr, gscale, do_clip, clipvalue,
                do_decay, wd):
    """Keras's Adam step in float32 NumPy (each operation rounded to float32)."""
    with np.errstate(all="ignore"):
        g = g * gscale
        if do_clip:
            g = np.clip(g, -clipvalue, clipvalue)
        if do_decay:
            w = w - (w * wd) * lr
        m = m + (g - m) * c1
        v = v + (g * g - v) * c2
        if amsgrad:
            v = np.where((vhat > v) | np.isnan(vhat), vhat, v)
        return w - (m * k0) / (np.sqrt(v) + eps)


def _case(n, seed, amsgrad=False, do_clip=False, do_decay=False, eps=F(1e-7)):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(n).astype(F)
    g = rng.standard_normal(n).astype(F)
    m = (rng.standard_normal(n) * 0.1).astype(F)
    v = rng.random(n).astype(F)
    vhat = (v + rng.random(n).astype(F)) if amsgrad else np.empty(0, F)
    common = (F(1.0), do_clip, F(0.5), do_decay, F(0.004))
    return [w, g, m, v, vhat], dict(c1=F(0.1), c2=F(0.001), k0=F(0.01), eps=eps,
                                    amsgrad=amsgrad, lr=F(0.01), common=common)


def _check(arrays, s):
    return updates.adam_check(*arrays, s["c1"], s["c2"], (s["k0"],) + (F(0),) * 4, s["eps"],
                              s["amsgrad"], s["lr"], s["common"])


def _reference_first_bad(arrays, s):
    w, g, m, v, vhat = arrays
    new = _numpy_adam(w, g, m, v, vhat if s["amsgrad"] else v, s["c1"], s["c2"], s["k0"],
                      s["eps"], s["amsgrad"], s["lr"], *s["common"])
    bad = np.flatnonzero(~np.isfinite(new))
    return int(bad[0]) if bad.size else -1, new


def _poison(arrays, where):
    """Elements whose step is not finite, each its own way."""
    w, g, m, v, _ = arrays
    ways = [lambda i: g.__setitem__(i, np.nan),            # a NaN gradient
            lambda i: g.__setitem__(i, -np.inf),           # an infinite gradient
            lambda i: (w.__setitem__(i, FMAX), m.__setitem__(i, -1e36)),  # w - step overflows
            lambda i: w.__setitem__(i, np.inf),            # an infinite weight already
            lambda i: v.__setitem__(i, F(-5.0))]           # sqrt of a negative velocity
    for k, i in enumerate(where):
        ways[k % len(ways)](i)


@pytest.mark.parametrize("flags", [{}, {"amsgrad": True}, {"do_clip": True},
                                   {"do_decay": True}])
@pytest.mark.parametrize("where", [[], [7], [UPDATE_BLOCK + 3, 5], [2 * UPDATE_BLOCK + 1],
                                   [UPDATE_BLOCK - 1, UPDATE_BLOCK, 40, 3 * UPDATE_BLOCK + 9]])
def test_check_finds_the_first_non_finite_new_weight(flags, where):
    arrays, s = _case(3 * UPDATE_BLOCK + 100, 0, **flags)
    _poison(arrays, where)
    want, new = _reference_first_bad(arrays, s)
    if not (flags.get("do_clip") or flags.get("do_decay")):  # each poisoned element is one
        # (with clipping an infinite gradient is finite, with decay w leaves FLT_MAX)
        assert want == (min(where) if where else -1)
    before = [a.copy() for a in arrays]
    got = {}
    for gate in (0, 10 ** 12):
        with tuning.override(optimizer_parallel_min_elems=gate):
            got[gate] = _check(arrays, s)
    assert got[0] == got[10 ** 12] == want
    for a, b in zip(arrays, before):  # nothing written
        assert a.tobytes() == b.tobytes()
    # the kernel's own update makes exactly the reference's weights (bits)
    w, g, m, v, vhat = arrays
    updates.moments_update(w, g, m, v, vhat, "adam", s["c1"], s["c2"],
                           (s["k0"],) + (F(0),) * 4, s["eps"], s["amsgrad"], s["lr"],
                           s["common"])
    assert w.tobytes() == new.tobytes()


def test_check_zero_over_zero_without_epsilon():
    """``epsilon=0``: a zero gradient on zero moments is 0/0, a NaN weight."""
    arrays, s = _case(64, 1, eps=F(0.0))
    w, g, m, v, _ = arrays
    g[9] = m[9] = v[9] = 0.0
    assert _check(arrays, s) == 9 == _reference_first_bad(arrays, s)[0]


def test_check_one_thread_and_two_agree():
    arrays, s = _case(4 * UPDATE_BLOCK, 2)
    _poison(arrays, [3 * UPDATE_BLOCK + 2, 2 * UPDATE_BLOCK + 7])
    got = []
    for threads in (1, 2):
        with tuning.override(optimizer_parallel_min_elems=0):
            old = tuning.get_num_threads()
            tuning.set_num_threads(threads)
            try:
                got.append(_check(arrays, s))
            finally:
                tuning.set_num_threads(old)
    assert got == [2 * UPDATE_BLOCK + 7] * 2


def _params(seed, shapes=((3, 4), (40_000,), (5,))):
    rng = np.random.default_rng(seed)
    params = []
    for i, shape in enumerate(shapes):
        p = Parameter(rng.standard_normal(shape).astype(F), name=f"p{i}")
        p.grad = rng.standard_normal(shape).astype(F)
        params.append(p)
    return params


def _state(opt, params):
    return ([p.value.copy() for p in params],
            {k: v.copy() for k, v in opt.get_state().items()} if opt.built else {},
            opt.iterations, opt.built)


def _assert_same(a, b):
    (wa, sa, ia, ba), (wb, sb, ib, bb) = a, b
    assert [w.tobytes() for w in wa] == [w.tobytes() for w in wb]
    assert sorted(sa) == sorted(sb)
    assert all(sa[k].tobytes() == sb[k].tobytes() for k in sa)
    assert (ia, ba) == (ib, bb)


@pytest.mark.parametrize("make", [lambda: Adam(0.01), lambda: AdamW(0.01, clipnorm=1.0),
                                  lambda: Adam(0.01, amsgrad=True, global_clipnorm=0.5),
                                  lambda: Adam(0.01, clipvalue=0.1)])
def test_a_checked_step_has_the_bits_of_apply(make):
    a, b = make(), make()
    pa, pb = _params(0), _params(0)
    for step in range(3):
        for x, y in zip(pa, pb):
            x.grad = y.grad = np.random.default_rng(step).standard_normal(x.value.shape).astype(F)
        assert a.apply_or_undo(pa) is None
        b.apply(pb)
        _assert_same(_state(a, pa), _state(b, pb))
    assert a._undo is None  # no copies taken


@pytest.mark.parametrize("bad_index", [0, 1, 2])
def test_a_checked_step_that_would_break_a_weight_is_not_taken(bad_index):
    opt = Adam(0.01)
    params = _params(1)
    opt.apply_or_undo(params)  # one good step: slots exist
    before = _state(opt, params)
    params[bad_index].grad.reshape(-1)[-1] = np.nan
    params[2].grad[0] = np.inf if bad_index == 0 else params[2].grad[0]  # a later one too
    assert opt.apply_or_undo(params) is params[bad_index]
    _assert_same(_state(opt, params), before)


def test_an_untaken_first_step_leaves_no_slots():
    opt = Adam(1e38)
    params = _params(2)
    params[1].value[:] = FMAX  # every step overflows this weight
    before = [p.value.copy() for p in params]
    assert opt.apply_or_undo(params) is params[1]
    assert (opt.built, opt.iterations, opt._slots, opt._group) == (False, 0, {}, None)
    assert [p.value.tobytes() for p in params] == [b.tobytes() for b in before]


def test_a_weight_already_non_finite_without_a_gradient_is_reported():
    """As the copying undo: a weight without a gradient (skipped, with a warning) that is
    not finite makes the step undone and is named."""
    opt = Adam(0.01)
    params = _params(3)
    params[0].grad = None
    params[0].value[1, 1] = np.nan
    before = _state(opt, params)
    with pytest.warns(UserWarning, match="gradients do not exist"):
        assert opt.apply_or_undo(params) is params[0]
    _assert_same(_state(opt, params), before)


@pytest.mark.parametrize("make", [lambda: Nadam(1e38), lambda: SGD(1e38)])
def test_other_rules_and_repeated_parameters_keep_the_copying_undo(make):
    opt = make()
    params = _params(4)
    params[1].value[:] = FMAX
    before = [p.value.copy() for p in params]
    assert opt.apply_or_undo(params) is params[1]
    assert [p.value.tobytes() for p in params] == [b.tobytes() for b in before]
    adam = Adam(1e38)
    assert adam.apply_or_undo([params[0], params[1], params[0]]) is params[1]
    assert adam._undo is not None  # a parameter listed twice: the copies
    assert [p.value.tobytes() for p in params] == [b.tobytes() for b in before]
