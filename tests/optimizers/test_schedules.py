"""Learning-rate schedules against Keras 3.15.1 (steps 0-150; Keras evaluates in float32),
as an optimizer's learning rate, and saved with a model."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tinynet as tn
from tinynet.layers import Dense, Input
from tinynet.optimizers import schedules

REFS = np.load(os.path.join(os.path.dirname(__file__), os.pardir, "data", "keras",
                            "keras_refs.npz"))
CASES = sorted(k.split("/")[0] for k in REFS.files if k.startswith("schedule_")
               and k.endswith("/case"))


def test_every_schedule_has_a_reference():
    names = {json.loads(str(REFS[f"{c}/case"]))[0] for c in CASES}
    assert names == {"ExponentialDecay", "PiecewiseConstantDecay", "InverseTimeDecay",
                     "PolynomialDecay", "CosineDecay", "CosineDecayRestarts"}


@pytest.mark.parametrize("case", CASES)
def test_schedule_matches_keras_at_steps_0_to_150(case):
    cls, kwargs = json.loads(str(REFS[f"{case}/case"]))
    schedule = getattr(schedules, cls)(**kwargs)
    ours = [schedule(step) for step in range(151)]
    # float64 here, float32 in Keras: 1 + cos(x) near x = pi loses Keras up to 2e-5
    np.testing.assert_allclose(ours, REFS[f"{case}/values"], rtol=1e-4, atol=1e-9)
    again = schedules.deserialize(json.loads(json.dumps(schedules.serialize(schedule))))
    assert [again(step) for step in range(151)] == ours


def test_a_schedule_drives_the_optimizer_and_is_saved_with_the_model(tmp_path):
    tn.set_seed(0)
    schedule = schedules.ExponentialDecay(0.1, decay_steps=2, decay_rate=0.5, staircase=True)
    model = tn.Sequential([Input((3,)), Dense(2)])
    model.compile(tn.optimizers.SGD(schedule), "mse")
    x = np.ones((4, 3), np.float32)
    assert model.optimizer.learning_rate == 0.1
    model.fit(x, np.zeros((4, 2), np.float32), batch_size=2, epochs=2, verbose=0)
    assert model.optimizer.iterations == 4 and model.optimizer.learning_rate == 0.025
    path = tmp_path / "m.safetensors"
    model.save(path)
    loaded = tn.load_model(path)
    assert isinstance(loaded.optimizer._learning_rate, schedules.ExponentialDecay)
    assert loaded.optimizer.get_config() == model.optimizer.get_config()
    assert loaded.optimizer.learning_rate == 0.025
