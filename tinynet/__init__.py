"""tinynet: a small, fast, deterministic deep-learning framework on NumPy and Numba."""

from tinynet import tuning
from tinynet.random import set_seed
from tinynet.tensor import Tensor
from tinynet import layers

__version__ = "0.1.0"

__all__ = ["Tensor", "tuning", "set_seed", "layers", "__version__"]
