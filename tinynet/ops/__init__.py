"""``tinynet.ops``: tinynet's operation layer, with ``keras.ops`` names, arguments and
semantics, and automatic differentiation.

Ops take tinynet Tensors, NumPy arrays, parameters (weights) and Python scalars, with
NumPy broadcasting, and return Tensors (``np.asarray(t)`` gives the values). Inside a
layer's ``call()`` every op on a tracked tensor is recorded, and the layer's
``backward`` replays the vector-Jacobian products in reverse: write ``call()``, get
``backward``. See ``docs/ops.md`` for every op, its gradient and any difference from Keras.

Example:
    >>> from tinynet import ops
    >>> ops.sum(ops.square(ops.arange(3)))
    Tensor(5, shape=(), dtype=int32)
"""

from __future__ import annotations

from tinynet.ops import autodiff, nn
from tinynet.ops.activations import *  # noqa: F401,F403
from tinynet.ops.activations import __all__ as _act_all
from tinynet.ops.creation import *  # noqa: F401,F403
from tinynet.ops.creation import __all__ as _creation_all
from tinynet.ops.conv import *  # noqa: F401,F403
from tinynet.ops.conv import __all__ as _conv_all
from tinynet.ops.elementwise import *  # noqa: F401,F403
from tinynet.ops.elementwise import __all__ as _ew_all
from tinynet.ops.linalg import *  # noqa: F401,F403
from tinynet.ops.linalg import __all__ as _linalg_all
from tinynet.ops.nn import *  # noqa: F401,F403
from tinynet.ops.nn import __all__ as _nn_all
from tinynet.ops.reductions import *  # noqa: F401,F403
from tinynet.ops.reductions import __all__ as _red_all
from tinynet.ops.shapes import *  # noqa: F401,F403
from tinynet.ops.shapes import __all__ as _shapes_all

__all__ = ["autodiff", "nn", *_act_all, *_conv_all, *_creation_all, *_ew_all, *_linalg_all,
           *_nn_all, *_red_all, *_shapes_all]

import sys as _sys  # noqa: E402

from tinynet import tensor as _tensor  # noqa: E402

_tensor._OPS = _sys.modules[__name__]  # Tensor's operators are these ops
