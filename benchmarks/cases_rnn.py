"""Recurrent layers: LSTM, GRU and SimpleRNN forward + backward (dx and every weight
gradient) against ``torch.nn.LSTM`` / ``nn.GRU`` / ``nn.RNN`` (batch_first, CPU, same
thread count), every step's output returned and differentiated; and issue 46's
bidirectional LSTM text classifier, one epoch of ``fit`` against the same PyTorch model
trained the same way in this process, and against Keras 3 on JAX in fresh processes
(``benchmarks/peer.py``'s text case, with ``--peer-path``)."""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
from typing import Any, Callable

import numpy as np

import peer
from harness import Context, GroupResult, Table, fmt_ms, run_comparisons

NAME = "rnn"
TITLE = "Recurrent layers (forward + backward through time) and a text classifier epoch"
TEXT_LABEL = (f"BiLSTM text classifier, 1 epoch ({peer.TEXT_SAMPLES} x {peer.TEXT_STEPS} "
              f"ids, batch 32, Adam, BCE)")
TEXT_REPS = 7  # interleaved epochs (each a few seconds)

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


def _text_case() -> tuple[Callable, dict]:
    """One epoch of the text classifier: tinynet's ``fit`` and the same loop in PyTorch
    (``nn.Embedding``, a bidirectional ``nn.LSTM`` whose final states are concatenated,
    ``nn.Linear``, sigmoid, ``binary_cross_entropy``, Adam(1e-3, eps=1e-7)), both
    shuffling each epoch."""
    import torch
    import torch.nn.functional as F

    import tinynet as tn

    tn.set_seed(0)
    x, y = peer.text_data()
    model = peer._tinynet_text()

    def tn_epoch() -> None:
        model.fit(x, y, batch_size=32, epochs=1, verbose=0)

    class TextNet(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embedding = torch.nn.Embedding(peer.TEXT_VOCAB, 64)
            self.lstm = torch.nn.LSTM(64, 64, batch_first=True, bidirectional=True)
            self.dense = torch.nn.Linear(128, 1)

        def forward(self, ids: Any) -> Any:
            _, (h, _) = self.lstm(self.embedding(ids))
            return torch.sigmoid(self.dense(torch.cat([h[0], h[1]], dim=1)))

    torch.manual_seed(0)
    net = TextNet()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, eps=1e-7)
    xt, yt = torch.from_numpy(x.astype(np.int64)), torch.from_numpy(y)
    gen = torch.Generator().manual_seed(0)

    def torch_epoch() -> float:
        total = 0.0
        order = torch.randperm(len(xt), generator=gen)
        for i in range(0, len(xt), 32):
            idx = order[i:i + 32]
            opt.zero_grad(set_to_none=True)
            loss = F.binary_cross_entropy(net(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        return total / len(xt)

    return tn_epoch, {"": torch_epoch}


def _keras_jax(ctx: Context) -> tuple[list[str], str]:
    """The text epoch in fresh tinynet and Keras-on-JAX processes (alternating, two
    rounds; medians of the epochs after the first): the table cells and a note."""
    args = argparse.Namespace(epochs=2, steps=1, cases="text", text_epochs=2 if
                              ctx.settings.quick else 4, peer_path=ctx.peer_path)
    runs: dict[str, list[float]] = {"tinynet": [], "keras-jax": []}
    error = ""
    for _ in range(1 if ctx.settings.quick else 2):
        for framework in runs:
            result = peer.run_worker(framework, args)
            if isinstance(result, dict):
                runs[framework].extend(result["text"][1:])
            else:
                error = error or f"{framework}: {result}"
    if not runs["keras-jax"] or not runs["tinynet"]:
        cell = "not installed" if "not installed" in error else error[:60]
        return [cell, ""], (f"Keras-JAX column: {error} (--peer-path names the folders "
                            f"holding keras and jax)")
    ours, theirs = statistics.median(runs["tinynet"]), statistics.median(runs["keras-jax"])
    note = (f"Keras-JAX column: tinynet and Keras 3 on JAX each in fresh processes "
            f"(benchmarks/peer.py's text case; medians of {len(runs['tinynet'])} and "
            f"{len(runs['keras-jax'])} epochs, each process's first, compiling, epoch left "
            f"out; tinynet {fmt_ms(ours)} ms there), load average "
            f"{os.getloadavg()[0]:.2f} after.")
    return [fmt_ms(theirs), f"{ours / theirs:.2f}"], note


def run(ctx: Context) -> GroupResult:
    items = [(f"{cls} b{b} t{t} f{f} u{u}", _maker(cls, b, t, f, u))
             for cls, b, t, f, u in CASES]
    table, gm = run_comparisons(ctx, "forward + backward (ratio = tinynet time / PyTorch "
                                "time; < 1 is faster)", "torch ms", items)
    result = GroupResult(NAME, TITLE, [table], [("geomean ratio", gm)])
    result.notes.append("PyTorch: nn.LSTM / nn.GRU / nn.RNN (tanh), batch_first, CPU; the "
                        "output sequence's backward fills dx and every weight gradient. "
                        "tinynet: return_sequences=True, forward(training=True) + backward.")
    epochs = dataclasses.replace(ctx, settings=dataclasses.replace(
        ctx.settings, min_reps=min(ctx.settings.min_reps, TEXT_REPS), max_reps=TEXT_REPS))
    text, text_ratio = run_comparisons(epochs, "text classifier epoch (ratio = tinynet time "
                                       "/ PyTorch time; < 1 is faster)", "torch ms",
                                       [(TEXT_LABEL, _text_case)])
    keras_cells, note = _keras_jax(ctx)
    text = Table(text.title, text.headers + ["Keras-JAX ms", "tinynet / Keras-JAX"],
                 [row + keras_cells for row in text.rows])
    result.tables.append(text)
    result.geomeans.append(("text epoch ratio", text_ratio))
    result.notes.append("Text classifier: Embedding(20000, 64) -> Bidirectional(LSTM(64)) -> "
                        "Dense(1, sigmoid), Adam(1e-3), binary cross-entropy, fit(batch_size="
                        "32, shuffle) on peer.text_data(); PyTorch: nn.Embedding, "
                        "nn.LSTM(bidirectional), final states concatenated, nn.Linear, sigmoid, "
                        "binary_cross_entropy, the same batches. Targets (issue 46): tinynet / "
                        "PyTorch <= 1.0, tinynet / Keras-JAX <= 0.8.")
    if note:
        result.notes.append(note)
    return result
