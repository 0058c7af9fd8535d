"""Writes the Keras augmentation-layer reference values the tests compare with
(``keras_augmentation_refs.npz``).

Run with Keras 3.15.1 on the PyTorch backend, outside the project's environment (Keras is
never a tinynet dependency), from a folder without a ``keras`` of its own, e.g.::

    cd /tmp && KERAS_BACKEND=torch PYTHONPATH=/path/to/kpkgs \\
        python /path/to/tinynet/tests/data/keras/generate_augmentation.py

Each case is a layer (class and arguments) applied to a fixed input ``x`` in training:
the parameters Keras drew (``layer.get_random_transformation(x, training=True)``, stored
under ``<case>/params/<key>`` in tinynet's names), Keras's output
(``layer.transform_images(x, transformation, training=True)``), and the input gradient of
``sum(output * g)`` for a fixed ``g`` (torch autograd). ``RandomCrop``'s ``*_inference``
cases store Keras's fixed crop (``get_random_transformation(x, training=False)``) applied
with ``transform_images(..., training=True)``: Keras 3.15.1 itself returns the uncropped
input at inference (its ``transform_images`` skips the crop when ``training`` is false),
which tinynet does not follow (the output would not have the layer's output shape).
``RandomRotation`` also stores Keras's float32 rotation matrix (copied before
``affine_transform`` rewrites it in place). Each case's layer config is stored as JSON.
"""

from __future__ import annotations

import json
import os

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "torch")
import keras  # noqa: E402
import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
AFFINE_MODES = [(fill, interp) for fill in ("reflect", "wrap", "nearest", "constant")
                for interp in ("bilinear", "nearest")]


def _cases() -> dict:
    """name: (class, kwargs, input shape, input kind, training)."""
    cases = {
        "flip_hv": ("RandomFlip", {"seed": 3}, (6, 5, 4, 2), "normal", True),
        "flip_h": ("RandomFlip", {"mode": "horizontal", "seed": 4}, (6, 5, 4, 2), "normal",
                   True),
        "flip_v": ("RandomFlip", {"mode": "vertical", "seed": 5}, (6, 5, 4, 2), "normal",
                   True),
        "crop_random": ("RandomCrop", {"height": 5, "width": 4, "seed": 6}, (3, 9, 8, 2),
                        "normal", True),
        "crop_equal_height": ("RandomCrop", {"height": 9, "width": 4, "seed": 7},
                              (3, 9, 8, 2), "normal", True),
        "crop_upscale": ("RandomCrop", {"height": 7, "width": 6, "seed": 8}, (2, 5, 9, 2),
                         "normal", True),
        "crop_inference": ("RandomCrop", {"height": 5, "width": 4, "seed": 9}, (3, 9, 8, 2),
                           "normal", False),
        "crop_inference_small": ("RandomCrop", {"height": 6, "width": 5, "seed": 10},
                                 (2, 4, 3, 2), "normal", False),
        "contrast_float": ("RandomContrast", {"factor": 0.5, "seed": 11}, (4, 6, 5, 3),
                           "pixels", True),
        "contrast_tuple_unit": ("RandomContrast", {"factor": (0.4, 0.7),
                                                   "value_range": (0, 1), "seed": 12},
                                (4, 6, 5, 3), "unit", True),
        "contrast_signed": ("RandomContrast", {"factor": (0.2, 0.9),
                                               "value_range": (-1.0, 1.5), "seed": 13},
                            (3, 5, 7, 2), "normal", True),
    }
    for fill, interp in AFFINE_MODES:
        extra = {"fill_value": 0.5} if fill == "constant" else {}
        tag = f"{fill}_{interp}"
        cases[f"translation_{tag}"] = (
            "RandomTranslation", {"height_factor": 0.4, "width_factor": (-0.5, 0.3),
                                  "fill_mode": fill, "interpolation": interp, "seed": 20,
                                  **extra}, (3, 7, 6, 2), "normal", True)
        cases[f"rotation_{tag}"] = (
            "RandomRotation", {"factor": 0.3, "fill_mode": fill, "interpolation": interp,
                               "seed": 21, **extra}, (3, 7, 8, 2), "normal", True)
        cases[f"zoom_{tag}"] = (
            "RandomZoom", {"height_factor": 0.5, "fill_mode": fill,
                           "interpolation": interp, "seed": 22, **extra},
            (3, 8, 7, 2), "normal", True)
    cases["translation_tuples"] = ("RandomTranslation", {
        "height_factor": (-1.0, -0.6), "width_factor": (0.7, 1.0), "seed": 23},
        (2, 6, 5, 3), "normal", True)
    cases["rotation_tuple"] = ("RandomRotation", {"factor": (0.1, 0.45), "seed": 24,
                                                  "fill_mode": "constant"},
                               (2, 9, 6, 3), "normal", True)
    cases["zoom_tuples"] = ("RandomZoom", {"height_factor": (-0.6, -0.2),
                                           "width_factor": (0.2, 0.9), "seed": 25},
                            (2, 8, 9, 2), "normal", True)
    cases["zoom_width_float"] = ("RandomZoom", {"height_factor": (0.1, 0.3),
                                                "width_factor": 0.6, "seed": 26,
                                                "fill_mode": "wrap",
                                                "interpolation": "nearest"},
                                 (3, 6, 7, 2), "normal", True)
    return cases


def _input(shape: tuple, kind: str, rng) -> np.ndarray:
    if kind == "pixels":
        return rng.uniform(0.0, 255.0, shape).astype(np.float32)
    if kind == "unit":
        return rng.uniform(0.0, 1.0, shape).astype(np.float32)
    return rng.standard_normal(shape).astype(np.float32)


def _np(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return t.detach().cpu().numpy()
    return np.asarray(t)


def _params(cls: str, t) -> dict:
    """Keras's transformation in tinynet's parameter names."""
    if cls == "RandomFlip":
        return {"flips": _np(t["flips"]).reshape(-1).astype(bool)}
    if cls == "RandomCrop":
        return {"h_start": np.array(int(_np(t[0]))), "w_start": np.array(int(_np(t[1])))}
    if cls == "RandomTranslation":
        return {"translations": _np(t["translations"]).astype(np.float32)}
    if cls == "RandomRotation":
        return {"angle": _np(t["angle"]).astype(np.float32),
                "rotation_matrix": _np(t["rotation_matrix"]).astype(np.float32).copy()}
    if cls == "RandomZoom":
        return {"height_zoom": _np(t["height_zoom"]).reshape(-1).astype(np.float32),
                "width_zoom": _np(t["width_zoom"]).reshape(-1).astype(np.float32)}
    if cls == "RandomContrast":
        return {"contrast_factor": _np(t["contrast_factor"]).reshape(-1).astype(np.float32)}
    raise KeyError(cls)


def _case(name: str, spec: tuple, rng) -> dict:
    cls, kwargs, shape, kind, training = spec
    layer = getattr(keras.layers, cls)(**kwargs)
    x = _input(shape, kind, rng)
    xt = torch.tensor(x)
    transformation = layer.get_random_transformation(xt, training=training)
    params = _params(cls, transformation)  # before affine_transform rewrites the matrix
    xg = torch.tensor(x, requires_grad=True)
    out = layer.transform_images(xg, transformation, training=True)
    g = rng.standard_normal(tuple(out.shape)).astype(np.float32)
    (out * torch.tensor(g)).sum().backward()
    result = {f"{name}/spec": np.array(json.dumps([cls, kwargs, training])),
              f"{name}/config": np.array(json.dumps(layer.get_config())),
              f"{name}/x": x, f"{name}/g": g, f"{name}/out": _np(out),
              f"{name}/dx": _np(xg.grad)}
    for key, value in params.items():
        result[f"{name}/params/{key}"] = value
    return result


def main() -> None:
    rng = np.random.default_rng(2025)
    out = {"keras_version": np.array(keras.__version__),
           "backend": np.array(keras.backend.backend())}
    cases = _cases()
    out["cases"] = np.array(json.dumps(sorted(cases)))
    for name in sorted(cases):
        out.update(_case(name, cases[name], rng))
    path = os.path.join(HERE, "keras_augmentation_refs.npz")
    np.savez_compressed(path, **out)
    print(f"wrote {len(out)} arrays ({len(cases)} cases) to {path} (Keras "
          f"{keras.__version__}, {keras.backend.backend()})")


if __name__ == "__main__":
    main()
