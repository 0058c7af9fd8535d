"""``Embedding``: integer ids to rows of a trainable table (Keras 3 semantics)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.layer import Layer, check_bool, check_positive_int
from tinynet.layers.node import is_symbolic
from tinynet.layers.validation import check_initializer, check_seed
from tinynet.ops.arrays import embedding as embedding_ops
from tinynet.tensor import Tensor

__all__ = ["Embedding"]

def _ids(layer: "Embedding", x: Any) -> np.ndarray:
    """``x`` as int64 ids, each in ``[0, input_dim)``; the first offender is named."""
    arr = x.data if isinstance(x, Tensor) else np.asarray(x)
    if arr.dtype.kind not in "iuf" or arr.dtype == np.float16:
        raise TypeError(f"Embedding {layer.name!r}: inputs must be integer ids, got dtype "
                        f"{arr.dtype}")
    if arr.ndim < 1:
        raise ValueError(f"Embedding {layer.name!r}: inputs must have a batch axis, got "
                         f"shape {arr.shape}")
    ids = arr.astype(np.int64)
    bad = (ids < 0) | (ids >= layer.input_dim)
    if arr.dtype.kind == "f":
        bad |= ~np.isfinite(arr) | (ids != arr)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"Embedding {layer.name!r}: ids must be integers in [0, {layer.input_dim}), got "
            f"{arr[where].item()!r} at index {where}")
    return ids


class Embedding(Layer):
    """Maps integer ids to rows of ``embeddings``, as ``keras.layers.Embedding``.

    ``y[..., :] = embeddings[id]`` for each id. Ids may arrive as integers or as
    integer-valued floats (a model's inputs are float32, exact below ``2**24``); any id
    outside ``[0, input_dim)``, or not an integer, raises a ``ValueError`` naming it and
    its index. The gradient of ``embeddings`` adds each id's output gradient into its
    row, ids in input order (a fixed order, so the bits do not depend on threads); ids
    get no gradient (the input gradient returned is zeros).

    Args:
        input_dim: Vocabulary size (positive int): ids run over ``[0, input_dim)``.
        output_dim: Size of each embedding vector (positive int).
        embeddings_initializer: ``"uniform"`` (Keras's default: uniform in
            ``[-0.05, 0.05]``) or another initializer name.
        mask_zero: Whether id 0 is padding: the output then carries the mask ``ids != 0``
            to the layers after it (``GlobalAveragePooling1D`` averages only the valid
            steps; see :mod:`tinynet.layers.mask_flow`), and ``input_dim`` should count
            the padding id.
        seed: Seed of the initializer; ``None`` draws from the global seed stream.
        name: Layer name (default ``embedding``).
        input_shape: Optional input shape without the batch axis.
        trainable: ``False`` freezes the table.

    Shape:
        Input: ``[batch, ...]`` ids. Output: ``[batch, ..., output_dim]``, float32.
        Parameters: ``embeddings`` ``[input_dim, output_dim]``.
    """

    def __init__(self, input_dim: int, output_dim: int,
                 embeddings_initializer: str = "uniform", mask_zero: bool = False, *,
                 seed: int | None = None, name: str | None = None,
                 input_shape: tuple | None = None, trainable: bool = True) -> None:
        super().__init__(name=name, trainable=trainable, input_shape=input_shape)
        self.input_dim = check_positive_int(input_dim, "input_dim", "Embedding")
        self.output_dim = check_positive_int(output_dim, "output_dim", "Embedding")
        self.embeddings_initializer = check_initializer(embeddings_initializer, "Embedding",
                                                        "embeddings_initializer")
        self.mask_zero = check_bool(mask_zero, "mask_zero", "Embedding")
        self.supports_masking = self.mask_zero
        self.seed = check_seed(seed, "Embedding")
        self.embeddings = None

    def output_shape(self, input_shape: tuple) -> tuple:
        return (*tuple(input_shape), self.output_dim)

    def build(self, input_shape: tuple) -> None:
        self.embeddings = self.add_weight("embeddings", (self.input_dim, self.output_dim),
                                          self.embeddings_initializer)
        super().build(input_shape)

    def __call__(self, x: Any, training: bool = False) -> Any:
        if not self.built and not is_symbolic(x):
            self.build((None, *np.shape(x)[1:]))  # ids stay as they are (no float32 copy)
        return super().__call__(x, training)

    def forward(self, x: Any, training: bool = False) -> Tensor:
        ids = _ids(self, x)
        if not self.built:
            self.build((None, *ids.shape[1:]))
        self._cache = ids
        return Tensor(self.embeddings.value[ids])

    def compute_mask(self, inputs: Any, previous_mask: Any = None) -> Any:
        """``ids != 0`` with ``mask_zero``, else ``None`` (Keras)."""
        if not self.mask_zero:
            return None
        return np.asarray(inputs.data if isinstance(inputs, Tensor) else inputs) != 0

    def _table_grad(self, grad_output: Any) -> None:
        ids = self._require_cache()
        g = self._check_grad(grad_output, (*ids.shape, self.output_dim))
        if not self.embeddings.trainable:
            self.embeddings.grad = None
            return
        self.embeddings.grad = embedding_ops.table_grad(ids, g, self.input_dim)  # input order

    def backward_params(self, grad_output: Any) -> None:
        self._table_grad(grad_output)

    def backward(self, grad_output: Any) -> Tensor:
        self._table_grad(grad_output)
        return Tensor(np.zeros(self._cache.shape, dtype=np.float32))

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(input_dim=self.input_dim, output_dim=self.output_dim,
                      embeddings_initializer=self.embeddings_initializer,
                      mask_zero=self.mask_zero, seed=self.seed)
        return config
