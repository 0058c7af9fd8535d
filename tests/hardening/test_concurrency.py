"""Inference from several Python threads: bitwise the single-threaded results.

Layers keep per-call state (forward caches, Conv2D's reused im2col buffer), so
``Sequential.predict``/``evaluate``/``__call__`` take a per-model lock. Numba's
``workqueue`` threading layer aborts the process on concurrent parallel launches, so
``tuning.use_parallel`` then answers yes on the main thread only (and warns once).
"""

import copy
import json
import os
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest

import tinynet as tn
from tinynet import tuning
from tinynet.layers import (BatchNormalization, Conv2D, Dense, Flatten, GroupNormalization, Input,
                            LayerNormalization, MaxPooling2D, ReLU, Softmax)

THREADS, CALLS = 4, 10
ALL_PARALLEL = {name: 0 for name in tuning.defaults()}


def _cnn(seed: int = 1) -> tn.Sequential:
    tn.set_seed(seed)
    model = tn.Sequential([
        Input((8, 8, 3)),
        Conv2D(8, 3, padding="same"), BatchNormalization(), ReLU(),
        Conv2D(8, 3, padding="same"), GroupNormalization(groups=4), MaxPooling2D(2),
        LayerNormalization(), Flatten(), Dense(10), Softmax(),
    ])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    rng = np.random.default_rng(seed)
    # one training epoch so BN's moving statistics are not the defaults
    model.fit(rng.random((16, 8, 8, 3), dtype=np.float32), np.arange(16) % 10, epochs=1,
              batch_size=8, verbose=0)
    return model


def _inputs(n: int = THREADS) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.random((12, 8, 8, 3), dtype=np.float32) for _ in range(n)]


def _run_threads(work, n: int = THREADS) -> None:
    """Runs ``work(i)`` on ``n`` threads started together; re-raises the first error."""
    barrier, errors = threading.Barrier(n), []

    def target(i):
        try:
            barrier.wait()
            work(i)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


@pytest.mark.parametrize("gates", [{}, ALL_PARALLEL], ids=["default_gates", "parallel_kernels"])
def test_predict_from_threads_is_bitwise_single_threaded(gates):
    with tuning.override(**gates):
        model, xs = _cnn(), _inputs()
        expected = [model.predict(x, batch_size=4, verbose=0) for x in xs]
        results = {i: [] for i in range(THREADS)}

        def work(i):
            for _ in range(CALLS):
                results[i].append(model.predict(xs[i], batch_size=4, verbose=0))
        _run_threads(work)
    for i in range(THREADS):
        assert len(results[i]) == CALLS
        same = [out.dtype == expected[i].dtype and out.tobytes() == expected[i].tobytes()
                for out in results[i]]
        assert all(same), f"thread {i}: calls {[k for k, ok in enumerate(same) if not ok]} differ"


def test_predict_evaluate_and_call_mixed_across_threads():
    model, xs = _cnn(), _inputs()
    y = np.arange(12) % 10
    expected_predict = [model.predict(x, verbose=0) for x in xs]
    expected_call = [model(x).numpy() for x in xs]
    expected_eval = [model.evaluate(x, y, verbose=0) for x in xs]
    mismatches = []

    def work(i):
        for k in range(CALLS):
            kind = (i + k) % 3
            if kind == 0:
                same = np.array_equal(model.predict(xs[i], verbose=0), expected_predict[i])
            elif kind == 1:
                same = np.array_equal(model(xs[i]).numpy(), expected_call[i])
            else:
                same = model.evaluate(xs[i], y, verbose=0) == expected_eval[i]
            if not same:
                mismatches.append((i, k, kind))
    _run_threads(work)
    assert mismatches == []


def test_distinct_models_in_threads_with_parallel_kernels():
    xs = _inputs()
    with tuning.override(**ALL_PARALLEL):
        models = [_cnn(seed=i + 1) for i in range(THREADS)]
        expected = [m.predict(x, verbose=0) for m, x in zip(models, xs)]
        mismatches = []

        def work(i):
            for _ in range(CALLS // 2):
                if not np.array_equal(models[i].predict(xs[i], verbose=0), expected[i]):
                    mismatches.append(i)
        _run_threads(work)
    assert mismatches == []


def test_model_with_lock_still_copies_and_pickles():
    model, x = _cnn(), _inputs(1)[0]
    expected = model.predict(x, verbose=0)
    for other in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert other._lock is not model._lock
        assert np.array_equal(other.predict(x, verbose=0), expected)


@pytest.mark.skipif(tuning.max_threads() < 2, reason="needs 2 Numba threads")
def test_use_parallel_on_workqueue_answers_yes_on_the_main_thread_only(monkeypatch):
    monkeypatch.setattr(tuning, "_workqueue", True)
    gate = "elementwise_parallel_min_elems"
    with tuning.override(**{gate: 0}):
        answers = {}
        assert tuning.use_parallel(gate, 10) is True
        thread = threading.Thread(target=lambda: answers.update(
            worker=tuning.use_parallel(gate, 10)))
        thread.start()
        thread.join()
    assert answers == {"worker": False}


_WORKQUEUE_SCRIPT = r"""
import json, threading, warnings
import numpy as np
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import numba
    import tinynet as tn
    from tinynet import tuning
    __import__("sys").path.insert(0, {root!r})
    from tests.hardening.test_concurrency import ALL_PARALLEL, THREADS, CALLS, _cnn, _inputs, _run_threads
    tuning.set(**ALL_PARALLEL)
    xs = _inputs()
    shared = _cnn()
    models = [_cnn(seed=i + 1) for i in range(THREADS)]
    expected_shared = [shared.predict(x, batch_size=4, verbose=0) for x in xs]
    expected_own = [m.predict(x, verbose=0) for m, x in zip(models, xs)]
    mismatches = []

    def work(i):
        for _ in range(CALLS):
            if not np.array_equal(shared.predict(xs[i], batch_size=4, verbose=0),
                                  expected_shared[i]):
                mismatches.append(("shared", i))
            if not np.array_equal(models[i].predict(xs[i], verbose=0), expected_own[i]):
                mismatches.append(("own", i))

    # the main thread works too: it is the one still allowed parallel launches
    threads = [threading.Thread(target=work, args=(i,)) for i in range(1, THREADS)]
    for t in threads:
        t.start()
    work(0)
    for t in threads:
        t.join()
    layer = numba.threading_layer()
print(json.dumps({{"layer": layer, "mismatches": mismatches,
                   "warnings": [str(w.message) for w in caught
                                if "workqueue" in str(w.message)]}}))
"""


def test_workqueue_layer_warns_once_and_stays_correct_from_threads():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "NUMBA_THREADING_LAYER": "workqueue", "NUMBA_NUM_THREADS": "2",
           "TINYNET_NUM_THREADS": "2", "PYTHONWARNINGS": "always"}
    proc = subprocess.run([sys.executable, "-c", _WORKQUEUE_SCRIPT.format(root=root)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["mismatches"] == []
    assert report["layer"] == "workqueue"
    assert len(report["warnings"]) == 1, report["warnings"]
    message = report["warnings"][0]
    assert "'workqueue' threading layer" in message
    assert "libgomp1" in message and "NUMBA_THREADING_LAYER=omp" in message
