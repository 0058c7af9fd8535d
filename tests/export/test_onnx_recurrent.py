"""Recurrent models export: SimpleRNN, LSTM, GRU, Bidirectional and TimeDistributed in
functional and Sequential models, with several outputs (``return_state``), integer ids
(``Input(dtype="int32")`` -> ``Embedding``), unknown sequence lengths (ONNX symbolic
dimensions, run at several lengths), the operators the file holds, and the errors. The
one-layer variants of each class are in tests/export/cases.py."""

from __future__ import annotations

import numpy as np
import pytest

from tests.export.cases import normal, randomize
from tests.export.common import check_export, onnx, session

import tinynet as tn
from tinynet import layers as L
from tinynet.export import to_onnx


def ids(shape: tuple, vocab: int, dtype=np.int32, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, vocab, shape).astype(dtype)


def run_lengths(model, make, lengths) -> None:
    """ONNX Runtime equals ``predict`` for inputs of each sequence length (one file)."""
    sess = session(to_onnx(model))
    names = [i.name for i in sess.get_inputs()]
    for steps in lengths:
        xs = make(steps)
        want = model.predict(xs if len(xs) > 1 else xs[0], verbose=0)
        want = want if isinstance(want, list) else [want]
        got = sess.run(None, dict(zip(names, xs)))
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"steps {steps}")


def op_types(model, opset=None) -> list[str]:
    return [n.op_type for n in to_onnx(model, opset).graph.node]


# -- several outputs --------------------------------------------------------------------------
def test_return_state_outputs_in_a_functional_model():
    """An LSTM's output, h and c; a Bidirectional GRU's two sequences (merge_mode None) and
    both directions' states: eight graph outputs, in the model's order."""
    tn.set_seed(0)
    x = tn.Input((6, 5), name="x")
    seq, h, c = L.LSTM(4, return_sequences=True, return_state=True, name="enc")(x)
    fwd, bwd, hf, hb = L.Bidirectional(L.GRU(3, return_sequences=True, return_state=True),
                                       merge_mode=None, name="bi")(seq)
    model = tn.Model(x, [seq, h, c, fwd, bwd, hf, hb, L.Dense(2, name="head")(hf)])
    randomize(model)
    check_export(model, [normal((32, 6, 5))])
    proto = to_onnx(model)
    assert [o.name for o in proto.graph.output] == [
        "enc", "enc_1", "enc_2", "bi", "bi_1", "bi_2", "bi_3", "head"]
    assert [n.op_type for n in proto.graph.node].count("GRU") == 1


@pytest.mark.parametrize("merge_mode", ["concat", "sum", "mul", "ave"])
def test_bidirectional_lstm_states_with_each_merge_mode(merge_mode):
    tn.set_seed(0)
    x = tn.Input((5, 4))
    outs = L.Bidirectional(L.LSTM(3, return_state=True, go_backwards=False),
                           merge_mode=merge_mode)(x)
    model = tn.Model(x, outs)
    randomize(model)
    assert len(model.outputs) == 5  # merged, h and c forward, h and c backward
    check_export(model, [normal((32, 5, 4))])


def test_two_operators_when_the_layers_do_not_mirror(tmp_path):
    """A backward layer of other units runs as a second operator, states included."""
    tn.set_seed(0)
    x = tn.Input((6, 5))
    outs = L.Bidirectional(L.LSTM(4, return_sequences=True, return_state=True),
                           backward_layer=L.LSTM(2, return_sequences=True, return_state=True,
                                                 go_backwards=True))(x)
    model = tn.Model(x, outs)
    randomize(model)
    check_export(model, [normal((32, 6, 5))])
    assert op_types(model).count("LSTM") == 2


def test_a_shared_recurrent_layer_stores_its_weights_once():
    tn.set_seed(0)
    a, b = tn.Input((5, 3), name="a"), tn.Input((5, 3), name="b")
    shared = L.GRU(4, name="shared")
    model = tn.Model([a, b], L.Subtract()([shared(a), shared(b)]))
    randomize(model)
    check_export(model, [normal((32, 5, 3)), normal((32, 5, 3), seed=1)])
    names = [t.name for t in to_onnx(model).graph.initializer]
    weights = [n for n in names if n.split("/")[-1][0] in "WRB"]
    assert weights == ["shared/W", "shared/R", "shared/B"]


# -- the operators ------------------------------------------------------------------------------
def test_stacked_recurrent_layers_stay_time_major():
    """Bidirectional(LSTM) -> GRU -> GRU -> Dense: one LSTM operator (bidirectional), two
    GRUs, and no transpose between them: one in, one that puts the directions next to the
    units for the concat."""
    tn.set_seed(0)
    model = tn.Sequential([tn.Input((7, 4)), L.Bidirectional(L.LSTM(5, return_sequences=True)),
                           L.GRU(3, return_sequences=True), L.GRU(3), L.Dense(2)])
    randomize(model)
    check_export(model, [normal((32, 7, 4))])
    proto = to_onnx(model)
    ops = [n.op_type for n in proto.graph.node]
    assert ops.count("LSTM") == 1 and ops.count("GRU") == 2 and ops.count("Transpose") == 2
    lstm = next(n for n in proto.graph.node if n.op_type == "LSTM")
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in lstm.attribute}
    assert attrs["direction"] == b"bidirectional" and attrs["hidden_size"] == 5
    assert attrs["activations"] == [b"Sigmoid", b"Tanh", b"Tanh"] * 2
    gru = next(n for n in proto.graph.node if n.op_type == "GRU")
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in gru.attribute}
    assert attrs["linear_before_reset"] == 1 and attrs["direction"] == b"forward"


def test_keras_gate_order_becomes_onnx_gate_order():
    """LSTM kernel blocks i, f, c, o -> ONNX's i, o, f, c (transposed); GRU z, r, h kept;
    reset_after's two biases are W's and R's, reset_after=False's one bias is W's."""
    tn.set_seed(0)
    lstm = L.LSTM(2)
    lstm.build((None, 3, 3))
    lstm.kernel.value[...] = np.repeat(np.arange(4, dtype=np.float32), 2)[None, :]
    lstm.bias.value[...] = np.repeat(np.arange(4, dtype=np.float32), 2)
    model = tn.Sequential([tn.Input((3, 3)), lstm])
    init = {t.name.split("/")[-1]: onnx.numpy_helper.to_array(t)
            for t in to_onnx(model).graph.initializer}
    np.testing.assert_array_equal(init["W"][0, :, 0], [0, 0, 3, 3, 1, 1, 2, 2])
    np.testing.assert_array_equal(init["B"][0], [0, 0, 3, 3, 1, 1, 2, 2] + [0] * 8)
    for reset_after, want in ((True, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
                              (False, [0, 1, 2, 3, 4, 5, 0, 0, 0, 0, 0, 0])):
        gru = L.GRU(2, reset_after=reset_after)
        gru.build((None, 3, 3))
        gru.bias.value[...] = np.arange(gru.bias.value.size,
                                        dtype=np.float32).reshape(gru.bias.value.shape)
        proto = to_onnx(tn.Sequential([tn.Input((3, 3)), gru]))
        init = {t.name.split("/")[-1]: onnx.numpy_helper.to_array(t)
                for t in proto.graph.initializer}
        np.testing.assert_array_equal(init["B"][0], want)
        np.testing.assert_array_equal(init["W"][0], gru.kernel.value.T)


# -- integer ids and unknown lengths ----------------------------------------------------------
def test_int32_ids_of_any_length_through_embedding_and_lstm():
    """Input((None,), dtype="int32") -> Embedding -> Bidirectional(LSTM) -> LSTM -> Dense:
    the graph input is int32 with a symbolic length, and any length runs."""
    tn.set_seed(0)
    model = tn.Sequential([tn.Input((None,), dtype="int32", name="tokens"),
                           L.Embedding(50, 6), L.Bidirectional(L.LSTM(4, return_sequences=True)),
                           L.LSTM(3), L.Dense(2, activation="softmax")])
    randomize(model)
    proto = to_onnx(model)
    (inp,) = proto.graph.input
    assert inp.type.tensor_type.elem_type == onnx.TensorProto.INT32
    assert [d.dim_param or d.dim_value for d in inp.type.tensor_type.shape.dim] == [
        "batch", "tokens_axis1"]
    check_export(model, [ids((32, 9), 50)])
    run_lengths(model, lambda t: [ids((5, t), 50, seed=t)], (1, 4, 13))


def test_int64_and_bool_inputs_of_a_functional_model():
    """An int64 Input feeds an Embedding as it is and a Dense after a cast to float32 (as
    tinynet computes); a bool Input is cast too."""
    tn.set_seed(0)
    tokens = tn.Input((None,), dtype="int64", name="tokens")
    flags = tn.Input((3,), dtype="bool", name="flags")
    counts = tn.Input((4,), dtype="int64", name="counts")
    h = L.GRU(4)(L.Embedding(30, 5)(tokens))
    joined = L.Concatenate()([h, L.Dense(2)(flags), L.Dense(2)(counts)])
    model = tn.Model([tokens, flags, counts], L.Dense(1)(joined))
    randomize(model)
    proto = to_onnx(model)
    assert [i.type.tensor_type.elem_type for i in proto.graph.input] == [
        onnx.TensorProto.INT64, onnx.TensorProto.BOOL, onnx.TensorProto.INT64]
    rng = np.random.default_rng(1)
    check_export(model, [ids((32, 6), 30, np.int64), rng.random((32, 3)) > 0.5,
                         ids((32, 4), 9, np.int64)])


def test_unknown_lengths_through_time_distributed_and_pooling():
    tn.set_seed(0)
    x = tn.Input((None, 5), name="signal")
    h = L.GRU(4, return_sequences=True, go_backwards=True)(x)
    h = L.TimeDistributed(L.Dense(3, activation="tanh"))(h)
    h = L.SimpleRNN(3, return_sequences=True)(h)
    model = tn.Model(x, L.Dense(2)(L.GlobalAveragePooling1D()(h)))
    randomize(model)
    check_export(model, [normal((32, 8, 5))])
    run_lengths(model, lambda t: [normal((3, t, 5), seed=t)], (1, 2, 11))


def test_time_distributed_with_unknown_sizes_and_a_nested_model():
    """TimeDistributed(Conv2D) over an unknown number of frames (the shape read from the
    values), TimeDistributed(LSTM) over sequences of unknown length, and a
    TimeDistributed(Sequential)."""
    tn.set_seed(0)
    frames = tn.Sequential([tn.Input((5, 5, 2)), L.Conv2D(3, 3, activation="relu"),
                            L.GlobalAveragePooling2D()], name="frame")
    video = tn.Input((None, 5, 5, 2), name="video")
    a = L.TimeDistributed(frames)(video)
    b = L.TimeDistributed(L.Conv2D(2, 3, padding="same"))(video)
    model = tn.Model(video, [L.LSTM(3)(a), b])
    randomize(model)
    run_lengths(model, lambda t: [normal((4, t, 5, 5, 2), seed=t)], (1, 3))
    text = tn.Input((3, None, 4), name="sentences")
    words = tn.Model(text, L.TimeDistributed(L.LSTM(2, return_sequences=True))(text))
    randomize(words)
    run_lengths(words, lambda t: [normal((4, 3, t, 4), seed=t)], (1, 6))


# -- errors -----------------------------------------------------------------------------------
def test_a_layer_that_needs_known_sizes_is_named(tmp_path):
    model = tn.Sequential([tn.Input((None, 4)), L.LSTM(3, return_sequences=True),
                           L.Conv1D(2, 3, name="conv")])
    with pytest.raises(ValueError) as info:
        model.export(tmp_path / "m.onnx")
    assert str(info.value) == (
        "Sequential.export: layer 'conv' (Conv1D) gets an input of shape (None, None, 3), "
        "and its export needs every size but the batch axis known; give the Input a fixed "
        "shape (docs/export.md lists the layers that take unknown sizes)")
    wrapped = tn.Sequential([tn.Input((3, None, 4)),
                             L.TimeDistributed(L.Conv1D(2, 2, name="conv"), name="td")])
    with pytest.raises(ValueError, match=r"^Sequential\.export: layer 'td/conv' \(Conv1D\) "
                                         r"gets an input of shape \(None, None, 4\)"):
        wrapped.export(tmp_path / "m.onnx")
    assert list(tmp_path.iterdir()) == []


def test_a_wrapped_custom_layer_is_named(tmp_path):
    class Twice(L.Layer):
        def forward(self, x, training=False):
            return tn.Tensor(np.asarray(x) * 2)

    model = tn.Sequential([tn.Input((4, 3)), L.TimeDistributed(Twice(name="twice"))])
    with pytest.raises(ValueError, match=r"^Sequential\.export: layer 'time_distributed/twice' "
                                         r"\(Twice\) has no ONNX export"):
        model.export(tmp_path / "m.onnx")


def test_an_activation_onnx_lacks_is_named():
    """Every activation a tinynet recurrent layer takes has an ONNX form; a layer holding
    another (as a subclass could) is refused, naming the layer and the activation."""
    tn.set_seed(0)
    model = tn.Sequential([tn.Input((3, 2)), L.GRU(2, name="gru")])
    model.layers[0].recurrent_activation = "softplus"
    with pytest.raises(ValueError) as info:
        to_onnx(model)
    assert str(info.value) == (
        "export: GRU 'gru' has activation 'softplus', which ONNX's recurrent operators do "
        "not have (they take 'tanh', 'sigmoid', 'relu', 'hard_sigmoid', 'linear')")


def test_masks_reaching_a_recurrent_layer():
    """A recurrent layer that takes the mask of Embedding(mask_zero=True) is refused (a
    mask has no exact ONNX form: sequence_lens covers only trailing padding); one that
    drops it computes what the file computes."""
    tn.set_seed(0)
    model = tn.Sequential([tn.Input((None,), dtype="int32"), L.Embedding(9, 4, mask_zero=True),
                           L.LSTM(3)])
    randomize(model)
    if L.LSTM._forward_takes_mask:
        with pytest.raises(ValueError, match=r"^export: layer 'lstm' uses the mask "
                                             r"'embedding' makes, and masks have no ONNX form"):
            to_onnx(model)
    else:
        with pytest.warns(UserWarning, match="does not support masking"):
            check_export(model, [ids((32, 6), 9)])
