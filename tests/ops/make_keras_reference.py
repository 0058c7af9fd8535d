"""Writes the Keras reference values that ``tinynet.ops`` is compared with:
``data/keras_ops_reference.npz`` (arrays) and ``data/keras_ops_reference.json`` (the case
list, arguments and metadata).

Run by hand, never in CI (Keras and JAX are no tinynet dependency), from a virtualenv
that has ``keras==3.15.1``, ``jax`` and ``jaxlib`` (CPU), e.g. one made outside the
project with ``python -m venv /work/scratch/keras-venv`` and
``/work/scratch/keras-venv/bin/pip install keras==3.15.1 jax jaxlib``::

    KERAS_BACKEND=jax /work/scratch/keras-venv/bin/python tests/ops/make_keras_reference.py

Each case calls one ``keras.ops`` function (its top-level name: ``conv``, not
``nn.conv``) on small arrays made by ``numpy.random.default_rng(seed)`` with a per-case
seed (the CRC-32 of the case id, so adding a case changes no other), float32 for real
arguments and int32 for indices and labels. The npz holds, under ``<id>/``:

* ``in<k>``: the k-th array argument (in the order the arguments are written, a list
  argument such as ``concatenate``'s contributing its arrays in order);
* ``out`` (one array) or ``out<k>`` (a tuple or list: ``moments``, ``split``): the
  value, computed in float32 by Keras on JAX;
* for differentiable cases, ``cot`` (or ``cot<k>``), a random cotangent of the output's
  shape, and ``grad<k>``, the vector-Jacobian product: the gradient of
  ``sum(out * cot)`` (summed over the outputs) with respect to ``in<k>``, for every
  float ``in<k>``, from ``jax.vjp`` through the ``keras.ops`` call.

The JSON gives, per case, the op, the arguments (an array is ``{"in": k}``; a JSON list
is a Python tuple; ``{"list": [...]}`` is a Python list), the keyword arguments, a
readable ``call``, the names, shapes and dtypes of the stored arrays, and notes where
Keras behaves in a way worth knowing. Inputs keep away from the points where an op is
not differentiable (no ties for max/min/maximum/argmax, no zeros for abs/relu, clip
inputs off the bounds); a finite-difference check of every vector-Jacobian product
guards that, and the script stops if one disagrees.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys
import zlib
from collections import Counter

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import jaxlib  # noqa: E402
import keras  # noqa: E402
from keras import ops  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
NPZ = os.path.join(DATA, "keras_ops_reference.npz")
JSON = os.path.join(DATA, "keras_ops_reference.json")
KERAS_VERSION = "3.15.1"

# ----------------------------------------------------------------------------------------
# argument specs


class A:
    """An array argument made from the case's generator.

    kind: ``normal`` (standard normal), ``uniform`` (in [lo, hi)), ``pos`` (uniform in
    [0.5, 2)), ``offzero`` (magnitude uniform in [lo, hi), default [0.2, 2), random sign),
    ``int`` (integers in [lo, hi)), ``bool``, ``probs`` (rows on the last axis summing to
    one), ``onehot`` (one-hot rows on the last axis), or a callable ``fn(rng, shape)``.
    """

    def __init__(self, shape, kind="normal", lo=None, hi=None, scale=1.0):
        self.shape, self.kind, self.lo, self.hi, self.scale = tuple(shape), kind, lo, hi, scale

    def make(self, rng):
        s, k = self.shape, self.kind
        if callable(k):
            return np.asarray(k(rng, s))
        if k == "normal":
            return (rng.standard_normal(s) * self.scale).astype(np.float32)
        if k == "uniform":
            return rng.uniform(self.lo, self.hi, s).astype(np.float32)
        if k == "pos":
            return rng.uniform(0.5, 2.0, s).astype(np.float32)
        if k == "offzero":
            lo = 0.2 if self.lo is None else self.lo
            hi = 2.0 if self.hi is None else self.hi
            mag = rng.uniform(lo, hi, s)
            sign = np.where(rng.random(s) < 0.5, -1.0, 1.0)
            return (mag * sign).astype(np.float32)
        if k == "int":
            return rng.integers(self.lo, self.hi, s).astype(np.int32)
        if k == "bool":
            return rng.random(s) < 0.5
        if k == "probs":
            z = rng.standard_normal(s)
            e = np.exp(z - z.max(-1, keepdims=True))
            return (e / e.sum(-1, keepdims=True)).astype(np.float32)
        if k == "onehot":
            lab = rng.integers(0, s[-1], s[:-1])
            return np.eye(s[-1], dtype=np.float32)[lab]
        raise ValueError(k)


def distinct(rng, shape, spread=1.0):
    """Values whose pairwise gaps are all at least 0.02 * spread (no ties anywhere)."""
    n = int(np.prod(shape)) if shape else 1
    v = (rng.permutation(n) - (n - 1) / 2.0) * 0.1 + rng.uniform(0.02, 0.08, n)
    return (v.reshape(shape) * spread).astype(np.float32)


def off_points(points, lo, hi, margin=0.1):
    """Uniform values in [lo, hi) at least ``margin`` away from each of ``points``."""

    def fn(rng, shape):
        v = rng.uniform(lo, hi, shape)
        for _ in range(1000):
            bad = np.zeros(shape, bool)
            for p in points:
                bad |= np.abs(v - p) < margin
            if not bad.any():
                return v.astype(np.float32)
            v = np.where(bad, rng.uniform(lo, hi, shape), v)
        raise RuntimeError("off_points: no luck")

    return fn


def grid(offset):
    """Values on the grid 0.2 * k + offset, k in [-10, 10): two arrays with offsets 0.05
    and 0.15 are never closer than 0.1 (no ties between them for maximum/minimum)."""

    def fn(rng, shape):
        return (rng.integers(-10, 10, shape) * 0.2 + offset).astype(np.float32)

    return fn


def probs_unnormalized(rng, shape):
    """Positive values whose rows do not sum to one (Keras renormalizes them)."""
    return rng.uniform(0.1, 1.0, shape).astype(np.float32)


def bce_probs(rng, shape):
    """Probabilities in [0.05, 0.95]: well inside Keras's [eps, 1 - eps] clip."""
    return rng.uniform(0.05, 0.95, shape).astype(np.float32)


# ----------------------------------------------------------------------------------------
# the cases

CASES: list[dict] = []


def C(cid, op, *args, grad=True, note=None, call_kwargs=None, **kwargs):
    """Registers a case. ``call_kwargs`` overrides the keyword arguments actually passed
    to Keras (recorded ones stay in ``kwargs``), for a Keras-on-JAX bug (see the notes)."""
    assert all(c["id"] != cid for c in CASES), cid
    CASES.append(dict(id=cid, op=op, args=list(args), kwargs=kwargs, grad=grad, note=note,
                      call_kwargs=call_kwargs))


X23, X3, X234 = (2, 3), (3,), (2, 3, 4)

# -- elementwise --------------------------------------------------------------------------
C("add_2x3_2x3", "add", A(X23), A(X23))
C("add_2x3_3", "add", A(X23), A(X3))
C("add_3_2x3", "add", A(X3), A(X23))
C("add_2x3_2x1", "add", A(X23), A((2, 1)))
C("add_2x3x4_3x1", "add", A(X234), A((3, 1)))
C("add_2x3_scalar", "add", A(X23), 2.5)
C("add_scalar_2x3", "add", 2.5, A(X23))
C("add_2x3_0d", "add", A(X23), A(()))
C("subtract_2x3_2x3", "subtract", A(X23), A(X23))
C("subtract_2x3_3", "subtract", A(X23), A(X3))
C("subtract_scalar_2x3", "subtract", 1.0, A(X23))
C("multiply_2x3_2x3", "multiply", A(X23), A(X23))
C("multiply_2x3_3", "multiply", A(X23), A(X3))
C("multiply_2x3_int_scalar", "multiply", A(X23), 3)
C("multiply_2x1_1x3", "multiply", A((2, 1)), A((1, 3)))
C("divide_2x3_2x3", "divide", A(X23), A(X23, "offzero", 0.5, 2.0))
C("divide_2x3_3", "divide", A(X23), A(X3, "offzero", 0.5, 2.0))
C("divide_2x3_scalar", "divide", A(X23), 4.0)
C("divide_scalar_2x3", "divide", 1.0, A(X23, "offzero", 0.5, 2.0))
C("negative_2x3", "negative", A(X23))
C("abs_2x3", "abs", A(X23, "offzero"))
C("abs_2x3x4", "abs", A(X234, "offzero"))
C("square_2x3", "square", A(X23))
C("sqrt_2x3", "sqrt", A(X23, "pos"))
C("exp_2x3", "exp", A(X23))
C("log_2x3", "log", A(X23, "pos"))
C("log_2x3x4", "log", A(X234, "pos"))
C("power_2x3_2x3", "power", A(X23, "pos"), A(X23))
C("power_2x3_3", "power", A(X23, "pos"), A(X3))
C("power_2x3_float_scalar", "power", A(X23, "pos"), 2.0)
C("power_2x3_int_scalar_negbase", "power", A(X23, "offzero"), 3,
  note="negative bases with an integer exponent give real values (x**3)")
C("power_scalar_2x3", "power", 2.0, A(X23))
C("maximum_2x3_2x3", "maximum", A(X23, grid(0.05)), A(X23, grid(0.15)))
C("maximum_2x3_3", "maximum", A(X23, grid(0.05)), A(X3, grid(0.15)))
C("maximum_2x3_scalar0", "maximum", A(X23, "offzero"), 0.0)
C("minimum_2x3_2x3", "minimum", A(X23, grid(0.05)), A(X23, grid(0.15)))
C("minimum_2x3_3", "minimum", A(X23, grid(0.05)), A(X3, grid(0.15)))
C("minimum_2x3_scalar", "minimum", A(X23, off_points([0.5], -2, 2)), 0.5)
C("clip_2x3", "clip", A(X23, off_points([-0.5, 0.5], -1.5, 1.5)), -0.5, 0.5)
C("clip_2x3x4", "clip", A(X234, off_points([0.0, 1.0], -1.0, 2.0)), 0.0, 1.0)
C("where_2x3", "where", A(X23, "bool"), A(X23), A(X23))
C("where_2x3_3", "where", A(X23, "bool"), A(X23), A(X3))
C("where_2x3_scalar", "where", A(X23, "bool"), A(X23), 0.0)
C("erf_2x3", "erf", A(X23))
C("erf_2x3x4", "erf", A(X234))
C("cast_float_to_int32", "cast", A(X23, "uniform", -3, 3), "int32", grad=False,
  note="float -> int truncates toward zero")
C("cast_int_to_float32", "cast", A(X23, "int", -5, 5), "float32", grad=False)
C("cast_bool_to_float32", "cast", A(X23, "bool"), "float32", grad=False)
C("cast_float32_to_float16", "cast", A(X23), "float16", grad=False)
C("cast_float32_to_float32", "cast", A(X23), "float32")

# -- comparisons and logic (values only) ---------------------------------------------------
def _ties(rng, shape):  # small integers as floats: equal values do occur
    return rng.integers(-2, 3, shape).astype(np.float32)


for _op in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
    C(f"{_op}_2x3_2x3", _op, A(X23, _ties), A(X23, _ties), grad=False)
    C(f"{_op}_2x3_3", _op, A(X23, _ties), A(X3, _ties), grad=False)
    C(f"{_op}_2x3_scalar", _op, A(X23, _ties), 0.0, grad=False)
for _op in ("logical_and", "logical_or", "logical_xor"):
    C(f"{_op}_2x3_2x3", _op, A(X23, "bool"), A(X23, "bool"), grad=False)
    C(f"{_op}_2x3_3", _op, A(X23, "bool"), A(X3, "bool"), grad=False)
    C(f"{_op}_float_2x3", _op, A(X23, _ties), A(X23, _ties), grad=False,
      note="float arguments: nonzero is true")
C("logical_not_2x3", "logical_not", A(X23, "bool"), grad=False)
C("logical_not_float_2x3", "logical_not", A(X23, _ties), grad=False)

# -- reductions ------------------------------------------------------------------------------
_AXES = [("all", None), ("ax0", 0), ("axm1", -1), ("ax02", (0, 2))]
for _op in ("sum", "mean", "max", "min", "var", "std", "logsumexp"):
    gen = distinct if _op in ("max", "min") else "normal"
    C(f"{_op}_2x3", _op, A(X23, gen))
    C(f"{_op}_2x3_ax1", _op, A(X23, gen), axis=1)
    for name, ax in _AXES:
        for kd in (False, True):
            if name == "all" and not kd:
                C(f"{_op}_2x3x4_all", _op, A(X234, gen))
                continue
            C(f"{_op}_2x3x4_{name}" + ("_keepdims" if kd else ""), _op, A(X234, gen),
              axis=ax, keepdims=kd)
for _op in ("argmax", "argmin"):
    C(f"{_op}_2x3", _op, A(X23, distinct), grad=False)
    C(f"{_op}_2x3x4_all", _op, A(X234, distinct), grad=False,
      note="axis=None: index into the flattened array")
    C(f"{_op}_2x3x4_ax0", _op, A(X234, distinct), axis=0, grad=False)
    C(f"{_op}_2x3x4_axm1", _op, A(X234, distinct), axis=-1, grad=False)
    C(f"{_op}_2x3x4_ax1_keepdims", _op, A(X234, distinct), axis=1, keepdims=True, grad=False)
    C(f"{_op}_ties", _op, A((2, 4), lambda r, s: np.array([[1, 3, 3, 0], [2, 2, -1, -1]],
                                                         np.float32)), axis=-1, grad=False,
      note="ties: the first index wins")
C("moments_2x3x4_ax0", "moments", A(X234), [0])
C("moments_2x3x4_ax02", "moments", A(X234), [0, 2])
C("moments_2x3x4_axm1_keepdims", "moments", A(X234), [-1], keepdims=True)
C("moments_2x3_ax01", "moments", A(X23), (0, 1))
C("moments_2x3_ax1_int", "moments", A(X23), 1, note="axes may be an int")

# -- linear algebra ------------------------------------------------------------------------
C("matmul_2x3_3x4", "matmul", A(X23), A((3, 4)))
C("matmul_2x3x4_2x4x5", "matmul", A(X234), A((2, 4, 5)))
C("matmul_2x3x4_4x5", "matmul", A(X234), A((4, 5)))
C("matmul_4x5_2x5x3", "matmul", A((4, 5)), A((2, 5, 3)))
C("matmul_2x1x3x4_3x4x2", "matmul", A((2, 1, 3, 4)), A((3, 4, 2)))
C("matmul_3_3x4", "matmul", A(X3), A((3, 4)))
C("matmul_2x3_3", "matmul", A(X23), A(X3))
C("matmul_2x3x4_4", "matmul", A(X234), A((4,)))
C("dot_2x3_3x4", "dot", A(X23), A((3, 4)))
C("dot_3_3", "dot", A(X3), A(X3))
C("dot_2x3_3", "dot", A(X23), A(X3))
C("dot_2x3x4_4x5", "dot", A(X234), A((4, 5)))
C("dot_2x3_scalar", "dot", A(X23), A(()))
C("einsum_ij_jk", "einsum", "ij,jk->ik", A(X23), A((3, 4)))
C("einsum_bij_bjk", "einsum", "bij,bjk->bik", A(X234), A((2, 4, 5)))
C("einsum_bhqd_bhkd", "einsum", "bhqd,bhkd->bhqk", A((2, 2, 3, 4)), A((2, 2, 5, 4)))
C("einsum_ij_ji", "einsum", "ij->ji", A(X23))
C("einsum_ii_i", "einsum", "ii->i", A((3, 3)))
C("einsum_ij_sum", "einsum", "ij->", A(X23))
C("einsum_i_j_outer", "einsum", "i,j->ij", A(X3), A((4,)))
C("einsum_ellipsis", "einsum", "...ij,...jk->...ik", A(X234), A((2, 4, 5)))

# -- shapes -----------------------------------------------------------------------------------
C("reshape_2x3_3x2", "reshape", A(X23), (3, 2))
C("reshape_2x3_flat", "reshape", A(X23), (-1,))
C("reshape_2x3x4_2xm1", "reshape", A(X234), (2, -1))
C("reshape_2x3x4_4x1x6", "reshape", A(X234), (4, 1, 6))
C("transpose_2x3", "transpose", A(X23))
C("transpose_2x3x4_default", "transpose", A(X234), note="axes=None reverses the axes")
C("transpose_2x3x4_102", "transpose", A(X234), (1, 0, 2))
C("transpose_2x3x4_201", "transpose", A(X234), axes=(2, 0, 1))
C("expand_dims_2x3_ax0", "expand_dims", A(X23), 0)
C("expand_dims_2x3_axm1", "expand_dims", A(X23), -1)
C("expand_dims_2x3_ax1", "expand_dims", A(X23), 1)
C("expand_dims_2x3_ax02", "expand_dims", A(X23), (0, 2))
C("squeeze_1x3x1_all", "squeeze", A((1, 3, 1)))
C("squeeze_1x3x1_ax0", "squeeze", A((1, 3, 1)), axis=0)
C("squeeze_2x1x4_axm2", "squeeze", A((2, 1, 4)), axis=-2)
C("concatenate_ax0", "concatenate", [A(X23), A((1, 3))])
C("concatenate_ax1", "concatenate", [A(X23), A((2, 2)), A((2, 1))], axis=1)
C("concatenate_axm1_3d", "concatenate", [A(X234), A((2, 3, 2))], axis=-1)
C("stack_ax0", "stack", [A(X23), A(X23)])
C("stack_ax1", "stack", [A(X23), A(X23), A(X23)], axis=1)
C("stack_axm1", "stack", [A(X3), A(X3)], axis=-1)
C("split_2x6_int_ax1", "split", A((2, 6)), 3, axis=1, grad=False,
  note="an int: that many equal parts (an error if they are not equal)")
C("split_6x2_int", "split", A((6, 2)), 2, grad=False)
C("split_2x6_list_ax1", "split", A((2, 6)), [1, 4], axis=1, grad=False,
  note="a list: the indices where the parts start ([1, 4] -> [:1], [1:4], [4:])")
C("split_2x3x4_list_axm1", "split", A(X234), [2], axis=-1, grad=False)
C("take_flat", "take", A(X23), A((4,), "int", 0, 6),
  note="axis=None: indices into the flattened array")
C("take_flat_2d_indices", "take", A(X23), A((2, 2), "int", 0, 6))
C("take_ax0", "take", A(X23), A((3,), "int", 0, 2), axis=0,
  note="repeated indices: the gradient accumulates")
C("take_ax1", "take", A(X234), A((2, 2), "int", 0, 3), axis=1)
C("take_axm1", "take", A(X234), A((5,), "int", 0, 4), axis=-1)
C("take_negative_indices", "take", A(X23), A((3,), lambda r, s: np.array([-1, 0, -2], np.int32)),
  axis=1, note="negative indices count from the end (numpy); out-of-range ones are not "
  "stored here: on JAX they give NaN (float) / INT_MIN (int), see notes")
C("take_scalar_index", "take", A(X23), 1, axis=1)
C("tile_2x3_2x1", "tile", A(X23), (2, 1))
C("tile_2x3_int", "tile", A(X23), 2, note="an int tiles the last axis")
C("tile_2x3_2x1x2", "tile", A(X23), (2, 1, 2), note="more reps than dims: new leading axes")
C("tile_2x3_3", "tile", A(X23), (3,))
C("repeat_2x3_flat", "repeat", A(X23), 2, note="axis=None: the flattened array")
C("repeat_2x3_ax0", "repeat", A(X23), 2, axis=0)
C("repeat_2x3_ax1", "repeat", A(X23), 3, axis=1)
C("repeat_2x3_array_ax0", "repeat", A(X23), A((2,), lambda r, s: np.array([1, 2], np.int32)),
  axis=0, note="per-element repeats must be an array on JAX (a Python list raises)")
C("flip_2x3_all", "flip", A(X23), note="axis=None: every axis")
C("flip_2x3_ax0", "flip", A(X23), axis=0)
C("flip_2x3x4_axm1", "flip", A(X234), axis=-1)
C("flip_2x3x4_ax02", "flip", A(X234), axis=(0, 2))
C("pad_2x3_int", "pad", A(X23), 1, note="pad_width int: that much before and after on every axis")
C("pad_2x3_pairs", "pad", A(X23), ((1, 0), (0, 2)))
C("pad_2x3_one_pair", "pad", A(X23), ((1, 2),), note="one pair broadcasts to every axis")
C("pad_2x3_constant_values", "pad", A(X23), ((0, 1), (2, 1)), constant_values=1.5)
C("pad_2x3x4_mode_constant", "pad", A(X234), ((0, 0), (1, 1), (2, 0)), mode="constant")
C("cumsum_2x3_all", "cumsum", A(X23), note="axis=None: the flattened array")
C("cumsum_2x3_ax0", "cumsum", A(X23), axis=0)
C("cumsum_2x3_ax1", "cumsum", A(X23), axis=1)
C("cumsum_2x3x4_axm1", "cumsum", A(X234), axis=-1)

# -- construction and conversion (values only) ---------------------------------------------
C("one_hot_3_4", "one_hot", A((3,), "int", 0, 4), 4, grad=False)
C("one_hot_2x3_5", "one_hot", A(X23, "int", 0, 5), 5, grad=False)
C("one_hot_3_4_ax0", "one_hot", A((3,), "int", 0, 4), 4, axis=0, grad=False)
C("one_hot_out_of_range", "one_hot", A((4,), lambda r, s: np.array([-1, 4, 1, 3], np.int32)),
  4, grad=False, note="out-of-range labels (negative or >= num_classes): an all-zero row")
C("one_hot_dtype_int32", "one_hot", A((3,), "int", 0, 3), 3, dtype="int32", grad=False)
C("ones_2x3", "ones", (2, 3), grad=False)
C("ones_int32", "ones", (3,), dtype="int32", grad=False)
C("zeros_2x3", "zeros", (2, 3), grad=False)
C("zeros_int32", "zeros", (2, 2), dtype="int32", grad=False)
C("ones_like_2x3", "ones_like", A(X23), grad=False)
C("ones_like_int", "ones_like", A(X23, "int", 0, 5), grad=False, note="keeps the int32 dtype")
C("zeros_like_2x3", "zeros_like", A(X23), grad=False)
C("zeros_like_dtype", "zeros_like", A(X23), dtype="int32", grad=False)
C("arange_5", "arange", 5, grad=False, note="int arguments: int32")
C("arange_1_7_2", "arange", 1, 7, 2, grad=False)
C("arange_float", "arange", 0.0, 1.0, 0.25, grad=False, note="float arguments: float32")
C("arange_dtype_float32", "arange", 4, dtype="float32", grad=False)
C("shape_2x3x4", "shape", A(X234), grad=False, note="a tuple of Python ints (stored as int32)")

# -- activations --------------------------------------------------------------------------
for _op in ("relu", "sigmoid", "tanh", "softplus", "silu", "elu", "leaky_relu"):
    gen = "offzero" if _op in ("relu", "elu", "leaky_relu") else "normal"
    C(f"{_op}_2x3", _op, A(X23, gen, scale=2.0))
    C(f"{_op}_2x3x4", _op, A(X234, gen, scale=2.0))
C("relu6_2x3x4", "relu6", A(X234, off_points([0.0, 6.0], -8.0, 8.0, 0.2)))
C("relu6_2x3", "relu6", A(X23, off_points([0.0, 6.0], -8.0, 8.0, 0.2)))
C("elu_alpha05", "elu", A(X234, "offzero"), alpha=0.5)
C("leaky_relu_slope01", "leaky_relu", A(X234, "offzero"), negative_slope=0.1,
  note="the default negative_slope of keras.ops.leaky_relu is 0.2")
C("softplus_large", "softplus", A((2, 4), lambda r, s: np.array(
    [[-30.0, -5.0, 5.0, 30.0], [-80.0, 0.5, 20.0, 80.0]], np.float32)))
C("gelu_2x3x4", "gelu", A(X234, scale=2.0), note="approximate=True (tanh) is the default")
C("gelu_approx_true", "gelu", A(X234, scale=2.0), approximate=True)
C("gelu_approx_false", "gelu", A(X234, scale=2.0), approximate=False)
C("softmax_2x3", "softmax", A(X23, scale=2.0))
C("softmax_2x3x4_axm1", "softmax", A(X234, scale=2.0), axis=-1)
C("softmax_2x3x4_ax1", "softmax", A(X234, scale=2.0), axis=1)
C("softmax_2x3_ax0", "softmax", A(X23, scale=2.0), axis=0)
C("softmax_2x3x4_ax12", "softmax", A(X234, scale=2.0), axis=(1, 2),
  note="a tuple axis: one softmax over the joined axes")
C("log_softmax_2x3", "log_softmax", A(X23, scale=2.0))
C("log_softmax_2x3x4_ax1", "log_softmax", A(X234, scale=2.0), axis=1)
C("log_softmax_2x3_ax0", "log_softmax", A(X23, scale=2.0), axis=0)

# -- nn ------------------------------------------------------------------------------------
K1 = (3, 3, 4)      # 1-D kernel: (width, in, out)
K2 = (3, 3, 3, 4)   # 2-D kernel: (h, w, in, out)
C("conv1d_valid_s1", "conv", A((2, 7, 3)), A(K1, scale=0.5))
C("conv1d_same_s1", "conv", A((2, 7, 3)), A(K1, scale=0.5), padding="same")
C("conv1d_same_s2", "conv", A((2, 7, 3)), A(K1, scale=0.5), strides=2, padding="same")
C("conv1d_valid_s2", "conv", A((2, 7, 3)), A(K1, scale=0.5), strides=2, padding="valid")
C("conv1d_valid_d2", "conv", A((2, 7, 3)), A(K1, scale=0.5), dilation_rate=2)
C("conv2d_valid_s1", "conv", A((2, 5, 5, 3)), A(K2, scale=0.5))
C("conv2d_same_s1", "conv", A((2, 5, 5, 3)), A(K2, scale=0.5), padding="same")
C("conv2d_valid_s2", "conv", A((2, 5, 5, 3)), A(K2, scale=0.5), strides=2)
C("conv2d_same_s2", "conv", A((2, 5, 5, 3)), A(K2, scale=0.5), strides=2, padding="same",
  note="same with stride 2 on an odd size: TF/XLA padding, the extra pad goes after")
C("conv2d_same_s2_even", "conv", A((2, 6, 6, 3)), A(K2, scale=0.5), strides=2, padding="same",
  note="same with stride 2 on an even size: pad 0 before, 1 after")
C("conv2d_valid_s21", "conv", A((2, 5, 5, 3)), A((2, 3, 3, 2), scale=0.5), strides=(2, 1))
C("conv2d_valid_d2", "conv", A((2, 5, 5, 3)), A((2, 2, 3, 4), scale=0.5), dilation_rate=2)
C("conv2d_same_d2", "conv", A((2, 5, 5, 3)), A(K2, scale=0.5), padding="same", dilation_rate=2)
C("depthwise_conv2d_valid_s1", "depthwise_conv", A((2, 5, 5, 3)), A((3, 3, 3, 2), scale=0.5),
  note="kernel (h, w, in_channels, depth_multiplier); output channel c*mult + m")
C("depthwise_conv2d_same_s1", "depthwise_conv", A((2, 5, 5, 3)), A((3, 3, 3, 1), scale=0.5),
  padding="same")
C("depthwise_conv2d_same_s2", "depthwise_conv", A((2, 5, 5, 3)), A((3, 3, 3, 2), scale=0.5),
  strides=2, padding="same")
C("depthwise_conv2d_valid_d2", "depthwise_conv", A((2, 5, 5, 3)),
  A((2, 2, 3, 2), scale=0.5), dilation_rate=2)

_STRIDES_NONE_NOTE = ("strides=None means strides=pool_size, but keras.ops.max_pool/"
                      "average_pool with strides=None raise a TypeError on the JAX backend "
                      "in Keras 3.15.1 (pool_size is made a spatial operand twice); this "
                      "value was computed with strides=pool_size")
for _op in ("max_pool", "average_pool"):
    gen = distinct if _op == "max_pool" else "normal"
    for dims, shape in (("2d", (2, 5, 5, 3)), ("1d", (2, 7, 3))):
        C(f"{_op}{dims}_p2_snone_valid", _op, A(shape, gen), 2, note=_STRIDES_NONE_NOTE,
          call_kwargs={"strides": 2})
        C(f"{_op}{dims}_p2_snone_same", _op, A(shape, gen), 2, padding="same",
          note=_STRIDES_NONE_NOTE + ("; average_pool 'same' divides by the number of "
                                     "real (unpadded) entries" if _op == "average_pool"
                                     else "; the padding counts as -inf"),
          call_kwargs={"strides": 2, "padding": "same"})
        C(f"{_op}{dims}_p2_s1_valid", _op, A(shape, gen), 2, strides=1)
        C(f"{_op}{dims}_p2_s1_same", _op, A(shape, gen), 2, strides=1, padding="same")
        C(f"{_op}{dims}_p2_s2_valid", _op, A(shape, gen), 2, strides=2)
    C(f"{_op}2d_p3_s2_same", _op, A((2, 6, 6, 3), gen), 3, strides=2, padding="same")
    C(f"{_op}2d_p23_s1_valid", _op, A((2, 5, 5, 3), gen), (2, 3), strides=1)

C("normalize_2x3", "normalize", A(X23))
C("normalize_2x3x4_axm1", "normalize", A(X234), axis=-1, order=2)
C("normalize_2x3x4_ax0", "normalize", A(X234), axis=0)
C("normalize_2x3x4_order1", "normalize", A(X234, "offzero"), axis=-1, order=1,
  note="order != 2: x / max(norm, eps) via linalg.norm; order 2: x * min(rsqrt(sum x^2), 1/eps)")

C("binary_crossentropy_probs", "binary_crossentropy", A(X23, "uniform", 0.0, 1.0),
  A(X23, bce_probs), note="probs clipped to [1e-7, 1 - 1e-7] (the clip's gradient is zero "
  "outside); the target is differentiable too")
C("binary_crossentropy_probs_hard", "binary_crossentropy",
  A(X234, lambda r, s: (r.random(s) < 0.5).astype(np.float32)), A(X234, bce_probs))
C("binary_crossentropy_logits", "binary_crossentropy", A(X23, "uniform", 0.0, 1.0),
  A(X23, scale=3.0), from_logits=True)
C("binary_crossentropy_logits_hard", "binary_crossentropy",
  A(X234, lambda r, s: (r.random(s) < 0.5).astype(np.float32)), A(X234, scale=3.0),
  from_logits=True)
C("categorical_crossentropy_probs", "categorical_crossentropy", A((2, 4), "onehot"),
  A((2, 4), "probs"), note="no reduction over the batch: one value per row")
C("categorical_crossentropy_probs_soft", "categorical_crossentropy", A((2, 3, 4), "probs"),
  A((2, 3, 4), "probs"))
C("categorical_crossentropy_probs_unnormalized", "categorical_crossentropy",
  A((2, 4), "onehot"), A((2, 4), probs_unnormalized),
  note="output / sum(output, axis) first, then clip to [1e-7, 1 - 1e-7], then log")
C("categorical_crossentropy_logits", "categorical_crossentropy", A((2, 4), "onehot"),
  A((2, 4), scale=2.0), from_logits=True)
C("categorical_crossentropy_logits_soft", "categorical_crossentropy", A((2, 3, 4), "probs"),
  A((2, 3, 4), scale=2.0), from_logits=True)
C("categorical_crossentropy_logits_ax0", "categorical_crossentropy", A((4, 2), lambda r, s:
  np.eye(4, dtype=np.float32)[r.integers(0, 4, 2)].T.copy()), A((4, 2), scale=2.0),
  from_logits=True, axis=0)
C("sparse_categorical_crossentropy_probs", "sparse_categorical_crossentropy",
  A((3,), "int", 0, 4), A((3, 4), "probs"))
C("sparse_categorical_crossentropy_probs_unnormalized", "sparse_categorical_crossentropy",
  A((3,), "int", 0, 4), A((3, 4), probs_unnormalized))
C("sparse_categorical_crossentropy_logits", "sparse_categorical_crossentropy",
  A((3,), "int", 0, 4), A((3, 4), scale=2.0), from_logits=True)
C("sparse_categorical_crossentropy_logits_3d", "sparse_categorical_crossentropy",
  A((2, 3), "int", 0, 4), A((2, 3, 4), scale=2.0), from_logits=True)
C("sparse_categorical_crossentropy_target_nx1", "sparse_categorical_crossentropy",
  A((3, 1), "int", 0, 4), A((3, 4), scale=2.0), from_logits=True,
  note="a target of shape (N, 1) with output (N, C) is squeezed to (N,)")

# ----------------------------------------------------------------------------------------
# running the cases


def _materialize(obj, rng, arrays):
    """Replaces each ``A`` in ``obj`` by a reference ``{"in": k}``, appending its value."""
    if isinstance(obj, A):
        arrays.append(obj.make(rng))
        return {"in": len(arrays) - 1}
    if isinstance(obj, list):
        return [_materialize(o, rng, arrays) for o in obj]
    if isinstance(obj, tuple):
        return tuple(_materialize(o, rng, arrays) for o in obj)
    if isinstance(obj, dict):
        return {k: _materialize(v, rng, arrays) for k, v in obj.items()}
    return obj


def _resolve(obj, values):
    """Puts ``values[k]`` in place of each ``{"in": k}``."""
    if isinstance(obj, dict):
        if set(obj) == {"in"}:
            return values[obj["in"]]
        return {k: _resolve(v, values) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_resolve(o, values) for o in obj]
    if isinstance(obj, tuple):
        return tuple(_resolve(o, values) for o in obj)
    return obj


def _to_json(obj):
    """Tuples -> JSON lists; lists -> ``{"list": [...]}``; numpy scalars -> Python."""
    if isinstance(obj, dict):
        return {k: _to_json(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return {"list": [_to_json(o) for o in obj]}
    if isinstance(obj, tuple):
        return [_to_json(o) for o in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _repr(obj):
    if isinstance(obj, dict) and set(obj) == {"in"}:
        return f"in{obj['in']}"
    if isinstance(obj, list):
        return "[" + ", ".join(_repr(o) for o in obj) + "]"
    if isinstance(obj, tuple):
        inner = ", ".join(_repr(o) for o in obj)
        return "(" + inner + ("," if len(obj) == 1 else "") + ")"
    return repr(obj)


def _is_float(a):
    return np.issubdtype(np.asarray(a).dtype, np.floating)


def _flatten_out(out):
    """(list of numpy arrays, structure): structure is ``array``, ``tuple``, ``list``
    (of arrays) or ``shape`` (a tuple of ints)."""
    if isinstance(out, tuple) and all(isinstance(o, int) for o in out):
        return [np.asarray(out, np.int32)], "shape"
    if isinstance(out, (tuple, list)):
        return [np.asarray(o) for o in out], type(out).__name__
    return [np.asarray(out)], "array"


def _fd_check(fn, floats, cot, grads, cid):
    """Compares <grad, v> with a central difference of <f, cot> along a random v."""
    rng = np.random.default_rng(12345)

    def scalar(xs):
        out = fn(*xs)
        outs = out if isinstance(out, (tuple, list)) else [out]
        cots = cot if isinstance(cot, (tuple, list)) else [cot]
        return sum(float(np.sum(np.asarray(o, np.float64) * np.asarray(c, np.float64)))
                   for o, c in zip(outs, cots))

    vs = [rng.standard_normal(np.shape(f)).astype(np.float32) for f in floats]
    analytic = sum(float(np.sum(np.asarray(g, np.float64) * v)) for g, v in zip(grads, vs))
    h = 2e-3
    plus = scalar([jnp.asarray(f + h * v) for f, v in zip(floats, vs)])
    minus = scalar([jnp.asarray(f - h * v) for f, v in zip(floats, vs)])
    numeric = (plus - minus) / (2 * h)
    scale = max(1.0, abs(analytic), abs(numeric))
    if abs(analytic - numeric) > 2e-2 * scale:
        raise AssertionError(f"{cid}: vjp {analytic:.6g} vs finite difference {numeric:.6g}")


def run_case(case):
    cid, op = case["id"], case["op"]
    seed = zlib.crc32(cid.encode()) & 0x7FFFFFFF
    rng = np.random.default_rng(seed)
    arrays: list[np.ndarray] = []
    args = _materialize(tuple(case["args"]), rng, arrays)
    kwargs = _materialize(case["kwargs"], rng, arrays)
    call_kwargs = dict(kwargs)
    call_kwargs.update(case["call_kwargs"] or {})
    fn = getattr(ops, op)
    float_idx = [k for k, a in enumerate(arrays) if _is_float(a)] if case["grad"] else []

    def call(*floats):
        values = [jnp.asarray(a) for a in arrays]
        for k, f in zip(float_idx, floats):
            values[k] = f
        return fn(*_resolve(args, values), **_resolve(call_kwargs, values))

    floats = [jnp.asarray(arrays[k]) for k in float_idx]
    store: dict[str, np.ndarray] = {}
    for k, a in enumerate(arrays):
        store[f"in{k}"] = np.asarray(a)
    if case["grad"]:
        assert float_idx, f"{cid}: no float argument to differentiate"
        out, vjp_fn = jax.vjp(call, *floats)
        leaves, treedef = jax.tree_util.tree_flatten(out)
        cot_leaves = [jnp.asarray(rng.standard_normal(np.shape(x)).astype(np.float32))
                      for x in leaves]
        cot = jax.tree_util.tree_unflatten(treedef, cot_leaves)
        grads = vjp_fn(cot)
        for g, f in zip(grads, floats):
            assert g.shape == f.shape and g.dtype == np.float32, (cid, g.shape, g.dtype)
        _fd_check(call, [np.asarray(f) for f in floats], cot, grads, cid)
    else:
        out = call()
        cot_leaves, grads = [], []
    outs, structure = _flatten_out(out)
    multi = structure in ("tuple", "list")
    for i, o in enumerate(outs):
        store[f"out{i}" if multi else "out"] = o
    for i, c in enumerate(cot_leaves):
        store[f"cot{i}" if multi else "cot"] = np.asarray(c)
    for k, g in zip(float_idx, grads):
        store[f"grad{k}"] = np.asarray(g)
    for name, v in store.items():
        assert np.all(np.isfinite(v)) if _is_float(v) else True, (cid, name)

    def info(name):
        v = store[name]
        return {"name": name, "shape": list(v.shape), "dtype": str(v.dtype)}

    call_repr = ", ".join([_repr(a) for a in args]
                          + [f"{k}={_repr(v)}" for k, v in kwargs.items()])
    entry = {
        "id": cid,
        "op": op,
        "keras": f"keras.ops.{op}",
        "call": f"ops.{op}({call_repr})",
        "seed": seed,
        "args": _to_json(list(args))["list"],
        "kwargs": _to_json(kwargs),
        "inputs": [info(f"in{k}") for k in range(len(arrays))],
        "output_structure": structure,
        "outputs": [info(f"out{i}" if multi else "out") for i in range(len(outs))],
        "differentiable": bool(case["grad"]),
    }
    if case["grad"]:
        entry["cotangents"] = [info(f"cot{i}" if multi else "cot")
                               for i in range(len(cot_leaves))]
        entry["grads"] = [dict(info(f"grad{k}"), wrt=f"in{k}") for k in float_idx]
    if case["call_kwargs"]:
        entry["computed_with_kwargs"] = _to_json(call_kwargs)
    if case["note"]:
        entry["note"] = case["note"]
    return entry, {f"{cid}/{k}": v for k, v in store.items()}


NOTES = [
    "Semantics of keras.ops on the JAX backend (Keras 3.15.1) that tinynet.ops must match:",
    "std and var use ddof=0 (population); moments(x, axes, keepdims=False) returns "
    "(mean, variance), variance with ddof=0.",
    "argmax/argmin: ties go to the first index; axis=None indexes the flattened array; "
    "the result is int32.",
    "clip(x, lo, hi) = minimum(maximum(x, lo), hi) in JAX: at x == lo or x == hi exactly the "
    "gradient is 0.5 (JAX splits maximum/minimum ties evenly); maximum/minimum and "
    "max/min reductions split ties evenly too.",
    "Gradients at kinks on JAX: relu'(0) = 0, relu6'(0) = relu6'(6) = 0, abs'(0) = 1, "
    "leaky_relu'(0) = 1, elu'(0) = 1.",
    "gelu's default is approximate=True (tanh form); leaky_relu's default negative_slope "
    "is 0.2; elu's alpha 1.0.",
    "binary/categorical/sparse_categorical_crossentropy without logits clip the "
    "probabilities to [epsilon, 1 - epsilon] with keras.backend.epsilon() = 1e-7 (the clip "
    "passes no gradient outside); (sparse_)categorical first divide output by its sum "
    "along axis. No reduction: one value per element (binary) or per row (categorical). "
    "sparse: a target of shape (N, 1) with output (N, C) is squeezed.",
    "take on JAX: negative indices wrap; out-of-range indices do not raise: they give NaN "
    "for float x and INT_MIN for int x (jnp.take's mode='fill').",
    "pad(x, pad_width, mode='constant', constant_values=None): pad_width as in numpy (an "
    "int, a single (before, after) pair, or one pair per axis); constant_values only with "
    "mode='constant'.",
    "split(x, n) with an int: n equal parts (a ValueError when the axis does not divide); "
    "with a list: the split points ([1, 4] -> [:1], [1:4], [4:]); returns a list.",
    "repeat(x, repeats): per-element repeats must be an array (a Python list raises on JAX).",
    "one_hot: out-of-range labels (negative, >= num_classes) give all-zero rows; float32 by "
    "default.",
    "normalize(x, axis=-1, order=2, epsilon=None): order 2 is x * minimum(rsqrt(sum(x^2)), "
    "1/epsilon), epsilon = 1e-7; other orders x / maximum(norm, epsilon).",
    "max_pool/average_pool with strides=None raise on JAX in Keras 3.15.1; the fixture's "
    "strides=None cases are computed with strides=pool_size (the documented meaning). "
    "average_pool with padding='same' divides by the count of real entries in the window.",
    "arange: int arguments give int32, float arguments float32; divide of ints gives "
    "float32; mean of ints gives float32.",
]


def _dump_json(doc) -> str:
    """JSON with one line per metadata entry, note and case field (compact values)."""
    lines = ["{", ' "metadata": {']
    items = list(doc["metadata"].items())
    lines += [f"  {json.dumps(k)}: {json.dumps(v)}" + ("," if i < len(items) - 1 else "")
              for i, (k, v) in enumerate(items)]
    lines += [" },", ' "notes": [']
    lines += [f"  {json.dumps(n)}" + ("," if i < len(doc["notes"]) - 1 else "")
              for i, n in enumerate(doc["notes"])]
    lines += [" ],", ' "cases": [']
    for ci, case in enumerate(doc["cases"]):
        fields = list(case.items())
        lines.append("  {")
        lines += [f"   {json.dumps(k)}: {json.dumps(v)}" + ("," if i < len(fields) - 1 else "")
                  for i, (k, v) in enumerate(fields)]
        lines.append("  }" + ("," if ci < len(doc["cases"]) - 1 else ""))
    lines += [" ]", "}"]
    text = "\n".join(lines) + "\n"
    assert json.loads(text) == json.loads(json.dumps(doc))
    return text


def main():
    os.makedirs(DATA, exist_ok=True)
    assert keras.__version__ == KERAS_VERSION, keras.__version__
    assert keras.backend.backend() == "jax", keras.backend.backend()
    assert keras.config.floatx() == "float32"
    entries, arrays = [], {}
    for case in CASES:
        entry, store = run_case(case)
        entries.append(entry)
        arrays.update(store)
    np.savez_compressed(NPZ, **arrays)
    meta = {
        "generator": "tests/ops/make_keras_reference.py",
        "command": "KERAS_BACKEND=jax /work/scratch/keras-venv/bin/python "
                   "tests/ops/make_keras_reference.py",
        "date": datetime.date.today().isoformat(),
        "keras": keras.__version__,
        "backend": keras.backend.backend(),
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "device": str(jax.devices()[0]),
        "floatx": keras.config.floatx(),
        "epsilon": keras.backend.epsilon(),
        "npz_keys": "<id>/in<k>, <id>/out or <id>/out<k>, <id>/cot or <id>/cot<k>, "
                    "<id>/grad<k> (gradient of sum(out * cot) with respect to in<k>)",
        "argument_encoding": "{\"in\": k} is the array <id>/in<k>; a JSON list is a "
                             "Python tuple; {\"list\": [...]} is a Python list",
        "num_cases": len(entries),
    }
    with open(JSON, "w") as fh:
        fh.write(_dump_json({"metadata": meta, "notes": NOTES, "cases": entries}))

    counts = Counter(e["op"] for e in entries)
    ngrad = sum(e["differentiable"] for e in entries)
    print(f"{len(entries)} cases ({ngrad} with gradients), {len(counts)} ops, "
          f"{len(arrays)} arrays")
    for op, n in sorted(counts.items()):
        print(f"  {op:34s} {n}")
    for path in (NPZ, JSON):
        print(f"{os.path.relpath(path, os.getcwd())}: {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    sys.exit(main())
