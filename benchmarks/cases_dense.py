"""Dense (no activation): forward + backward (dx, kernel, bias)."""

from __future__ import annotations

from harness import Context, GroupResult, LayerCase, run_layer_cases

NAME = "dense"
TITLE = "Dense (forward + backward)"

# (input shape, units)
CASES = [((256, 1600), 128), ((64, 128), 10), ((1024, 512), 512)]


def _linear(x, w, b):
    import torch.nn.functional as F

    return F.linear(x, w, b)


def run(ctx: Context) -> GroupResult:
    from tinynet.layers import Dense

    cases = [LayerCase(f"{shape[0]}x{shape[1]} -> {units}", lambda units=units: Dense(units),
                       shape, _linear, [(units, shape[1]), (units,)])
             for shape, units in CASES]
    result = run_layer_cases(ctx, GroupResult(NAME, TITLE), cases)
    result.notes.append("PyTorch: F.linear with x, weight and bias requiring grad.")
    return result
