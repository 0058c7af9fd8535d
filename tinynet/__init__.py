"""tinynet: a small, fast, deterministic deep-learning framework on NumPy and Numba.

Submodules load lazily (``tn.optimizers.Adam`` imports the optimizers on first use), so
``import tinynet`` stays fast and compiles nothing.
"""

from __future__ import annotations

import importlib
import os

# How long an idle OpenMP worker spins before it sleeps, set before Numba starts its
# OpenMP pool unless the user chose a wait policy or spin count (docs/tuning.md). Waking a
# sleeping worker costs a parallel region 64-230 us on this project's VMs, against 3-10 us
# for a spinning one, and a training step runs hundreds of regions: sleeping at once
# (OMP_WAIT_POLICY=PASSIVE) made a digits epoch 1.3-1.5x as long. libgomp's default spin
# (300,000 rounds) is as fast alone but 5-10x slower with two such processes on two cores;
# 10,000 rounds keeps most of the speed alone and costs 1.5x there. It goes into the
# environment, so it reaches child processes and an OpenMP runtime loaded later (a
# PyTorch imported after tinynet), not one loaded already; only libgomp reads it.
SPIN_COUNT = 10_000
if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    os.environ["GOMP_SPINCOUNT"] = str(SPIN_COUNT)

from tinynet import tuning
from tinynet.random import set_seed
from tinynet.tensor import Tensor

__version__ = "0.1.0"

_LAZY_ATTRS = {
    "Sequential": ("tinynet.models.sequential", "Sequential"),
    "load_model": ("tinynet.saving", "load_model"),
}
_LAZY_MODULES = ("layers", "optimizers", "losses", "metrics", "callbacks", "datasets",
                 "saving", "testing", "utils", "models", "math", "initializers", "activations")

__all__ = ["Tensor", "tuning", "set_seed", "__version__", "SPIN_COUNT", *_LAZY_ATTRS,
           *_LAZY_MODULES]


def __getattr__(name: str):
    if name in _LAZY_ATTRS:
        module, attr = _LAZY_ATTRS[name]
        value = getattr(importlib.import_module(module), attr)
    elif name in _LAZY_MODULES:
        value = importlib.import_module(f"tinynet.{name}")
    else:
        raise AttributeError(f"module 'tinynet' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
