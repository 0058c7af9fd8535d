"""A short fit of the digits CNN is bitwise identical across threads and gate settings.

Each run is a fresh subprocess configured only through the environment
(``TINYNET_NUM_THREADS`` and ``TINYNET_<GATE>``), as a user would.
"""

import os
import subprocess
import sys

import pytest

from tinynet import tuning

pytest.importorskip("sklearn")

SCRIPT = r"""
import hashlib, sys
import numpy as np
import tinynet as tn
sys.path.insert(0, {examples!r})
from train_digits_cnn import build_model
from tinynet.layers import Dropout
tn.set_seed(7)
(x, y), _ = tn.datasets.load_digits()
x, y = x[:320], y[:320]
model = build_model()
model.add(Dropout(0.25))
model.add(tn.layers.Dense(10))
model.compile(optimizer="adam", loss=tn.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
h = model.fit(x, y, batch_size=32, epochs=2, verbose=0, validation_split=0.2)
digest = hashlib.sha256()
for w in model.get_weights():
    digest.update(np.ascontiguousarray(w).tobytes())
print(digest.hexdigest(), repr(h.history["loss"]))
"""


def _run(threads: int, gate: int) -> str:
    env = dict(os.environ, TINYNET_NUM_THREADS=str(threads))
    for name in tuning.defaults():
        env[f"TINYNET_{name.upper()}"] = str(gate)
    examples = os.path.join(os.path.dirname(__file__), "..", "examples")
    code = SCRIPT.format(examples=os.path.abspath(examples))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_fit_is_bitwise_identical_across_threads_and_gates():
    threads = sorted({1, min(2, tuning.max_threads())})
    results = {(t, g): _run(t, g) for t in threads for g in (0, 2**62)}
    assert len(set(results.values())) == 1, results
