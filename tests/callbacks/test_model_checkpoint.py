"""ModelCheckpoint: Keras 3 file naming, save_best_only, save_freq, weights-only files."""

import json
import re

import numpy as np
import pytest
from safetensors import safe_open

import tinynet as tn
from tinynet import saving
from tinynet.callbacks import Callback
from tinynet.layers import Dense, Input
from tinynet.callbacks import ModelCheckpoint


def _model(metrics=None):
    tn.set_seed(0)
    model = tn.Sequential([Input((3,)), Dense(4, activation="relu"), Dense(1)])
    model.compile(optimizer=tn.optimizers.SGD(0.05), loss="mse", metrics=metrics)
    return model


def _data():
    rng = np.random.default_rng(0)
    x = rng.random((16, 3), dtype=np.float32)
    return x, x.sum(axis=1, keepdims=True)


class _Feed(Callback):
    """Overwrites the epoch logs with scripted values (to drive save_best_only)."""

    def __init__(self, key, values):
        super().__init__()
        self.key, self.values = key, values

    def on_epoch_end(self, epoch, logs=None):
        logs[self.key] = self.values[epoch]


def _kind(path):
    with safe_open(str(path), framework="numpy") as f:
        return f.metadata()["kind"]


def test_saves_every_epoch_with_formatted_names(tmp_path):
    model = _model()
    x, y = _data()
    template = str(tmp_path / "sub" / "ckpt_{epoch:02d}_{loss:.2f}.safetensors")
    h = model.fit(x, y, epochs=3, verbose=0, callbacks=[ModelCheckpoint(template)])
    names = sorted(p.name for p in (tmp_path / "sub").iterdir())
    expected = sorted(f"ckpt_{e + 1:02d}_{loss:.2f}.safetensors"
                      for e, loss in enumerate(h.history["loss"]))
    assert names == expected
    last = tmp_path / "sub" / f"ckpt_03_{h.history['loss'][2]:.2f}.safetensors"
    loaded = tn.load_model(last)
    assert _kind(last) == "model"
    assert all(np.array_equal(a, b) for a, b in zip(model.get_weights(), loaded.get_weights()))


def test_save_weights_only(tmp_path):
    model = _model()
    path = tmp_path / "w.safetensors"
    model.fit(*_data(), epochs=1, verbose=0,
              callbacks=[ModelCheckpoint(str(path), save_weights_only=True)])
    assert _kind(path) == "weights"
    other = _model()
    saving.load_weights(other, path)
    assert all(np.array_equal(a, b) for a, b in zip(model.get_weights(), other.get_weights()))


def test_save_best_only_min(tmp_path, capsys):
    model = _model()
    path = tmp_path / "best_{epoch}.safetensors"
    cb = ModelCheckpoint(str(path), monitor="val_loss", save_best_only=True, verbose=1)
    model.fit(*_data(), epochs=4, verbose=0,
              callbacks=[_Feed("val_loss", [3.0, 2.0, 2.5, 1.0]), cb])
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "best_1.safetensors", "best_2.safetensors", "best_4.safetensors"]
    assert cb.best == 1.0
    out = capsys.readouterr().out
    assert "\nEpoch 1: val_loss improved from inf to 3.00000, saving model to " in out
    assert "\nEpoch 3: val_loss did not improve from 2.00000\n" in out


def test_save_best_only_auto_max_for_accuracy(tmp_path):
    model = _model()
    path = tmp_path / "best_{epoch}.safetensors"
    cb = ModelCheckpoint(str(path), monitor="val_accuracy", save_best_only=True)
    model.fit(*_data(), epochs=3, verbose=0,
              callbacks=[_Feed("val_accuracy", [0.5, 0.4, 0.7]), cb])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best_1.safetensors",
                                                           "best_3.safetensors"]
    assert cb.best == 0.7


def test_initial_value_threshold_and_mode(tmp_path):
    model = _model()
    path = tmp_path / "best.safetensors"
    cb = ModelCheckpoint(str(path), monitor="score", mode="max", save_best_only=True,
                         initial_value_threshold=0.8)
    model.fit(*_data(), epochs=2, verbose=0, callbacks=[_Feed("score", [0.5, 0.7]), cb])
    assert not path.exists()


def test_missing_monitor_warns_and_skips(tmp_path):
    model = _model()
    path = tmp_path / "best.safetensors"
    cb = ModelCheckpoint(str(path), monitor="val_loss", save_best_only=True)
    with pytest.warns(UserWarning, match="Can save best model only with val_loss available"):
        model.fit(*_data(), epochs=1, verbose=0, callbacks=[cb])
    assert not path.exists()


def test_save_freq_in_batches(tmp_path):
    model = _model()
    template = str(tmp_path / "e{epoch}_b{batch}.safetensors")
    # 16 samples / batch 4 = 4 steps per epoch; every 3 batches across 2 epochs
    model.fit(*_data(), batch_size=4, epochs=2, verbose=0,
              callbacks=[ModelCheckpoint(template, save_freq=3)])
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "e1_b3.safetensors", "e2_b2.safetensors"]


def test_resume_from_checkpoint_is_bitwise(tmp_path):
    x, y = _data()
    straight = _model()
    straight.fit(x, y, batch_size=4, epochs=3, verbose=0)
    model = _model()
    template = str(tmp_path / "ckpt_{epoch}.safetensors")
    model.fit(x, y, batch_size=4, epochs=2, verbose=0, callbacks=[ModelCheckpoint(template)])
    resumed = tn.load_model(tmp_path / "ckpt_2.safetensors")
    resumed.fit(x, y, batch_size=4, epochs=1, verbose=0)
    assert all(a.tobytes() == b.tobytes()
               for a, b in zip(straight.get_weights(), resumed.get_weights()))
    with safe_open(str(tmp_path / "ckpt_2.safetensors"), framework="numpy") as f:
        assert json.loads(f.metadata()["training_state"])["optimizer_iterations"] == 8


def test_bad_filepath_key_and_directory(tmp_path):
    model = _model()
    with pytest.raises(KeyError, match="Failed to format this callback filepath"):
        model.fit(*_data(), epochs=1, verbose=0,
                  callbacks=[ModelCheckpoint(str(tmp_path / "{nope}.safetensors"))])
    (tmp_path / "dir.safetensors").mkdir()
    with pytest.raises(IsADirectoryError, match="non-directory filepath"):
        model.fit(*_data(), epochs=1, verbose=0,
                  callbacks=[ModelCheckpoint(str(tmp_path / "dir.safetensors"))])


@pytest.mark.parametrize("kwargs, error, message", [
    ({"filepath": "model.h5"}, ValueError,
     "ModelCheckpoint: filepath must end in .safetensors or .keras (tinynet's format, or a "
     "Keras 3 archive; Keras's legacy .h5 is not supported), got 'model.h5'; e.g. "
     "'model.safetensors'"),
    ({"filepath": 3}, TypeError, "ModelCheckpoint: filepath must be a str or os.PathLike, got int"),
    ({"mode": "up"}, ValueError,
     "ModelCheckpoint: mode must be one of 'auto', 'min', 'max', got 'up'"),
    ({"save_freq": 0}, ValueError,
     "ModelCheckpoint: save_freq must be 'epoch' or a positive int, got 0"),
    ({"save_freq": "batch"}, ValueError,
     "ModelCheckpoint: save_freq must be 'epoch' or a positive int, got 'batch'"),
    ({"save_best_only": 1}, TypeError, "ModelCheckpoint: save_best_only must be a bool, got 1"),
    ({"monitor": ""}, TypeError, "ModelCheckpoint: monitor must be a non-empty str, got ''"),
    ({"verbose": -1}, ValueError, "ModelCheckpoint: verbose must be a non-negative int, got -1"),
])
def test_argument_errors(kwargs, error, message):
    kwargs = {"filepath": "m.safetensors", **kwargs}
    with pytest.raises(error, match=re.escape(message)):
        ModelCheckpoint(**kwargs)
