"""``Attention`` and ``AdditiveAttention`` in Keras 3 ``.keras`` files, without Keras: the
layout tinynet writes (call arguments in the functional nodes, weights at Keras's paths),
the Keras-written fixture read back (tests/data/keras/keras_attention.keras, written by
Keras 3.15.1 with tests/data/keras/generate_keras_attention.py), tinynet's file of it that
Keras read (tinynet_attention.keras), and what a Keras node may hold that tinynet refuses.
The live round trips with Keras itself are in test_keras_roundtrip.py."""

import io
import json
import os
import re
import sys
import warnings
import zipfile

import numpy as np
import pytest

import tinynet as tn
from tinynet import layers as L

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "keras")
sys.path.insert(0, DATA)
from generate_keras_attention import attention_model, data  # noqa: E402

ATOL = 1e-5


@pytest.fixture
def h5py():
    return pytest.importorskip("h5py")


def _refs() -> dict:
    return dict(np.load(os.path.join(DATA, "keras_attention_refs.npz")))


def _members(path) -> dict:
    with zipfile.ZipFile(path) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def _h5_arrays(data_: bytes, h5py) -> dict:
    out = {}

    def visit(name, obj):
        if hasattr(obj, "shape"):
            out[name] = np.asarray(obj)

    with h5py.File(io.BytesIO(data_), "r") as file:
        file.visititems(visit)
    return out


def _edit_config(source, target, edit) -> None:
    """Copies the archive ``source`` to ``target`` with ``edit(config)`` applied."""
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w") as zout:
        for info in zin.infolist():
            payload = zin.read(info)
            if info.filename == "config.json":
                config = json.loads(payload)
                edit(config)
                payload = json.dumps(config).encode()
            zout.writestr(info.filename, payload)


def _small(**calls) -> tn.Model:
    """Padded ids -> Embedding(mask_zero) -> one Attention and one AdditiveAttention."""
    tn.set_seed(0)
    ids = tn.Input((5,), dtype="int64")
    e = L.Embedding(12, 4, mask_zero=True)(ids)
    q = L.Dense(4)(e)
    a = L.Attention(use_scale=True, score_mode="concat", name="att")(
        [q, e], **calls.get("att", {}))
    b, s = L.AdditiveAttention(name="add")([q, e, q], return_attention_scores=True)
    return tn.Model(ids, [a, b, s])


def _ids():
    x = np.random.default_rng(2).integers(1, 12, (3, 5))
    x[0, 3:] = 0
    x[1, 2:] = 0
    return x


# -- tinynet writes Keras's layout -----------------------------------------------------------
def test_attention_layout_is_keras(tmp_path, h5py):
    model = _small(att={"use_causal_mask": True})
    model.save(tmp_path / "m.keras")
    members = _members(tmp_path / "m.keras")
    layers = {e["name"]: e for e in json.loads(members["config.json"])["config"]["layers"]}
    att, add = layers["att"], layers["add"]
    assert att["class_name"] == "Attention" and add["class_name"] == "AdditiveAttention"
    assert "call_options" not in att["config"] and "call_options" not in add["config"]
    assert att["build_config"] == {"input_shape": [[None, 5, 4], [None, 5, 4]]}
    assert add["build_config"] == {"input_shape": [[None, 5, 4]] * 3}
    # the inputs as one list (Keras's call(inputs, ...)), the flags as keyword arguments
    node = att["inbound_nodes"][0]
    assert [[t["config"]["keras_history"] for t in arg] for arg in node["args"]] == [
        [["dense", 0, 0], ["embedding", 0, 0]]]
    assert node["kwargs"] == {"use_causal_mask": True}
    node = add["inbound_nodes"][0]
    assert [t["config"]["keras_history"] for t in node["args"][0]] == [
        ["dense", 0, 0], ["embedding", 0, 0], ["dense", 0, 0]]
    assert node["kwargs"] == {"return_attention_scores": True}
    arrays = _h5_arrays(members["model.weights.h5"], h5py)
    assert {k: v.shape for k, v in arrays.items() if "attention" in k} == {
        "layers/attention/vars/0": (), "layers/attention/vars/1": (),
        "layers/additive_attention/vars/0": (4,)}
    assert arrays["layers/additive_attention/vars/0"].tolist() == \
        model.get_layer("add").scale.value.tolist()
    loaded = tn.models.load_model(tmp_path / "m.keras")
    assert loaded.get_layer("att").get_config()["call_options"] == {"use_causal_mask": True}
    assert loaded.get_layer("add").get_config()["call_options"] == {
        "return_attention_scores": True}
    for got, want in zip(loaded.predict(_ids(), verbose=0), model.predict(_ids(), verbose=0)):
        np.testing.assert_array_equal(got, want)


def test_attention_scores_carry_no_mask():
    # Keras hands the query's mask to the output only (its compute_mask gives one mask for
    # two outputs): a masked average of the scores would differ from Keras's plain one
    ids = tn.Input((5,), dtype="int64")
    e = L.Embedding(12, 4, mask_zero=True)(ids)
    out, scores = L.Attention()([e, e], return_attention_scores=True)
    pooled = tn.Model(ids, [L.GlobalAveragePooling1D()(scores), scores, out])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mean, s, o = pooled.predict(_ids(), verbose=0)
    np.testing.assert_allclose(mean, s.mean(axis=1), atol=1e-7)
    assert not o[0, 3:].any() and not o[1, 2:].any()  # the output is zero at padding
    layer = L.MultiHeadAttention(1, 2)
    layer(tn.Input((5, 4)), tn.Input((5, 4)), return_attention_scores=True)
    m = np.ones((2, 5), dtype=bool)
    assert layer.compute_mask(None, [m, m]) == [m, None]


# -- Keras-written files (fixtures: generate_keras_attention.py) ------------------------------
def test_keras_written_attention_reads_predicts_and_trains(h5py):
    path = os.path.join(DATA, "keras_attention.keras")
    refs = _refs()
    model = tn.models.load_model(path)
    # Keras's NotEqual and ConvertToTensor ops (the embedding's mask, handed on by each
    # attention layer) are the masks tinynet's layers hand on themselves
    assert [type(layer).__name__ for layer in model.layers[:9]] == [
        "InputLayer", "Embedding", "Dense", "Dense", "Attention", "Attention", "Attention",
        "AdditiveAttention", "AdditiveAttention"]
    options = {layer.name: layer.get_config().get("call_options")
               for layer in model.layers[4:9]}
    assert options == {"attention": None, "attention_1": {"use_causal_mask": True},
                       "attention_2": None, "additive_attention": {"use_causal_mask": True},
                       "additive_attention_1": {"return_attention_scores": True}}
    arrays = _h5_arrays(_members(path)["model.weights.h5"], h5py)
    weights = {"attention": ["scale"], "attention_1": ["scale", "concat_score_weight"],
               "attention_2": ["concat_score_weight"], "additive_attention": [],
               "additive_attention_1": ["scale"]}
    for name, params in weights.items():
        layer = model.get_layer(name)
        assert [p.name for p in layer.parameters()] == params
        for i, p in enumerate(layer.parameters()):
            np.testing.assert_array_equal(p.value, arrays[f"layers/{name}/vars/{i}"])
    assert model.get_layer("additive_attention_1").scale.value.shape == (8,)
    np.testing.assert_allclose(model.predict(refs["x"], verbose=0), refs["keras_predictions"],
                               atol=ATOL)
    assert model.optimizer.iterations == 2 and model.loss.from_logits
    history = model.fit(refs["x"], refs["y"], batch_size=8, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


def test_tinynet_written_attention_is_what_keras_read(tmp_path, h5py):
    # tinynet_attention.keras was written by tinynet (generate_keras_attention.py: the
    # Keras file loaded, one epoch) and read by Keras 3.15.1: its predictions and one more
    # Keras epoch's loss are in the refs. tinynet still writes that file.
    refs = _refs()
    tn.set_seed(0)
    model = tn.models.load_model(os.path.join(DATA, "keras_attention.keras"))
    model.fit(refs["x"], refs["y"], batch_size=8, epochs=1, shuffle=False, verbose=0)
    model.save(tmp_path / "m.keras")
    ours, checked_in = _members(tmp_path / "m.keras"), _members(
        os.path.join(DATA, "tinynet_attention.keras"))
    assert sorted(ours) == sorted(checked_in)
    assert ours["config.json"] == checked_in["config.json"]
    a, b = _h5_arrays(ours["model.weights.h5"], h5py), _h5_arrays(
        checked_in["model.weights.h5"], h5py)
    assert sorted(a) == sorted(b)
    for key in a:
        np.testing.assert_allclose(a[key], b[key], atol=1e-6, err_msg=key)
    loaded = tn.models.load_model(os.path.join(DATA, "tinynet_attention.keras"))
    np.testing.assert_allclose(loaded.predict(refs["x"], verbose=0), refs["back_predictions"],
                               atol=ATOL)
    assert loaded.optimizer.iterations == 4
    assert np.isfinite(refs["back_loss"])


def test_keras_attention_call_arguments_given_positionally(tmp_path, h5py):
    # Keras's node of att([q, v], None, None, False, True): the call's positional arguments
    model = _small()
    model.save(tmp_path / "m.keras")

    def edit(config):
        node = _node(config, "att")
        node["args"] = node["args"] + [None, None, False, True]

    _edit_config(tmp_path / "m.keras", tmp_path / "e.keras", edit)
    loaded = tn.models.load_model(tmp_path / "e.keras")
    assert loaded.get_layer("att").get_config()["call_options"] == {"use_causal_mask": True}
    causal = _small(att={"use_causal_mask": True})
    for got, want in zip(loaded.predict(_ids(), verbose=0), causal.predict(_ids(), verbose=0)):
        np.testing.assert_array_equal(got, want)


def _node(config, name):
    return next(e for e in config["config"]["layers"] if e["name"] == name)["inbound_nodes"][0]


def _tensor_mask(config):  # the ids != 0 of Keras's NotEqual op, as a mask tensor
    history = _node(config, "embedding")["args"][0]["config"]["keras_history"]
    config["config"]["layers"].insert(2, {
        "module": "keras.src.ops.numpy", "class_name": "NotEqual",
        "config": {"name": "not_equal"}, "registered_name": "NotEqual", "name": "not_equal",
        "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {
            "shape": [None, 5], "dtype": "int64", "keras_history": history}}, 0],
            "kwargs": {}}]})
    mask = {"class_name": "__keras_tensor__",
            "config": {"shape": [None, 5], "dtype": "bool",
                       "keras_history": ["not_equal", 0, 0]}}
    _node(config, "att")["kwargs"]["mask"] = [mask, mask]


def _constant_mask(config):
    ones = {"class_name": "__numpy__", "config": {"value": [[True] * 5] * 2, "dtype": "bool"}}
    _node(config, "add")["kwargs"]["mask"] = [None, ones]


@pytest.mark.parametrize("edit, message", [
    (_tensor_mask, "layer 'att' (Attention) is called with a mask tensor (mask=), which "
                   "tinynet does not take from a .keras file; tinynet's layer takes the "
                   "masks its inputs carry (e.g. from Embedding(mask_zero=True)): call it "
                   "without mask="),
    (_constant_mask, "layer 'add' (AdditiveAttention) is called with a constant mask "
                     "(mask=), which tinynet does not take from a .keras file"),
    (lambda c: _node(c, "att")["kwargs"].update(use_causal_mask="yes"),
     "layer 'att' (Attention) has call arguments {'use_causal_mask': 'yes'}; expected True "
     "or False"),
    (lambda c: _node(c, "att").update(args=[]),
     "layer 'att' (Attention) has a node without its inputs [query, value]"),
    (lambda c: _node(c, "att").update(args=_node(c, "att")["args"][0][:1]),
     "layer 'att' (Attention) is called on one tensor; expected a list [query, value] or "
     "[query, value, key]"),
    (lambda c: _node(c, "add").update(args=[_node(c, "add")["args"][0] * 2]),
     "layer 'add' (AdditiveAttention) is called on a list of 6; expected a list [query, "
     "value] or [query, value, key]"),
    (lambda c: _node(c, "add").update(args=_node(c, "add")["args"] + [None, None, True]),
     "layer 'add' (AdditiveAttention) is given its return_attention_scores twice"),
    (lambda c: _node(c, "att").update(args=_node(c, "att")["args"] + [None] * 5),
     "layer 'att' (Attention) has a node with 6 positional arguments; expected at most 5"),
    (lambda c: next(e for e in c["config"]["layers"] if e["name"] == "att")[
        "inbound_nodes"].append({**_node(c, "att"), "kwargs": {"use_causal_mask": True}}),
     "layer 'att' (Attention) is called with different call arguments in different nodes, "
     "which tinynet's layer does not keep"),
], ids=["mask-tensor", "constant-mask", "flag-type", "no-inputs", "one-tensor",
        "six-tensors", "flag-twice", "too-many-args", "nodes-differ"])
def test_keras_attention_nodes_tinynet_lacks_are_refused(tmp_path, h5py, edit, message):
    _small().save(tmp_path / "m.keras")
    _edit_config(tmp_path / "m.keras", tmp_path / "edited.keras", edit)
    with pytest.raises(ValueError, match=re.escape(message)):
        tn.models.load_model(tmp_path / "edited.keras")


def test_keras_convert_to_tensor_of_another_tensor_stays_unknown(tmp_path, h5py):
    # only a ConvertToTensor of an automatic mask (what Keras's attention layers hand on)
    # is read as the mask; one with a dtype is an op tinynet does not have
    def edit(config):
        entry = next(e for e in config["config"]["layers"] if e["name"] == "convert_to_tensor")
        entry["config"]["dtype"] = "float32"

    _edit_config(os.path.join(DATA, "keras_attention.keras"), tmp_path / "e.keras", edit)
    with pytest.raises(ValueError, match="layer 'convert_to_tensor' has class "
                                         "'ConvertToTensor', which tinynet does not have"):
        tn.models.load_model(tmp_path / "e.keras")


def test_fixture_model_is_the_keras_files_model(h5py):
    # the generator's model, built from tinynet's layers, has the Keras file's layers
    x, y = data()
    model = attention_model(L, tn)
    assert model.predict(x, verbose=0).shape == (16, 3) and set(y.tolist()) == {0, 1, 2}
    loaded = tn.models.load_model(os.path.join(DATA, "keras_attention.keras"))
    assert [type(a).__name__ for a in model.layers] == [type(b).__name__ for b in loaded.layers]
