"""A transformer encoder training step: two blocks (multi-head self-attention, residuals,
layer normalization, a feed-forward block), sequence 64, embedding 64, 4 heads, batch 32,
against the same model in PyTorch (``nn.MultiheadAttention(batch_first=True)``,
``nn.LayerNorm``, ``nn.Linear``) on the CPU with the same thread count."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from harness import Context, GroupResult, run_comparisons

NAME = "transformer"
TITLE = "Transformer encoder (training step: forward, backward, Adam)"

# (blocks, batch, sequence, embedding, heads); the first is issue 46's size
CASES = [(2, 32, 64, 64, 4), (1, 32, 16, 32, 4)]
CLASSES = 10


def _tinynet_model(blocks: int, seq: int, dim: int, heads: int) -> Any:
    import tinynet as tn
    from tinynet import layers as L

    tn.set_seed(0)
    x = inputs = tn.Input((seq, dim))
    for _ in range(blocks):
        a = L.MultiHeadAttention(heads, dim // heads)(x, x)
        x = L.LayerNormalization()(L.Add()([x, a]))
        f = L.Dense(dim)(L.Dense(2 * dim, activation="relu")(x))
        x = L.LayerNormalization()(L.Add()([x, f]))
    model = tn.Model(inputs, L.Dense(CLASSES)(L.GlobalAveragePooling1D()(x)))
    model.compile(tn.optimizers.Adam(1e-3),
                  tn.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _torch_model(blocks: int, dim: int, heads: int) -> Any:
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attention = nn.MultiheadAttention(dim, heads, batch_first=True)
            self.norm1 = nn.LayerNorm(dim, eps=1e-3)
            self.ffn = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))
            self.norm2 = nn.LayerNorm(dim, eps=1e-3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            a, _ = self.attention(x, x, x, need_weights=False)
            x = self.norm1(x + a)
            return self.norm2(x + self.ffn(x))

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.Sequential(*[Block() for _ in range(blocks)])
            self.head = nn.Linear(dim, CLASSES)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.head(self.blocks(x).mean(dim=1))

    torch.manual_seed(0)
    return Encoder()


def _maker(blocks: int, batch: int, seq: int, dim: int,
           heads: int) -> Callable[[], tuple[Callable, dict]]:
    def make() -> tuple[Callable, dict[str, Callable[[], Any]]]:
        import torch

        rng = np.random.default_rng(0)
        x = rng.standard_normal((batch, seq, dim)).astype(np.float32)
        y = rng.integers(0, CLASSES, batch)
        model = _tinynet_model(blocks, seq, dim, heads)
        model.train_on_batch(x, y)

        def tn_step() -> None:
            model.train_on_batch(x, y)

        module = _torch_model(blocks, dim, heads)
        optimizer = torch.optim.Adam(module.parameters(), lr=1e-3, eps=1e-7)
        loss_fn = torch.nn.CrossEntropyLoss()
        xt, yt = torch.from_numpy(x), torch.from_numpy(y)

        def torch_step() -> None:
            optimizer.zero_grad(set_to_none=True)
            loss_fn(module(xt), yt).backward()
            optimizer.step()

        return tn_step, {"batch_first": torch_step}

    return make


def run(ctx: Context) -> GroupResult:
    items = [(f"{n} block(s) b{b} seq{s} emb{d} heads{h}", _maker(n, b, s, d, h))
             for n, b, s, d, h in CASES]
    table, gm = run_comparisons(ctx, "training step (ratio = tinynet time / PyTorch time; "
                                "< 1 is faster)", "torch ms", items)
    result = GroupResult(NAME, TITLE, [table], [("geomean ratio", gm)])
    result.notes.append("tinynet: a functional model, MultiHeadAttention(heads, emb // heads), "
                        "train_on_batch with Adam and sparse categorical cross-entropy on "
                        "logits. PyTorch: nn.MultiheadAttention(batch_first=True, "
                        "need_weights=False), nn.LayerNorm(eps=1e-3), nn.Linear, Adam, "
                        "CrossEntropyLoss; the same step.")
    return result
