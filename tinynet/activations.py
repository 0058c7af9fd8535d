"""``tinynet.activations``: Keras's ``keras.activations`` namespace.

``get("relu")`` returns the activation a layer runs (``None`` for ``"linear"``), ``names()``
the accepted strings, and ``relu(x, ...)``, ``sigmoid(x)``, ``softmax(x, axis=-1)``, ...
apply an activation to a tensor. They live with the other operations in
:mod:`tinynet.ops` (:mod:`tinynet.ops.keras_activations`: the lookup and the functions;
:mod:`tinynet.ops.fused`: the fused Numba passes); this module names them as Keras does.
"""

from tinynet.ops.keras_activations import *  # noqa: F401,F403
from tinynet.ops.keras_activations import __all__  # noqa: F401
