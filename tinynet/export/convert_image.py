"""Converters of the layers that move pixels: ``ZeroPadding2D`` (``Pad``), ``Cropping2D``
(``Slice``), ``UpSampling2D`` (``Resize``) and ``RandomCrop``'s fixed inference window
(``Slice``, then ``Resize`` when the window is smaller than the target).

``Resize`` works on the channels-last value directly (scale 1 on the batch and channel
axes). Its coordinate rules match tinynet's: "nearest" repeats rows and columns
(``asymmetric`` coordinates, ``floor``), "bilinear" uses half-pixel centres clamped at the
edges (``half_pixel``, PyTorch's ``align_corners=False``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.export.builder import OnnxBuilder
from tinynet.export.registry import converts

__all__: list[str] = []


@converts("ZeroPadding2D")
def _zero_padding(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    (top, bottom), (left, right) = layer.padding
    return b.op("Pad", [x, b.ints([0, top, left, 0, 0, bottom, right, 0], "pads")],
                "padded", mode="constant")


def _slice(b: OnnxBuilder, x: str, starts: list[int], ends: list[int]) -> str:
    """``x[:, starts[0]:ends[0], starts[1]:ends[1]]``."""
    return b.op("Slice", [x, b.ints(starts, "starts"), b.ints(ends, "ends"),
                          b.ints([1, 2], "axes")], "cropped")


@converts("Cropping2D")
def _cropping(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    (top, bottom), (left, right) = layer.cropping
    return _slice(b, x, [top, left], [shape[1] - bottom, shape[2] - right])


def _linear_attrs() -> dict[str, Any]:
    return {"mode": "linear", "coordinate_transformation_mode": "half_pixel"}


@converts("UpSampling2D")
def _up_sampling(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    fh, fw = layer.size
    scales = b.const(np.array([1.0, fh, fw, 1.0], dtype=np.float32), "scales")
    if layer.interpolation == "nearest":
        attrs = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                 "nearest_mode": "floor"}
    else:
        attrs = _linear_attrs()
    return b.op("Resize", [x, "", scales], "upsampled", **attrs)


@converts("RandomCrop")
def _random_crop(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    """The window tinynet crops at inference (Keras's centred start, cut at the image's
    edge), resized bilinearly to ``height x width`` when it is smaller."""
    _, in_h, in_w, channels = shape
    start = layer._fixed_start(in_h, in_w)
    top, left = start["h_start"], start["w_start"]
    rows = min(in_h, top + layer.height) - top
    cols = min(in_w, left + layer.width) - left
    y = _slice(b, x, [top, left], [top + rows, left + cols])
    if (rows, cols) == (layer.height, layer.width):
        return y
    batch = b.op("Slice", [b.op("Shape", [x]), b.ints([0], "starts"), b.ints([1], "ends")],
                 "batch")
    sizes = b.op("Concat", [batch, b.ints([layer.height, layer.width, channels], "size")],
                 "sizes", axis=0)
    return b.op("Resize", [y, "", "", sizes], "resized", **_linear_attrs())
