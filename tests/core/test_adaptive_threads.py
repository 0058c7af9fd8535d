"""The adaptive thread count: fewer threads when other processes keep cores busy.

The suite itself runs with it off (tests/conftest.py); these tests turn it on with the
machine's load replaced by fixed answers.
"""

import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest

import tinynet as tn
from tinynet import tuning
from tinynet.tuning import load

GATE = "gn_row_parallel_min_elems"


@pytest.fixture()
def adaptive(monkeypatch):
    """Adaptive threads on, 2 threads, a fresh look at every call; yields a setter for the
    number of free cores the machine reports."""
    free = {"cores": 2, "looks": 0}

    def fake() -> int | None:
        free["looks"] += 1
        return free["cores"]

    monkeypatch.setattr(load, "free_cores", fake)
    monkeypatch.setattr(tuning, "ADAPT_PERIOD", 0.0)
    tuning.set_num_threads(2)
    tuning.set_adaptive_threads(True)
    yield free
    tuning.set_adaptive_threads(False)
    tuning.reset()


def test_serial_when_one_core_is_free(adaptive):
    import numba

    adaptive["cores"] = 2
    assert tuning.use_parallel(GATE, 2**40)
    assert numba.get_num_threads() == 2
    adaptive["cores"] = 1  # another process keeps the other core busy
    assert not tuning.use_parallel(GATE, 2**40)
    adaptive["cores"] = None  # load unknown (not Linux): the configured threads
    assert tuning.use_parallel(GATE, 2**40)
    adaptive["cores"] = 8  # more free cores than threads: the configured 2
    assert tuning.use_parallel(GATE, 2**40)
    assert numba.get_num_threads() == 2
    assert not tuning.use_parallel(GATE, 0 if tuning.get(GATE) > 0 else -1)  # gate still rules


def test_the_machine_is_looked_at_once_per_period(adaptive, monkeypatch):
    monkeypatch.setattr(tuning, "ADAPT_PERIOD", 3600.0)
    tuning.set_adaptive_threads(True)  # the next call looks
    adaptive["cores"] = 1
    looks = adaptive["looks"]
    for _ in range(50):
        assert not tuning.use_parallel(GATE, 2**40)
    assert adaptive["looks"] == looks + 1
    adaptive["cores"] = 2  # not seen until the period ends
    assert not tuning.use_parallel(GATE, 2**40)


def test_off_keeps_the_configured_threads(adaptive):
    adaptive["cores"] = 1
    tuning.set_adaptive_threads(False)
    assert not tuning.get_adaptive_threads()
    assert tuning.use_parallel(GATE, 2**40)


def test_the_same_weights_whether_the_machine_is_busy_or_not(adaptive):
    def train(free_cores: int) -> str:
        adaptive["cores"] = free_cores
        tn.set_seed(3)
        model = tn.Sequential([tn.Input((8, 8, 1)),
                               tn.layers.Conv2D(16, 3, padding="same", activation="relu"),
                               tn.layers.GroupNormalization(4), tn.layers.MaxPooling2D(2),
                               tn.layers.Flatten(), tn.layers.Dense(10)])
        model.compile(optimizer="adam", loss=tn.losses.SparseCategoricalCrossentropy(
            from_logits=True))
        rng = np.random.default_rng(0)
        x = rng.random((64, 8, 8, 1), dtype=np.float32)
        y = rng.integers(0, 10, 64)
        with tuning.override(**{name: 0 for name in tuning.gates()}):
            model.fit(x, y, batch_size=16, epochs=2, verbose=0)
        return hashlib.sha256(b"".join(w.tobytes() for w in model.get_weights())).hexdigest()

    assert train(1) == train(2)


def _child(code: str, **env) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != "TINYNET_ADAPTIVE_THREADS"}
    full.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=full, timeout=120)


def test_on_by_default_and_off_by_environment():
    code = "from tinynet import tuning; print(tuning.get_adaptive_threads())"
    assert _child(code).stdout.strip() == "True"
    assert _child(code, TINYNET_ADAPTIVE_THREADS="0").stdout.strip() == "False"
    bad = _child(code, TINYNET_ADAPTIVE_THREADS="yes")
    assert bad.returncode != 0
    assert ("ValueError: environment variable TINYNET_ADAPTIVE_THREADS='yes': expected 0 or 1"
            in bad.stderr)


def test_others_running_reads_proc(tmp_path, monkeypatch):
    loadavg = tmp_path / "loadavg"
    loadavg.write_text("0.50 0.40 0.30 4/321 9999\n")
    tasks = tmp_path / "task"
    for tid, state in (("10", "R"), ("11", "S"), ("12", "R")):
        (tasks / tid).mkdir(parents=True)
        # a command name holding ") R" must not fool the parser
        (tasks / tid / "stat").write_text(f"{tid} (we) R (x)) {state} 1 2 3\n")
    monkeypatch.setattr(load, "_LOADAVG", str(loadavg))
    monkeypatch.setattr(load, "_TASKS", str(tasks))
    monkeypatch.setattr(load, "cores", lambda: 2)
    assert load.others_running() == 2  # 4 runnable, 2 of them ours
    assert load.free_cores() == 1  # never below one
    loadavg.write_text("0.50 0.40 0.30 2/321 9999\n")
    assert load.others_running() == 0
    assert load.free_cores() == 2
    monkeypatch.setattr(load, "_LOADAVG", str(tmp_path / "missing"))
    assert load.others_running() is None and load.free_cores() is None


def test_cores_is_this_processs_share():
    assert 1 <= load.cores() <= (os.cpu_count() or 1)
