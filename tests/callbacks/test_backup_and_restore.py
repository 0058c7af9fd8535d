"""BackupAndRestore: a fit killed between epochs and run again resumes and ends with
bitwise the weights of an uninterrupted fit (subprocesses, as a real interruption);
double checkpoints, batch backups, cleanup and bad arguments."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tinynet as tn
from tinynet.callbacks import BackupAndRestore

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = r'''
import hashlib, os, sys
import numpy as np
import tinynet as tn
from tinynet import layers as L
from tinynet.tools import compile_ahead

compile_ahead.set_enabled(False)
backup, kill_after = sys.argv[1], int(sys.argv[2])
tn.set_seed(3)
rng = np.random.default_rng(0)
x = rng.standard_normal((40, 6, 6, 1)).astype(np.float32)
y = rng.integers(0, 3, 40)
model = tn.Sequential([L.Input((6, 6, 1)), L.Conv2D(4, 3, padding="same", activation="relu"),
                       L.BatchNormalization(), L.Flatten(), L.Dropout(0.3), L.Dense(3)])
model.compile(tn.optimizers.Adam(0.01), tn.losses.SparseCategoricalCrossentropy(
    from_logits=True))


class Kill(tn.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if epoch == kill_after:
            os._exit(3)


callbacks = [tn.callbacks.BackupAndRestore(backup)] if backup != "-" else []
if kill_after >= 0:
    callbacks.append(Kill())
history = model.fit(x, y, batch_size=8, epochs=5, verbose=0, callbacks=callbacks)
digest = hashlib.sha256(b"".join(w.tobytes() for w in model.get_weights())).hexdigest()
print(digest, len(history.history["loss"]))
'''


def _run(tmp_path, backup: str, kill_after: int) -> subprocess.CompletedProcess:
    script = tmp_path / "fit.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, str(script), backup, str(kill_after)], env=env,
                          capture_output=True, text=True, timeout=600)


def test_a_fit_killed_between_epochs_resumes_bitwise(tmp_path):
    straight = _run(tmp_path, "-", -1)
    assert straight.returncode == 0, straight.stderr[-2000:]
    digest, epochs = straight.stdout.split()
    assert epochs == "5"
    backup = str(tmp_path / "backup")
    killed = _run(tmp_path, backup, 1)
    assert killed.returncode == 3, killed.stderr[-2000:]
    with open(os.path.join(backup, "training_metadata.json"), encoding="utf-8") as fh:
        assert json.load(fh)["epoch"] == 1
    resumed = _run(tmp_path, backup, -1)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert resumed.stdout.split() == [digest, "3"]  # epochs 2, 3 and 4 ran
    assert not os.path.exists(backup)  # deleted at the end


def _model():
    tn.set_seed(0)
    model = tn.Sequential([tn.Input((3,)), tn.layers.Dense(2)])
    model.compile("sgd", "mse")
    return model


def test_double_checkpoint_falls_back_to_the_previous_backup(tmp_path):
    x, y = np.ones((4, 3), np.float32), np.zeros((4, 2), np.float32)
    backup = tmp_path / "b"
    model = _model()
    model.fit(x, y, epochs=3, verbose=0,
              callbacks=[BackupAndRestore(backup, double_checkpoint=True,
                                          delete_checkpoint=False)])
    assert sorted(os.listdir(backup)) == ["latest.safetensors", "latest.safetensors.bkp",
                                          "training_metadata.json",
                                          "training_metadata.json.bkp"]
    (backup / "latest.safetensors").write_bytes(b"broken")
    again = _model()
    history = again.fit(x, y, epochs=3, verbose=0,
                        callbacks=[BackupAndRestore(backup, double_checkpoint=True)])
    assert history.epoch == [2]  # the previous backup was epoch 1
    assert not backup.exists()


def test_an_unreadable_backup_is_an_error_not_a_fresh_start(tmp_path):
    backup = tmp_path / "b"
    backup.mkdir()
    (backup / "latest.safetensors").write_bytes(b"x")
    (backup / "training_metadata.json").write_text('{"epoch": 0}')
    with pytest.raises(ValueError, match="restore_training"):
        _model().fit(np.ones((4, 3)), np.zeros((4, 2)), epochs=2, verbose=0,
                     callbacks=[BackupAndRestore(backup)])


def test_batch_backups_resume_at_the_start_of_the_interrupted_epoch(tmp_path):
    x, y = np.ones((8, 3), np.float32), np.zeros((8, 2), np.float32)
    backup = tmp_path / "b"

    class Stop(tn.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if self.model.history.epoch and batch == 2:
                raise KeyboardInterrupt

    model = _model()
    with pytest.raises(KeyboardInterrupt):
        model.fit(x, y, batch_size=2, epochs=3, verbose=0,
                  callbacks=[BackupAndRestore(backup, save_freq=2), Stop()])
    with open(backup / "training_metadata.json", encoding="utf-8") as fh:
        assert json.load(fh)["epoch"] == 0  # epoch 1 was under way
    history = _model().fit(x, y, batch_size=2, epochs=3, verbose=0,
                           callbacks=[BackupAndRestore(backup)])
    assert history.epoch == [1, 2]


@pytest.mark.parametrize("kwargs, exc, text", [
    ({"backup_dir": 3}, TypeError, "backup_dir must be a non-empty str or path, got 3"),
    ({"backup_dir": "b", "save_freq": 0}, ValueError,
     "save_freq must be 'epoch', a positive int or False, got 0"),
    ({"backup_dir": "b", "save_freq": "batch"}, ValueError, "got 'batch'"),
    ({"backup_dir": "b", "double_checkpoint": 1}, TypeError, "double_checkpoint must be a bool"),
])
def test_bad_arguments(kwargs, exc, text):
    with pytest.raises(exc, match=text):
        BackupAndRestore(**kwargs)


def test_no_backup_means_a_normal_fit(tmp_path):
    x, y = np.ones((4, 3), np.float32), np.zeros((4, 2), np.float32)
    a, b = _model(), _model()
    a.fit(x, y, epochs=2, verbose=0)
    b.fit(x, y, epochs=2, verbose=0, callbacks=[BackupAndRestore(tmp_path / "none")])
    assert hashlib.sha256(a.get_weights()[0].tobytes()).digest() == \
        hashlib.sha256(b.get_weights()[0].tobytes()).digest()


def test_the_epoch_travels_in_the_model_file(tmp_path, monkeypatch):
    """A kill after the model file and before the readable JSON: the model file's own
    epoch is the one restored (one atomic write holds both)."""
    x, y = np.ones((4, 3), np.float32), np.zeros((4, 2), np.float32)
    backup = tmp_path / "b"
    straight = _model()
    straight.fit(x, y, epochs=3, verbose=0)
    model = _model()

    class Kill(tn.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                raise KeyboardInterrupt

    calls = {"n": 0}
    real_dump = json.dump

    def dump(obj, fh, **kwargs):  # the second epoch's JSON never gets written
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        real_dump(obj, fh, **kwargs)

    monkeypatch.setattr(json, "dump", dump)
    with pytest.raises(KeyboardInterrupt):
        model.fit(x, y, epochs=3, verbose=0, callbacks=[BackupAndRestore(backup), Kill()])
    monkeypatch.setattr(json, "dump", real_dump)
    with open(backup / "training_metadata.json", encoding="utf-8") as fh:
        assert json.load(fh)["epoch"] == 0  # stale
    resumed = _model()
    history = resumed.fit(x, y, epochs=3, verbose=0, callbacks=[BackupAndRestore(backup)])
    assert history.epoch == [2]
    for a, b in zip(resumed.get_weights(), straight.get_weights()):
        np.testing.assert_array_equal(a, b)
