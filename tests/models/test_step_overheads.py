"""The training step's bookkeeping: gradient sums of a tensor with several consumers (added
in place once the model owns the sum), and the trainable parameters a step keeps between
calls of ``train_on_batch`` (found again after any change of a layer or a weight)."""

from __future__ import annotations

import numpy as np

import tinynet as tn
from tinynet.layers import Add, Dense, Input

RNG = np.random.default_rng(3)


def _three_consumers() -> tuple[tn.Model, Dense, Dense, Dense]:
    """``h`` feeds two Dense layers and an Add with their outputs: three gradient terms."""
    i = Input((4,))
    first, left, right = Dense(4, name="first"), Dense(4, name="left"), Dense(4, name="right")
    h = first(i)
    model = tn.Model(i, Add()([h, left(h), right(h)]))
    return model, first, left, right


def test_three_gradient_terms_are_summed_in_reverse_node_order():
    model, first, left, right = _three_consumers()
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    g = RNG.standard_normal((5, 4)).astype(np.float32)
    g_before = g.copy()
    model.forward(x)
    dx = model.backward(g)
    # by hand: the Add hands g to each input; the nodes run backward in reverse order
    # (right, then left), so dL/dh = (g + right's dL/dh) + left's dL/dh in float32
    h = first.forward(x).numpy()
    left.forward(h)
    d_left = left.backward(g).numpy()
    right.forward(h)
    d_right = right.backward(g).numpy()
    total = (g + d_right) + d_left
    first.forward(x)
    expected_dx = first.backward(total).numpy()
    np.testing.assert_array_equal(np.asarray(dx), expected_dx)
    # the caller's gradient is a term of the sum, never its buffer
    np.testing.assert_array_equal(g, g_before)


def test_a_repeated_input_of_a_merge_gets_each_term():
    i = Input((3,))
    model = tn.Model(i, Add()([i, i, i]))
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    g = RNG.standard_normal((2, 3)).astype(np.float32)
    model.forward(x)
    dx = model.backward(g)
    np.testing.assert_array_equal(np.asarray(dx), (g + g) + g)
    np.testing.assert_array_equal(np.asarray(model.forward(x)), (x + x) + x)


def _model() -> tuple[tn.Model, Dense, Dense]:
    tn.set_seed(1)
    i = Input((3,))
    hidden, head = Dense(4, activation="tanh", name="hidden"), Dense(2, name="head")
    model = tn.Model(i, head(hidden(i)))
    model.compile("sgd", "mse")
    return model, hidden, head


def _step_changes(model: tn.Model, layer: Dense) -> bool:
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    y = RNG.standard_normal((4, 2)).astype(np.float32)
    before = [p.value.copy() for p in layer.parameters()]
    model.train_on_batch(x, y)
    return any(not np.array_equal(b, p.value) for b, p in zip(before, layer.parameters()))


def test_freezing_between_steps_is_seen_by_the_next_step():
    model, hidden, head = _model()
    assert _step_changes(model, hidden) and _step_changes(model, head)
    hidden.trainable = False
    assert not _step_changes(model, hidden) and _step_changes(model, head)
    hidden.trainable = True
    assert _step_changes(model, hidden)
    head.kernel.trainable = False  # one weight, directly
    kernel = head.kernel.value.copy()
    assert _step_changes(model, head)  # the bias still moves
    np.testing.assert_array_equal(head.kernel.value, kernel)


def test_a_renamed_layer_gives_its_weights_new_paths_for_the_next_step():
    model, hidden, _ = _model()
    _step_changes(model, hidden)
    hidden.name = "renamed"
    assert [p.path for p in model._step_state()[0][:2]] == ["renamed/kernel", "renamed/bias"]


def test_step_state_hands_out_a_new_list_each_call():
    model, _, _ = _model()
    params, _ = model._step_state()
    params.clear()
    assert len(model._step_state()[0]) == 4


def test_a_copied_model_runs_its_own_plan():
    import copy
    import pickle

    i = Input((3,))
    shared = Dense(3, activation="tanh", name="shared")
    model = tn.Model(i, Dense(2, name="head")(Add()([shared(i), shared(shared(i))])))
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    g = RNG.standard_normal((4, 2)).astype(np.float32)
    model.forward(x)
    model.backward(g)  # the plan of this model's objects is built
    expected = [p.grad.copy() for p in model.parameters()]
    for clone in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        clone.forward(x)
        clone.backward(g)
        for want, p in zip(expected, clone.parameters()):
            np.testing.assert_array_equal(p.grad, want)
