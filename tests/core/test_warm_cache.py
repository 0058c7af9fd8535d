"""A warm cache never compiles: after a first run of a model, a later run of it compiles
no kernel, whether every gate forces the serial kernels or the parallel ones (what the
adaptive thread count picks on a busy or an idle machine).

The first run's fit completes the cache in its compile-ahead helper
(tinynet.tools.compile_ahead), which goes on after the run; a later run that meets a
kernel not yet in the cache waits for it instead of compiling. The model is the README's
main example's (tinynet's convolution, group and batch normalization, pooling, dense,
loss and Adam kernels) on random 8x8 images, so no data set is loaded; and a functional
model with a residual branch (its helper runs whole training and test steps).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers.kernel_cache import COUNT_COMPILES, wait_for_helpers
from tinynet import tuning

pytestmark = [
    pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1",
                       reason="nothing compiles without the JIT"),
    pytest.mark.skipif(sys.platform == "win32", reason="the cache's locks need fcntl"),
]

SCRIPT = COUNT_COMPILES + """
import numpy as np
import tinynet as tn
from tinynet.layers import (BatchNormalization, Conv2D, Dense, Flatten, GroupNormalization,
                            Input, MaxPooling2D)

tn.set_seed(0)
rng = np.random.default_rng(0)
x = rng.standard_normal((80, 8, 8, 1)).astype(np.float32)
y = rng.integers(0, 10, 80)
model = tn.Sequential([
    Input((8, 8, 1)), Conv2D(16, 3, padding="same", activation="relu"), GroupNormalization(4),
    MaxPooling2D(2), Conv2D(32, 3, padding="same", activation="relu"), BatchNormalization(),
    MaxPooling2D(2), Flatten(), Dense(64, activation="relu"), Dense(10)])
model.compile(optimizer=tn.optimizers.Adam(1e-3),
              loss=tn.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
model.fit(x[:60], y[:60], batch_size=32, epochs=1, verbose=0,
          validation_data=(x[60:], y[60:]))
model.predict(x, verbose=0)
print(len(compiles), " ".join(sorted(set(compiles))))
"""

FUNCTIONAL = SCRIPT[:SCRIPT.index("model = tn.Sequential")] + """
inp = Input((8, 8, 1))
h = Dense(24, activation="relu")(Flatten()(inp))
out = Dense(10)(tn.layers.Add()([h, Dense(24, activation="tanh")(h)]))
model = tn.Model(inp, out)
model.compile(optimizer=tn.optimizers.Adam(1e-3),
              loss=tn.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x[:60], y[:60], batch_size=32, epochs=1, verbose=0,
          validation_data=(x[60:], y[60:]))
model.predict(x, verbose=0)
print(len(compiles), " ".join(sorted(set(compiles))))
"""

NOTICE = "tinynet: compiling kernels for first use"


def _run(cache, gate: int | None, script: str = SCRIPT) -> tuple[int, str, str]:
    """Runs the model on ``cache`` with every gate at ``gate`` (``None``: the defaults and
    the adaptive thread count, as a user's run); returns its compiles, their kernels and
    its standard error."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TINYNET_") and k != "NUMBA_DISABLE_JIT"}
    env["NUMBA_CACHE_DIR"] = str(cache)
    if gate is not None:
        env.update({f"TINYNET_{name.upper()}": str(gate) for name in tuning.defaults()})
        env["TINYNET_ADAPTIVE_THREADS"] = "0"  # the gates decide, whatever the load
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=1800)
    assert out.returncode == 0, out.stderr
    count, _, names = out.stdout.strip().partition(" ")
    return int(count), names, out.stderr


@pytest.mark.parametrize("script", [SCRIPT, FUNCTIONAL], ids=["sequential", "functional"])
def test_a_later_run_compiles_nothing_under_serial_or_parallel_gates(tmp_path, script):
    try:
        first, _, err = _run(tmp_path, None, script)
        assert first > 0 and err.count(NOTICE) == 1, err
        for gate in (2**62, 0):  # every call serial, then every call parallel
            count, names, err = _run(tmp_path, gate, script)
            assert (count, names) == (0, ""), f"gates at {gate} compiled: {names}"
            assert NOTICE not in err, err
        assert _run(tmp_path, None, script)[0] == 0
    finally:
        wait_for_helpers(tmp_path)
