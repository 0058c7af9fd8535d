"""tinynet against Keras 3 (JAX backend) on small-model training, idle and under load.

Run: python benchmarks/peer.py [--epochs 6] [--steps 30] [--rounds 2] [--peer-path PATHS]
                               [--frameworks tinynet,keras-jax] [--cases digits,mnist,text]
                               [--text-epochs 3] [--profile]

Each framework trains in its own fresh process, back to back and in alternation
(``--rounds``), on the same cases (``--cases``, all three by default):

* **digits**: the digits CNN of ``examples/train_digits_cnn.py`` (Conv2D(16) -> GN(4) ->
  pool -> Conv2D(32) -> BN -> pool -> Dense(64) -> Dense(10)), Adam(1e-3), batch 32, ``fit``
  with the accuracy metric on the 1,347 training digits: the first epoch (compiling
  included) and the median of the later ones;
* **mnist**: the performance issue's MNIST-shape CNN (28x28x1, Conv2D(32)-GN(8)-pool-
  Conv2D(64)-GN(8)-pool-Dense(128)-Dense(10)), SGD(0.01, momentum 0.9), one
  ``train_on_batch`` of 64 random images: the median step after 5 warm-up steps;
* **text**: issue 46's bidirectional LSTM text classifier, ``Embedding(20000, 64) ->
  Bidirectional(LSTM(64)) -> Dense(1, sigmoid)``, Adam(1e-3) and binary cross-entropy,
  ``fit`` with batch 32 on 2,000 generated sequences of 100 token ids
  (:func:`text_data`): the median of the epochs after the first (``--text-epochs``).

Both run twice: on an idle machine, and with one CPU-bound background process (a busy
loop this script starts and stops). Every framework uses 2 threads. The table gives each
time and the ratio tinynet / Keras-JAX (below 1: tinynet faster).

Keras and JAX are never tinynet dependencies: install them anywhere (e.g. ``pip install
--target DIR keras jax[cpu]``) and pass the folder(s) with ``--peer-path`` (os.pathsep
separated); without them the Keras rows say "not installed" and the rest still runs.

``--profile`` prints where one tinynet digits step spends its time: each layer's forward
and backward, the loss, the metric, the optimizer, and the Python around them, on 2
threads and on 1, and per part that ran a parallel region the time spent beyond a
perfect split of its serial work (waiting in parallel regions).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


# ------------------------------------------------------------------ the worker processes
def _digits() -> tuple[Any, Any]:
    import numpy as np
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[..., None]
    x_train, _, y_train, _ = train_test_split(x, digits.target, test_size=0.25, random_state=0,
                                              stratify=digits.target)
    return np.ascontiguousarray(x_train), y_train.astype(np.int64)


def _mnist_batch() -> tuple[Any, Any]:
    import numpy as np

    rng = np.random.default_rng(0)
    return rng.random((64, 28, 28, 1), dtype=np.float32), rng.integers(0, 10, 64)


TEXT_VOCAB, TEXT_STEPS, TEXT_SAMPLES = 20000, 100, 2000


def text_data(n: int = TEXT_SAMPLES, steps: int = TEXT_STEPS, vocab: int = TEXT_VOCAB,
              seed: int = 0) -> tuple[Any, Any]:
    """``n`` int32 token sequences ``[n, steps]`` (ids 1..vocab-1) and 0/1 float32 labels
    (whether the first id is in the lower half of the vocabulary: learnable, though only
    the speed is measured)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    x = rng.integers(1, vocab, (n, steps)).astype(np.int32)
    return x, (x[:, 0] < vocab // 2).astype(np.float32)[:, None]


def _tinynet_text() -> Any:
    import tinynet as tn
    from tinynet.layers import LSTM, Bidirectional, Dense, Embedding

    model = tn.Sequential([tn.Input((TEXT_STEPS,), dtype="int32"), Embedding(TEXT_VOCAB, 64),
                           Bidirectional(LSTM(64)), Dense(1, activation="sigmoid")])
    model.compile(optimizer=tn.optimizers.Adam(1e-3), loss="binary_crossentropy")
    return model


def _keras_text() -> Any:
    import keras
    from keras import layers as L

    model = keras.Sequential([keras.Input((TEXT_STEPS,), dtype="int32"),
                              L.Embedding(TEXT_VOCAB, 64), L.Bidirectional(L.LSTM(64)),
                              L.Dense(1, activation="sigmoid")])
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="binary_crossentropy")
    return model


def _tinynet_models() -> dict:
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import tinynet as tn
    from tinynet.layers import Conv2D, Dense, Flatten, GroupNormalization, MaxPooling2D
    from train_digits_cnn import build_model

    def digits():
        model = build_model()
        model.compile(optimizer=tn.optimizers.Adam(1e-3),
                      loss=tn.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
        return model

    def mnist():
        model = tn.Sequential([
            tn.Input((28, 28, 1)), Conv2D(32, 3, padding="same", activation="relu"),
            GroupNormalization(8), MaxPooling2D(2),
            Conv2D(64, 3, padding="same", activation="relu"), GroupNormalization(8),
            MaxPooling2D(2), Flatten(), Dense(128, activation="relu"), Dense(10)])
        model.compile(optimizer=tn.optimizers.SGD(0.01, momentum=0.9),
                      loss=tn.losses.SparseCategoricalCrossentropy(from_logits=True))
        return model

    tn.set_seed(0)
    tn.tuning.set_num_threads(2)
    return {"digits": digits, "mnist": mnist, "text": _tinynet_text}


def _keras_models() -> dict:
    import keras
    from keras import layers as L

    def digits():
        model = keras.Sequential([
            keras.Input((8, 8, 1)), L.Conv2D(16, 3, padding="same", activation="relu"),
            L.GroupNormalization(4), L.MaxPooling2D(2),
            L.Conv2D(32, 3, padding="same", activation="relu"), L.BatchNormalization(),
            L.MaxPooling2D(2), L.Flatten(), L.Dense(64, activation="relu"), L.Dense(10)])
        model.compile(optimizer=keras.optimizers.Adam(1e-3),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
        return model

    def mnist():
        model = keras.Sequential([
            keras.Input((28, 28, 1)), L.Conv2D(32, 3, padding="same", activation="relu"),
            L.GroupNormalization(8), L.MaxPooling2D(2),
            L.Conv2D(64, 3, padding="same", activation="relu"), L.GroupNormalization(8),
            L.MaxPooling2D(2), L.Flatten(), L.Dense(128, activation="relu"), L.Dense(10)])
        model.compile(optimizer=keras.optimizers.SGD(0.01, momentum=0.9),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return model

    keras.utils.set_random_seed(0)
    return {"digits": digits, "mnist": mnist, "text": _keras_text}


def worker(framework: str, epochs: int, steps: int, cases: str = "digits,mnist",
           text_epochs: int = 3) -> dict:
    """Runs the ``cases`` in this process; returns ``{"digits": [epoch s...], "mnist":
    [step s...], "text": [epoch s...]}`` (a first epoch includes compiling)."""
    wanted = cases.split(",")
    if framework == "tinynet":
        models = _tinynet_models()
        import tinynet as tn

        base = tn.callbacks.Callback
    else:
        os.environ["KERAS_BACKEND"] = framework.split("-", 1)[1]
        models = _keras_models()
        import keras

        base = keras.callbacks.Callback

    class Timer(base):
        """Times each epoch (``on_epoch_begin`` to ``on_epoch_end``)."""

        def __init__(self) -> None:
            super().__init__()
            self.times: list[float] = []
            self._start = 0.0

        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            self._start = time.perf_counter()

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            self.times.append(time.perf_counter() - self._start)

    out: dict[str, list[float]] = {}
    if "digits" in wanted:
        timer = Timer()
        x, y = _digits()
        models["digits"]().fit(x, y, batch_size=32, epochs=epochs, verbose=0,
                               callbacks=[timer])
        out["digits"] = timer.times
    if "mnist" in wanted:
        model = models["mnist"]()
        xb, yb = _mnist_batch()
        step_times = []
        for i in range(steps + 5):
            start = time.perf_counter()
            model.train_on_batch(xb, yb)
            if i >= 5:
                step_times.append(time.perf_counter() - start)
        out["mnist"] = step_times
    if "text" in wanted:
        timer = Timer()
        x, y = text_data()
        models["text"]().fit(x, y, batch_size=32, epochs=text_epochs, verbose=0,
                             callbacks=[timer])
        out["text"] = timer.times
    return out


# ------------------------------------------------------------------ the driver
def run_worker(framework: str, args: argparse.Namespace) -> dict | str:
    """One fresh process running :func:`worker` (``args``: ``epochs``, ``steps``,
    ``cases``, ``text_epochs``, ``peer_path``); its result, or why it has none
    (``"not installed"``)."""
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "2")
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=true").strip()
    if framework != "tinynet" and args.peer_path:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (args.peer_path, env.get("PYTHONPATH"))
                                            if p)
    call = (f"peer.worker({framework!r}, {args.epochs}, {args.steps}, {args.cases!r}, "
            f"{args.text_epochs})")
    code = (f"import json, sys; sys.path.insert(0, {HERE!r}); import peer; "
            f"print('PEER' + json.dumps({call}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=1800)
    for line in out.stdout.splitlines():
        if line.startswith("PEER"):
            return json.loads(line[4:])
    last = (out.stderr.strip().splitlines() or ["no output"])[-1]
    return "not installed" if "No module named" in last else f"failed: {last[:120]}"


def _busy() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "while True:\n    pass"])


def _summary(result: dict) -> dict[str, float]:
    out = {}
    if "digits" in result:
        digits = result["digits"]
        out.update({"first epoch": digits[0], "epoch": statistics.median(digits[1:])})
    if "mnist" in result:
        out["mnist step"] = statistics.median(result["mnist"])
    if "text" in result:
        out["text epoch"] = statistics.median(result["text"][1:])
    return out


_COLUMNS = {"first epoch": "digits first epoch", "epoch": "digits epoch",
            "mnist step": "MNIST-shape step", "text epoch": "text BiLSTM epoch"}


def compare(args: argparse.Namespace) -> None:
    frameworks = args.frameworks.split(",")
    table: dict[tuple[str, str], list[dict]] = {}
    for state in ("idle", "loaded"):
        for _ in range(args.rounds):
            for framework in frameworks:
                busy = _busy() if state == "loaded" else None
                try:
                    result = run_worker(framework, args)
                finally:
                    if busy is not None:
                        busy.kill()
                        busy.wait()
                table.setdefault((state, framework), []).append(
                    _summary(result) if isinstance(result, dict) else {"error": result})
    cases = args.cases.split(",")
    keys = [k for k, case in (("first epoch", "digits"), ("epoch", "digits"),
                              ("mnist step", "mnist"), ("text epoch", "text")) if case in cases]
    print(f"peer benchmark: {args.rounds} rounds, digits {args.epochs} epochs, "
          f"MNIST-shape {args.steps} steps, text {args.text_epochs} epochs; medians over "
          f"rounds; load average {os.getloadavg()[0]:.2f} at the end")
    print("| machine | framework | " + " | ".join(_COLUMNS[k] for k in keys) + " |")
    print("|---|---|" + "---:|" * len(keys))
    medians: dict[tuple[str, str], dict] = {}
    for (state, framework), runs in table.items():
        errors = [r["error"] for r in runs if "error" in r]
        if errors:
            print(f"| {state} | {framework} | {errors[0]} |" + " |" * (len(keys) - 1))
            continue
        medians[state, framework] = {k: statistics.median(r[k] for r in runs) for k in keys}
        cells = " | ".join(f"{1000 * medians[state, framework][k]:.1f} ms" for k in keys)
        print(f"| {state} | {framework} | {cells} |")
    for state in ("idle", "loaded"):
        ours, peer = medians.get((state, "tinynet")), medians.get((state, "keras-jax"))
        if ours and peer:
            ratios = ", ".join(f"{k} {ours[k] / peer[k]:.2f}" for k in keys)
            print(f"tinynet / Keras-JAX, {state}: {ratios}")


def _step_parts(model: Any, xb: Any, yb: Any) -> tuple[dict[str, float], float, set]:
    """Median seconds of each part of a training step over 50 steps (after 20 warm-up
    steps), of the whole step, and the parts that ran a parallel region."""
    import numpy as np

    from tinynet import tuning

    parts: dict[str, list[float]] = {}
    parallel: set = set()
    use_parallel = tuning.use_parallel
    current = [""]

    def watched(name: str, work: int) -> bool:
        answer = use_parallel(name, work)
        if answer:
            parallel.add(current[0])
        return answer

    def timed(name: str, fn: Any) -> Any:
        current[0] = name
        start = time.perf_counter()
        out = fn()
        parts.setdefault(name, []).append(time.perf_counter() - start)
        return out

    params, _ = model._step_state()
    layers = model.layers
    tuning.use_parallel = watched
    try:
        for i in range(70):
            start = time.perf_counter()
            out = xb
            for layer in layers:
                out = timed(f"{layer.name} forward",
                            lambda l=layer, o=out: l.forward(o, training=True))
            pred = np.asarray(out)
            _, grad = timed("loss", lambda: model.loss.value_and_grad(yb, pred))
            timed("metric", lambda: [m(yb, pred) for m in model.metrics])
            for k in range(len(layers) - 1, 0, -1):
                grad = timed(f"{layers[k].name} backward",
                             lambda l=layers[k], g=grad: l.backward(g))
            timed(f"{layers[0].name} backward", lambda g=grad: layers[0].backward_params(g))
            timed("optimizer", lambda: model.optimizer.apply(params))
            parts.setdefault("step", []).append(time.perf_counter() - start)
            if i < 20:
                for v in parts.values():
                    v.pop()
    finally:
        tuning.use_parallel = use_parallel
    medians = {name: statistics.median(v) for name, v in parts.items()}
    return medians, medians.pop("step"), parallel


def profile() -> None:
    """One digits step, part by part, on 2 threads and on 1.

    *Waiting in parallel regions* is estimated per part that ran one: its 2-thread time
    minus half its 1-thread time, i.e. what the part costs beyond a perfect split of its
    serial work over the two threads (start-up and join of each region, the threads
    waiting for each other, work that does not split).
    """
    from tinynet import tuning

    model = _tinynet_models()["digits"]()
    x, y = _digits()
    xb, yb = x[:32], y[:32]
    model.fit(xb, yb, batch_size=32, epochs=1, verbose=0)  # builds and compiles
    threads = tuning.get_num_threads()
    two, step2, parallel = _step_parts(model, xb, yb)
    tuning.set_num_threads(1)
    one, step1, _ = _step_parts(model, xb, yb)
    tuning.set_num_threads(threads)
    print(f"| part | {threads} threads, us | share of the step | 1 thread, us | "
          "waiting in parallel regions, us |")
    print("|---|---:|---:|---:|---:|")
    waits = 0.0
    for name, t in two.items():
        wait = "-"
        if name in parallel:
            w = max(t - one[name] / threads, 0.0)
            waits += w
            wait = f"{1e6 * w:.0f}"
        print(f"| {name} | {1e6 * t:.0f} | {100 * t / step2:.0f} % | {1e6 * one[name]:.0f} | "
              f"{wait} |")
    rest2, rest1 = step2 - sum(two.values()), step1 - sum(one.values())
    print(f"| Python between the parts | {1e6 * rest2:.0f} | {100 * rest2 / step2:.0f} % | "
          f"{1e6 * rest1:.0f} | - |")
    print(f"| whole step | {1e6 * step2:.0f} | 100 % | {1e6 * step1:.0f} | "
          f"{1e6 * waits:.0f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6, help="digits epochs per run")
    parser.add_argument("--steps", type=int, default=30, help="MNIST-shape steps per run")
    parser.add_argument("--rounds", type=int, default=2, help="runs per framework and state")
    parser.add_argument("--frameworks", default="tinynet,keras-jax")
    parser.add_argument("--peer-path", default="", help="folders holding keras and jax")
    parser.add_argument("--cases", default="digits,mnist,text",
                        help="comma-separated subset of digits, mnist, text")
    parser.add_argument("--text-epochs", type=int, default=3, help="text epochs per run")
    parser.add_argument("--profile", action="store_true", help="tinynet's step, part by part")
    args = parser.parse_args(argv)
    if args.profile:
        profile()
        return 0
    if args.epochs < 2 or args.steps < 1 or args.rounds < 1 or args.text_epochs < 2:
        parser.error("need --epochs >= 2, --steps >= 1, --rounds >= 1, --text-epochs >= 2")
    if not args.cases or set(args.cases.split(",")) - {"digits", "mnist", "text"}:
        parser.error(f"--cases must be a comma-separated subset of digits, mnist, text, got "
                     f"{args.cases!r}")
    compare(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
