"""MaxPooling2D(2) and AveragePooling2D(2): forward + backward."""

from __future__ import annotations

from harness import Context, GroupResult, LayerCase, run_layer_cases

NAME = "pool"
TITLE = "Pooling 2x2, stride 2 (forward + backward)"

SHAPES = [(64, 28, 28, 32), (32, 56, 56, 64)]


def _max(x):
    import torch.nn.functional as F

    return F.max_pool2d(x, 2)


def _avg(x):
    import torch.nn.functional as F

    return F.avg_pool2d(x, 2)


def run(ctx: Context) -> GroupResult:
    from tinynet.layers import AveragePooling2D, MaxPooling2D

    cases = []
    for cls, op in ((MaxPooling2D, _max), (AveragePooling2D, _avg)):
        for shape in SHAPES:
            cases.append(LayerCase(f"{cls.__name__} {'x'.join(map(str, shape))}",
                                   lambda cls=cls: cls(2), shape, op))
    return run_layer_cases(ctx, GroupResult(NAME, TITLE), cases)
