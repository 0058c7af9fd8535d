"""Optimizer steps (Adam, SGD with momentum 0.9) over the MNIST CNN's parameter set.

tinynet: ``opt.apply(params)`` on ``Parameter`` objects whose ``grad`` is set.
PyTorch: ``opt.step()`` with ``.grad`` set; the default (for-loop on CPU), ``foreach``
and ``fused`` implementations are all timed and the fastest is compared.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from harness import Context, GroupResult, run_comparisons

NAME = "optimizer"
TITLE = "Optimizer step (MNIST CNN parameter set, 225,034 weights)"

# conv1 kernel/bias, conv2 kernel/bias, dense1 kernel/bias, dense2 kernel/bias
SHAPES = [(3, 3, 1, 32), (32,), (3, 3, 32, 64), (64,), (1600, 128), (128,), (128, 10), (10,)]


def _torch_variants(make: Callable[..., Any], values: list[np.ndarray],
                    grads: list[np.ndarray], **kwargs: Any) -> dict[str, Callable[[], Any]]:
    import torch

    fns = {}
    for label, extra in (("default", {}), ("foreach", {"foreach": True}),
                         ("fused", {"fused": True})):
        params = []
        for v, g in zip(values, grads):
            p = torch.from_numpy(v.copy()).requires_grad_(True)
            p.grad = torch.from_numpy(g.copy())
            params.append(p)
        try:
            opt = make(params, **kwargs, **extra)
            opt.step()
        except (RuntimeError, TypeError, ValueError):
            continue  # that implementation is not available for CPU tensors here
        fns[label] = opt.step
    return fns


def run(ctx: Context) -> GroupResult:
    import torch

    from tinynet.layers import Parameter
    from tinynet.optimizers import SGD, Adam

    rng = np.random.default_rng(0)
    values = [rng.standard_normal(s, dtype=np.float32) * 0.1 for s in SHAPES]
    grads = [rng.standard_normal(s, dtype=np.float32) * 0.01 for s in SHAPES]

    def maker(make_tn: Callable[[], Any], make_torch: Callable[..., Any], **kwargs: Any):
        def make():
            params = []
            for i, (v, g) in enumerate(zip(values, grads)):
                p = Parameter(v.copy(), "kernel" if i % 2 == 0 else "bias")
                p.grad = g.copy()
                params.append(p)
            opt = make_tn()
            return (lambda: opt.apply(params),
                    _torch_variants(make_torch, values, grads, **kwargs))

        return make

    items = [("Adam (lr 1e-3)",
              maker(lambda: Adam(1e-3), torch.optim.Adam, lr=1e-3, eps=1e-7)),
             ("SGD (lr 0.01, momentum 0.9)",
              maker(lambda: SGD(0.01, momentum=0.9), torch.optim.SGD, lr=0.01, momentum=0.9))]
    table, gm = run_comparisons(ctx, "one step (ratio = tinynet time / PyTorch time; < 1 is "
                                "faster)", "torch ms (implementation)", items)
    result = GroupResult(NAME, TITLE, [table], [("geomean ratio", gm)])
    result.notes.append("PyTorch runs its default (per-parameter loop on CPU), foreach and "
                        "fused implementations; the fastest is compared.")
    return result
