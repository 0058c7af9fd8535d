"""Weight initialisers (Keras names): glorot_uniform, he_normal, zeros, ones, ...

As Keras's ``keras.initializers``: the classes (:class:`HeNormal`, :class:`RandomNormal`,
:class:`Constant`, ...), each called as ``init(shape, dtype=None)``; :func:`get` from a
name, a config dict, an initializer or a callable; :func:`serialize` and
:func:`deserialize` with Keras's config format. A seeded initializer gives the same
values on every call (as in Keras); an unseeded one draws from the global seed stream.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tinynet.random import _real, check_seed, check_shape as _shape, make_rng
from tinynet.reprs import plain_repr

__all__ = ["get", "fans", "serialize", "deserialize", "Initializer", "Zeros", "Ones",
           "Constant", "RandomNormal", "RandomUniform", "TruncatedNormal", "GlorotUniform",
           "GlorotNormal", "HeUniform", "HeNormal", "LecunUniform", "LecunNormal", "Orthogonal"]


def fans(shape: tuple) -> tuple[int, int]:
    """Keras's (fan_in, fan_out): kernels ``[kh, kw, in, out]`` use the receptive field."""
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = int(np.prod(shape[:-2]))
    return shape[-2] * receptive, shape[-1] * receptive


_NAMES = ("glorot_uniform", "glorot_normal", "he_uniform", "he_normal", "zeros", "ones",
          "lecun_uniform", "lecun_normal", "uniform", "random_uniform", "normal",
          "random_normal", "orthogonal")
# Keras's RandomUniform(-0.05, 0.05) and RandomNormal(0.0, 0.05) under their string names
_FIXED_SCALE = {"uniform": "uniform", "random_uniform": "uniform", "normal": "normal",
                "random_normal": "normal"}


def _draw(name: str, shape: tuple, seed: int | None) -> np.ndarray:
    """One draw of the named Keras initialiser (a fresh generator per call)."""
    if name == "zeros":
        return np.zeros(shape, dtype=np.float32)
    if name == "ones":
        return np.ones(shape, dtype=np.float32)
    rng = make_rng(seed)
    kind = _FIXED_SCALE.get(name)
    if kind == "uniform":
        return rng.uniform(-0.05, 0.05, size=shape).astype(np.float32)
    if kind == "normal":
        return (rng.standard_normal(size=shape) * 0.05).astype(np.float32)
    fan_in, fan_out = fans(shape)
    if name.startswith("glorot"):
        scale = 2.0 / max(1.0, fan_in + fan_out)
    elif name.startswith("he"):
        scale = 2.0 / max(1.0, fan_in)
    else:
        scale = 1.0 / max(1.0, fan_in)
    if name.endswith("uniform"):
        limit = np.sqrt(3.0 * scale)
        return rng.uniform(-limit, limit, size=shape).astype(np.float32)
    # truncated normal at 2 std, Keras's stddev correction
    std = np.sqrt(scale) / 0.87962566103423978
    return (_truncated(rng, shape) * std).astype(np.float32)


def _truncated(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """Standard normal draws, redrawn beyond 2 (Keras's truncated normal)."""
    out = rng.standard_normal(size=shape)
    bad = np.abs(out) > 2.0
    while bad.any():
        out[bad] = rng.standard_normal(size=int(bad.sum()))
        bad = np.abs(out) > 2.0
    return out




def _dtype(dtype: Any, owner: str) -> np.dtype:
    dt = np.dtype("float32" if dtype is None else dtype)
    if dt.kind != "f":
        raise TypeError(f"{owner}: dtype must be a float dtype, got {dtype!r}")
    return dt


class Initializer:
    """Keras ``keras.initializers.Initializer``: ``init(shape, dtype=None)`` returns the
    initial values (float32 unless ``dtype``). Subclasses define ``__call__`` and
    ``get_config``; ``from_config(config)`` is ``cls(**config)``."""

    def __call__(self, shape: Any, dtype: Any = None) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__}: define __call__(shape, dtype=None)")

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict) -> "Initializer":
        import inspect

        params = inspect.signature(cls.__init__).parameters
        if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            valid = [n for n in params if n != "self"]
            unknown = [k for k in config if k not in valid]
            if unknown:
                from tinynet.keywords import unexpected_keywords

                raise unexpected_keywords(f"{cls.__name__}.from_config", unknown, valid)
        return cls(**config)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class _Named(Initializer):
    """An initialiser known by its Keras string name (``_name``), with a seed."""

    _name = ""

    def __init__(self, seed: int | None = None) -> None:
        self.seed = check_seed(seed, type(self).__name__)

    def __call__(self, shape: Any, dtype: Any = None) -> np.ndarray:
        owner = type(self).__name__
        return _draw(self._name, _shape(shape, owner), self.seed).astype(_dtype(dtype, owner))

    def get_config(self) -> dict:
        return {"seed": self.seed}


class Zeros(Initializer):
    """All zeros (Keras ``Zeros``, ``"zeros"``)."""

    def __call__(self, shape: Any, dtype: Any = None) -> np.ndarray:
        return np.zeros(_shape(shape, "Zeros"), dtype=_dtype(dtype, "Zeros"))


class Ones(Initializer):
    """All ones (Keras ``Ones``, ``"ones"``)."""

    def __call__(self, shape: Any, dtype: Any = None) -> np.ndarray:
        return np.ones(_shape(shape, "Ones"), dtype=_dtype(dtype, "Ones"))


class Constant(Initializer):
    """Every entry ``value`` (Keras ``Constant``)."""

    def __init__(self, value: float = 0.0) -> None:
        self.value = _real(value, "Constant", "value")

    def __call__(self, shape: Any, dtype: Any = None) -> np.ndarray:
        return np.full(_shape(shape, "Constant"), self.value, dtype=_dtype(dtype, "Constant"))

    def get_config(self) -> dict:
        return {"value": self.value}


class RandomNormal(Initializer):
    """Normal draws with ``mean`` and ``stddev`` (Keras ``RandomNormal``; the string
    ``"random_normal"`` is ``RandomNormal(0.0, 0.05)``)."""

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None) -> None:
        self.mean = _real(mean, "RandomNormal", "mean")
        self.stddev = _real(stddev, "RandomNormal", "stddev")
        self.seed = check_seed(seed, "RandomNormal")

    def __call__(self, shape: Any, dtype: Any = None) -> np.ndarray:
        draws = make_rng(self.seed).standard_normal(size=_shape(shape, "RandomNormal"))
        return (draws * self.stddev + self.mean).astype(_dtype(dtype, "RandomNormal"))

    def get_config(self) -> dict:
        return {"seed": self.seed, "mean": self.mean, "stddev": self.stddev}


class RandomUniform(Initializer):
    """Uniform draws in ``[minval, maxval)`` (Keras ``RandomUniform``; the string
    ``"random_uniform"`` is ``RandomUniform(-0.05, 0.05)``)."""

    def __init__(self, minval: float = -0.05, maxval: float = 0.05,
                 seed: int | None = None) -> None:
        self.minval = _real(minval, "RandomUniform", "minval")
        self.maxval = _real(maxval, "RandomUniform", "maxval")
        if self.minval > self.maxval:
            raise ValueError(f"RandomUniform: minval must not exceed maxval, got "
                             f"minval={self.minval!r} and maxval={self.maxval!r}")
        self.seed = check_seed(seed, "RandomUniform")

    def __call__(self, shape: Any, dtype: Any = None) -> np.ndarray:
        draws = make_rng(self.seed).uniform(self.minval, self.maxval,
                                            size=_shape(shape, "RandomUniform"))
        return draws.astype(_dtype(dtype, "RandomUniform"))

    def get_config(self) -> dict:
        return {"seed": self.seed, "minval": self.minval, "maxval": self.maxval}


class TruncatedNormal(Initializer):
    """Normal draws redrawn beyond two standard deviations (Keras ``TruncatedNormal``)."""

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None) -> None:
        self.mean = _real(mean, "TruncatedNormal", "mean")
        self.stddev = _real(stddev, "TruncatedNormal", "stddev")
        self.seed = check_seed(seed, "TruncatedNormal")

    def __call__(self, shape: Any, dtype: Any = None) -> np.ndarray:
        draws = _truncated(make_rng(self.seed), _shape(shape, "TruncatedNormal"))
        return (draws * self.stddev + self.mean).astype(_dtype(dtype, "TruncatedNormal"))

    def get_config(self) -> dict:
        return {"seed": self.seed, "mean": self.mean, "stddev": self.stddev}


class GlorotUniform(_Named):
    """Keras ``GlorotUniform`` (``"glorot_uniform"``): uniform, limit
    ``sqrt(6 / (fan_in + fan_out))``."""
    _name = "glorot_uniform"


class GlorotNormal(_Named):
    """Keras ``GlorotNormal`` (``"glorot_normal"``): truncated normal, variance
    ``2 / (fan_in + fan_out)``."""
    _name = "glorot_normal"


class HeUniform(_Named):
    """Keras ``HeUniform`` (``"he_uniform"``): uniform, limit ``sqrt(6 / fan_in)``."""
    _name = "he_uniform"


class HeNormal(_Named):
    """Keras ``HeNormal`` (``"he_normal"``): truncated normal, variance ``2 / fan_in``."""
    _name = "he_normal"


class LecunUniform(_Named):
    """Keras ``LecunUniform`` (``"lecun_uniform"``): uniform, limit ``sqrt(3 / fan_in)``."""
    _name = "lecun_uniform"


class LecunNormal(_Named):
    """Keras ``LecunNormal`` (``"lecun_normal"``): truncated normal, variance
    ``1 / fan_in``."""
    _name = "lecun_normal"


class Orthogonal(Initializer):
    """Keras ``Orthogonal`` (``"orthogonal"``, the recurrent layers' default for their
    recurrent kernel): the ``[prod(shape[:-1]), shape[-1]]`` view of the result has
    orthonormal rows or columns (whichever are fewer), times ``gain``. Drawn as the
    Q factor of a normal matrix, its columns' signs fixed by R's diagonal."""

    def __init__(self, gain: float = 1.0, seed: int | None = None) -> None:
        self.gain = _real(gain, "Orthogonal", "gain")
        self.seed = check_seed(seed, "Orthogonal")

    def __call__(self, shape: Any, dtype: Any = None) -> np.ndarray:
        shape = _shape(shape, "Orthogonal")
        if len(shape) < 2:
            raise ValueError(f"Orthogonal: shape must have rank >= 2, got {shape}")
        rows, cols = int(np.prod(shape[:-1])), int(shape[-1])
        draws = make_rng(self.seed).standard_normal(size=(max(rows, cols), min(rows, cols)))
        q, r = np.linalg.qr(draws)
        q = q * np.where(np.diag(r) < 0, -1.0, 1.0)
        if rows < cols:
            q = q.T
        return (self.gain * q).reshape(shape).astype(_dtype(dtype, "Orthogonal"))

    def get_config(self) -> dict:
        return {"seed": self.seed, "gain": self.gain}


_CLASSES = {c.__name__: c for c in (Zeros, Ones, Constant, RandomNormal, RandomUniform,
                                    TruncatedNormal, GlorotUniform, GlorotNormal, HeUniform,
                                    HeNormal, LecunUniform, LecunNormal, Orthogonal)}


def _from_name(name: str, seed: int | None) -> Initializer:
    if name == "zeros":
        return Zeros()
    if name == "ones":
        return Ones()
    kind = _FIXED_SCALE.get(name)
    if kind == "uniform":
        return RandomUniform(seed=seed)
    if kind == "normal":
        return RandomNormal(seed=seed)
    if name == "orthogonal":
        return Orthogonal(seed=seed)
    return {c._name: c for c in (GlorotUniform, GlorotNormal, HeUniform, HeNormal,
                                 LecunUniform, LecunNormal)}[name](seed=seed)


def get(name: Any, layer=None, seed: int | None = None) -> Callable[[tuple], np.ndarray]:
    """Returns an initialiser, called as ``init(shape)`` (or ``init(shape, dtype)``).

    Args:
        name: A Keras name (``"he_normal"``), a config dict (from :func:`serialize`), an
            :class:`Initializer` or any callable ``shape -> array`` (returned as it is).
        layer: For a name: the layer whose ``seed`` (if any) seeds it.
        seed: For a name: the seed (``None``: the layer's, else the global seed stream).

    Raises:
        ValueError: an unknown name or config.
        TypeError: none of the above.
    """
    if isinstance(name, dict):
        return deserialize(name)
    if callable(name) and not isinstance(name, str):
        return name
    if not isinstance(name, str):
        raise TypeError(f"initializer must be a name, a config dict, an Initializer or a "
                        f"callable shape -> array, got {name!r}")
    if name not in _NAMES:
        raise ValueError(f"unknown initializer {name!r}; expected one of {', '.join(_NAMES)}")
    if seed is None and layer is not None:
        seed = getattr(layer, "seed", None)
    return _from_name(name, seed)


def serialize(initializer: Any) -> Any:
    """Keras's config of an initialiser: ``{"module": "keras.initializers", "class_name":
    ..., "config": ..., "registered_name": None}`` (a name or ``None`` stays as it is).

    Raises:
        TypeError: a callable that is not an :class:`Initializer` (it has no config).
    """
    if initializer is None or isinstance(initializer, str):
        return initializer
    if not isinstance(initializer, Initializer):
        raise TypeError(f"initializers.serialize: cannot serialize {plain_repr(initializer)}: only "
                        f"names and Initializer objects have a config")
    cls = type(initializer)
    builtin = _CLASSES.get(cls.__name__) is cls
    return {"module": "keras.initializers" if builtin else cls.__module__,
            "class_name": cls.__name__, "config": initializer.get_config(),
            "registered_name": None if builtin else cls.__name__}


def deserialize(config: Any, custom_objects: dict | None = None) -> Any:
    """The initialiser of a :func:`serialize` config (or a name).

    Raises:
        ValueError: an unknown class name or a malformed config.
    """
    if config is None or isinstance(config, str):
        return None if config is None else get(config)
    if not isinstance(config, dict) or not isinstance(config.get("class_name"), str):
        raise ValueError(f"initializers.deserialize: expected a name or a dict with "
                         f"'class_name' and 'config', got {config!r}")
    name = config["class_name"]
    cls = (custom_objects or {}).get(config.get("registered_name") or name) or _CLASSES.get(name)
    if cls is None:
        raise ValueError(f"initializers.deserialize: unknown initializer class {name!r}; "
                         f"expected one of {', '.join(_CLASSES)} or one in custom_objects")
    inner = config.get("config") or {}
    if not isinstance(inner, dict):
        raise ValueError(f"initializers.deserialize: 'config' must be a dict, got {inner!r}")
    return cls.from_config(inner)
