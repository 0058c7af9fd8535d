"""One kernel call for all parameters (FlatGroup): the same bits as one call each."""

import numpy as np
import pytest

from tinynet.layers.layer import Parameter
from tinynet.optimizers import SGD, Adam, AdamW, RMSprop
from tinynet.optimizers.flat import FlatGroup
from tinynet.optimizers.optimizer import GROUP_MAX_ELEMS

SHAPES = [(3, 3, 1, 16), (16,), (5, 7), (130, 130), (7,), (1,)]  # one above GROUP_MAX_ELEMS


def _params(seed: int = 0) -> list[Parameter]:
    rng = np.random.default_rng(seed)
    return [Parameter(rng.standard_normal(s).astype(np.float32), f"w{i}")
            for i, s in enumerate(SHAPES)]


def _grads(step: int) -> list[np.ndarray]:
    rng = np.random.default_rng(100 + step)
    return [rng.standard_normal(s).astype(np.float32) for s in SHAPES]


@pytest.mark.parametrize("make", [lambda: Adam(1e-2), lambda: SGD(0.1, momentum=0.9),
                                  lambda: RMSprop(1e-2, centered=True),
                                  lambda: AdamW(1e-2, global_clipnorm=1.0)],
                         ids=["adam", "sgd", "rmsprop", "adamw-global-clipnorm"])
def test_grouped_equals_one_call_per_parameter(make):
    grouped, alone = _params(), _params()
    opt = make()
    singles = [make() for _ in alone]  # each its own optimizer: the per-parameter path
    for step in range(4):
        for p, g in zip(grouped, _grads(step)):
            p.grad = g
        opt.apply(grouped)
        if isinstance(opt, AdamW):  # a global norm spans all parameters: scale by hand
            continue
        for p, g, single in zip(alone, _grads(step), singles):
            p.grad = g
            single.apply([p])
    assert isinstance(opt._group, FlatGroup)
    if not isinstance(opt, AdamW):
        for a, b in zip(grouped, alone):
            assert a.value.tobytes() == b.value.tobytes()


def test_global_clipnorm_grouped_equals_per_parameter_updates():
    # the same global scale for every parameter: grouped or not, the same bits
    grouped, alone = _params(), _params()
    opt, ref = AdamW(1e-2, global_clipnorm=1.0), AdamW(1e-2, global_clipnorm=1.0)
    ref._update_group = lambda pairs, lr, common: [  # force one call per parameter
        ref._update(p.value.reshape(-1), g, ref._slots[id(p)][1], lr, common)
        for p, g in pairs]
    for step in range(3):
        for ps in (grouped, alone):
            for p, g in zip(ps, _grads(step)):
                p.grad = g
        opt.apply(grouped)
        ref.apply(alone)
    for a, b in zip(grouped, alone):
        assert a.value.tobytes() == b.value.tobytes()


def test_a_replaced_weight_is_picked_up():
    ps = _params()
    opt = SGD(0.5)
    for p, g in zip(ps, _grads(0)):
        p.grad = g
    opt.apply(ps)
    ps[1].value = np.full(16, 2.0, dtype=np.float32)  # replaced behind the group's back
    ps[1].grad = np.ones(16, dtype=np.float32)
    opt.apply(ps)
    np.testing.assert_array_equal(ps[1].value, np.full(16, 1.5, dtype=np.float32))
    assert opt._group.matches([p for p in ps if p.value.size <= GROUP_MAX_ELEMS])
    assert ps[3].value.base is None  # the large one is updated on its own


def test_set_state_slots_are_used():
    ps = _params()
    opt = SGD(0.1, momentum=0.9)
    for p, g in zip(ps, _grads(0)):
        p.grad = g
    opt.apply(ps)
    state = opt.get_state()
    before = [p.value.copy() for p in ps]
    opt.apply(ps)
    after = [p.value.copy() for p in ps]
    for p, b in zip(ps, before):
        p.value[...] = b
    opt.set_state(state, ps)
    opt.apply(ps)
    for p, a in zip(ps, after):
        assert p.value.tobytes() == a.tobytes()


def test_weight_decay_exclusions_fall_back_to_one_call_each():
    ps = _params()
    opt = AdamW(1e-2, weight_decay=0.1)
    opt.exclude_from_weight_decay(var_list=[ps[1]])
    ref = [AdamW(1e-2, weight_decay=0.0 if i == 1 else 0.1) for i in range(len(ps))]
    alone = _params()
    for step in range(3):
        for p, g in zip(ps, _grads(step)):
            p.grad = g
        opt.apply(ps)
        for p, g, r in zip(alone, _grads(step), ref):
            p.grad = g
            r.apply([p])
    assert opt._group is None
    for a, b in zip(ps, alone):
        assert a.value.tobytes() == b.value.tobytes()


def test_a_parameter_listed_twice_is_not_grouped():
    p = _params()[1]
    p.grad = np.ones(16, dtype=np.float32)
    opt = SGD(0.5)
    opt.apply([p, p])
    half = np.float32(0.5)
    np.testing.assert_array_equal(p.value, (_params()[1].value - half) - half)  # twice
    assert opt._group is None
