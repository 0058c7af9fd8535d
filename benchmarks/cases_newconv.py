"""The convolutions beside Conv2D: Conv1D, Conv2DTranspose, DepthwiseConv2D and
SeparableConv2D, forward + backward (dx, kernels, bias), against PyTorch's best layout."""

from __future__ import annotations

from harness import Context, GroupResult, LayerCase, run_layer_cases

NAME = "newconv"
TITLE = "Conv1D, Conv2DTranspose, DepthwiseConv2D, SeparableConv2D (forward + backward)"


def _conv1d_same5(x, w, b):
    import torch.nn.functional as F

    return F.conv1d(x, w, b, padding=2)


def _conv1d_causal3(x, w, b):
    import torch.nn.functional as F

    return F.conv1d(F.pad(x, (2, 0)), w, b)


def _transpose_k3s2(x, w, b):
    import torch.nn.functional as F

    return F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1)


def _transpose_k2s2(x, w, b):
    import torch.nn.functional as F

    return F.conv_transpose2d(x, w, b, stride=2)


def _depthwise3(x, w, b):
    import torch.nn.functional as F

    return F.conv2d(x, w, b, padding=1, groups=x.shape[1])


def _separable3(x, wd, wp, b):
    import torch.nn.functional as F

    return F.conv2d(F.conv2d(x, wd, None, padding=1, groups=x.shape[1]), wp, b)


def run(ctx: Context) -> GroupResult:
    from tinynet.layers import Conv1D, Conv2DTranspose, DepthwiseConv2D, SeparableConv2D

    cases = [
        LayerCase("Conv1D 64x256x32 -> 64, k5 same", lambda: Conv1D(64, 5, padding="same"),
                  (64, 256, 32), _conv1d_same5, [(64, 32, 5), (64,)], sequence=True),
        LayerCase("Conv1D 32x1024x16 -> 32, k3 causal",
                  lambda: Conv1D(32, 3, padding="causal"), (32, 1024, 16), _conv1d_causal3,
                  [(32, 16, 3), (32,)], sequence=True),
        LayerCase("Conv2DTranspose 32x14x14x32 -> 16, k3 s2 same",
                  lambda: Conv2DTranspose(16, 3, strides=2, padding="same"), (32, 14, 14, 32),
                  _transpose_k3s2, [(32, 16, 3, 3), (16,)]),
        LayerCase("Conv2DTranspose 16x28x28x32 -> 32, k2 s2",
                  lambda: Conv2DTranspose(32, 2, strides=2), (16, 28, 28, 32),
                  _transpose_k2s2, [(32, 32, 2, 2), (32,)]),
        LayerCase("DepthwiseConv2D 32x28x28x32, k3 same",
                  lambda: DepthwiseConv2D(3, padding="same"), (32, 28, 28, 32), _depthwise3,
                  [(32, 1, 3, 3), (32,)]),
        LayerCase("DepthwiseConv2D 16x56x56x64, k3 same",
                  lambda: DepthwiseConv2D(3, padding="same"), (16, 56, 56, 64), _depthwise3,
                  [(64, 1, 3, 3), (64,)]),
        LayerCase("SeparableConv2D 32x28x28x32 -> 64, k3 same",
                  lambda: SeparableConv2D(64, 3, padding="same"), (32, 28, 28, 32),
                  _separable3, [(32, 1, 3, 3), (64, 32, 1, 1), (64,)]),
    ]
    result = run_layer_cases(ctx, GroupResult(NAME, TITLE), cases)
    result.notes.append(
        "PyTorch: F.conv1d (causal: F.pad left, then conv1d) on [N, C, L] (contiguous or a "
        "view of the channels-last array), F.conv_transpose2d (Keras's 'same' as padding=1, "
        "output_padding=1), F.conv2d with groups=C (depthwise), then a 1x1 F.conv2d "
        "(separable); every input, weight and bias requiring grad.")
    return result
