"""tinynet: a small, fast, deterministic deep-learning framework on NumPy and Numba.

Submodules load lazily (``tn.optimizers.Adam`` imports the optimizers on first use), so
``import tinynet`` stays fast and compiles nothing in this process (on a cold kernel cache
it forks a helper that does: :mod:`tinynet.tools.compile_early`).
"""

from __future__ import annotations

import importlib

from tinynet import tuning  # first: it sets OpenMP's spin count before Numba loads
from tinynet.tuning import SPIN_COUNT
from tinynet.random import set_seed
from tinynet.tensor import Tensor
from tinynet import ops  # light (NumPy only); Tensor's operators are its ops
from tinynet.tools import compile_early as _compile_early

__version__ = "0.1.0"

_LAZY_ATTRS = {
    "Sequential": ("tinynet.models.sequential", "Sequential"),
    "Model": ("tinynet.models.functional", "Model"),
    "Input": ("tinynet.layers.input", "Input"),
    "load_model": ("tinynet.saving", "load_model"),
}
_LAZY_MODULES = ("layers", "optimizers", "losses", "metrics", "callbacks", "datasets",
                 "saving", "testing", "utils", "models", "initializers", "activations")

__all__ = ["Tensor", "tuning", "ops", "set_seed", "__version__", "SPIN_COUNT", *_LAZY_ATTRS,
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


# On a cold kernel cache only (one stat to tell): a helper process starts compiling the
# kernels every small training step runs while the program imports and loads its data.
_compile_early.start()
