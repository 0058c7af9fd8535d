"""Train the digits CNN, export it to ONNX and run it in ONNX Runtime, without tinynet.

Run: python examples/export_onnx.py [--epochs 5] [--repeats 7] [--out DIR]

Needs the extras: pip install -e ".[examples,onnx]" onnxruntime

Trains examples/train_digits_cnn.py's model briefly, writes ``digits_cnn.onnx`` (in
``--out``, default ``outputs/export_onnx``) with
``model.export`` (channels-last input ``[batch, 8, 8, 1]`` named ``input_layer``, output
``[batch, 10]`` named after the last layer), checks the file with ``onnx.checker``, runs
the test images through an ONNX Runtime session, and prints how well the two predictions
agree (largest difference, also relative to the largest logit; same predicted class) and
the two inference times of the whole test set (median of ``--repeats`` runs each, after
one warm-up run; each library with its default threads) as a ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

import tinynet as tn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_digits_cnn import compiled_model  # noqa: E402 - the example's own folder first


def median_seconds(run, repeats: int) -> float:
    """The median wall time of ``run()`` over ``repeats`` calls, after one warm-up call."""
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=7, help="timed runs of each (median)")
    parser.add_argument("--out", default=os.path.join("outputs", "export_onnx"),
                        help="folder for digits_cnn.onnx (created if missing; "
                        "default: %(default)s)")
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.repeats < 1:
        parser.error("--epochs and --repeats must be positive ints")
    try:
        import onnx
        import onnxruntime as ort
    except ImportError as exc:
        raise SystemExit(f"this example needs onnx and onnxruntime: pip install "
                         f"tinynet[onnx] onnxruntime ({exc})") from None

    tn.set_seed(0)
    (x_train, y_train), (x_test, y_test) = tn.datasets.load_digits(test_size=0.25, seed=0)
    model = compiled_model()
    model.fit(x_train, y_train, batch_size=32, epochs=args.epochs, verbose=0)

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "digits_cnn.onnx")
    model.export(path)
    onnx.checker.check_model(onnx.load(path), full_check=True)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (inp,), (out,) = session.get_inputs(), session.get_outputs()
    print(f"exported {path} ({os.path.getsize(path)} bytes): input {inp.name!r} {inp.shape}, "
          f"output {out.name!r} {out.shape}")

    x = np.ascontiguousarray(x_test, dtype=np.float32)
    n = x.shape[0]
    ours = model.predict(x, batch_size=n, verbose=0)
    theirs = session.run(None, {inp.name: x})[0]
    biggest = float(np.max(np.abs(ours - theirs)))
    relative = biggest / float(np.max(np.abs(ours)))
    same_class = float(np.mean(np.argmax(ours, axis=1) == np.argmax(theirs, axis=1)))
    accuracy = float(np.mean(np.argmax(theirs, axis=1) == y_test))
    print(f"{n} test images: largest logit difference {biggest:.3g} ({relative:.2g} of the "
          f"largest logit), same predicted class {same_class:.2%}")
    print(f"test accuracy: tinynet {np.mean(np.argmax(ours, axis=1) == y_test):.4f}, "
          f"ONNX Runtime {accuracy:.4f}")

    t_tinynet = median_seconds(lambda: model.predict(x, batch_size=n, verbose=0), args.repeats)
    t_ort = median_seconds(lambda: session.run(None, {inp.name: x}), args.repeats)
    print(f"inference on all {n} images (median of {args.repeats}): tinynet "
          f"{t_tinynet * 1e3:.2f} ms, ONNX Runtime {t_ort * 1e3:.2f} ms; tinynet / ONNX "
          f"Runtime = {t_tinynet / t_ort:.2f}")
    return {"max_diff": biggest, "relative": relative, "same_class": same_class,
            "accuracy": accuracy, "ratio": t_tinynet / t_ort}


if __name__ == "__main__":
    main()
