"""Conv2D 3x3, "same", stride 1, no activation: forward + backward (dx, kernel, bias)."""

from __future__ import annotations

from harness import Context, GroupResult, LayerCase, run_layer_cases

NAME = "conv"
TITLE = "Conv2D 3x3 same, stride 1 (forward + backward)"

# (input shape NHWC, filters)
CASES = [((64, 28, 28, 1), 32), ((64, 14, 14, 32), 64), ((32, 32, 32, 16), 32),
         ((16, 56, 56, 32), 32)]


def _conv(x, w, b):
    import torch.nn.functional as F

    return F.conv2d(x, w, b, padding=1)  # 3x3 stride 1 "same" pads 1 on every side


def run(ctx: Context) -> GroupResult:
    from tinynet.layers import Conv2D

    cases = [LayerCase(f"{'x'.join(map(str, shape))} -> {filters}",
                       lambda filters=filters: Conv2D(filters, 3, padding="same"),
                       shape, _conv, [(filters, shape[-1], 3, 3), (filters,)])
             for shape, filters in CASES]
    result = run_layer_cases(ctx, GroupResult(NAME, TITLE), cases)
    result.notes.append("PyTorch: F.conv2d(padding=1) with x, weight and bias requiring grad.")
    return result
