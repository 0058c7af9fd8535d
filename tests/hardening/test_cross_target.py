"""A whole fit gives the same weights whatever CPU Numba compiles the kernels for.

Numba compiles for the host CPU; another machine's kernels are simulated here by
compiling for other targets (``NUMBA_CPU_NAME``, each with its own empty kernel cache):
``haswell`` (AVX2 and FMA, no AVX-512) and ``generic`` (x86-64's baseline, no FMA unit:
explicit fused multiply-adds become library calls). Same bits means no kernel's order of
operations depends on the vector width, and no multiply and add are fused unless asked
for. The products in Dense and the tiled convolution are tinynet's own fixed-order GEMM
(:mod:`tinynet.kernels.sgemm`), not OpenBLAS's, whose inner kernels differ by CPU: so
``OPENBLAS_CORETYPE=Haswell`` or ``Sandybridge`` on this machine (each changed every
weight when the products were OpenBLAS's) must change nothing either; nor must sending
every product through the blocked GEMM instead of the small-product kernel, nor NumPy's
own loops at their baseline (``NPY_DISABLE_CPU_FEATURES``).
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1",
                                reason="compile targets need the JIT")

FIT = """
import hashlib
import numpy as np
import tinynet as tn
from tinynet.layers import (BatchNormalization, Conv2D, Dense, Dropout, Flatten,
                            GroupNormalization, Input, MaxPooling2D)
from tinynet.tools import compile_ahead
import sys
if "blocked" in sys.argv:  # every product through the blocked GEMM, none through the small one
    import tinynet.ops.arrays.matmul
    tinynet.ops.arrays.matmul.SMALL_MULADDS = 0
compile_ahead.set_enabled(False)  # one core: the test suite's other worker has the other
tn.set_seed(0)
(x, y), _ = tn.datasets.load_digits(test_size=0.25, seed=0)
x, y = x[:96], y[:96]
model = tn.Sequential([
    Input((8, 8, 1)),
    Conv2D(16, 3, padding="same", activation="relu"),
    GroupNormalization(4),
    MaxPooling2D(2),
    Conv2D(32, 3, padding="same", activation="gelu"),
    BatchNormalization(),
    Flatten(),
    Dropout(0.2),
    Dense(32, activation="gelu"),
    Dense(10),
])
model.compile(optimizer=tn.optimizers.Adam(1e-3),
              loss=tn.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x, y, batch_size=32, epochs=2, verbose=0)
print(hashlib.sha256(b"".join(w.tobytes() for w in model.get_weights())).hexdigest())
"""


def _fit(cache, cpu: str | None, *args: str, **extra: str) -> str:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), **extra)
    env.pop("NUMBA_CPU_NAME", None)
    env.pop("OPENBLAS_CORETYPE", None)
    env.update(extra)
    if cpu is not None:
        env["NUMBA_CPU_NAME"] = cpu
    out = subprocess.run([sys.executable, "-c", FIT, *args], env=env, capture_output=True,
                         text=True, timeout=1200)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()[-1]


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="haswell and generic are x86-64 targets")
def test_a_fit_gives_the_same_weights_for_other_numba_targets(tmp_path):
    host_cache = os.environ.get("NUMBA_CACHE_DIR") or tmp_path / "host"
    host = _fit(host_cache, None)
    assert _fit(host_cache, None, "blocked") == host  # small or blocked products: same bits
    assert _fit(host_cache, None, OPENBLAS_CORETYPE="Haswell") == host
    assert _fit(host_cache, None, OPENBLAS_CORETYPE="Sandybridge") == host  # AVX, no FMA
    # NumPy's own SIMD loops (float64 exp and log in the losses) at the x86-64-v2 baseline
    assert _fit(host_cache, None,
                NPY_DISABLE_CPU_FEATURES="X86_V3 X86_V4 AVX512_ICL AVX512_SPR") == host
    assert _fit(tmp_path / "haswell", "haswell") == host
    assert _fit(tmp_path / "generic", "generic") == host
