"""The sliding-window rule shared by convolutions and pooling (TF/Keras padding).

One axis at a time: a window spanning ``window`` input cells (``(k - 1) * dilation + 1``
for a dilated kernel, the pool size for pooling) moves by ``stride``.
"""

from __future__ import annotations

__all__ = ["window_axis", "transpose_axis"]


def window_axis(size: int | None, window: int, stride: int,
                padding: str) -> tuple[int | None, int]:
    """Output length and leading pad of one spatial axis.

    "valid": ``out = (size - window) // stride + 1``, no padding. "same":
    ``out = ceil(size / stride)``, ``pad_total = max((out - 1) * stride + window - size, 0)``
    and ``pad_before = pad_total // 2`` (the odd cell goes at the end, as in TF/Keras).

    Returns:
        ``(out, pad_before)``; ``out`` may be < 1 for "valid" when the window does not
        fit, and an unknown ``size`` (``None``) gives ``(None, 0)``.
    """
    if size is None:
        return None, 0
    if padding == "valid":
        return (size - window) // stride + 1, 0
    out = -(-size // stride)
    return out, max((out - 1) * stride + window - size, 0) // 2


def transpose_axis(size: int | None, kernel: int, stride: int, dilation: int, padding: str,
                   output_padding: int | None) -> tuple[int | None, int]:
    """Output length of one axis of a transposed convolution and the leading pad
    ``pad`` of the equivalent convolution (output -> input): input cell ``j`` gathers
    output cells ``j * stride + t * dilation - pad`` for the kernel taps ``t``."""
    k = (kernel - 1) * dilation + 1
    if padding == "valid":
        op = max(k, stride) - k if output_padding is None else output_padding
        before, after = k - 1, k - 1 + op
    else:
        total = stride + k - 2 if output_padding is None else k + k % 2 - 2 + output_padding
        before = min(total // 2 + total % 2, k - 1)
        after = total - before
    if size is None:
        return None, k - 1 - before
    return (size - 1) * stride + before + after - k + 2, k - 1 - before
