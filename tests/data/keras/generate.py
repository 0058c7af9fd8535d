"""Writes the Keras reference values the tests compare with (``keras_refs.npz``).

Run with Keras 3.15.1 on the PyTorch backend, outside the project's environment (Keras is
never a tinynet dependency), e.g.::

    pip install --target /tmp/kpkgs keras==3.15.1        # beside an installed torch
    KERAS_BACKEND=torch PYTHONPATH=/tmp/kpkgs python tests/data/keras/generate.py

Each case is a layer on a fixed input: its output and the input gradient of
``sum(output * g)`` for a fixed ``g`` (torch autograd); a loss on fixed targets and
predictions: its value and its gradient with respect to the predictions; and
``keras.utils.to_categorical`` on fixed labels.
"""

from __future__ import annotations

import json
import os

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "torch")
import keras  # noqa: E402
import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
LAYERS = {
    "zero_padding_asym": (lambda: keras.layers.ZeroPadding2D(((1, 2), (0, 3))), (2, 3, 4, 2)),
    "zero_padding_int": (lambda: keras.layers.ZeroPadding2D(1), (1, 2, 2, 3)),
    "cropping_asym": (lambda: keras.layers.Cropping2D(((1, 0), (2, 1))), (2, 5, 6, 3)),
    "cropping_pair": (lambda: keras.layers.Cropping2D((1, 2)), (1, 4, 6, 2)),
    "up_sampling_nearest": (lambda: keras.layers.UpSampling2D((2, 3)), (2, 3, 4, 2)),
    "up_sampling_bilinear": (lambda: keras.layers.UpSampling2D((2, 3), interpolation="bilinear"),
                             (2, 3, 4, 2)),
    "up_sampling_bilinear_4": (lambda: keras.layers.UpSampling2D(4, interpolation="bilinear"),
                               (1, 2, 5, 3)),
    "max_pooling1d": (lambda: keras.layers.MaxPooling1D(3, strides=2), (2, 9, 3)),
    "average_pooling1d_same": (lambda: keras.layers.AveragePooling1D(2, padding="same"),
                               (2, 7, 3)),
    "global_average_pooling1d": (lambda: keras.layers.GlobalAveragePooling1D(), (2, 6, 4)),
    "global_max_pooling1d_keepdims": (lambda: keras.layers.GlobalMaxPooling1D(keepdims=True),
                                      (2, 6, 4)),
    "rescaling_255": (lambda: keras.layers.Rescaling(1.0 / 127.5, offset=-1.0), (2, 3, 3, 3)),
    "rescaling_channels": (lambda: keras.layers.Rescaling(np.array([0.5, 2.0, -1.5]),
                                                          offset=np.array([0.1, 0.0, -0.2])),
                           (2, 2, 2, 3)),
}
WEIGHTED = {  # layers with weights: set from the generator, their gradients stored too
    "conv1d_valid": (lambda: keras.layers.Conv1D(4, 3), (2, 7, 3)),
    "conv1d_causal_dilated": (lambda: keras.layers.Conv1D(3, 3, padding="causal",
                                                          dilation_rate=2), (2, 9, 4)),
    "conv1d_same_strided": (lambda: keras.layers.Conv1D(16, 2, strides=2, padding="same",
                                                        activation="tanh"), (2, 9, 4)),
    "conv2d_transpose_same_s2": (lambda: keras.layers.Conv2DTranspose(3, 3, strides=2,
                                                                      padding="same"),
                                 (2, 4, 5, 2)),
    "conv2d_transpose_valid_op": (lambda: keras.layers.Conv2DTranspose(
        16, (2, 3), strides=(2, 1), output_padding=(1, 0)), (2, 4, 5, 16)),
    "conv2d_transpose_dilated": (lambda: keras.layers.Conv2DTranspose(
        4, 3, dilation_rate=2, padding="same"), (1, 5, 5, 3)),
    "conv2d_transpose_k2_s3": (lambda: keras.layers.Conv2DTranspose(2, 2, strides=3),
                               (1, 3, 3, 2)),
    "conv2d_transpose_same_op": (lambda: keras.layers.Conv2DTranspose(
        3, 4, strides=2, padding="same", output_padding=1, activation="tanh"), (1, 3, 4, 2)),
    "conv2d_transpose_same_k4_s2": (lambda: keras.layers.Conv2DTranspose(
        2, 4, strides=2, padding="same"), (1, 3, 3, 3)),
    "depthwise_same_m2": (lambda: keras.layers.DepthwiseConv2D(3, depth_multiplier=2,
                                                               padding="same"),
                          (2, 5, 5, 3)),
    "depthwise_strided": (lambda: keras.layers.DepthwiseConv2D((3, 2), strides=2,
                                                               activation="tanh"),
                          (2, 7, 6, 4)),
    "depthwise_dilated": (lambda: keras.layers.DepthwiseConv2D(3, dilation_rate=2,
                                                               padding="same",
                                                               use_bias=False), (1, 6, 6, 2)),
    "separable_same_m2": (lambda: keras.layers.SeparableConv2D(5, 3, padding="same",
                                                               depth_multiplier=2),
                          (2, 5, 5, 3)),
    "separable_strided": (lambda: keras.layers.SeparableConv2D(4, 2, strides=2,
                                                               activation="tanh"),
                          (2, 6, 7, 3)),
}
LOSSES = {  # name: (loss, y_true kind, shape)
    "huber": (lambda: keras.losses.Huber(), "real", (4, 5)),
    "huber_delta": (lambda: keras.losses.Huber(delta=0.3), "real", (3, 2, 4)),
    "log_cosh": (lambda: keras.losses.LogCosh(), "real", (4, 5)),
    "kl_divergence": (lambda: keras.losses.KLDivergence(), "probs", (4, 5)),
    "hinge": (lambda: keras.losses.Hinge(), "binary", (4, 3)),
    "hinge_signed": (lambda: keras.losses.Hinge(), "signed", (4, 3)),
    "squared_hinge": (lambda: keras.losses.SquaredHinge(), "binary", (4, 3)),
    "categorical_hinge": (lambda: keras.losses.CategoricalHinge(), "onehot", (6, 4)),
    "mse_3d": (lambda: keras.losses.MeanSquaredError(), "real", (3, 4, 2)),
    "mae": (lambda: keras.losses.MeanAbsoluteError(), "real", (5, 3)),
    "bce": (lambda: keras.losses.BinaryCrossentropy(), "binary_probs", (4, 3)),
    "bce_logits_smoothed": (lambda: keras.losses.BinaryCrossentropy(
        from_logits=True, label_smoothing=0.1), "binary", (4, 3)),
    "bce_smoothed": (lambda: keras.losses.BinaryCrossentropy(label_smoothing=0.2),
                     "binary_probs", (4, 3)),
    "cce": (lambda: keras.losses.CategoricalCrossentropy(), "onehot_probs", (5, 4)),
    "cce_logits_smoothed": (lambda: keras.losses.CategoricalCrossentropy(
        from_logits=True, label_smoothing=0.15), "onehot", (5, 4)),
    "cce_smoothed": (lambda: keras.losses.CategoricalCrossentropy(label_smoothing=0.3),
                     "onehot_probs", (5, 4)),
    "scce_logits": (lambda: keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                    "sparse", (6, 4)),
    "binary_focal": (lambda: keras.losses.BinaryFocalCrossentropy(), "binary_probs", (4, 3)),
    "binary_focal_balanced": (lambda: keras.losses.BinaryFocalCrossentropy(
        apply_class_balancing=True, alpha=0.4, gamma=1.5, label_smoothing=0.1),
        "binary_probs", (4, 3)),
    "binary_focal_logits": (lambda: keras.losses.BinaryFocalCrossentropy(
        from_logits=True, gamma=3.0), "binary", (4, 3)),
    "categorical_focal": (lambda: keras.losses.CategoricalFocalCrossentropy(),
                          "onehot_probs", (5, 4)),
    "categorical_focal_logits_smoothed": (lambda: keras.losses.CategoricalFocalCrossentropy(
        alpha=0.5, gamma=1.0, from_logits=True, label_smoothing=0.2), "onehot", (5, 4)),
}
LABELS = {
    "labels_inferred": ([3, 0, 2, 1, 1], None),
    "labels_trailing_one": ([[1], [0], [3]], 5),
    "labels_2d": ([[0, 2], [1, 1]], 3),
}


def main() -> None:
    rng = np.random.default_rng(0)
    out = {"keras_version": np.array(keras.__version__)}
    for name, (make, shape) in LAYERS.items():
        x = (rng.standard_normal(shape) * (60 if "255" in name else 1)).astype(np.float32)
        if "255" in name:
            x = np.round(np.abs(x)).astype(np.float32)
        layer = make()
        xt = torch.tensor(x, requires_grad=True)
        y = layer(xt)
        g = rng.standard_normal(tuple(y.shape)).astype(np.float32)
        (y * torch.tensor(g)).sum().backward()
        out[f"{name}/x"] = x
        out[f"{name}/y"] = y.detach().cpu().numpy()
        out[f"{name}/g"] = g
        out[f"{name}/dx"] = xt.grad.cpu().numpy()
    for name, (make, shape) in WEIGHTED.items():
        out.update(_weighted_case(name, make(), shape, rng))
    for name, (make, kind, shape) in LOSSES.items():
        y_pred = rng.standard_normal(shape).astype(np.float32)
        if kind == "real":
            y_true = (y_pred + rng.standard_normal(shape)).astype(np.float32)
        elif kind == "probs":
            y_true = rng.dirichlet(np.ones(shape[-1]), shape[:-1]).astype(np.float32)
            y_pred = rng.dirichlet(np.ones(shape[-1]), shape[:-1]).astype(np.float32)
            y_pred[0, 0] = 0.0  # below the clip: no gradient there
        elif kind in ("binary", "binary_probs"):
            y_true = rng.integers(0, 2, shape).astype(np.float32)
            if kind == "binary_probs":
                y_pred = rng.uniform(0.02, 0.98, shape).astype(np.float32)
        elif kind == "signed":
            y_true = (2 * rng.integers(0, 2, shape) - 1).astype(np.float32)
        elif kind == "sparse":
            y_true = rng.integers(0, shape[-1], shape[:-1]).astype(np.int64)
        else:
            y_true = np.eye(shape[-1], dtype=np.float32)[rng.integers(0, shape[-1], shape[0])]
            if kind == "onehot_probs":
                y_pred = rng.dirichlet(np.ones(shape[-1]) * 3, shape[0]).astype(np.float32)
            else:
                y_pred *= 0.3  # some rows inside the margin, some out
        out[f"{name}/y_true"] = y_true
        out[f"{name}/y_pred"] = y_pred
        sw = rng.uniform(0.0, 2.0, shape[:-1]).astype(np.float32)  # one per per-sample loss
        sw.reshape(-1)[0] = 0.0
        out[f"{name}/sample_weight"] = sw
        for suffix, weight in (("", None), ("_weighted", sw)):
            pt = torch.tensor(y_pred, requires_grad=True)
            loss = make()(torch.tensor(y_true), pt,
                          sample_weight=None if weight is None else torch.tensor(weight))
            loss.backward()
            out[f"{name}/value{suffix}"] = np.float64(loss.item())
            out[f"{name}/grad{suffix}"] = pt.grad.cpu().numpy()
    for name, (labels, classes) in LABELS.items():
        out[f"{name}/y"] = keras.utils.to_categorical(labels, classes)
    out.update(_embedding(rng))
    out.update(_normalization(rng))
    out["csv_logger/text"] = np.array(_csv_logger_text())
    out.update(_fit_epochs())
    out.update(_weighted_fits())
    out.update(_confusion_metrics())
    out.update(_reduce_lr())
    out.update(_schedules())
    out.update(_top_k())
    np.savez(os.path.join(HERE, "keras_refs.npz"), **out)
    _summaries()


def _weighted_case(name: str, layer, shape: tuple, rng) -> dict:
    """A layer with weights on a fixed input: weights ``w0, w1, ...`` (Keras's
    ``layer.weights`` order) drawn from ``rng``, the output, and the gradients of
    ``sum(output * g)`` for the input and each weight."""
    x = rng.standard_normal(shape).astype(np.float32)
    layer.build(shape)
    weights = [(rng.standard_normal(tuple(w.shape)) * 0.5).astype(np.float32)
               for w in layer.weights]
    layer.set_weights(weights)
    xt = torch.tensor(x, requires_grad=True)
    y = layer(xt)
    g = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    (y * torch.tensor(g)).sum().backward()
    case = {f"{name}/x": x, f"{name}/y": y.detach().cpu().numpy(), f"{name}/g": g,
            f"{name}/dx": xt.grad.cpu().numpy(),
            f"{name}/names": np.array([w.name for w in layer.weights])}
    for i, (w, v) in enumerate(zip(weights, layer.weights)):
        case[f"{name}/w{i}"] = w
        case[f"{name}/dw{i}"] = v.value.grad.cpu().numpy()
    return case


def _embedding(rng) -> dict:
    """``Embedding(10, 4)`` on fixed ids (repeats included): output and table gradient."""
    layer = keras.layers.Embedding(10, 4)
    ids = np.array([[1, 3, 3, 0, 9], [2, 1, 1, 1, 5], [9, 9, 0, 4, 7]], dtype=np.int64)
    layer.build(ids.shape)
    table = (rng.standard_normal((10, 4)) * 0.5).astype(np.float32)
    layer.set_weights([table])
    y = layer(torch.tensor(ids))
    g = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    (y * torch.tensor(g)).sum().backward()
    return {"embedding/ids": ids, "embedding/w0": table, "embedding/y": y.detach().numpy(),
            "embedding/g": g, "embedding/dw0": layer.weights[0].value.grad.cpu().numpy()}


def _normalization(rng) -> dict:
    """``Normalization``: given statistics (and inverted), adapted on an array and over two
    kept axes or none: outputs, input gradients, adapted weights. (Adapting on an iterable
    of batches needs TensorFlow in Keras 3.15; the tests check it by the formula.)"""
    out = {}
    data = (rng.standard_normal((50, 3)) * [1.0, 5.0, 0.1] + [0.0, 10.0, -2.0]).astype(
        np.float32)
    data4 = rng.standard_normal((6, 3, 2, 5)).astype(np.float32) * 3 + 1
    cases = {
        "normalization_fixed": (lambda: keras.layers.Normalization(
            mean=[1.0, 2.0, 3.0], variance=[4.0, 0.0, 0.25]), None, (4, 3)),
        "normalization_invert": (lambda: keras.layers.Normalization(
            mean=[1.0, 2.0, 3.0], variance=[4.0, 0.0, 0.25], invert=True), None, (4, 3)),
        "normalization_adapt": (lambda: keras.layers.Normalization(), data, (4, 3)),
        "normalization_axes": (lambda: keras.layers.Normalization(axis=(1, 2)), data4,
                               (4, 3, 2, 5)),
        "normalization_none": (lambda: keras.layers.Normalization(axis=None), data, (4, 3)),
    }
    for name, (make, adapt_data, shape) in cases.items():
        layer = make()
        if adapt_data is not None:
            layer.adapt(adapt_data)
            out[f"{name}/weights"] = np.array(len(layer.weights))
            for i, w in enumerate(layer.get_weights()):
                out[f"{name}/w{i}"] = np.asarray(w)
        x = (rng.standard_normal(shape) * 3).astype(np.float32)
        xt = torch.tensor(x, requires_grad=True)
        y = layer(xt)
        g = rng.standard_normal(tuple(y.shape)).astype(np.float32)
        (y * torch.tensor(g)).sum().backward()
        out.update({f"{name}/x": x, f"{name}/y": y.detach().numpy(), f"{name}/g": g,
                    f"{name}/dx": xt.grad.numpy()})
    return out


def _summaries() -> None:
    """Keras's summary of each SUMMARY_MODELS model, each in a fresh process (Keras names
    layers uniquely across a whole session; tinynet within a model)."""
    import subprocess
    import sys

    from summary_models import SUMMARY_MODELS

    for name in SUMMARY_MODELS:
        code = ("import os, sys; os.environ['KERAS_BACKEND'] = 'torch'; "
                f"sys.path.insert(0, {HERE!r}); import keras, summary_models; "
                f"m = summary_models.SUMMARY_MODELS[{name!r}](keras.layers, keras); "
                "m.summary(print_fn=lambda s, line_break=None: print(s, end=''))")
        text = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True, env=os.environ).stdout
        with open(os.path.join(HERE, f"{name}.txt"), "w", encoding="utf-8") as fh:
            fh.write(text)


def _csv_logger_text() -> str:
    """The file ``CSVLogger`` writes for two epochs of a small fit with an accuracy metric
    and no validation (its header and layout; the values are Keras's own)."""
    import tempfile

    keras.utils.set_random_seed(0)
    x = np.random.default_rng(0).standard_normal((16, 3)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    path = os.path.join(tempfile.mkdtemp(), "log.csv")
    model.fit(x, y, epochs=2, verbose=0, callbacks=[keras.callbacks.CSVLogger(path)])
    with open(path, encoding="utf-8", newline="") as fh:  # the bytes, line ends included
        return fh.read()



def _fit_epochs() -> dict:
    """What ``fit(initial_epoch=2, epochs=6, validation_freq=2)`` and ``validation_freq=[1,
    4]`` report: the epochs the callbacks see and the history's lengths per key."""
    x = np.random.default_rng(0).standard_normal((16, 3)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    out = {}
    for name, kwargs in (("fit_initial_epoch", {"initial_epoch": 2, "validation_freq": 2}),
                         ("fit_validation_list", {"validation_freq": [1, 4]})):
        seen = []
        cb = keras.callbacks.LambdaCallback(
            on_epoch_end=lambda epoch, logs, seen=seen: seen.append(
                (epoch, "val_loss" in logs)))
        history = model.fit(x, y, epochs=6, verbose=0, validation_data=(x, y),
                            callbacks=[cb], **kwargs)
        out[f"{name}/epochs"] = np.array([e for e, _ in seen])
        out[f"{name}/validated"] = np.array([v for _, v in seen])
        out[f"{name}/history_epoch"] = np.array(history.epoch)
        out[f"{name}/val_len"] = np.array(len(history.history["val_loss"]))
        out[f"{name}/loss_len"] = np.array(len(history.history["loss"]))
    return out


def _weighted_fits() -> dict:
    """Fits of a Dense model from fixed weights with SGD, unshuffled, weighted by
    ``sample_weight`` or ``class_weight``, from ``initial_epoch``, weighted validation
    data: the history and the final weights, and a weighted ``evaluate``."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((20, 4)).astype(np.float32)
    y = rng.integers(0, 3, 20).astype(np.int64)
    sw = rng.uniform(0.0, 3.0, 20).astype(np.float32)
    w0 = (rng.standard_normal((4, 3)) * 0.5).astype(np.float32)
    b0 = (rng.standard_normal(3) * 0.1).astype(np.float32)
    out = {"weighted_fit/x": x, "weighted_fit/y": y, "weighted_fit/sw": sw,
           "weighted_fit/w0": w0, "weighted_fit/b0": b0}
    cases = {"sample_weight": {"sample_weight": sw},
             "class_weight": {"class_weight": {0: 0.5, 1: 2.0}},
             "initial_epoch": {"sample_weight": sw, "initial_epoch": 2},
             "validation": {"sample_weight": sw, "validation_data": (x[:8], y[:8], sw[:8])}}
    for name, kwargs in cases.items():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
        model.set_weights([w0, b0])
        model.compile(keras.optimizers.SGD(0.1),
                      keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        history = model.fit(x, y, batch_size=8, epochs=4, shuffle=False, verbose=0, **kwargs)
        for key, values in history.history.items():
            out[f"weighted_fit/{name}/{key}"] = np.array(values, dtype=np.float64)
        for i, w in enumerate(model.get_weights()):
            out[f"weighted_fit/{name}/w{i}"] = w
        if name == "sample_weight":
            out["weighted_fit/evaluate"] = np.float64(
                model.evaluate(x, y, batch_size=8, sample_weight=sw, verbose=0))
    return out


CONFUSION = {  # name: metric
    "precision": lambda: keras.metrics.Precision(),
    "precision_0.3": lambda: keras.metrics.Precision(thresholds=0.3),
    "precision_top2": lambda: keras.metrics.Precision(top_k=2),
    "recall": lambda: keras.metrics.Recall(),
    "recall_class1": lambda: keras.metrics.Recall(class_id=1),
    "auc": lambda: keras.metrics.AUC(),
    "auc_pr": lambda: keras.metrics.AUC(curve="PR"),
    "auc_minoring": lambda: keras.metrics.AUC(summation_method="minoring"),
    "auc_majoring_pr": lambda: keras.metrics.AUC(curve="PR", summation_method="majoring"),
    "auc_50_logits": lambda: keras.metrics.AUC(num_thresholds=50, from_logits=True),
    "auc_given": lambda: keras.metrics.AUC(thresholds=[0.1, 0.35, 0.5, 0.9]),
}


def _confusion_metrics() -> dict:
    """Precision, Recall and AUC over two batches of fixed labels and scores (the result
    after the first batch and after both)."""
    rng = np.random.default_rng(11)
    t = [rng.integers(0, 2, (6, 3)).astype(np.float32) for _ in range(2)]
    p = [np.round(rng.uniform(0, 1, (6, 3)), 2).astype(np.float32) for _ in range(2)]
    out = {"confusion/t0": t[0], "confusion/t1": t[1], "confusion/p0": p[0],
           "confusion/p1": p[1]}
    for name, make in CONFUSION.items():
        metric = make()
        scores = [x * 6 - 3 for x in p] if "logits" in name else p
        metric.update_state(t[0], scores[0])
        first = float(metric.result())
        metric.update_state(t[1], scores[1])
        out[f"confusion/{name}"] = np.array([first, float(metric.result())])
    return out


PLATEAU = {  # name: (callback arguments, monitor, values per epoch)
    "plateau_min": ({"factor": 0.5, "patience": 2, "cooldown": 1, "min_lr": 0.002,
                     "min_delta": 0.01}, "val_loss",
                    [1.0, 0.9, 0.895, 0.89, 0.7, 0.71, 0.72, 0.73, 0.69, 0.695, 0.7, 0.71,
                     0.72, 0.73, 0.74, 0.75]),
    "plateau_max": ({"factor": 0.2, "patience": 1, "mode": "max"}, "val_accuracy",
                    [0.5, 0.6, 0.6, 0.7, 0.65, 0.64, 0.9, 0.8]),
}


def _reduce_lr() -> dict:
    """``ReduceLROnPlateau`` fed fixed monitored values: the rate logged each epoch and
    the rate after it."""
    out = {}
    for name, (kwargs, monitor, values) in PLATEAU.items():
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        model.compile(keras.optimizers.Adam(0.01), "mse")
        cb = keras.callbacks.ReduceLROnPlateau(monitor=monitor, **kwargs)
        cb.set_model(model)
        cb.on_train_begin()
        logged, after = [], []
        for epoch, value in enumerate(values):
            logs = {monitor: value}
            cb.on_epoch_end(epoch, logs)
            logged.append(logs["learning_rate"])
            after.append(float(model.optimizer.learning_rate))
        out[f"{name}/case"] = np.array(json.dumps([kwargs, monitor, values]))
        out[f"{name}/logged"] = np.array(logged)
        out[f"{name}/after"] = np.array(after)
    return out


SCHEDULES = {  # name: (class name, arguments)
    "exponential": ("ExponentialDecay", {"initial_learning_rate": 0.1, "decay_steps": 10,
                                         "decay_rate": 0.9}),
    "exponential_staircase": ("ExponentialDecay", {"initial_learning_rate": 0.1,
                                                   "decay_steps": 7, "decay_rate": 0.5,
                                                   "staircase": True}),
    "piecewise": ("PiecewiseConstantDecay", {"boundaries": [20, 60, 100],
                                             "values": [1.0, 0.5, 0.1, 0.01]}),
    "inverse_time": ("InverseTimeDecay", {"initial_learning_rate": 0.2, "decay_steps": 5,
                                          "decay_rate": 0.3}),
    "inverse_time_staircase": ("InverseTimeDecay", {"initial_learning_rate": 0.2,
                                                    "decay_steps": 5, "decay_rate": 0.3,
                                                    "staircase": True}),
    "polynomial": ("PolynomialDecay", {"initial_learning_rate": 0.1, "decay_steps": 100,
                                       "end_learning_rate": 0.001, "power": 2.0}),
    "polynomial_cycle": ("PolynomialDecay", {"initial_learning_rate": 0.1, "decay_steps": 40,
                                             "power": 0.5, "cycle": True}),
    "cosine": ("CosineDecay", {"initial_learning_rate": 0.1, "decay_steps": 100,
                               "alpha": 0.1}),
    "cosine_warmup": ("CosineDecay", {"initial_learning_rate": 0.0, "decay_steps": 90,
                                      "warmup_target": 0.2, "warmup_steps": 30}),
    "cosine_restarts": ("CosineDecayRestarts", {"initial_learning_rate": 0.1,
                                                "first_decay_steps": 20, "t_mul": 2.0,
                                                "m_mul": 0.8, "alpha": 0.05}),
    "cosine_restarts_even": ("CosineDecayRestarts", {"initial_learning_rate": 0.1,
                                                     "first_decay_steps": 25, "t_mul": 1.0}),
}


def _schedules() -> dict:
    """Every schedule at steps 0..150 (and its arguments, so the test builds the same)."""
    out = {}
    for name, (cls, kwargs) in SCHEDULES.items():
        schedule = getattr(keras.optimizers.schedules, cls)(**kwargs)
        out[f"schedule_{name}/case"] = np.array(json.dumps([cls, kwargs]))
        out[f"schedule_{name}/values"] = np.array(
            [float(schedule(np.float32(step))) for step in range(151)])
    return out


def _top_k() -> dict:
    """The top-k accuracies on fixed scores with ties, for k = 1, 2, 3."""
    rng = np.random.default_rng(1)
    scores = np.round(rng.standard_normal((40, 6)), 1).astype(np.float32)  # ties
    labels = rng.integers(0, 6, 40)
    out = {"top_k/scores": scores, "top_k/labels": labels}
    for k in (1, 2, 3):
        sparse = keras.metrics.SparseTopKCategoricalAccuracy(k=k)
        sparse.update_state(labels, scores)
        dense = keras.metrics.TopKCategoricalAccuracy(k=k)
        dense.update_state(np.eye(6, dtype=np.float32)[labels], scores)
        ids = np.argsort(-scores, axis=-1, kind="stable")
        sorted_ids = keras.metrics.SparseTopKCategoricalAccuracy(k=k, from_sorted_ids=True)
        sorted_ids.update_state(labels, ids)
        out[f"top_k/k{k}"] = np.array([float(sparse.result()), float(dense.result()),
                                       float(sorted_ids.result())])
    return out


if __name__ == "__main__":
    main()
