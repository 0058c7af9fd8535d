"""Linear algebra ops: ``matmul`` (batched, broadcasting), ``dot``, ``einsum``, ``tensordot``,
``outer``, ``norm``.

float32 products run on tinynet's own fixed-order GEMM (:func:`tinynet.ops.arrays.matmul.matmul`),
so they give the same bits on any CPU and thread count, like the built-in layers; other
dtypes (float64 gradient checks, integers) use NumPy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.ops.autodiff import needed, record
from tinynet.ops.core import OpError, axes, canon, unbroadcast, unwrap
from tinynet.tensor import Tensor

__all__ = ["matmul", "dot", "einsum", "tensordot", "outer", "inner", "norm", "vdot"]

_F32 = np.dtype(np.float32)
_det_matmul: Any = None


def _gemm(a: np.ndarray, b: np.ndarray, trans_a: bool = False, trans_b: bool = False
          ) -> np.ndarray:
    """``op(a) @ op(b)`` of two 2-D arrays; float32 through the deterministic GEMM."""
    if a.dtype == _F32 and b.dtype == _F32:
        global _det_matmul
        if _det_matmul is None:  # imported on first use: `import tinynet` loads no Numba
            from tinynet.ops.arrays.matmul import matmul as det_matmul

            _det_matmul = det_matmul
        return _det_matmul(a, b, trans_a=trans_a, trans_b=trans_b)
    return (a.T if trans_a else a) @ (b.T if trans_b else b)


def _bmm(a: np.ndarray, b: np.ndarray, trans_a: bool = False, trans_b: bool = False
         ) -> np.ndarray:
    """Batched ``op(a) @ op(b)`` for ``a [..., m, k]`` and ``b [..., k, n]`` of one batch
    shape (already broadcast)."""
    if a.ndim == 2:
        return _gemm(a, b, trans_a, trans_b)
    batch = a.shape[:-2]
    a3 = a.reshape(-1, *a.shape[-2:])
    b3 = b.reshape(-1, *b.shape[-2:])
    m = a.shape[-1] if trans_a else a.shape[-2]
    n = b.shape[-2] if trans_b else b.shape[-1]
    out = np.empty((a3.shape[0], m, n), dtype=np.result_type(a, b))
    for i in range(a3.shape[0]):
        out[i] = _gemm(a3[i], b3[i], trans_a, trans_b)
    return out.reshape(*batch, m, n)


def matmul(x1: Any, x2: Any) -> Tensor:
    """Matrix product with NumPy's rules: 1-D operands are promoted (and the axis
    dropped after), leading axes broadcast. VJP: ``g @ x2^T`` and ``x1^T @ g``, summed
    over broadcast batch axes."""
    a, ta = unwrap(x1, "matmul", "x1")
    b, tb = unwrap(x2, "matmul", "x2")
    a = np.asarray(a)
    b = np.asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        raise OpError(f"matmul: x1 and x2 must have rank >= 1, got shapes {a.shape} and "
                      f"{b.shape}")
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise OpError(f"matmul: inner sizes differ: x1 {a.shape}, x2 {b.shape}")
    if a.dtype == _F32 and b.dtype == _F32:
        dt = _F32
    else:
        dt = np.result_type(a2, b2)
        if dt.kind == "f" and dt != np.float64:
            dt = _F32
    if b2.ndim == 2 and a.ndim >= 2:  # a Dense on any rank: no batch axes to broadcast
        return _matmul_flat(a2, b2, dt, ta, tb, b.ndim == 1, a, b)
    try:
        batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    except ValueError:
        raise OpError(f"matmul: batch axes do not broadcast: x1 {a.shape}, x2 {b.shape}") from None
    ab = np.ascontiguousarray(np.broadcast_to(a2, batch + a2.shape[-2:]), dtype=dt)
    bb = np.ascontiguousarray(np.broadcast_to(b2, batch + b2.shape[-2:]), dtype=dt)
    out2 = _bmm(ab, bb)
    out = out2
    if a.ndim == 1:
        out = out[..., 0, :]
    if b.ndim == 1:
        out = out[..., 0]
    out = canon(np.asarray(out, order="C"), a, b)

    def vjp(g):
        g2 = g.reshape(out2.shape).astype(dt, copy=False)
        ga = gb = None
        if needed(ta):
            ga = _bmm(np.ascontiguousarray(g2), bb, trans_b=True)
            ga = unbroadcast(ga, a2.shape).reshape(a.shape)
        if needed(tb):
            gb = _bmm(ab, np.ascontiguousarray(g2), trans_a=True)
            gb = unbroadcast(gb, b2.shape).reshape(b.shape)
        return ga, gb

    return record(out, (ta, tb), vjp, "matmul")


def _matmul_flat(a2: np.ndarray, b2: np.ndarray, dt: np.dtype, ta: Any, tb: Any,
                 vector: bool, a: np.ndarray, b: np.ndarray) -> Tensor:
    """``[..., m, k] @ [k, n]`` as one ``[(...m), k] @ [k, n]`` product (a Dense on any
    rank): no broadcast copies of ``b``, and its gradient is one product too."""
    k = a2.shape[-1]
    am = np.ascontiguousarray(a2 if a2.ndim == 2 else a2.reshape(-1, k), dtype=dt)
    bm = np.ascontiguousarray(b2, dtype=dt)
    out2 = _gemm(am, bm)
    if a2.ndim == 2 and not vector and dt == _F32:
        out = out2  # already C-contiguous float32 of the result's shape
    else:
        out = out2.reshape(*a2.shape[:-1], b2.shape[-1])
        if vector:
            out = out[..., 0]
        out = canon(np.ascontiguousarray(out), a, b)

    def vjp(g):
        gm = np.ascontiguousarray(g.reshape(out2.shape), dtype=dt)
        ga = _gemm(gm, bm, trans_b=True).reshape(a.shape) if needed(ta) else None
        gb = _gemm(am, gm, trans_a=True).reshape(b.shape) if needed(tb) else None
        return ga, gb

    return record(out, (ta, tb), vjp, "matmul")


def dot(x1: Any, x2: Any) -> Tensor:
    """``np.dot`` semantics: a scalar operand multiplies; 1-D·1-D is the inner product;
    N-D·1-D sums over the last axis; N-D·M-D contracts ``x1``'s last axis with ``x2``'s
    second-to-last."""
    a = np.asarray(unwrap(x1, "dot", "x1")[0])
    b = np.asarray(unwrap(x2, "dot", "x2")[0])
    if a.ndim == 0 or b.ndim == 0:
        from tinynet.ops.elementwise import multiply

        return multiply(x1, x2)
    if b.ndim <= 2:
        return matmul(x1, x2)
    return tensordot(x1, x2, axes=([a.ndim - 1], [b.ndim - 2]))


def vdot(x1: Any, x2: Any) -> Tensor:
    """Inner product of the flattened operands."""
    from tinynet.ops.shapes import reshape

    return matmul(reshape(x1, (-1,)), reshape(x2, (-1,)))


inner = vdot


def outer(x1: Any, x2: Any) -> Tensor:
    """Outer product of the flattened operands."""
    from tinynet.ops.shapes import reshape

    return matmul(reshape(x1, (-1, 1)), reshape(x2, (1, -1)))


def tensordot(x1: Any, x2: Any, axes: Any = 2) -> Tensor:  # noqa: A002 - Keras's name
    """Contracts ``axes`` of ``x1`` with ``axes`` of ``x2`` (an int: the last/first ``axes``
    axes), as a transpose, a reshape and one :func:`matmul`."""
    from tinynet.ops.shapes import reshape, transpose

    a = np.asarray(unwrap(x1, "tensordot", "x1")[0])
    b = np.asarray(unwrap(x2, "tensordot", "x2")[0])
    if isinstance(axes, (int, np.integer)):
        ax_a = list(range(a.ndim - int(axes), a.ndim))
        ax_b = list(range(int(axes)))
    else:
        ax_a, ax_b = ([int(axes[0])], [int(axes[1])]) if isinstance(
            axes[0], (int, np.integer)) else (list(axes[0]), list(axes[1]))
        ax_a = [i % a.ndim for i in ax_a]
        ax_b = [i % b.ndim for i in ax_b]
    if [a.shape[i] for i in ax_a] != [b.shape[i] for i in ax_b]:
        raise OpError(f"tensordot: contracted axes differ: x1 {a.shape} axes {ax_a}, "
                      f"x2 {b.shape} axes {ax_b}")
    free_a = [i for i in range(a.ndim) if i not in ax_a]
    free_b = [i for i in range(b.ndim) if i not in ax_b]
    k = int(np.prod([a.shape[i] for i in ax_a], dtype=np.int64))
    am = reshape(transpose(x1, free_a + ax_a), (-1, k))
    bm = reshape(transpose(x2, ax_b + free_b), (k, -1))
    return reshape(matmul(am, bm), [a.shape[i] for i in free_a] + [b.shape[i] for i in free_b])


def _parse(subscripts: str, ranks: list[int]) -> tuple[list[str], str]:
    """The terms and output of ``subscripts``, with each ``...`` expanded into letters the
    subscripts do not use (aligned from the right, as NumPy broadcasts them)."""
    n = len(ranks)
    spec = subscripts.replace(" ", "")
    if "->" in spec:
        ins, out = spec.split("->", 1)
    else:
        ins, out = spec, None
    terms = ins.split(",")
    if len(terms) != n:
        raise OpError(f"einsum: subscripts {subscripts!r} name {len(terms)} operands, got {n}")
    ell = ""
    if "..." in spec:
        spare = [c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                 if c not in spec]
        widths = {}
        for k, (term, r) in enumerate(zip(terms, ranks)):
            if "..." in term:
                named = len(term) - 3
                if "." in term.replace("...", "", 1) or r < named:
                    raise OpError(f"einsum: term {term!r} names {named} axes and '...', "
                                  f"but its operand has rank {r}")
                widths[k] = r - named
        ell = "".join(spare[:max(widths.values(), default=0)])
        for k, w in widths.items():
            terms[k] = terms[k].replace("...", ell[len(ell) - w:])
        if out is not None:
            if "." in out.replace("...", "", 1):
                raise OpError(f"einsum: output {out!r} has a stray '.'")
            out = out.replace("...", ell)
    if out is None:
        letters = "".join(terms)
        out = ell + "".join(sorted(c for c in set(letters)
                                   if letters.count(c) == 1 and c not in ell))
    return terms, out


def einsum(subscripts: str, *operands: Any) -> Tensor:
    """Einstein summation. ``...`` stands for the axes a term leaves unnamed; a letter
    repeated within one term takes that diagonal first (:func:`~tinynet.ops.diagonal`).
    One and two operands run as transposes, reshapes and one batched :func:`matmul` (so
    float32 uses the deterministic GEMM); more operands are contracted left to right.
    VJP: through those ops."""
    from tinynet.ops import shapes

    if not operands:
        raise OpError("einsum: needs at least one operand")
    arrays = [np.asarray(unwrap(x, "einsum", f"operands[{i}]")[0])
              for i, x in enumerate(operands)]
    terms, out_spec = _parse(subscripts, [a.ndim for a in arrays])
    for term, a in zip(terms, arrays):
        if len(term) != a.ndim:
            raise OpError(f"einsum: term {term!r} names {len(term)} axes, but its operand "
                          f"has shape {a.shape}")
    operands, terms = list(operands), list(terms)
    for k, (term, a) in enumerate(zip(terms, arrays)):
        shape = list(a.shape)
        while len(set(term)) != len(term):
            c = next(c for c in term if term.count(c) > 1)
            i = term.index(c)
            j = term.index(c, i + 1)
            if shape[i] != shape[j]:
                raise OpError(f"einsum: index {c!r} has sizes {shape[i]} and {shape[j]}")
            # np.diagonal drops axes i and j and appends the diagonal as the last axis
            operands[k] = shapes.diagonal(operands[k], 0, i, j)
            term = "".join(t for m, t in enumerate(term) if m not in (i, j)) + c
            shape = [d for m, d in enumerate(shape) if m not in (i, j)] + [shape[i]]
        terms[k] = term
    for c in set(out_spec):
        if out_spec.count(c) > 1 or not any(c in t for t in terms):
            raise OpError(f"einsum: output index {c!r} must appear once in the output and "
                          f"in an input term")
    if len(operands) == 1:
        return _einsum1(terms[0], out_spec, operands[0], None)
    x, spec = operands[0], terms[0]
    for i in range(1, len(operands)):
        rest = "".join(terms[i + 1:]) + out_spec
        keep = "".join(dict.fromkeys(c for c in spec + terms[i] if c in rest))
        x = _einsum2(spec, terms[i], keep, x, operands[i])
        spec = keep
    return _einsum1(spec, out_spec, x, None)


def _einsum1(spec: str, out_spec: str, x: Any, a: np.ndarray | None) -> Tensor:
    """A one-operand einsum (its diagonals already taken): sums the axes not in
    ``out_spec``, then transposes."""
    from tinynet.ops import reductions, shapes

    if len(set(spec)) != len(spec):
        raise OpError(f"einsum: a repeated index within one term ({spec!r}) is not supported")
    drop = tuple(i for i, c in enumerate(spec) if c not in out_spec)
    if drop:
        x = reductions.sum(x, axis=drop)
        spec = "".join(c for c in spec if c in out_spec)
    if spec != out_spec:
        x = shapes.transpose(x, [spec.index(c) for c in out_spec])
    if not isinstance(x, Tensor):
        x = shapes.reshape(x, np.shape(x))
    return x


def _einsum2(s1: str, s2: str, out: str, x1: Any, x2: Any) -> Tensor:
    """Two operands: batch axes (in both and the output), contracted axes (in both, not
    the output), free axes of each; one batched matmul."""
    from tinynet.ops import reductions, shapes

    for s in (s1, s2):
        if len(set(s)) != len(s):
            raise OpError(f"einsum: a repeated index within one term ({s!r}) is not supported")
    # sum axes that appear in one operand only and not in the output
    lone1 = tuple(i for i, c in enumerate(s1) if c not in s2 and c not in out)
    if lone1:
        x1 = reductions.sum(x1, axis=lone1)
        s1 = "".join(c for c in s1 if c in s2 or c in out)
    lone2 = tuple(i for i, c in enumerate(s2) if c not in s1 and c not in out)
    if lone2:
        x2 = reductions.sum(x2, axis=lone2)
        s2 = "".join(c for c in s2 if c in s1 or c in out)
    a = np.asarray(unwrap(x1, "einsum", "x1")[0])
    b = np.asarray(unwrap(x2, "einsum", "x2")[0])
    size = {c: n for s, arr in ((s1, a), (s2, b)) for c, n in zip(s, arr.shape)}
    for c in set(s1) & set(s2):
        if a.shape[s1.index(c)] != b.shape[s2.index(c)]:
            raise OpError(f"einsum: index {c!r} has sizes {a.shape[s1.index(c)]} and "
                          f"{b.shape[s2.index(c)]}")
    batch = [c for c in s1 if c in s2 and c in out]
    contract = [c for c in s1 if c in s2 and c not in out]
    free1 = [c for c in s1 if c not in s2]
    free2 = [c for c in s2 if c not in s1]
    n = lambda cs: int(np.prod([size[c] for c in cs], dtype=np.int64))  # noqa: E731
    am = shapes.reshape(shapes.transpose(x1, [s1.index(c) for c in batch + free1 + contract]),
                        (n(batch), n(free1), n(contract)))
    bm = shapes.reshape(shapes.transpose(x2, [s2.index(c) for c in batch + contract + free2]),
                        (n(batch), n(contract), n(free2)))
    prod = shapes.reshape(matmul(am, bm), [size[c] for c in batch + free1 + free2])
    order = batch + free1 + free2
    return shapes.transpose(prod, [order.index(c) for c in out])


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A002
    """Vector norms (``ord`` None/2, 1, ``inf``) over ``axis``; the Frobenius norm of a
    matrix when ``axis`` is ``None`` and ``x`` is 2-D."""
    from tinynet.ops import elementwise as ew, reductions as rd

    axes(axis, np.ndim(unwrap(x, "norm", "x")[0]), "norm")
    if ord in (None, 2, "fro", "euclidean"):
        return ew.sqrt(rd.sum(ew.square(x), axis=axis, keepdims=keepdims))
    if ord == 1:
        return rd.sum(ew.abs(x), axis=axis, keepdims=keepdims)
    if ord in (np.inf, float("inf")):
        return rd.max(ew.abs(x), axis=axis, keepdims=keepdims)
    raise OpError(f"norm: ord must be None, 1, 2, 'fro' or inf, got {ord!r}")
