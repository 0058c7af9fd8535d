"""Recurrent layers: LSTM, GRU and SimpleRNN forward + backward (dx and every weight
gradient) against ``torch.nn.LSTM`` / ``nn.GRU`` / ``nn.RNN`` (batch_first, CPU, same
thread count), every step's output returned and differentiated."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from harness import Context, GroupResult, run_comparisons

NAME = "recurrent"
TITLE = "Recurrent layers (forward + backward through time)"

# (layer, batch, steps, features, units); the first two are issue 46's sizes
CASES = [("LSTM", 64, 100, 64, 64), ("GRU", 64, 100, 64, 64), ("SimpleRNN", 64, 100, 64, 64),
         ("LSTM", 32, 20, 32, 32), ("GRU", 32, 20, 32, 32)]
_TORCH = {"LSTM": "LSTM", "GRU": "GRU", "SimpleRNN": "RNN"}


def _maker(cls: str, batch: int, steps: int, features: int,
           units: int) -> Callable[[], tuple[Callable, dict]]:
    def make() -> tuple[Callable, dict[str, Callable[[], Any]]]:
        import torch

        from tinynet import layers

        rng = np.random.default_rng(0)
        x = rng.standard_normal((batch, steps, features)).astype(np.float32)
        g = rng.standard_normal((batch, steps, units)).astype(np.float32)
        layer = getattr(layers, cls)(units, return_sequences=True)
        layer(x)

        def tn_step() -> None:
            layer.forward(x, training=True)
            layer.backward(g)

        module = getattr(torch.nn, _TORCH[cls])(features, units, batch_first=True)
        xt = torch.from_numpy(x).requires_grad_(True)
        gt = torch.from_numpy(g)

        def torch_step() -> None:
            module.zero_grad(set_to_none=True)
            xt.grad = None
            y, _ = module(xt)
            y.backward(gt)

        return tn_step, {"batch_first": torch_step}

    return make


def run(ctx: Context) -> GroupResult:
    items = [(f"{cls} b{b} t{t} f{f} u{u}", _maker(cls, b, t, f, u))
             for cls, b, t, f, u in CASES]
    table, gm = run_comparisons(ctx, "forward + backward (ratio = tinynet time / PyTorch "
                                "time; < 1 is faster)", "torch ms", items)
    result = GroupResult(NAME, TITLE, [table], [("geomean ratio", gm)])
    result.notes.append("PyTorch: nn.LSTM / nn.GRU / nn.RNN (tanh), batch_first, CPU; the "
                        "output sequence's backward fills dx and every weight gradient. "
                        "tinynet: return_sequences=True, forward(training=True) + backward.")
    return result
