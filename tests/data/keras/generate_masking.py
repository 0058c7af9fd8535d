"""Writes ``keras_masking_refs.json``: Keras 3.15.1's weights, predictions, loss and the
weights after one SGD step for the two masked models of ``masking_models.py``.

Run with Keras on JAX (never needed by the tests):
``KERAS_BACKEND=jax python tests/data/keras/generate_masking.py``.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import layers as L  # noqa: E402
from masking_models import data, models  # noqa: E402


def main() -> None:
    ids, seq, rng = data()
    keras.utils.set_random_seed(0)
    a, b = models(keras, L)
    out = {"wa": [w.tolist() for w in a.get_weights()], "wb": [w.tolist() for w in b.get_weights()],
           "pa": a.predict(ids, verbose=0).tolist(), "pb": b.predict(seq, verbose=0).tolist()}
    ya = rng.standard_normal((4, 2)).astype(np.float32)
    yb = rng.standard_normal((4, 5, 2)).astype(np.float32)
    out["ya"], out["yb"] = ya.tolist(), yb.tolist()
    for name, model, x, y in (("a", a, ids, ya), ("b", b, seq, yb)):
        model.compile(keras.optimizers.SGD(0.1), "mse")
        out["loss_" + name] = float(model.evaluate(x, y, verbose=0))
        model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
        out["after_" + name] = [w.tolist() for w in model.get_weights()]
    with open(os.path.join(HERE, "keras_masking_refs.json"), "w", encoding="utf-8") as fh:
        json.dump(out, fh)


if __name__ == "__main__":
    main()
