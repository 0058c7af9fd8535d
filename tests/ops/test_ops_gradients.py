"""Finite-difference check of every differentiable ``tinynet.ops`` op's VJP, in float64.

Each case calls one op on small float64 arrays (ops keep float64 when given float64), and
compares the gradient that :func:`~tinynet.ops.autodiff.backprop` gives for a random
cotangent ``cot`` with central differences of ``sum(out * cot)`` (step 1e-6) for every
entry of every float input. Inputs keep away from the points where an op is not
differentiable: no ties for max/min/maximum/minimum, nothing near 0 for relu/abs/sign,
clip inputs off the bounds, positive bases for log/sqrt/power, fractional parts away from
the jumps of floor/round/mod.

``test_every_differentiable_op_has_a_case`` keeps the table complete: a new op in
``tinynet.ops.__all__`` needs a case here, or a place in :data:`NOT_DIFFERENTIABLE` (with
the reason), or in :data:`TESTED_ELSEWHERE`.
"""

from __future__ import annotations

import importlib
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest

from tinynet import ops
from tinynet.ops.autodiff import Graph, backprop
from tinynet.tensor import Tensor

EPS = 1e-6
RTOL = 1e-6
ATOL = 1e-8

# ----------------------------------------------------------------------------------------
# input generators: rng -> float64 array


def normal(*shape, scale=1.0):
    return lambda rng: rng.standard_normal(shape) * scale


def uniform(lo, hi, *shape):
    return lambda rng: rng.uniform(lo, hi, shape)


def pos(*shape, lo=0.5, hi=2.0):
    """Positive values (log, sqrt, power bases, divisors)."""
    return uniform(lo, hi, *shape)


def offzero(*shape, lo=0.2, hi=2.0):
    """Magnitudes in [lo, hi) with a random sign: away from 0 (relu, abs, sign, prod)."""
    def gen(rng):
        return rng.uniform(lo, hi, shape) * np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    return gen


def distinct(*shape, spread=1.0):
    """Values whose pairwise gaps are at least 0.02 * spread (no ties: max, min)."""
    def gen(rng):
        n = int(np.prod(shape)) if shape else 1
        v = (rng.permutation(n) - (n - 1) / 2.0) * 0.1 + rng.uniform(0.02, 0.08, n)
        return v.reshape(shape) * spread
    return gen


def grid(offset, *shape):
    """Values 0.2 k + offset: grids with offsets 0.05 and 0.15 never tie (maximum)."""
    return lambda rng: rng.integers(-10, 10, shape) * 0.2 + offset


def off(points, lo, hi, *shape, margin=0.1):
    """Uniform in [lo, hi) at least ``margin`` away from each of ``points`` (kinks)."""
    def gen(rng):
        v = rng.uniform(lo, hi, shape)
        for _ in range(1000):
            bad = np.zeros(shape, bool)
            for p in points:
                bad |= np.abs(v - p) < margin
            if not bad.any():
                return v
            v = np.where(bad, rng.uniform(lo, hi, shape), v)
        raise RuntimeError("off: no luck")
    return gen


def fractional(*shape, lo=0.15, hi=0.85, span=3):
    """Integers in [-span, span) plus a fraction in [lo, hi): away from floor/ceil/round
    jumps (integers and half-integers when lo > 0.05 and the fraction avoids 0.5)."""
    def gen(rng):
        frac = rng.uniform(lo, hi, shape)
        frac = np.where(np.abs(frac - 0.5) < 0.1, frac + 0.2, frac)
        return rng.integers(-span, span, shape) + frac
    return gen


def fixed(values):
    return lambda rng: np.array(values, dtype=np.float64)


def probs(*shape, axis=-1):
    """Rows (along ``axis``) of positive values summing to one."""
    def gen(rng):
        e = np.exp(rng.standard_normal(shape))
        return e / e.sum(axis=axis, keepdims=True)
    return gen


def onehot(*shape):
    def gen(rng):
        return np.eye(shape[-1])[rng.integers(0, shape[-1], shape[:-1])]
    return gen


# ----------------------------------------------------------------------------------------
# the case table


@dataclass
class Case:
    id: str
    op: str
    ins: tuple
    call: Callable | None = None
    kwargs: dict = field(default_factory=dict)

    def run(self, *xs: Any) -> Any:
        fn = getattr(ops, self.op)
        if self.call is not None:
            return self.call(fn, *xs)
        return fn(*xs, **self.kwargs)


CASES: list[Case] = []


def C(cid: str, op: str, *ins: Callable, call: Callable | None = None, **kwargs: Any) -> None:
    assert all(c.id != cid for c in CASES), cid
    CASES.append(Case(cid, op, ins, call, kwargs))


X23, X3, X234 = (2, 3), (3,), (2, 3, 4)

# -- arithmetic and broadcasting ----------------------------------------------------------
for _op in ("add", "subtract", "multiply"):
    C(f"{_op}_2x3_2x3", _op, normal(*X23), normal(*X23))
    C(f"{_op}_2x3_3", _op, normal(*X23), normal(*X3))
    C(f"{_op}_3_2x3", _op, normal(*X3), normal(*X23))
    C(f"{_op}_2x1_1x3", _op, normal(2, 1), normal(1, 3))
    C(f"{_op}_2x3x4_3x1", _op, normal(*X234), normal(3, 1))
    C(f"{_op}_2x3_0d", _op, normal(*X23), normal())
    C(f"{_op}_2x3_scalar", _op, normal(*X23), call=lambda f, x: f(x, 2.5))
    C(f"{_op}_scalar_2x3", _op, normal(*X23), call=lambda f, x: f(-1.5, x))
    C(f"{_op}_2x3_int_scalar", _op, normal(*X23), call=lambda f, x: f(x, 3))
for _op in ("divide", "true_divide"):
    C(f"{_op}_2x3_2x3", _op, normal(*X23), offzero(*X23, lo=0.5))
    C(f"{_op}_2x3_3", _op, normal(*X23), offzero(*X3, lo=0.5))
    C(f"{_op}_2x1_1x3", _op, normal(2, 1), offzero(1, 3, lo=0.5))
    C(f"{_op}_2x3_scalar", _op, normal(*X23), call=lambda f, x: f(x, 4.0))
    C(f"{_op}_scalar_2x3", _op, offzero(*X23, lo=0.5), call=lambda f, x: f(1.0, x))


#: mod's divisor; the dividend is q * divisor with q's fractional part in [0.2, 0.8):
#: away from mod's jumps
_MOD_X2 = np.array([[1.7, -2.1, 2.3], [1.9, 1.6, -2.4]])
C("mod_2x3_2x3", "mod",
  lambda rng: (rng.integers(-2, 3, X23) + rng.uniform(0.2, 0.8, X23)) * _MOD_X2,
  fixed(_MOD_X2))
C("mod_2x3_scalar", "mod", uniform(0.2, 1.8, *X23), call=lambda f, x: f(x + 4.0, 2.0))
C("negative_2x3", "negative", normal(*X23))
C("abs_2x3", "abs", offzero(*X23))
C("absolute_2x3x4", "absolute", offzero(*X234))
C("square_2x3", "square", normal(*X23))
C("sqrt_2x3", "sqrt", pos(*X23))
C("rsqrt_2x3", "rsqrt", pos(*X23))
C("reciprocal_2x3", "reciprocal", offzero(*X23, lo=0.5))
C("exp_2x3", "exp", normal(*X23))
C("expm1_2x3", "expm1", normal(*X23))
C("log_2x3", "log", pos(*X23))
C("log1p_2x3", "log1p", uniform(-0.5, 2.0, *X23))
C("log2_2x3", "log2", pos(*X23))
C("log10_2x3", "log10", pos(*X23))
C("power_2x3_2x3", "power", pos(*X23), normal(*X23))
C("power_2x3_3", "power", pos(*X23), normal(*X3))
C("power_2x3_float_scalar", "power", pos(*X23), call=lambda f, x: f(x, 2.5))
C("power_negbase_int_scalar", "power", offzero(*X23), call=lambda f, x: f(x, 3))
C("power_scalar_2x3", "power", normal(*X23), call=lambda f, x: f(2.0, x))
C("maximum_2x3_2x3", "maximum", grid(0.05, *X23), grid(0.15, *X23))
C("maximum_2x3_3", "maximum", grid(0.05, *X23), grid(0.15, *X3))
C("maximum_2x3_scalar0", "maximum", offzero(*X23), call=lambda f, x: f(x, 0.0))
C("minimum_2x3_2x3", "minimum", grid(0.05, *X23), grid(0.15, *X23))
C("minimum_2x1_1x3", "minimum", grid(0.05, 2, 1), grid(0.15, 1, 3))
C("minimum_scalar_2x3", "minimum", off([0.5], -2, 2, *X23), call=lambda f, x: f(0.5, x))
C("clip_2x3", "clip", off([-0.5, 0.5], -1.5, 1.5, *X23), call=lambda f, x: f(x, -0.5, 0.5))
C("clip_2x3x4", "clip", off([0.0, 1.0], -1.0, 2.0, *X234), call=lambda f, x: f(x, 0.0, 1.0))
_COND23 = np.array([[True, False, True], [False, False, True]])
C("where_2x3_2x3", "where", normal(*X23), normal(*X23),
  call=lambda f, a, b: f(_COND23, a, b))
C("where_2x3_3", "where", normal(*X23), normal(*X3), call=lambda f, a, b: f(_COND23, a, b))
C("where_2x1_1x3", "where", normal(2, 1), normal(1, 3), call=lambda f, a, b: f(_COND23, a, b))
C("where_2x3_scalar", "where", normal(*X23), call=lambda f, a: f(_COND23, a, 0.0))
C("where_scalar_2x3", "where", normal(*X23), call=lambda f, b: f(_COND23, 1.0, b))
C("erf_2x3", "erf", normal(*X23))
C("cast_float64", "cast", normal(*X23), call=lambda f, x: f(x, "float64"))
C("sign_2x3", "sign", offzero(*X23))
C("floor_2x3", "floor", fractional(*X23))
C("ceil_2x3", "ceil", fractional(*X23))
C("round_2x3", "round", fractional(*X23))
C("round_decimals1", "round", fractional(*X23), call=lambda f, x: f(x / 10 + 0.001, 1))
C("sin_2x3", "sin", normal(*X23))
C("cos_2x3", "cos", normal(*X23))
C("tan_2x3", "tan", uniform(-1.2, 1.2, *X23))
C("arctan_2x3", "arctan", normal(*X23, scale=2.0))
C("sinh_2x3", "sinh", normal(*X23))
C("cosh_2x3", "cosh", normal(*X23))
C("nan_to_num_2x3", "nan_to_num", normal(*X23))

# -- reductions -----------------------------------------------------------------------------
_AXES = [("all", None), ("ax0", 0), ("axm1", -1), ("ax02", (0, 2)), ("axm3m1", (-3, -1))]
for _op in ("sum", "mean", "max", "min", "var", "std", "logsumexp", "amax", "amin", "prod"):
    gen = (distinct if _op in ("max", "min", "amax", "amin")
           else (lambda *s: offzero(*s, lo=0.5, hi=1.5)) if _op == "prod" else normal)
    C(f"{_op}_2x3", _op, gen(*X23))
    C(f"{_op}_2x3_ax1", _op, gen(*X23), axis=1)
    for name, ax in _AXES:
        for kd in (False, True):
            C(f"{_op}_2x3x4_{name}" + ("_keepdims" if kd else ""), _op, gen(*X234),
              axis=ax, keepdims=kd)
C("sum_0d", "sum", normal())
C("mean_0d", "mean", normal())
C("logsumexp_large", "logsumexp", fixed([[1000.0, 999.0, 998.5], [-3.0, -800.0, -801.0]]),
  axis=-1)
C("moments_2x3x4_ax0", "moments", normal(*X234), call=lambda f, x: f(x, [0]))
C("moments_2x3x4_ax02", "moments", normal(*X234), call=lambda f, x: f(x, [0, 2]))
C("moments_2x3x4_axm1_keepdims", "moments", normal(*X234),
  call=lambda f, x: f(x, [-1], keepdims=True))
C("moments_2x3_int_axis", "moments", normal(*X23), call=lambda f, x: f(x, 1))

# -- linear algebra -----------------------------------------------------------------------
for _op, shapes in {
    "matmul": [(X23, (3, 4)), (X234, (2, 4, 5)), (X234, (4, 5)), ((4, 5), (2, 5, 3)),
               ((2, 1, 3, 4), (3, 4, 2)), ((2, 1, 3, 4), (1, 2, 4, 2)), (X3, (3, 4)),
               (X23, X3), (X234, (4,)), (X3, X3), ((4,), (2, 4, 3))],
    "dot": [(X23, (3, 4)), (X3, X3), (X23, X3), (X234, (4, 5)), (X234, (3, 4, 5)),
            (X23, ())],
}.items():
    for sa, sb in shapes:
        name = lambda s: "x".join(map(str, s)) or "0d"  # noqa: E731
        C(f"{_op}_{name(sa)}_{name(sb)}", _op, normal(*sa), normal(*sb))
for _eq, _shapes in [
    ("ij,jk->ik", [X23, (3, 4)]),
    ("ij,jk", [X23, (3, 4)]),
    ("bij,bjk->bik", [X234, (2, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("ij->ji", [X23]),
    ("ij->j", [X23]),
    ("ijk->kj", [X234]),
    ("ij->", [X23]),
    ("i,i->", [X3, X3]),
    ("i,j->ij", [X3, (4,)]),
    ("ij,j->i", [X23, X3]),
    ("bij,jk->bki", [X234, (4, 2)]),
    ("ij,kl->jk", [X23, (3, 2)]),
    ("ij,jk,kl->il", [X23, (3, 4), (4, 2)]),
    ("ii->i", [(3, 3)]),
    ("ii->", [(3, 3)]),
    ("bii,bi->bi", [(2, 3, 3), (2, 3)]),
    ("...ij,...jk->...ik", [X234, (2, 4, 5)]),
    ("...ij,jk", [X234, (4, 5)]),
]:
    C("einsum_" + _eq.replace(",", "_").replace("->", "_to_").replace("...", "E"), "einsum",
      *[normal(*s) for s in _shapes], call=lambda f, *xs, eq=_eq: f(eq, *xs))
C("tensordot_axes1", "tensordot", normal(*X23), normal(3, 4), axes=1)
C("tensordot_axes2", "tensordot", normal(*X234), normal(3, 4, 2), axes=2)
C("tensordot_axes0", "tensordot", normal(*X23), normal(2,), axes=0)
C("tensordot_pairs", "tensordot", normal(*X234), normal(4, 5), axes=([2], [0]))
C("tensordot_pairs_multi", "tensordot", normal(3, 2, 4), normal(4, 5, 3), axes=([0, 2], [2, 0]))
C("tensordot_int_pair", "tensordot", normal(*X23), normal(4, 2), axes=(0, 1))
C("outer_3_4", "outer", normal(*X3), normal(4))
C("outer_2x2_3", "outer", normal(2, 2), normal(*X3))
C("inner_3_3", "inner", normal(*X3), normal(*X3))
C("vdot_2x3_2x3", "vdot", normal(*X23), normal(*X23))
C("norm_2x3", "norm", normal(*X23))
C("norm_2x3_axm1", "norm", normal(*X23), axis=-1)
C("norm_2x3x4_ax1_keepdims", "norm", normal(*X234), axis=1, keepdims=True)
C("norm_ord1_ax0", "norm", offzero(*X23), ord=1, axis=0)
C("norm_ordinf_axm1", "norm", distinct(*X23), ord=np.inf, axis=-1)
C("norm_fro", "norm", normal(*X23), ord="fro")

# -- shapes -------------------------------------------------------------------------------
C("reshape_2x3_3x2", "reshape", normal(*X23), call=lambda f, x: f(x, (3, 2)))
C("reshape_2x3x4_2xm1", "reshape", normal(*X234), call=lambda f, x: f(x, (2, -1)))
C("reshape_2x3_int", "reshape", normal(*X23), call=lambda f, x: f(x, 6))
C("transpose_2x3", "transpose", normal(*X23))
C("transpose_2x3x4_201", "transpose", normal(*X234), axes=(2, 0, 1))
C("transpose_2x3x4_neg", "transpose", normal(*X234), axes=(-1, 0, -2))
C("expand_dims_ax0", "expand_dims", normal(*X23), axis=0)
C("expand_dims_axm1", "expand_dims", normal(*X23), axis=-1)
C("expand_dims_ax02", "expand_dims", normal(*X23), axis=(0, 2))
C("squeeze_all", "squeeze", normal(1, 3, 1))
C("squeeze_axm2", "squeeze", normal(2, 1, 4), axis=-2)
C("concatenate_ax0", "concatenate", normal(*X23), normal(1, 3),
  call=lambda f, a, b: f([a, b]))
C("concatenate_ax1_three", "concatenate", normal(*X23), normal(2, 2), normal(2, 1),
  call=lambda f, *xs: f(list(xs), axis=1))
C("concatenate_axm1_tuple", "concatenate", normal(*X234), normal(2, 3, 2),
  call=lambda f, *xs: f(xs, axis=-1))
C("concatenate_with_constant", "concatenate", normal(*X23),
  call=lambda f, a: f([np.ones((2, 2)), a], axis=1))
C("stack_ax0", "stack", normal(*X23), normal(*X23), call=lambda f, *xs: f(list(xs)))
C("stack_ax1", "stack", normal(*X23), normal(*X23), normal(*X23),
  call=lambda f, *xs: f(list(xs), axis=1))
C("stack_axm1", "stack", normal(*X3), normal(*X3), call=lambda f, *xs: f(xs, axis=-1))
C("split_int_ax1", "split", normal(2, 6), call=lambda f, x: f(x, 3, axis=1))
C("split_int_ax0", "split", normal(6, 2), call=lambda f, x: f(x, 2))
C("split_list_ax1", "split", normal(2, 6), call=lambda f, x: f(x, [1, 4], axis=1))
C("split_list_axm1", "split", normal(*X234), call=lambda f, x: f(x, [2], axis=-1))
C("unstack_ax0", "unstack", normal(*X23))
C("unstack_ax1", "unstack", normal(*X234), axis=1)
C("take_flat", "take", normal(*X23), call=lambda f, x: f(x, np.array([4, 0, 5, 4])))
C("take_flat_2d_indices", "take", normal(*X23), call=lambda f, x: f(x, np.array([[1, 2], [2, 0]])))
C("take_ax0_repeated", "take", normal(*X23), call=lambda f, x: f(x, np.array([1, 0, 1]), axis=0))
C("take_ax1_2d_indices", "take", normal(*X234),
  call=lambda f, x: f(x, np.array([[2, 0], [2, 2]]), axis=1))
C("take_axm1", "take", normal(*X234), call=lambda f, x: f(x, np.array([3, 0, 0, 1, 2]), axis=-1))
C("take_negative_indices", "take", normal(*X23),
  call=lambda f, x: f(x, np.array([-1, 0, -2]), axis=1))
C("take_scalar_index", "take", normal(*X23), call=lambda f, x: f(x, 1, axis=1))
C("take_tensor_indices", "take", normal(*X23),
  call=lambda f, x: f(x, ops.convert_to_tensor([2, 2, 0]), axis=1))
C("take_along_axis_ax1", "take_along_axis", normal(*X23),
  call=lambda f, x: f(x, np.array([[2, 0, 2, 1], [1, 1, 0, 2]]), axis=1))
C("take_along_axis_ax0", "take_along_axis", normal(*X234),
  call=lambda f, x: f(x, np.array([[[1, 0, 0, 1]], [[0, 0, 1, 1]]]), axis=0))
C("take_along_axis_none", "take_along_axis", normal(*X23),
  call=lambda f, x: f(x, np.array([5, 0, 5, -1])))
C("tile_2x3_2x1", "tile", normal(*X23), call=lambda f, x: f(x, (2, 1)))
C("tile_2x3_int", "tile", normal(*X23), call=lambda f, x: f(x, 2))
C("tile_2x3_2x1x2", "tile", normal(*X23), call=lambda f, x: f(x, (2, 1, 2)))
C("tile_2x3x4_short_reps", "tile", normal(*X234), call=lambda f, x: f(x, (3, 1)))
C("repeat_flat", "repeat", normal(*X23), call=lambda f, x: f(x, 2))
C("repeat_ax0", "repeat", normal(*X23), call=lambda f, x: f(x, 2, axis=0))
C("repeat_ax1", "repeat", normal(*X23), call=lambda f, x: f(x, 3, axis=1))
C("repeat_array_ax0", "repeat", normal(*X23), call=lambda f, x: f(x, np.array([1, 2]), axis=0))
C("repeat_array_axm1_with_zero", "repeat", normal(*X23),
  call=lambda f, x: f(x, np.array([0, 3, 1]), axis=-1))
C("flip_all", "flip", normal(*X23))
C("flip_ax0", "flip", normal(*X23), axis=0)
C("flip_ax02", "flip", normal(*X234), axis=(0, 2))
C("pad_constant_int", "pad", normal(*X23), call=lambda f, x: f(x, 1))
C("pad_constant_pairs", "pad", normal(*X23), call=lambda f, x: f(x, ((1, 0), (0, 2))))
C("pad_constant_one_pair", "pad", normal(*X23), call=lambda f, x: f(x, ((1, 2),)))
C("pad_constant_values", "pad", normal(*X23),
  call=lambda f, x: f(x, ((0, 1), (2, 1)), constant_values=1.5))
C("pad_reflect", "pad", normal(3, 4), call=lambda f, x: f(x, ((2, 1), (1, 3)), mode="reflect"))
C("pad_reflect_3d", "pad", normal(*X234),
  call=lambda f, x: f(x, ((0, 0), (1, 2), (3, 0)), mode="reflect"))
C("pad_symmetric", "pad", normal(*X23), call=lambda f, x: f(x, ((1, 2), (2, 1)), mode="symmetric"))
C("pad_edge", "pad", normal(*X23), call=lambda f, x: f(x, ((2, 0), (1, 2)), mode="edge"))
C("cumsum_all", "cumsum", normal(*X23))
C("cumsum_ax0", "cumsum", normal(*X23), axis=0)
C("cumsum_axm1", "cumsum", normal(*X234), axis=-1)
C("cumprod_all", "cumprod", offzero(*X23, lo=0.5, hi=1.5))
C("cumprod_ax1", "cumprod", offzero(*X234, lo=0.5, hi=1.5), axis=1)
C("cumprod_axm1", "cumprod", offzero(*X23, lo=0.5, hi=1.5), axis=-1)
C("broadcast_to_3_2x3", "broadcast_to", normal(*X3), call=lambda f, x: f(x, (2, 3)))
C("broadcast_to_2x1_4x2x5", "broadcast_to", normal(2, 1), call=lambda f, x: f(x, (4, 2, 5)))
C("broadcast_to_0d", "broadcast_to", normal(), call=lambda f, x: f(x, (2, 2)))
for _name, _index in [
    ("int", 1),
    ("neg_int", -1),
    ("slice", np.s_[1:]),
    ("slice_step", np.s_[:, ::2]),
    ("negative_step", np.s_[::-1, 2::-2]),
    ("int_and_slice", np.s_[1, 1:3]),
    ("int_array", np.array([1, 0, 1])),
    ("int_arrays_pair", (np.array([0, 1, 1]), np.array([2, 2, 0]))),
    ("list_index", [0, 0, 1]),
    ("bool_mask", np.array([[True, False, True, False], [False, True, True, True],
                            [False, False, False, True]])),
    ("ellipsis", np.s_[..., 1]),
    ("newaxis", np.s_[:, None, 1:]),
    ("mixed", (np.s_[:], np.array([2, 0]), np.s_[::-1])),
]:
    _shape = (3, 4) if _name == "bool_mask" else X234
    C(f"getitem_{_name}", "getitem", normal(*_shape), call=lambda f, x, i=_index: f(x, i))
C("slice_2x3x4", "slice", normal(*X234), call=lambda f, x: f(x, (1, 0, 1), (1, 2, 3)))
C("slice_2x3", "slice", normal(*X23), call=lambda f, x: f(x, [0, 1], [2, 2]))
C("swapaxes_0_2", "swapaxes", normal(*X234), call=lambda f, x: f(x, 0, 2))
C("swapaxes_neg", "swapaxes", normal(*X234), call=lambda f, x: f(x, -1, 1))
C("moveaxis_0_m1", "moveaxis", normal(*X234), call=lambda f, x: f(x, 0, -1))
C("moveaxis_pairs", "moveaxis", normal(*X234), call=lambda f, x: f(x, [0, 1], [2, 0]))
C("ravel_2x3x4", "ravel", normal(*X234))
C("diagonal_3x3", "diagonal", normal(3, 3))
C("diagonal_3x4_offset1", "diagonal", normal(3, 4), offset=1)
C("diagonal_4x3_offsetm1", "diagonal", normal(4, 3), offset=-1)
C("diagonal_3d_ax12", "diagonal", normal(2, 3, 3), axis1=1, axis2=2)
C("diagonal_3d_ax20_offset1", "diagonal", normal(3, 2, 4), offset=1, axis1=2, axis2=0)
C("tril_3x4", "tril", normal(3, 4))
C("tril_k1", "tril", normal(3, 4), k=1)
C("tril_batched_km1", "tril", normal(2, 3, 3), k=-1)
C("triu_3x4", "triu", normal(3, 4))
C("triu_km1", "triu", normal(3, 4), k=-1)
C("triu_batched_k1", "triu", normal(2, 3, 3), k=1)

# -- activations --------------------------------------------------------------------------
for _op in ("sigmoid", "tanh", "softplus", "softsign", "silu", "swish", "log_sigmoid"):
    C(f"{_op}_2x3x4", _op, normal(*X234, scale=2.0))
for _op in ("relu", "elu", "selu", "leaky_relu"):
    C(f"{_op}_2x3x4", _op, offzero(*X234, lo=0.1, hi=3.0))
C("softplus_large", "softplus", fixed([[-30.0, -5.0, 5.0, 30.0], [-80.0, 0.5, 20.0, 80.0]]))
C("sigmoid_large", "sigmoid", fixed([[-30.0, -5.0, 5.0, 30.0], [-40.0, 0.5, 20.0, 40.0]]))
C("log_sigmoid_large", "log_sigmoid", fixed([[-30.0, -5.0, 5.0, 30.0]]))
C("relu6_2x3x4", "relu6", off([0.0, 6.0], -8.0, 8.0, *X234, margin=0.2))
C("hard_sigmoid_2x3x4", "hard_sigmoid", off([-3.0, 3.0], -5.0, 5.0, *X234))
C("hard_silu_2x3x4", "hard_silu", off([-3.0, 3.0], -5.0, 5.0, *X234))
C("gelu_approx", "gelu", normal(*X234, scale=2.0))
C("gelu_exact", "gelu", normal(*X234, scale=2.0), approximate=False)
C("elu_alpha05", "elu", offzero(*X234), alpha=0.5)
C("leaky_relu_slope01", "leaky_relu", offzero(*X234), negative_slope=0.1)
C("softmax_2x3", "softmax", normal(*X23, scale=2.0))
C("softmax_ax0", "softmax", normal(*X23, scale=2.0), axis=0)
C("softmax_ax1_3d", "softmax", normal(*X234, scale=2.0), axis=1)
C("softmax_ax12", "softmax", normal(*X234, scale=2.0), axis=(1, 2))
C("log_softmax_2x3", "log_softmax", normal(*X23, scale=2.0))
C("log_softmax_ax0", "log_softmax", normal(*X23, scale=2.0), axis=0)
C("log_softmax_ax1_3d", "log_softmax", normal(*X234, scale=2.0), axis=1)

# -- nn ------------------------------------------------------------------------------------
C("binary_crossentropy_probs", "binary_crossentropy", uniform(0, 1, *X23),
  uniform(0.05, 0.95, *X23))
C("binary_crossentropy_probs_3d", "binary_crossentropy", uniform(0, 1, *X234),
  uniform(0.05, 0.95, *X234), from_logits=False)
C("binary_crossentropy_logits", "binary_crossentropy", uniform(0, 1, *X23),
  normal(*X23, scale=3.0), from_logits=True)
C("binary_crossentropy_logits_large", "binary_crossentropy", uniform(0, 1, 2, 4),
  fixed([[-30.0, -5.0, 5.0, 30.0], [-40.0, 0.5, 20.0, 40.0]]), from_logits=True)
C("categorical_crossentropy_probs", "categorical_crossentropy", onehot(2, 4), probs(2, 4))
C("categorical_crossentropy_probs_soft_unnormalized", "categorical_crossentropy",
  probs(2, 3, 4), uniform(0.1, 1.0, 2, 3, 4))
C("categorical_crossentropy_logits", "categorical_crossentropy", onehot(2, 4),
  normal(2, 4, scale=2.0), from_logits=True)
C("categorical_crossentropy_logits_soft", "categorical_crossentropy", probs(2, 3, 4),
  normal(2, 3, 4, scale=2.0), from_logits=True)
C("categorical_crossentropy_logits_ax0", "categorical_crossentropy", probs(4, 2, axis=0),
  normal(4, 2, scale=2.0), from_logits=True, axis=0)
C("categorical_crossentropy_probs_ax0", "categorical_crossentropy", probs(4, 2, axis=0),
  probs(4, 2, axis=0), axis=0)
_LABELS = np.array([2, 0, 3])
C("sparse_categorical_crossentropy_probs", "sparse_categorical_crossentropy", probs(3, 4),
  call=lambda f, p: f(_LABELS, p))
C("sparse_categorical_crossentropy_probs_unnormalized", "sparse_categorical_crossentropy",
  uniform(0.1, 1.0, 3, 4), call=lambda f, p: f(_LABELS, p))
C("sparse_categorical_crossentropy_logits", "sparse_categorical_crossentropy",
  normal(3, 4, scale=2.0), call=lambda f, z: f(_LABELS, z, from_logits=True))
C("sparse_categorical_crossentropy_logits_3d", "sparse_categorical_crossentropy",
  normal(2, 3, 4, scale=2.0),
  call=lambda f, z: f(np.array([[0, 3, 1], [2, 2, 0]]), z, from_logits=True))
C("sparse_categorical_crossentropy_target_nx1", "sparse_categorical_crossentropy",
  normal(3, 4, scale=2.0), call=lambda f, z: f(_LABELS[:, None], z, from_logits=True))
C("normalize_2x3", "normalize", normal(*X23))
C("normalize_ax0", "normalize", normal(*X234), axis=0)
C("normalize_order1", "normalize", offzero(*X234), axis=-1, order=1)

# -- construction ---------------------------------------------------------------------------
C("copy_2x3", "copy", normal(*X23))
C("convert_to_tensor_tensor", "convert_to_tensor", normal(*X23),
  call=lambda f, x: f(x if isinstance(x, Tensor) else Tensor._wrap(x)))
C("convert_to_tensor_same_dtype", "convert_to_tensor", normal(*X23), dtype="float64")

# ----------------------------------------------------------------------------------------
# what the table leaves out, by name

#: Ops without a gradient (results that are integers, bools, shapes or constants, or that
#: block the gradient), and ``__all__`` entries that are no functions.
NOT_DIFFERENTIABLE = {
    # modules and constants
    "autodiff", "nn", "EPSILON",
    # integer, bool and index results
    "argmax", "argmin", "any", "all", "count_nonzero", "isnan", "isinf", "isfinite",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_not", "logical_xor", "floor_divide",
    # construction from shapes and values, and shape queries
    "ones", "zeros", "full", "ones_like", "zeros_like", "full_like", "arange", "eye",
    "identity", "linspace", "one_hot", "multi_hot", "shape", "ndim", "size", "is_tensor",
    "standardize_dtype", "convert_to_numpy",
    # blocks the gradient by definition
    "stop_gradient",
}



def _conv_ops() -> set[str]:
    try:  # the module (``tinynet.ops.conv`` the attribute is the function)
        module = importlib.import_module("tinynet.ops.conv")
    except ImportError:
        return set()
    return set(module.__all__)


#: Ops with their own test module, which checks their gradients: the convolutions and
#: poolings of ``tinynet.ops.conv`` (tests/ops/test_conv*.py).
TESTED_ELSEWHERE = _conv_ops()


def test_every_differentiable_op_has_a_case():
    exported = set(ops.__all__)
    covered = {c.op for c in CASES}
    missing = exported - covered - NOT_DIFFERENTIABLE - set(TESTED_ELSEWHERE)
    assert not missing, f"differentiable ops without a gradient case: {sorted(missing)}"
    assert not covered - exported, f"cases for ops not exported: {sorted(covered - exported)}"
    stale = NOT_DIFFERENTIABLE - exported
    assert not stale, f"NOT_DIFFERENTIABLE names ops that are not exported: {sorted(stale)}"
    assert not covered & NOT_DIFFERENTIABLE


def test_listed_non_differentiable_ops_record_nothing():
    """The excluded ops that take a float tensor give no recorded result."""
    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.0, -2.0]])
    calls = {
        "argmax": lambda t: ops.argmax(t, axis=1), "argmin": lambda t: ops.argmin(t),
        "any": ops.any, "all": ops.all, "count_nonzero": ops.count_nonzero,
        "isnan": ops.isnan, "isinf": ops.isinf, "isfinite": ops.isfinite,
        "logical_not": ops.logical_not, "floor_divide": lambda t: ops.floor_divide(t, 2.0),
        "ones_like": ops.ones_like, "zeros_like": ops.zeros_like,
        "full_like": lambda t: ops.full_like(t, 3.0), "stop_gradient": ops.stop_gradient,
        **{name: (lambda t, n=name: getattr(ops, n)(t, 0.5))
           for name in ("equal", "not_equal", "less", "less_equal", "greater",
                        "greater_equal", "logical_and", "logical_or", "logical_xor")},
    }
    with Graph() as g:
        t = g.leaf(x)
        for name, fn in calls.items():
            out = fn(t)
            assert isinstance(out, Tensor) and out._node is None, name


# ----------------------------------------------------------------------------------------
# the check


def _outputs(out: Any) -> list[Tensor]:
    if isinstance(out, (tuple, list)):
        assert all(isinstance(o, Tensor) for o in out)
        return list(out)
    assert isinstance(out, Tensor), type(out)
    return [out]


def _inputs(case: Case) -> list[np.ndarray]:
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    return [np.asarray(gen(rng), dtype=np.float64) for gen in case.ins]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_vjp_matches_central_differences(case):
    xs = _inputs(case)
    base = _outputs(case.run(*xs))
    for o in base:
        assert o.dtype == np.float64, f"{case.id}: output dtype {o.dtype} (expected float64)"
    rng = np.random.default_rng(7)
    cots = [rng.standard_normal(o.shape) for o in base]

    with Graph() as g:
        leaves = [g.leaf(x) for x in xs]
        outs = _outputs(case.run(*leaves))
    assert [o.shape for o in outs] == [o.shape for o in base]
    for o, b in zip(outs, base):
        np.testing.assert_array_equal(o.data, b.data, err_msg=f"{case.id}: recorded value")
    backprop(outs, cots)
    grads = [leaf._node.grad for leaf in leaves]

    for k, (x, grad) in enumerate(zip(xs, grads)):
        assert grad is not None, f"{case.id}: no gradient reached input {k}"
        assert grad.shape == x.shape and grad.dtype == np.float64, (grad.shape, grad.dtype)
        numeric = np.zeros_like(x)
        for j in np.ndindex(x.shape):
            diffs = []
            for sign in (1.0, -1.0):
                moved = [v.copy() for v in xs]
                moved[k][j] += sign * EPS
                diffs.append(_outputs(case.run(*moved)))
            # difference the outputs before summing: no cancellation against sum(out)
            numeric[j] = sum(np.sum((p.data - m.data) * c)
                             for p, m, c in zip(diffs[0], diffs[1], cots)) / (2 * EPS)
        np.testing.assert_allclose(grad, numeric, rtol=RTOL, atol=ATOL,
                                   err_msg=f"{case.id}: gradient of input {k}")
