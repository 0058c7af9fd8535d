"""A fit or a predict leaves NumPy's BLAS thread count as the user set it: tinynet's
products are its own (tinynet.ops.arrays.matmul), so nothing of tinynet touches the BLAS."""

import numpy as np
import pytest

import tinynet as tn
from tinynet.layers import Conv2D, Dense, Flatten, Input
from tinynet.ops.arrays.matmul import matmul

threadpoolctl = pytest.importorskip("threadpoolctl")


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpoolctl.threadpool_info()
            if lib["user_api"] == "blas"]


@pytest.mark.parametrize("threads", [2, 1])
def test_fit_and_predict_leave_the_blas_threads_as_set(threads):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((24, 6, 6, 3)).astype(np.float32)
    y = rng.integers(0, 4, 24)
    model = tn.Sequential([Input((6, 6, 3)), Conv2D(5, 3, activation="relu"),  # tiled GEMMs
                           Flatten(), Dense(4)])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    with threadpoolctl.threadpool_limits(threads, user_api="blas"):
        assert set(_blas_threads()) == {threads}
        model.fit(x, y, batch_size=8, epochs=1, verbose=0)
        assert set(_blas_threads()) == {threads}
        model.predict(x, verbose=0)
        matmul(x.reshape(24, -1), x.reshape(24, -1), trans_b=True)
        assert set(_blas_threads()) == {threads}
