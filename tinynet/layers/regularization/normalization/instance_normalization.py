"""``InstanceNormalization``: per sample and channel, over all positions."""

from __future__ import annotations

from tinynet.layers.regularization.normalization.group_normalization import GroupNormalization

__all__ = ["InstanceNormalization"]


class InstanceNormalization(GroupNormalization):
    """Instance normalization (Ulyanov et al., 2016): group norm with one group per channel.

    ``y = (x - mean_{n,c}) / sqrt(var_{n,c} + epsilon) * gamma_c + beta_c`` with the
    statistics over every spatial position of sample ``n``, channel ``c`` (biased
    variance). It runs on the same core as :class:`GroupNormalization`.

    Args:
        epsilon: Added to the variance; a finite number > 0.
        center: Learn ``beta``.
        scale: Learn ``gamma``.
        name, trainable, input_shape: As for every layer.

    Shape:
        Input: ``[batch, *spatial, C]`` (rank >= 2); output: same shape.
        gamma, beta: ``[C]``.
    """

    def __init__(self, epsilon: float = 1e-3, center: bool = True, scale: bool = True, *,
                 name: str | None = None, trainable: bool = True,
                 input_shape: tuple | None = None) -> None:
        # explicit keywords (not **kwargs): groups and axis are fixed, not accepted
        super().__init__(groups=-1, axis=-1, epsilon=epsilon, center=center, scale=scale,
                         name=name, trainable=trainable, input_shape=input_shape)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["groups"], config["axis"]
        return config
