"""Shared helpers of the ONNX export tests (skipped without onnx and onnxruntime): an
ONNX Runtime session, and the comparison of its outputs with ``model.predict``."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

BATCH_SIZES = (1, 7, 32)
# np.testing.assert_allclose(ort, tinynet, rtol=RTOL, atol=ATOL) for every export
RTOL, ATOL = 1e-5, 1e-6


def session(proto) -> "ort.InferenceSession":
    """An ONNX Runtime CPU session on one thread (the tests share two cores)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(proto.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def check_export(model, inputs: list[np.ndarray], opset: int | None = None,
                 rtol: float = RTOL, atol: float = ATOL, batch_sizes=BATCH_SIZES) -> None:
    """Exports ``model``, checks the file with ``onnx.checker.check_model`` (full check,
    shape inference included) and compares ONNX Runtime's outputs with ``predict`` at each
    batch size (the inputs hold at least ``max(batch_sizes)`` samples)."""
    from tinynet.export import to_onnx

    proto = to_onnx(model, opset)
    onnx.checker.check_model(proto, full_check=True)
    sess = session(proto)
    names = [i.name for i in sess.get_inputs()]
    assert all(i.shape[0] == "batch" for i in sess.get_inputs())
    for n in batch_sizes:
        xs = [x[:n] for x in inputs]
        want = model.predict(xs if len(xs) > 1 else xs[0], verbose=0)
        want = want if isinstance(want, list) else [want]
        got = sess.run(None, dict(zip(names, xs)))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == np.float32
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol,
                                       err_msg=f"batch {n}, opset {proto.opset_import[0].version}")
