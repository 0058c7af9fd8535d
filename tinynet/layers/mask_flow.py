"""How a boolean mask travels with the data through a model (Keras 3's masking).

A mask marks the valid steps of a sequence: ``True`` where a step holds data, ``False``
where it is padding. A layer that makes one (``Embedding(mask_zero=True)``,
``Masking``) returns it from ``compute_mask``; a layer whose ``forward`` (or ``call``)
takes ``mask=`` receives the mask of its input (``GlobalAveragePooling1D`` averages only
the valid steps); a layer with ``supports_masking`` hands it on (``compute_mask``'s
default); any other layer drops it with a warning, as Keras does. A model runs each layer
through :func:`run` and keeps the masks of its outputs.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from tinynet.tensor import Tensor

__all__ = ["run", "as_mask", "present"]


def present(mask: Any) -> bool:
    """Whether ``mask`` holds a mask (a list of several inputs' masks counts when one
    of them is set)."""
    if isinstance(mask, (list, tuple)):
        return any(m is not None for m in mask)
    return mask is not None


def as_mask(mask: Any, shape: tuple, owner: str) -> np.ndarray:
    """``mask`` as a C-contiguous bool array of ``shape`` (the data's leading axes).

    Raises:
        ValueError: the mask's shape is not ``shape``.
    """
    m = mask.data if isinstance(mask, Tensor) else np.asarray(mask)
    if m.shape != tuple(shape):
        raise ValueError(f"{owner}: mask must have shape {tuple(shape)} (the input's shape "
                         f"without its last axis), got {m.shape}")
    return np.ascontiguousarray(m, dtype=bool)


def run(layer: Any, x: Any, mask: Any, training: bool, call: Any = None) -> tuple[Any, Any]:
    """``layer.forward`` on ``x`` whose mask is ``mask``; returns the output and its mask.
    ``call``: a ``call()`` layer's further arguments in a functional node, ``(template,
    values)``.

    The layer gets ``mask=`` when its ``forward`` (or ``call``) names it; the output's
    mask is ``layer.compute_mask(x, mask)`` for a layer that supports masking, else none
    (a mask reaching such a layer is dropped with a warning naming it, as in Keras).
    """
    has_mask = present(mask)
    more = {} if call is None else {"call": call}
    if has_mask and layer._forward_takes_mask:
        out = layer.forward(x, training=training, mask=mask, **more)
    else:
        out = layer.forward(x, training=training, **more)
    if not layer.supports_masking:
        if has_mask:
            warnings.warn(f"Layer {layer.name!r} ({type(layer).__name__}) does not support "
                          f"masking, but was passed an input with a mask attached to it; "
                          f"the layers after it will not see the mask", UserWarning,
                          stacklevel=3)
        return out, None
    return out, layer.compute_mask(x, mask if has_mask else None)
