"""tinynet.ops and automatic differentiation: what writing ``call()`` costs.

* A Keras-style layer ``ops.relu(ops.matmul(x, w) + b)`` (forward + automatic backward)
  against the built-in ``Dense(activation="relu")`` (hand-written backward) and against
  PyTorch (``relu(F.linear(x, w, b))`` with autograd).
* The recording overhead per op: one small ``ops.add`` inside a recording (node and VJP
  kept) and outside it, against ``torch.add`` on tensors that require grad.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from harness import Context, GroupResult, compare, fmt_ms, fmt_ratio, noise_cell, Table, geomean

NAME = "ops"
TITLE = "tinynet.ops: call() layers and the recording overhead"

# (batch, features in, units)
DENSE_CASES = [(256, 1600, 128), (64, 128, 10), (1024, 512, 512)]


def _custom_dense(units: int) -> Any:
    from tinynet import layers, ops

    class OpsDense(layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1], units), initializer="glorot_uniform")
            self.b = self.add_weight(shape=(units,), initializer="zeros")

        def call(self, inputs):
            return ops.relu(ops.matmul(inputs, self.w) + self.b)

    return OpsDense()


def _fwd_bwd(layer: Any, x: np.ndarray, g: np.ndarray) -> Callable[[], Any]:
    def run():
        layer.forward(x, training=True)
        layer.backward(g)
    return run


def _torch_dense(x: np.ndarray, g: np.ndarray, w: np.ndarray, b: np.ndarray) -> Callable:
    import torch
    import torch.nn.functional as F

    xt = torch.from_numpy(x).requires_grad_(True)
    wt = torch.from_numpy(np.ascontiguousarray(w.T)).requires_grad_(True)
    bt = torch.from_numpy(b.copy()).requires_grad_(True)
    gt = torch.from_numpy(g)

    def run():
        xt.grad = wt.grad = bt.grad = None
        torch.relu(F.linear(xt, wt, bt)).backward(gt)
    return run


def _dense_table(ctx: Context) -> tuple[Table, list[float], list[float]]:
    from tinynet.layers import Dense

    table = Table("Dense + ReLU, forward + backward: the call() layer against the built-in "
                  "layer and PyTorch (ratio < 1 is faster)",
                  ["case", "call() ms", "built-in ms", "call() / built-in", "torch ms",
                   "call() / torch", "noise"])
    vs_builtin, vs_torch = [], []
    for batch, n_in, units in DENSE_CASES:
        label = f"{batch}x{n_in} -> {units}"
        rng = np.random.default_rng(0)
        x = rng.standard_normal((batch, n_in), dtype=np.float32)
        g = rng.standard_normal((batch, units), dtype=np.float32)
        custom = _custom_dense(units)
        custom(x)
        builtin = Dense(units, activation="relu")
        builtin(x)
        builtin.set_weights([p.value for p in custom.parameters()])
        c1 = compare(_fwd_bwd(custom, x, g), {"built-in": _fwd_bwd(builtin, x, g)},
                     ctx.settings)
        c2 = compare(_fwd_bwd(custom, x, g),
                     {"autograd": _torch_dense(x, g, custom.w.value, custom.b.value)},
                     ctx.settings)
        vs_builtin.append(c1.ratio)
        vs_torch.append(c2.ratio)
        ctx.progress(f"  {label}: call()/built-in {c1.ratio:.2f}, call()/torch {c2.ratio:.2f}")
        table.rows.append([label, fmt_ms(c1.tinynet.median_s),
                           fmt_ms(c1.torch["built-in"].median_s), fmt_ratio(c1.ratio),
                           fmt_ms(c2.torch["autograd"].median_s), fmt_ratio(c2.ratio),
                           noise_cell(c1, c2)])
    return table, vs_builtin, vs_torch


def _overhead_table(ctx: Context) -> tuple[Table, float]:
    import torch

    from tinynet import ops
    from tinynet.ops.autodiff import Graph

    a = np.ones((8, 8), np.float32)
    b = np.ones((8,), np.float32)
    graph = Graph()
    with graph:
        leaf = graph.leaf(a)

    def recorded():
        with graph:
            ops.add(leaf, b)

    def plain():
        ops.add(a, b)

    at = torch.ones((8, 8), requires_grad=True)
    bt = torch.ones((8,))

    def torch_recorded():
        torch.add(at, bt)

    table = Table("one ops.add of [8, 8] + [8] (ratio = tinynet time / PyTorch time)",
                  ["case", "tinynet us", "torch us (autograd)", "ratio", "noise"])
    ratios = []
    for label, fn in (("recorded (inside call())", recorded), ("not recorded", plain)):
        comp = compare(fn, {"autograd": torch_recorded}, ctx.settings)
        ratios.append(comp.ratio)
        table.rows.append([label, f"{comp.tinynet.median_s * 1e6:.1f}",
                           f"{comp.torch['autograd'].median_s * 1e6:.1f}",
                           fmt_ratio(comp.ratio), noise_cell(comp)])
        ctx.progress(f"  ops.add {label}: {comp.tinynet.median_s * 1e6:.1f} us, ratio "
                     f"{comp.ratio:.2f}")
    return table, ratios[0]


# (samples, features, hidden units, batch size) of the training comparison
FIT_CASES = [(1024, 64, 128, 32), (2048, 784, 256, 64)]


def _fit_fn(make_hidden: Callable[[], Any], n: int, features: int, batch: int) -> Callable:
    import tinynet as tn

    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, features), dtype=np.float32)
    y = rng.integers(0, 10, n)
    tn.set_seed(0)
    model = tn.Sequential([tn.layers.Input((features,)), make_hidden(), tn.layers.Dense(10)])
    model.compile("adam", tn.losses.SparseCategoricalCrossentropy(from_logits=True))
    return lambda: model.fit(x, y, batch_size=batch, epochs=1, verbose=0)


def _fit_table(ctx: Context) -> tuple[Table, list[float]]:
    from tinynet.layers import Dense

    table = Table("one training epoch of an MLP (hidden layer -> Dense(10), Adam): the "
                  "hidden layer as a call() layer against Dense(activation='relu')",
                  ["case", "call() ms", "built-in ms", "call() / built-in", "noise"])
    ratios = []
    for n, features, units, batch in FIT_CASES:
        label = f"{n} x {features} -> {units}, batch {batch}"
        comp = compare(_fit_fn(lambda: _custom_dense(units), n, features, batch),
                       {"built-in": _fit_fn(lambda: Dense(units, activation="relu"), n,
                                            features, batch)}, ctx.settings)
        ratios.append(comp.ratio)
        ctx.progress(f"  fit {label}: call()/built-in {comp.ratio:.2f}")
        table.rows.append([label, fmt_ms(comp.tinynet.median_s),
                           fmt_ms(comp.torch["built-in"].median_s), fmt_ratio(comp.ratio),
                           noise_cell(comp)])
    return table, ratios


def run(ctx: Context) -> GroupResult:
    dense, vs_builtin, vs_torch = _dense_table(ctx)
    fit, vs_builtin_fit = _fit_table(ctx)
    overhead, per_op = _overhead_table(ctx)
    result = GroupResult(NAME, TITLE, [dense, fit, overhead],
                         [("geomean call() / built-in Dense (fwd+bwd)", geomean(vs_builtin)),
                          ("geomean call() / built-in Dense (training)",
                           geomean(vs_builtin_fit)),
                          ("geomean call() / PyTorch", geomean(vs_torch)),
                          ("recorded ops.add / torch.add", per_op)])
    result.notes.append("The call() layer and the built-in Dense hold the same weights; both "
                        "products run on tinynet's own GEMM. PyTorch: autograd through "
                        "relu(F.linear(x, w, b)) with x, w and b requiring grad.")
    return result
