"""``tinynet.ops`` against Keras 3 (JAX backend): values and vector-Jacobian products.

``data/keras_ops_reference.npz`` and ``.json`` (written by ``make_keras_reference.py``
with Keras 3.15.1 on JAX, float32) hold, per case, the inputs ``<id>/in<k>``, the
outputs ``<id>/out`` (or ``out<k>`` for a tuple or list), and for differentiable cases a
cotangent ``<id>/cot`` (``cot<k>``) and the gradients ``<id>/grad<k>`` of
``sum(out * cot)`` with respect to each float input. Each case here calls the
``tinynet.ops`` function of the same name with the same arguments in float32 and compares
the value (dtype and shape exactly; floats within float32 rounding, integers and bools
exactly), then the gradients that :func:`~tinynet.ops.autodiff.backprop` gives for the
stored cotangent.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pytest

from tinynet import ops
from tinynet.ops.autodiff import Graph, backprop
from tinynet.ops.core import OpError
from tinynet.tensor import Tensor

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
NPZ = os.path.join(DATA, "keras_ops_reference.npz")
JSON = os.path.join(DATA, "keras_ops_reference.json")

#: float32 rounding: relative, plus an absolute part scaled by the array's magnitude
#: (sums and products of a few terms cancel to values far smaller than the terms)
RTOL = 1e-5
ATOL = 1e-6


def _load() -> tuple[dict, dict[str, np.ndarray]]:
    if not (os.path.exists(NPZ) and os.path.exists(JSON)):
        return {"cases": []}, {}
    with open(JSON) as fh:
        doc = json.load(fh)
    with np.load(NPZ) as npz:
        arrays = {k: npz[k] for k in npz.files}
    return doc, arrays


DOC, ARRAYS = _load()
CASES = DOC["cases"]
pytestmark = pytest.mark.skipif(not CASES, reason=f"no Keras reference fixture at {JSON}")


def _decode(obj: Any, inputs: list[Any]) -> Any:
    """JSON arguments as Python values: ``{"in": k}`` is ``inputs[k]``, a JSON list a
    tuple, ``{"list": [...]}`` a list."""
    if isinstance(obj, dict):
        if set(obj) == {"in"}:
            return inputs[obj["in"]]
        if set(obj) == {"list"}:
            return [_decode(o, inputs) for o in obj["list"]]
        return {k: _decode(v, inputs) for k, v in obj.items()}
    if isinstance(obj, list):
        return tuple(_decode(o, inputs) for o in obj)
    return obj


def _call(case: dict, inputs: list[Any]) -> Any:
    fn = getattr(ops, case["op"], None)
    if fn is None:
        pytest.fail(f"tinynet.ops has no {case['op']!r}")
    args = _decode(case["args"], inputs)
    kwargs = _decode(case["kwargs"], inputs)
    return fn(*args, **kwargs)


def _flatten(out: Any, structure: str) -> list[np.ndarray]:
    if structure == "shape":
        assert isinstance(out, tuple) and all(isinstance(d, int) for d in out), out
        return [np.asarray(out, dtype=np.int32)]
    if structure in ("tuple", "list"):
        expected = tuple if structure == "tuple" else list
        assert isinstance(out, expected), f"expected a {structure}, got {type(out).__name__}"
        assert all(isinstance(o, Tensor) for o in out)
        return [o.data for o in out]
    assert isinstance(out, Tensor), f"expected a Tensor, got {type(out).__name__}"
    return [out.data]


def _tensors(out: Any, structure: str) -> list[Tensor]:
    return list(out) if structure in ("tuple", "list") else [out]


def _compare(name: str, got: np.ndarray, ref: np.ndarray) -> None:
    assert got.shape == ref.shape, f"{name}: shape {got.shape}, Keras {ref.shape}"
    assert got.dtype == ref.dtype, f"{name}: dtype {got.dtype}, Keras {ref.dtype}"
    if ref.dtype.kind == "f":
        scale = max(1.0, float(np.max(np.abs(ref)))) if ref.size else 1.0
        tol = 1e-3 if ref.dtype == np.float16 else RTOL
        np.testing.assert_allclose(got, ref, rtol=tol, atol=ATOL * scale, err_msg=name)
    else:
        np.testing.assert_array_equal(got, ref, err_msg=name)


def _stored(case: dict, kind: str) -> list[np.ndarray]:
    entries = {"in": case["inputs"], "out": case["outputs"],
               "cot": case.get("cotangents", [])}[kind]
    return [ARRAYS[f"{case['id']}/{e['name']}"] for e in entries]


#: Cases tinynet does not support yet (strict: one that starts passing must leave the list).
KNOWN_GAPS: dict[str, str] = {}


def _params(cases: list[dict]) -> list:
    return [pytest.param(c, id=c["id"], marks=[pytest.mark.xfail(
        strict=True, raises=OpError, reason=KNOWN_GAPS[c["id"]])] if c["id"] in KNOWN_GAPS
        else []) for c in cases]


@pytest.mark.parametrize("case", _params(CASES))
def test_value(case):
    inputs = _stored(case, "in")
    out = _call(case, inputs)
    got = _flatten(out, case["output_structure"])
    refs = _stored(case, "out")
    assert len(got) == len(refs), f"{len(got)} outputs, Keras {len(refs)}"
    for e, g, r in zip(case["outputs"], got, refs):
        _compare(e["name"], g, r)


GRAD_CASES = [c for c in CASES if c["differentiable"]]


@pytest.mark.parametrize("case", _params(GRAD_CASES))
def test_vjp(case):
    inputs = _stored(case, "in")
    wrt = [int(g["wrt"][2:]) for g in case["grads"]]
    with Graph() as g:
        leaves = {k: g.leaf(inputs[k]) for k in wrt}
        out = _call(case, [leaves.get(k, a) for k, a in enumerate(inputs)])
    outs = _tensors(out, case["output_structure"])
    cots = _stored(case, "cot")
    assert len(outs) == len(cots)
    backprop(outs, cots)
    for entry, k in zip(case["grads"], wrt):
        grad = leaves[k]._node.grad
        ref = ARRAYS[f"{case['id']}/{entry['name']}"]
        if grad is None:  # no path from the output: a zero gradient
            grad = np.zeros_like(inputs[k])
        _compare(f"{entry['name']} (d/d in{k})", grad, ref)
