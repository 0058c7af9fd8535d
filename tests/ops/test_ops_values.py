"""``tinynet.ops``: hand-derived values, NumPy references, dtype rules, Tensor operators,
gradients at kinks (JAX's choices), bitwise determinism and error messages."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from tinynet import ops, tuning
from tinynet.ops.autodiff import Graph, backprop
from tinynet.ops.core import OpError
from tinynet.tensor import Tensor


@pytest.fixture(autouse=True)
def _restore_tuning():
    tuning.reset()
    yield
    tuning.reset()


def _grads(fn, *xs, cot=None):
    """The values and gradients of ``sum(fn(*leaves) * cot)`` (cot: ones by default)."""
    with Graph() as g:
        leaves = [g.leaf(np.asarray(x)) for x in xs]
        out = fn(*leaves)
    c = np.ones(out.shape, out.dtype) if cot is None else np.asarray(cot, out.dtype)
    backprop([out], [c])
    return out, [leaf._node.grad for leaf in leaves]


# ----------------------------------------------------------------------------------------
# hand-derived values

F32 = np.float32


def test_logsumexp_of_zero_and_log3_is_log4():
    out = ops.logsumexp(np.array([0.0, math.log(3.0)], F32))
    assert out.dtype == F32 and out.shape == ()
    np.testing.assert_allclose(out.data, math.log(4.0), rtol=1e-7)


def test_logsumexp_is_stable_for_large_inputs():
    out = ops.logsumexp(np.array([[1000.0, 1000.0], [-1000.0, -1000.0]], F32), axis=1)
    np.testing.assert_allclose(out.data, [1000 + math.log(2), -1000 + math.log(2)], rtol=1e-7)
    assert ops.logsumexp(np.full((3,), -np.inf, F32)).data == -np.inf


def test_softmax_of_equal_logits_is_uniform():
    out = ops.softmax(np.full((2, 4), 7.5, F32))
    np.testing.assert_array_equal(out.data, np.full((2, 4), 0.25, F32))
    np.testing.assert_array_equal(ops.softmax(np.array([1e4, 1e4, 1e4], F32)).data,
                                  np.full(3, F32(1 / 3)))


def test_log_softmax_and_log_sigmoid_at_known_points():
    np.testing.assert_allclose(ops.log_softmax(np.zeros(4, F32)).data, np.full(4, -math.log(4)),
                               rtol=1e-7)
    np.testing.assert_allclose(ops.log_sigmoid(np.array([0.0, -100.0], F32)).data,
                               [-math.log(2), -100.0], rtol=1e-7)


def test_var_std_and_moments_are_biased():
    x = np.array([1.0, 2.0, 3.0, 4.0], F32)
    assert float(ops.var(x).data) == 1.25
    np.testing.assert_allclose(ops.std(x).data, math.sqrt(1.25), rtol=1e-7)
    m, v = ops.moments(x.reshape(2, 2), axes=[0, 1])
    assert float(m.data) == 2.5 and float(v.data) == 1.25


def test_one_hot_out_of_range_ids_give_zero_rows():
    out = ops.one_hot(np.array([1, 3, -1, 0]), 3)
    assert out.dtype == F32
    np.testing.assert_array_equal(out.data, [[0, 1, 0], [0, 0, 0], [0, 0, 0], [1, 0, 0]])
    np.testing.assert_array_equal(ops.one_hot(np.array([2, 0]), 3, axis=0).data,
                                  [[0, 1], [0, 0], [1, 0]])
    np.testing.assert_array_equal(ops.multi_hot(np.array([[0, 2], [1, 1]]), 3).data,
                                  [[1, 0, 1], [0, 1, 0]])


@pytest.mark.parametrize("fn,x,expected", [
    (ops.sigmoid, 0.0, 0.5),
    (ops.tanh, 0.0, 0.0),
    (ops.softplus, 0.0, math.log(2.0)),
    (ops.softsign, 1.0, 0.5),
    (ops.gelu, 0.0, 0.0),
    (lambda x: ops.gelu(x, approximate=False), 1.0, 0.5 * (1 + math.erf(1 / math.sqrt(2)))),
    (ops.silu, 1.0, 1 / (1 + math.exp(-1))),
    (ops.elu, -1.0, math.exp(-1) - 1),
    (ops.selu, 1.0, 1.0507009873554805),
    (ops.leaky_relu, -1.0, -0.2),
    (ops.relu6, 7.0, 6.0),
    (ops.hard_sigmoid, 1.5, 0.75),
    (ops.hard_silu, 1.5, 1.125),
    (ops.erf, 0.5, math.erf(0.5)),
    (ops.rsqrt, 4.0, 0.5),
    (ops.log2, 8.0, 3.0),
    (ops.log10, 1000.0, 3.0),
    (ops.expm1, 1e-10, 1e-10),
    (ops.log1p, 1e-10, 1e-10),
    (lambda x: ops.norm(ops.stack([x, ops.multiply(x, 4 / 3)])), 3.0, 5.0),
])
def test_known_values(fn, x, expected):
    out = fn(np.array(x, F32))
    assert out.dtype == F32
    np.testing.assert_allclose(out.data, expected, rtol=2e-7, atol=1e-12)


def test_cumulative_and_products():
    np.testing.assert_array_equal(ops.cumsum(np.array([1, 2, 3])).data, [1, 3, 6])
    np.testing.assert_array_equal(ops.cumprod(np.array([[1.0, 2.0], [3.0, 4.0]], F32)).data,
                                  [1, 2, 6, 24])
    assert int(ops.prod(np.array([2, 3, 4])).data) == 24
    assert int(ops.count_nonzero(np.array([[0, 1], [2, 0]])).data) == 2


def test_normalize_rows():
    out = ops.normalize(np.array([[3.0, 4.0], [0.0, 0.0]], F32))
    np.testing.assert_allclose(out.data, [[0.6, 0.8], [0.0, 0.0]], rtol=1e-7)
    out1 = ops.normalize(np.array([[1.0, -3.0]], F32), order=1)
    np.testing.assert_allclose(out1.data, [[0.25, -0.75]], rtol=1e-7)


def test_crossentropies_at_known_points():
    p = np.array([[0.25, 0.75]], F32)
    np.testing.assert_allclose(ops.categorical_crossentropy(np.array([[0.0, 1.0]], F32), p).data,
                               [-math.log(0.75)], rtol=1e-6)
    np.testing.assert_allclose(ops.sparse_categorical_crossentropy(np.array([0]), p).data,
                               [-math.log(0.25)], rtol=1e-6)
    np.testing.assert_allclose(
        ops.binary_crossentropy(np.array([1.0, 0.0], F32), np.array([0.0, 0.0], F32),
                                from_logits=True).data, [math.log(2), math.log(2)], rtol=1e-6)
    # probabilities are clipped to [1e-7, 1 - 1e-7]: finite at 0 and 1
    out = ops.binary_crossentropy(np.array([1.0], F32), np.array([0.0], F32))
    np.testing.assert_allclose(out.data, [-math.log(1e-7)], rtol=1e-3)


def test_where_one_argument_gives_indices():
    rows, cols = ops.where(np.array([[True, False], [False, True]]))
    assert rows.dtype == np.int32
    np.testing.assert_array_equal(rows.data, [0, 1])
    np.testing.assert_array_equal(cols.data, [0, 1])


def test_argmax_ties_and_flattened():
    x = np.array([[1.0, 3.0, 3.0], [5.0, -1.0, 5.0]], F32)
    np.testing.assert_array_equal(ops.argmax(x, axis=1).data, [1, 0])
    assert int(ops.argmax(x).data) == 3 and int(ops.argmin(x).data) == 4
    assert ops.argmax(x, axis=0, keepdims=True).shape == (1, 3)


def test_zero_dimensional_results_keep_shape_unit():
    v = np.array([1.0, 2.0, 3.0], F32)
    m = np.arange(6, dtype=F32).reshape(2, 3)
    assert ops.matmul(v, v).shape == ()
    assert ops.dot(v, v).shape == ()
    assert ops.vdot(m, m).shape == () and ops.inner(v, v).shape == ()
    assert ops.getitem(m, (1, 2)).shape == () and float(ops.getitem(m, (1, 2)).data) == 5.0
    assert ops.take(v, 1).shape == ()
    assert ops.reshape(np.ones(1, F32), ()).shape == ()
    assert ops.einsum("i,i->", v, v).shape == ()
    assert ops.convert_to_tensor(2.0).shape == ()
    assert ops.sum(m).shape == () and ops.max(m).shape == ()


# ----------------------------------------------------------------------------------------
# NumPy references for ops the Keras fixture does not cover

_RNG = np.random.default_rng(3)
X = _RNG.standard_normal((2, 3, 4)).astype(F32)
M = _RNG.standard_normal((3, 4)).astype(F32)
P = _RNG.uniform(0.5, 2.0, (2, 3)).astype(F32)
Y = _RNG.standard_normal((3, 4, 5)).astype(F32)


def _sig(x):
    return 1 / (1 + np.exp(-x.astype(np.float64)))


NUMPY_CASES = {
    "rsqrt": (lambda: ops.rsqrt(P), lambda: 1 / np.sqrt(P)),
    "reciprocal": (lambda: ops.reciprocal(P), lambda: 1 / P),
    "expm1": (lambda: ops.expm1(X), lambda: np.expm1(X)),
    "log1p": (lambda: ops.log1p(P), lambda: np.log1p(P)),
    "log2": (lambda: ops.log2(P), lambda: np.log2(P)),
    "log10": (lambda: ops.log10(P), lambda: np.log10(P)),
    "true_divide": (lambda: ops.true_divide(X, 3.0), lambda: X / F32(3)),
    "mod": (lambda: ops.mod(X, 0.7), lambda: np.mod(X, F32(0.7))),
    "mod_negative_divisor": (lambda: ops.mod(np.array([5, -5], np.int32), -3),
                             lambda: np.array([-1, -2], np.int32)),
    "floor_divide": (lambda: ops.floor_divide(np.array([7, -7], np.int32), 2),
                     lambda: np.array([3, -4], np.int32)),
    "sign": (lambda: ops.sign(X), lambda: np.sign(X)),
    "floor": (lambda: ops.floor(X * 3), lambda: np.floor(X * 3)),
    "ceil": (lambda: ops.ceil(X * 3), lambda: np.ceil(X * 3)),
    "round_half_even": (lambda: ops.round(np.array([0.5, 1.5, 2.5, -0.5], F32)),
                        lambda: np.array([0.0, 2.0, 2.0, -0.0], F32)),
    "round_decimals": (lambda: ops.round(X, 1), lambda: np.round(X, 1)),
    "sin": (lambda: ops.sin(X), lambda: np.sin(X)),
    "cos": (lambda: ops.cos(X), lambda: np.cos(X)),
    "tan": (lambda: ops.tan(X), lambda: np.tan(X)),
    "arctan": (lambda: ops.arctan(X), lambda: np.arctan(X)),
    "sinh": (lambda: ops.sinh(X), lambda: np.sinh(X)),
    "cosh": (lambda: ops.cosh(X), lambda: np.cosh(X)),
    "nan_to_num": (lambda: ops.nan_to_num(np.array([np.nan, np.inf, -np.inf, 1.0], F32)),
                   lambda: np.nan_to_num(np.array([np.nan, np.inf, -np.inf, 1.0], F32))),
    "nan_to_num_values": (
        lambda: ops.nan_to_num(np.array([np.nan, np.inf, -np.inf], F32), nan=1.0,
                               posinf=2.0, neginf=-2.0),
        lambda: np.array([1.0, 2.0, -2.0], F32)),
    "isnan": (lambda: ops.isnan(np.array([np.nan, 1.0], F32)), lambda: np.array([True, False])),
    "isinf": (lambda: ops.isinf(np.array([np.inf, 1.0], F32)), lambda: np.array([True, False])),
    "isfinite": (lambda: ops.isfinite(np.array([np.nan, 1.0], F32)),
                 lambda: np.array([False, True])),
    "absolute": (lambda: ops.absolute(X), lambda: np.abs(X)),
    "amax": (lambda: ops.amax(X, axis=1), lambda: np.max(X, axis=1)),
    "amin": (lambda: ops.amin(X, axis=(0, 2), keepdims=True),
             lambda: np.min(X, axis=(0, 2), keepdims=True)),
    "max_initial": (lambda: ops.max(np.zeros((0, 2), F32), axis=0, initial=-1.0),
                    lambda: np.array([-1.0, -1.0], F32)),
    "prod": (lambda: ops.prod(P, axis=1), lambda: np.prod(P, axis=1)),
    "any": (lambda: ops.any(X > 1, axis=1), lambda: np.any(X > 1, axis=1)),
    "all": (lambda: ops.all(X > -3, axis=(0, 2)), lambda: np.all(X > -3, axis=(0, 2))),
    "count_nonzero": (lambda: ops.count_nonzero(X > 0, axis=1),
                      lambda: np.count_nonzero(X > 0, axis=1).astype(np.int32)),
    "tensordot": (lambda: ops.tensordot(X, M, axes=([1, 2], [0, 1])),
                  lambda: np.tensordot(X, M, axes=([1, 2], [0, 1]))),
    "tensordot_int": (lambda: ops.tensordot(M, X.transpose(2, 0, 1), axes=1),
                      lambda: np.tensordot(M, X.transpose(2, 0, 1), axes=1)),
    "dot_nd_md": (lambda: ops.dot(X, Y), lambda: np.dot(X, Y)),
    "outer": (lambda: ops.outer(P, M[0]), lambda: np.outer(P, M[0])),
    "inner": (lambda: ops.inner(M[0], M[1]), lambda: np.inner(M[0], M[1])),
    "vdot": (lambda: ops.vdot(M, M), lambda: np.vdot(M, M)),
    "norm_vector": (lambda: ops.norm(M[0]), lambda: np.linalg.norm(M[0])),
    "norm_fro": (lambda: ops.norm(M), lambda: np.linalg.norm(M)),
    "norm_axis_ord1": (lambda: ops.norm(M, ord=1, axis=1), lambda: np.linalg.norm(M, 1, axis=1)),
    "norm_axis_inf": (lambda: ops.norm(M, ord=np.inf, axis=0, keepdims=True),
                      lambda: np.linalg.norm(M, np.inf, axis=0, keepdims=True)),
    "einsum_trace_free": (lambda: ops.einsum("bij,bkj->bik", X, X),
                          lambda: np.einsum("bij,bkj->bik", X, X)),
    "einsum_three": (lambda: ops.einsum("bij,jk,bk->bi", X, M.T, P),
                     lambda: np.einsum("bij,jk,bk->bi", X, M.T, P)),
    "einsum_implicit": (lambda: ops.einsum("ij,jk", M.T, M), lambda: np.einsum("ij,jk", M.T, M)),
    "einsum_sum_axis": (lambda: ops.einsum("bij->bj", X), lambda: np.einsum("bij->bj", X)),
    "take_along_axis": (lambda: ops.take_along_axis(X, np.argsort(X, axis=-1), axis=-1),
                        lambda: np.sort(X, axis=-1)),
    "take_along_axis_broadcast": (
        lambda: ops.take_along_axis(X, np.array([[[1, 0, 2, 1]], [[0, 0, 1, 2]]]), axis=1),
        lambda: np.take_along_axis(X, np.array([[[1, 0, 2, 1]], [[0, 0, 1, 2]]]), axis=1)),
    "swapaxes": (lambda: ops.swapaxes(X, 0, -1), lambda: np.swapaxes(X, 0, -1)),
    "moveaxis": (lambda: ops.moveaxis(X, 0, -1), lambda: np.moveaxis(X, 0, -1)),
    "moveaxis_neg_source": (lambda: ops.moveaxis(X, -1, 0), lambda: np.moveaxis(X, -1, 0)),
    "moveaxis_lists": (lambda: ops.moveaxis(X, [0, 1], [2, 0]),
                       lambda: np.moveaxis(X, [0, 1], [2, 0])),
    "ravel": (lambda: ops.ravel(X), lambda: np.ravel(X)),
    "slice": (lambda: ops.slice(X, (1, 0, 1), (1, 2, 3)), lambda: X[1:2, 0:2, 1:4]),
    "unstack": (lambda: ops.stack(ops.unstack(X, axis=1), axis=0),
                lambda: np.moveaxis(X, 1, 0)),
    "diagonal": (lambda: ops.diagonal(X, offset=1, axis1=1, axis2=2),
                 lambda: np.diagonal(X, 1, 1, 2)),
    "diagonal_reversed_axes": (lambda: ops.diagonal(X, offset=-1, axis1=2, axis2=0),
                               lambda: np.diagonal(X, -1, 2, 0)),
    "tril": (lambda: ops.tril(X, -1), lambda: np.tril(X, -1)),
    "triu": (lambda: ops.triu(M, 1), lambda: np.triu(M, 1)),
    "broadcast_to": (lambda: ops.broadcast_to(M[0], (2, 3, 4)),
                     lambda: np.broadcast_to(M[0], (2, 3, 4))),
    "cumprod": (lambda: ops.cumprod(P, axis=1), lambda: np.cumprod(P, axis=1)),
    "pad_reflect": (lambda: ops.pad(M, ((2, 1), (1, 3)), mode="reflect"),
                    lambda: np.pad(M, ((2, 1), (1, 3)), mode="reflect")),
    "pad_symmetric": (lambda: ops.pad(M, 2, mode="symmetric"),
                      lambda: np.pad(M, 2, mode="symmetric")),
    "pad_edge": (lambda: ops.pad(M, ((1, 0), (0, 2)), mode="edge"),
                 lambda: np.pad(M, ((1, 0), (0, 2)), mode="edge")),
    "tile_reps_shorter": (lambda: ops.tile(X, (2, 1)), lambda: np.tile(X, (2, 1))),
    "getitem_mixed": (lambda: ops.getitem(X, (np.s_[:], np.array([2, 0]), np.s_[::-2])),
                      lambda: X[:, [2, 0], ::-2]),
    "getitem_tensor_index": (lambda: ops.getitem(X, ops.convert_to_tensor([1, 0])),
                             lambda: X[[1, 0]]),
    "getitem_bool_mask": (lambda: ops.getitem(M, M > 0), lambda: M[M > 0]),
    "split_list": (lambda: ops.concatenate(ops.split(X, [1, 3], axis=-1)[::-1], axis=-1),
                   lambda: np.concatenate([X[..., 3:], X[..., 1:3], X[..., :1]], axis=-1)),
    "softsign": (lambda: ops.softsign(X), lambda: X / (1 + np.abs(X))),
    "swish": (lambda: ops.swish(X), lambda: X * _sig(X)),
    "selu": (lambda: ops.selu(X),
             lambda: 1.0507009873554805 * np.where(X > 0, X, 1.6732632423543772 * np.expm1(X))),
    "hard_sigmoid": (lambda: ops.hard_sigmoid(X * 4), lambda: np.clip(X * 4 + 3, 0, 6) / 6),
    "hard_silu": (lambda: ops.hard_silu(X * 4), lambda: X * 4 * np.clip(X * 4 + 3, 0, 6) / 6),
    "log_sigmoid": (lambda: ops.log_sigmoid(X), lambda: np.log(_sig(X))),
    "relu6": (lambda: ops.relu6(X * 5), lambda: np.clip(X * 5, 0, 6)),
    "full": (lambda: ops.full((2, 2), 1.5), lambda: np.full((2, 2), 1.5, F32)),
    "full_int": (lambda: ops.full(3, 7), lambda: np.full(3, 7, np.int32)),
    "full_like": (lambda: ops.full_like(M, 2), lambda: np.full(M.shape, 2, F32)),
    "eye": (lambda: ops.eye(2, 3, k=1), lambda: np.eye(2, 3, 1, dtype=F32)),
    "identity": (lambda: ops.identity(3, dtype="int32"), lambda: np.eye(3, dtype=np.int32)),
    "linspace": (lambda: ops.linspace(0.0, 1.0, 5), lambda: np.linspace(0, 1, 5, dtype=F32)),
    "linspace_no_endpoint": (lambda: ops.linspace(0.0, 1.0, 4, endpoint=False),
                             lambda: np.array([0, 0.25, 0.5, 0.75], F32)),
    "copy": (lambda: ops.copy(M), lambda: M),
    "stop_gradient": (lambda: ops.stop_gradient(M), lambda: M),
    "convert_to_numpy": (lambda: Tensor._wrap(ops.convert_to_numpy(ops.ones((2,)))),
                         lambda: np.ones(2, F32)),
}


@pytest.mark.parametrize("name", list(NUMPY_CASES))
def test_matches_numpy(name):
    fn, ref = NUMPY_CASES[name]
    got = fn()
    want = np.asarray(ref())
    assert isinstance(got, Tensor)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind == "f":
        assert got.dtype.kind == "f" and got.dtype.itemsize == 4, got.dtype
        np.testing.assert_allclose(got.data, want, rtol=2e-6, atol=2e-6)
    else:
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        np.testing.assert_array_equal(got.data, want)


def test_shape_queries():
    assert ops.shape(X) == (2, 3, 4) and all(type(d) is int for d in ops.shape(X))
    assert ops.ndim(X) == 3 and ops.size(X) == 24
    assert ops.is_tensor(ops.ones(2)) and not ops.is_tensor(X)
    assert ops.standardize_dtype("float") == np.float32
    assert ops.standardize_dtype(None) is None


# ----------------------------------------------------------------------------------------
# dtype rules (Keras 3 on JAX)


@pytest.mark.parametrize("make,dtype", [
    (lambda: ops.multiply(np.array([1, 2], np.int32), 2.5), np.float32),
    (lambda: ops.add(np.ones(2, F32), 1.5), np.float32),
    (lambda: ops.multiply(np.ones(2, F32), 2), np.float32),
    (lambda: ops.add(np.ones(2), 1.5), np.float64),
    (lambda: ops.exp(np.ones(2)), np.float64),
    (lambda: ops.matmul(np.ones((2, 2)), np.ones((2, 2))), np.float64),
    (lambda: ops.add(np.ones(2, np.int32), 1), np.int32),
    (lambda: ops.add(np.ones(2, np.int32), np.ones(2, F32)), np.float32),
    (lambda: ops.divide(np.array([1, 2], np.int32), np.array([2, 2], np.int32)), np.float32),
    (lambda: ops.floor_divide(np.array([7], np.int32), 2), np.int32),
    (lambda: ops.mean(np.array([1, 2], np.int32)), np.float32),
    (lambda: ops.sum(np.array([True, False])), np.int32),
    (lambda: ops.sqrt(np.array([4], np.int32)), np.float32),
    (lambda: ops.sigmoid(np.array([1], np.int32)), np.float32),
    (lambda: ops.add(2, 3), np.int32),
    (lambda: ops.add(2.0, 3), np.float32),
    (lambda: ops.argmax(np.ones((2, 3), F32), axis=1), np.int32),
    (lambda: ops.argmin(np.ones(3)), np.int32),
    (lambda: ops.count_nonzero(np.ones(3)), np.int32),
    (lambda: ops.greater(np.ones(3, F32), 0.5), np.bool_),
    (lambda: ops.equal(np.ones(3, np.int32), np.ones(3, F32)), np.bool_),
    (lambda: ops.logical_and(np.ones(3), 0), np.bool_),
    (lambda: ops.isnan(np.ones(3, F32)), np.bool_),
    (lambda: ops.convert_to_tensor([1.0, 2.0]), np.float32),
    (lambda: ops.convert_to_tensor([1, 2]), np.int32),
    (lambda: ops.convert_to_tensor(np.ones(2)), np.float32),
    (lambda: ops.convert_to_tensor(np.ones(2, np.int64)), np.int32),
    (lambda: ops.convert_to_tensor([1, 2], dtype="float32"), np.float32),
    (lambda: ops.convert_to_tensor(np.ones(2), dtype="float64"), np.float64),
    (lambda: ops.convert_to_tensor(True), np.bool_),
    (lambda: ops.arange(5), np.int32),
    (lambda: ops.arange(0.0, 1.0, 0.25), np.float32),
    (lambda: ops.ones((2,)), np.float32),
    (lambda: ops.zeros((2,), dtype="int32"), np.int32),
    (lambda: ops.ones_like(np.ones(2, np.int64)), np.int32),
    (lambda: ops.one_hot(np.array([1]), 3), np.float32),
    (lambda: ops.one_hot(np.array([1]), 3, dtype="int32"), np.int32),
    (lambda: ops.cast(np.ones(2, F32), "int32"), np.int32),
    (lambda: ops.cast(np.ones(2, F32), "float16"), np.float16),
    (lambda: ops.clip(np.array([1, 5], np.int32), 0, 3), np.int32),
    (lambda: ops.clip(np.array([1, 5], np.int32), 0.5, 3), np.float32),
    (lambda: ops.where(np.array([True, False]), np.array([1, 2], np.int32), 2.5), np.float32),
    (lambda: ops.concatenate([np.ones(2, np.int32), np.ones(2, F32)]), np.float32),
    (lambda: ops.cumsum(np.array([True, True])), np.int32),
    (lambda: ops.matmul(np.ones((2, 2), np.int32), np.ones((2, 2), np.int32)), np.int32),
])
def test_dtype_rules(make, dtype):
    out = make()
    assert isinstance(out, Tensor)
    assert out.dtype == dtype, f"{out.dtype} != {np.dtype(dtype)}"


def test_convert_to_tensor_keeps_a_tensor_and_float64_on_request():
    t = ops.ones((2,))
    assert ops.convert_to_tensor(t) is t
    x = np.array([0.1, 1 / 3])
    np.testing.assert_array_equal(ops.convert_to_tensor(x, dtype="float64").data, x)


# ----------------------------------------------------------------------------------------
# Tensor operators are recorded ops


def test_affine_with_operators_matches_ops():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3)).astype(F32)
    w = rng.standard_normal((3, 5)).astype(F32)
    b = rng.standard_normal((5,)).astype(F32)
    cot = rng.standard_normal((4, 5)).astype(F32)
    out_op, g_op = _grads(lambda x, w, b: x @ w + b, x, w, b, cot=cot)
    out_fn, g_fn = _grads(lambda x, w, b: ops.add(ops.matmul(x, w), b), x, w, b, cot=cot)
    np.testing.assert_array_equal(out_op.data, out_fn.data)
    for a, c in zip(g_op, g_fn):
        assert a is not None and a.dtype == F32
        np.testing.assert_array_equal(a, c)
    np.testing.assert_array_equal(g_op[2], cot.sum(axis=0))


def test_every_operator_records():
    rng = np.random.default_rng(1)
    x = rng.uniform(0.5, 2.0, (2, 3))
    y = rng.uniform(0.5, 2.0, (2, 3))

    def with_operators(x, y):
        z = (x + y) * (x - 2.0) / y + 3.0 - x ** 2 + 2.0 ** y - (-x) + x @ y.T[:, :1]
        z = z + 1.0 / x - 4.0 * y + abs(x - 1.5) + y[0] + x[:, ::-1] + x.T.T
        return z + 5.0 % (y + 1.0) * 0.0 + y % 0.7 + x.reshape(3, 2).reshape((2, 3))

    def with_ops(x, y):
        z = ops.add(ops.subtract(ops.add(ops.divide(ops.multiply(ops.add(x, y),
                                                                  ops.subtract(x, 2.0)), y), 3.0),
                                 ops.power(x, 2)),
                    ops.power(2.0, y))
        z = ops.add(ops.subtract(z, ops.negative(x)),
                    ops.matmul(x, ops.getitem(ops.transpose(y), np.s_[:, :1])))
        z = ops.add(ops.add(ops.subtract(ops.add(z, ops.divide(1.0, x)), ops.multiply(4.0, y)),
                            ops.abs(ops.subtract(x, 1.5))), ops.getitem(y, 0))
        z = ops.add(ops.add(z, ops.getitem(x, np.s_[:, ::-1])), x)
        z = ops.add(z, ops.multiply(ops.mod(5.0, ops.add(y, 1.0)), 0.0))
        return ops.add(ops.add(z, ops.mod(y, 0.7)), x)

    out_a, ga = _grads(with_operators, x, y)
    out_b, gb = _grads(with_ops, x, y)
    np.testing.assert_allclose(out_a.data, out_b.data, rtol=1e-12)
    for a, b in zip(ga, gb):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_comparisons_and_logic_operators_give_unrecorded_bools():
    with Graph() as g:
        x = g.leaf(np.array([0.5, -1.0, 2.0]))
        for out in (x > 0, x >= 0.5, x < 0, x <= 2, x == 2.0, x != 2.0, ~(x > 0),
                    (x > 0) & (x < 1), (x > 0) | (x < -0.5), (x > 0) ^ (x > 1)):
            assert out.dtype == np.bool_ and out._node is None
    np.testing.assert_array_equal((x > 0).data, [True, False, True])
    np.testing.assert_array_equal(((x > 0) & (x < 1)).data, [True, False, False])


def test_integer_index_and_reused_tensor_sum_their_gradients():
    x = np.arange(6, dtype=F32).reshape(2, 3)
    _, (g,) = _grads(lambda t: t[1] * t[1] + t[:, 0:1] + t[np.array([0, 0])], x)
    expected = np.zeros((2, 3), F32)
    expected[1] += 2 * 2 * x[1]  # t[1] ** 2 broadcast over the 2 output rows
    expected[:, 0] += 3  # t[:, 0:1] broadcast over the 3 output columns
    expected[0] += 2  # row 0 gathered twice
    np.testing.assert_array_equal(g, expected)


def test_parameters_share_one_leaf():
    from tinynet.layers.layer import Parameter

    p = Parameter(np.array([1.0, 2.0], F32), "w")
    with Graph() as g:
        out = ops.add(ops.multiply(p, 3.0), ops.square(p))
        assert g.param_leaves and len(g.param_leaves) == 1
    backprop([out], [np.ones(2, F32)])
    np.testing.assert_array_equal(g.param_leaves[id(p)]._node.grad, [5.0, 7.0])


# ----------------------------------------------------------------------------------------
# gradients at kinks: JAX's choices (Keras's reference backend)


@pytest.mark.parametrize("fn,x,expected", [
    (ops.relu, [0.0, -1.0, 1.0], [0.0, 0.0, 1.0]),
    (ops.relu6, [0.0, 6.0, 3.0], [0.0, 0.0, 1.0]),
    (ops.abs, [0.0, -2.0, 2.0], [1.0, -1.0, 1.0]),
    (ops.leaky_relu, [0.0, -1.0], [1.0, 0.2]),
    (ops.elu, [0.0, 1.0], [1.0, 1.0]),
    (lambda x: ops.elu(x, alpha=0.5), [0.0], [0.5]),
    (ops.hard_sigmoid, [-3.0, 3.0, 0.0], [0.0, 0.0, 1 / 6]),
    (lambda x: ops.maximum(x, 1.0), [1.0, 2.0, 0.0], [0.5, 1.0, 0.0]),
    (lambda x: ops.minimum(x, 1.0), [1.0, 2.0, 0.0], [0.5, 0.0, 1.0]),
    (lambda x: ops.clip(x, -1.0, 1.0), [-1.0, 1.0, 0.0, 2.0, -2.0], [0.5, 0.5, 1.0, 0.0, 0.0]),
    (ops.max, [1.0, 3.0, 3.0, 2.0], [0.0, 0.5, 0.5, 0.0]),
    (lambda x: ops.min(x, axis=0), [1.0, 1.0, 1.0, 2.0], [1 / 3, 1 / 3, 1 / 3, 0.0]),
    (ops.sign, [0.0, 1.0], [0.0, 0.0]),
    (ops.floor, [1.0, 1.5], [0.0, 0.0]),
])
def test_gradients_at_kinks_follow_jax(fn, x, expected):
    _, (g,) = _grads(fn, np.array(x, F32))
    np.testing.assert_allclose(g, expected, rtol=1e-7)


def test_stop_gradient_and_unreached_inputs():
    _, (g,) = _grads(lambda x: ops.add(ops.stop_gradient(x), ops.multiply(x, 2.0)),
                     np.ones(3, F32))
    np.testing.assert_array_equal(g, [2.0, 2.0, 2.0])
    with Graph() as gr:
        a = gr.leaf(np.ones(2, F32))
        b = gr.leaf(np.ones(2, F32))
        out = ops.multiply(a, 3.0)
    backprop([out], [np.ones(2, F32)])
    assert b._node.grad is None


def test_nothing_is_recorded_outside_a_graph():
    out = ops.add(ops.ones((2,)), 1.0)
    assert out._node is None


# ----------------------------------------------------------------------------------------
# determinism: float32 gradients do not depend on the thread count or the parallel gate


def _chain_grads():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 256)).astype(F32)
    w1 = rng.standard_normal((256, 128)).astype(F32) * F32(0.1)
    w2 = rng.standard_normal((4, 128, 32)).astype(F32) * F32(0.1)

    def chain(x, w1, w2):
        h = ops.tanh(ops.matmul(x, w1))                          # one flat GEMM
        y = ops.matmul(ops.reshape(h, (4, 16, 128)), w2)         # batched GEMMs
        z = ops.einsum("bij,bkj->bik", y, y)                     # einsum as matmul
        return ops.sum(ops.multiply(z, z), axis=(1, 2))

    out, grads = _grads(chain, x, w1, w2)
    return [out.data, *grads]


def test_gradients_bitwise_independent_of_threads_and_gate():
    tuning.set_num_threads(1)
    one = _chain_grads()
    tuning.set_num_threads(min(2, tuning.max_threads()))
    two = _chain_grads()
    with tuning.override(matmul_parallel_min_flops=0):
        forced = _chain_grads()
    tuning.set_num_threads(1)
    with tuning.override(matmul_parallel_min_flops=0):
        forced_one = _chain_grads()
    for name, run in (("2 threads", two), ("gate 0", forced), ("gate 0, 1 thread", forced_one)):
        for k, (a, b) in enumerate(zip(one, run)):
            assert a.dtype == F32
            assert np.array_equal(a, b), f"{name}: array {k} differs"


# ----------------------------------------------------------------------------------------
# error messages

V = np.ones((2, 3), F32)


@pytest.mark.parametrize("call,exc,message", [
    (lambda: ops.add(V, np.ones(4, F32)), OpError,
     "add: shapes do not broadcast: x1 (2, 3), x2 (4,)"),
    (lambda: ops.convert_to_tensor(V) + np.ones((3, 2), F32), OpError,
     "add: shapes do not broadcast: x1 (2, 3), x2 (3, 2)"),
    (lambda: ops.where(np.ones(4, bool), V, 0.0), OpError,
     "where: shapes do not broadcast: condition (4,), x1 (2, 3), x2 ()"),
    (lambda: ops.matmul(V, np.ones((4, 5), F32)), OpError,
     "matmul: inner sizes differ: x1 (2, 3), x2 (4, 5)"),
    (lambda: ops.matmul(np.ones((2, 3, 4)), np.ones((3, 4, 5))), OpError,
     "matmul: batch axes do not broadcast: x1 (2, 3, 4), x2 (3, 4, 5)"),
    (lambda: ops.matmul(V, 2.0), OpError,
     "matmul: x1 and x2 must have rank >= 1, got shapes (2, 3) and ()"),
    (lambda: ops.reshape(V, (4, 2)), OpError,
     "reshape: cannot reshape x of shape (2, 3) (6 entries) into (4, 2)"),
    (lambda: ops.reshape(V, 4), OpError,
     "reshape: cannot reshape x of shape (2, 3) (6 entries) into (4,)"),
    (lambda: ops.add("a", V), TypeError,
     "add: x1 must be a real-valued tensor, got str of dtype <U1"),
    (lambda: ops.multiply(V, None), TypeError,
     "multiply: x2 must be a tensor, an array or a number, got None"),
    (lambda: ops.exp(np.array(["a"])), TypeError,
     "exp: x must be a real-valued tensor, got dtype <U1"),
    (lambda: ops.sum(V, axis=2), OpError, "sum: axis 2 is out of range for a tensor of rank 2"),
    (lambda: ops.mean(V, axis=-3), OpError, "mean: axis -3 is out of range for a tensor of rank 2"),
    (lambda: ops.mean(V, axis=(0, -2)), OpError, "mean: axis (0, -2) repeats an axis"),
    (lambda: ops.max(V, axis=1.0), TypeError,
     "max: axis must be None, an int or a tuple of ints, got 1.0"),
    (lambda: ops.argmax(V, axis=2), OpError,
     "argmax: axis 2 is out of range for a tensor of rank 2"),
    (lambda: ops.take(V, np.array([0]), axis=2), OpError,
     "take: axis 2 is out of range for a tensor of rank 2"),
    (lambda: ops.repeat(V, 2, axis=-3), OpError,
     "repeat: axis -3 is out of range for a tensor of rank 2"),
    (lambda: ops.moveaxis(V, 0, 2), OpError,
     "moveaxis: axis 2 is out of range for a tensor of rank 2"),
    (lambda: ops.squeeze(V, axis=0), OpError, "squeeze: axis 0 of x (2, 3) does not have length 1"),
    (lambda: ops.max(np.ones((0, 3), F32)), OpError,
     "max: cannot reduce an empty tensor of shape (0, 3) without an initial value"),
    (lambda: ops.concatenate([V, np.ones((2, 4), F32)]), OpError,
     "concatenate: shapes (2, 3), (2, 4) do not match outside axis 0"),
    (lambda: ops.stack([V, np.ones((3, 2), F32)]), OpError,
     "stack: every tensor must have one shape, got (2, 3), (3, 2)"),
    (lambda: ops.split(np.ones(5, F32), 2), OpError,
     "split: axis 0 of length 5 does not split into 2 equal sections"),
    (lambda: ops.take(V, np.array([0, 3]), axis=1), IndexError,
     "take: indices must lie in [-3, 3) for axis 1 of length 3, got values from 0 to 3"),
    (lambda: ops.take(V, np.array([0.5])), TypeError,
     "take: indices must be integers, got dtype float64"),
    (lambda: ops.getitem(V, 5), IndexError,
     "getitem: index 5 is out of bounds for axis 0 with size 2 (x has shape (2, 3))"),
    (lambda: ops.transpose(V, (0, 0)), OpError,
     "transpose: axes (0, 0) is not a permutation of the 2 axes of x (2, 3)"),
    (lambda: ops.broadcast_to(V, (3, 3)), OpError,
     "broadcast_to: x of shape (2, 3) does not broadcast to (3, 3)"),
    (lambda: ops.pad(V, 1, mode="wrap"), OpError,
     "pad: mode must be 'constant', 'reflect', 'symmetric' or 'edge', got 'wrap'"),
    (lambda: ops.pad(V, -1), OpError, "pad: pad_width must be non-negative, got -1"),
    (lambda: ops.one_hot(np.array([1]), 0), OpError,
     "one_hot: num_classes must be a positive int, got 0"),
    (lambda: ops.one_hot(np.array([1.5]), 3), TypeError,
     "one_hot: x must hold integer class ids, got dtype float64"),
    (lambda: ops.binary_crossentropy(V, np.ones((3, 2), F32)), OpError,
     "binary_crossentropy: target and output must have the same shape, got target (2, 3) and "
     "output (3, 2)"),
    (lambda: ops.sparse_categorical_crossentropy(V, V), OpError,
     "sparse_categorical_crossentropy: target must hold one class id per sample, shape (2,), "
     "got (2, 3) (one-hot targets take categorical_crossentropy)"),
    (lambda: ops.einsum("ij,jk->ik", V), OpError,
     "einsum: subscripts 'ij,jk->ik' name 2 operands, got 1"),
    (lambda: ops.einsum("ijk->k", V), OpError,
     "einsum: term 'ijk' names 3 axes, but its operand has shape (2, 3)"),
    (lambda: ops.einsum("ij,jk->ik", V, V), OpError, "einsum: index 'j' has sizes 3 and 2"),
    (lambda: ops.tensordot(V, V, axes=1), OpError,
     "tensordot: contracted axes differ: x1 (2, 3) axes [1], x2 (2, 3) axes [0]"),
    (lambda: ops.where(V > 0, V), OpError, "where: give both x1 and x2, or neither"),
    (lambda: ops.cast(V, "nonsense"), TypeError,
     "cast: dtype must be a NumPy dtype name such as 'float32', got 'nonsense'"),
    (lambda: ops.norm(V, ord=3), OpError, "norm: ord must be None, 1, 2, 'fro' or inf, got 3"),
    (lambda: ops.arange(0, 3, 0), OpError, "arange: step must not be 0"),
    (lambda: ops.ones((2, -1)), OpError, "ones: shape must hold non-negative sizes, got (2, -1)"),
    (lambda: ops.zeros("a"), TypeError, "zeros: shape must be an int or a tuple of ints, got 'a'"),
    (lambda: ops.concatenate("ab"), TypeError,
     "concatenate: xs must be a non-empty list or tuple of tensors, got str"),
])
def test_error_messages(call, exc, message):
    with pytest.raises(exc) as info:
        call()
    assert str(info.value) == message


def _axis_message(op, axis, rank):
    return f"{op}: axis {axis} is out of range for a tensor of rank {rank}"


# Arguments NumPy would reject with its own error (no op name) or a misleading one:
# tinynet.ops checks them first and names the op, the argument and the shapes.
PROPOSED_MESSAGES = [
    ("concatenate_axis", lambda: ops.concatenate([V, V], axis=2), OpError,
     _axis_message("concatenate", 2, 2)),
    ("stack_axis", lambda: ops.stack([V, V], axis=3), OpError, _axis_message("stack", 3, 3)),
    ("expand_dims_axis", lambda: ops.expand_dims(V, 3), OpError,
     _axis_message("expand_dims", 3, 3)),
    ("flip_axis", lambda: ops.flip(V, axis=2), OpError, _axis_message("flip", 2, 2)),
    ("cumsum_axis", lambda: ops.cumsum(V, axis=2), OpError, _axis_message("cumsum", 2, 2)),
    ("cumprod_axis", lambda: ops.cumprod(V, axis=-3), OpError, _axis_message("cumprod", -3, 2)),
    ("softmax_axis", lambda: ops.softmax(V, axis=2), OpError, _axis_message("softmax", 2, 2)),
    ("log_softmax_axis", lambda: ops.log_softmax(V, axis=2), OpError,
     _axis_message("log_softmax", 2, 2)),
    ("split_axis", lambda: ops.split(V, 2, axis=2), OpError, _axis_message("split", 2, 2)),
    ("unstack_axis", lambda: ops.unstack(V, axis=2), OpError, _axis_message("unstack", 2, 2)),
    ("swapaxes_axis", lambda: ops.swapaxes(V, 0, 2), OpError, _axis_message("swapaxes", 2, 2)),
    ("diagonal_axis", lambda: ops.diagonal(V, axis1=0, axis2=2), OpError,
     _axis_message("diagonal", 2, 2)),
    ("one_hot_axis", lambda: ops.one_hot(np.array([1]), 3, axis=3), OpError,
     _axis_message("one_hot", 3, 2)),
    ("norm_axis", lambda: ops.norm(V, axis=2), OpError, _axis_message("norm", 2, 2)),
    ("pad_width_shape", lambda: ops.pad(V, ((1, 1), (1, 1), (1, 1))), OpError,
     "pad: pad_width must be an int, one (before, after) pair or one pair per axis of x "
     "(2, 3), got ((1, 1), (1, 1), (1, 1))"),
    ("clip_bounds_shape", lambda: ops.clip(V, np.zeros(4, F32), 1.0), OpError,
     "clip: shapes do not broadcast: x (2, 3), x_min (4,), x_max ()"),
    ("take_along_axis_rank", lambda: ops.take_along_axis(V, np.zeros(2, np.int32), axis=1),
     OpError, "take_along_axis: indices must have the rank of x (2, 3), got shape (2,)"),
    ("repeat_counts", lambda: ops.repeat(V, np.array([1, 2, 3]), axis=0), OpError,
     "repeat: repeats must be an int or one count per entry of axis 0 (length 2), got shape (3,)"),
    ("tile_negative", lambda: ops.tile(V, (-1,)), OpError,
     "tile: repeats must be non-negative, got (-1,)"),
    ("tril_rank", lambda: ops.tril(np.ones(3, F32)), OpError,
     "tril: x must have rank >= 2, got shape (3,)"),
    ("slice_bounds", lambda: ops.slice(V, (0, 2), (2, 2)), OpError,
     "slice: start_indices (0, 2) and shape (2, 2) reach past x (2, 3)"),
    ("dtype_names_op", lambda: ops.ones(3, dtype="nonsense"), TypeError,
     "ones: dtype must be a dtype name such as 'float32' or 'int32', got 'nonsense'"),
    ("concatenate_empty", lambda: ops.concatenate([]), TypeError,
     "concatenate: xs must be a non-empty list or tuple of tensors, got an empty list"),
]


@pytest.mark.parametrize("call,exc,message", [
    pytest.param(c, e, m, id=name) for name, c, e, m in PROPOSED_MESSAGES
])
def test_checked_argument_messages(call, exc, message):
    with pytest.raises(exc) as info:
        call()
    assert str(info.value) == message
