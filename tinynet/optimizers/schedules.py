"""Learning-rate schedules (``keras.optimizers.schedules``): ``schedule(step) -> float``.

Any optimizer takes one as ``learning_rate``; it is evaluated at the optimizer's
``iterations`` (0 for the first update), as Keras does, and saved with the model as
``{"class_name": ..., "config": ...}``. The formulas are Keras 3's; tinynet evaluates
them in float64 where Keras uses float32, so values agree to about 1e-6 relative (2e-5
near the end of a cosine decay, where Keras's float32 ``1 + cos(x)`` cancels).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from tinynet.keywords import KeywordChecked
from tinynet.layers.layer import check_bool
from tinynet.reprs import plain_repr
from tinynet.optimizers.checks import check_float, check_rate

__all__ = ["LearningRateSchedule", "ExponentialDecay", "PiecewiseConstantDecay",
           "InverseTimeDecay", "PolynomialDecay", "CosineDecay", "CosineDecayRestarts",
           "serialize", "deserialize"]


def _real(owner: str, arg: str, value: Any, *, low: float = -math.inf,
          low_open: bool = False) -> float:
    """A finite number ``> low`` (``low_open``) or ``>= low`` (an int stays an int, as Keras
    keeps it in the config)."""
    if low == -math.inf:
        expected = "a finite float"
    else:
        expected = f"a finite float {'>' if low_open else '>='} {low:g}"
    v = check_float(value, arg, owner, low=low, low_open=low_open, expected=expected)
    return int(value) if isinstance(value, numbers.Integral) else v


def _rate(owner: str, arg: str, value: Any) -> float:
    """A learning rate the schedule starts from, ends at or warms up to (see
    :data:`~tinynet.optimizers.checks.RATE`); an int stays an int."""
    v = check_rate(value, arg, owner)
    return int(value) if isinstance(value, numbers.Integral) else v


def _name(owner: str, value: Any, default: str) -> str:
    """The schedule's name: a str (saved in the model's config), ``None`` for the default."""
    if value is None:
        return default
    if not isinstance(value, str):
        raise TypeError(f"{owner}: name must be a str, got {plain_repr(value)}")
    return value


class LearningRateSchedule(KeywordChecked):
    """Base class: subclasses define ``__call__(step) -> float`` and ``get_config``."""

    def __call__(self, step: int) -> float:
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must "
                                  f"override `__call__(self, step)`.")

    def get_config(self) -> dict:
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must "
                                  f"override `get_config()` in order to be serializable.")

    @classmethod
    def from_config(cls, config: dict) -> "LearningRateSchedule":
        return cls(**config)

    def __repr__(self) -> str:  # the config, not an address: error messages show it
        try:
            config = self.get_config()
        except NotImplementedError:
            return super().__repr__()
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in config.items())})"


class _RateDecay(LearningRateSchedule):
    """The arguments and config :class:`ExponentialDecay` and :class:`InverseTimeDecay`
    share: ``p = step / decay_steps``, floored with ``staircase``."""

    def __init__(self, initial_learning_rate: float, decay_steps: float, decay_rate: float,
                 staircase: bool = False, name: str | None = None) -> None:
        owner = type(self).__name__
        self.initial_learning_rate = _rate(owner, "initial_learning_rate", initial_learning_rate)
        self.decay_steps = _real(owner, "decay_steps", decay_steps, low=0.0, low_open=True)
        self.decay_rate = _real(owner, "decay_rate", decay_rate, low=0.0)
        self.staircase = check_bool(staircase, "staircase", owner)
        self.name = _name(owner, name, owner)

    def _progress(self, step: int) -> float:
        p = step / self.decay_steps
        return math.floor(p) if self.staircase else p

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


class ExponentialDecay(_RateDecay):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)`` (the exponent
    floored with ``staircase``)."""

    def __call__(self, step: int) -> float:
        return self.initial_learning_rate * self.decay_rate ** self._progress(step)


class PiecewiseConstantDecay(LearningRateSchedule):
    """``values[0]`` up to and including ``boundaries[0]``, ``values[i]`` for steps in
    ``(boundaries[i - 1], boundaries[i]]``, ``values[-1]`` after the last boundary."""

    def __init__(self, boundaries: list, values: list, name: str = "PiecewiseConstant") -> None:
        owner = "PiecewiseConstantDecay"
        if not isinstance(boundaries, (list, tuple)) or not isinstance(values, (list, tuple)) \
                or len(values) != len(boundaries) + 1:
            raise ValueError(f"{owner}: values must be a list with one more entry than "
                             f"boundaries, got boundaries={boundaries!r}, values={values!r}")
        self.boundaries = [_real(owner, "boundaries", b) for b in boundaries]
        self.values = [_rate(owner, "values", v) for v in values]
        self.name = _name(owner, name, "PiecewiseConstant")

    def __call__(self, step: int) -> float:
        for boundary, value in zip(self.boundaries, self.values):
            if step <= boundary:
                return value
        return self.values[-1]

    def get_config(self) -> dict:
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class InverseTimeDecay(_RateDecay):
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)`` (the ratio
    floored with ``staircase``)."""

    def __call__(self, step: int) -> float:
        return self.initial_learning_rate / (1.0 + self.decay_rate * self._progress(step))


class PolynomialDecay(LearningRateSchedule):
    """From ``initial_learning_rate`` to ``end_learning_rate`` as ``(1 - step /
    decay_steps) ** power``, held at the end (or, with ``cycle``, over ``decay_steps``
    stretched to the next multiple above the step)."""

    def __init__(self, initial_learning_rate: float, decay_steps: float,
                 end_learning_rate: float = 0.0001, power: float = 1.0, cycle: bool = False,
                 name: str = "PolynomialDecay") -> None:
        owner = "PolynomialDecay"
        self.initial_learning_rate = _rate(owner, "initial_learning_rate", initial_learning_rate)
        self.decay_steps = _real(owner, "decay_steps", decay_steps, low=0.0, low_open=True)
        self.end_learning_rate = _rate(owner, "end_learning_rate", end_learning_rate)
        self.power = _real(owner, "power", power, low=0.0)
        self.cycle = check_bool(cycle, "cycle", owner)
        self.name = _name(owner, name, owner)

    def __call__(self, step: int) -> float:
        steps = self.decay_steps
        if self.cycle:
            steps *= 1.0 if step == 0 else math.ceil(step / self.decay_steps)
        else:
            step = min(step, steps)
        p = step / steps
        return ((self.initial_learning_rate - self.end_learning_rate) * (1 - p) ** self.power
                + self.end_learning_rate)

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "end_learning_rate": self.end_learning_rate,
                "power": self.power, "cycle": self.cycle, "name": self.name}


def _cosine(fraction: float, alpha: float) -> float:
    return (1 - alpha) * (0.5 * (1.0 + math.cos(math.pi * fraction))) + alpha


class CosineDecay(LearningRateSchedule):
    """An optional linear warmup from ``initial_learning_rate`` to ``warmup_target`` over
    ``warmup_steps``, then a cosine decay over ``decay_steps`` to ``alpha`` times the rate
    it starts from, held after."""

    def __init__(self, initial_learning_rate: float, decay_steps: float, alpha: float = 0.0,
                 name: str = "CosineDecay", warmup_target: float | None = None,
                 warmup_steps: float = 0) -> None:
        owner = "CosineDecay"
        self.initial_learning_rate = _rate(owner, "initial_learning_rate", initial_learning_rate)
        self.decay_steps = _real(owner, "decay_steps", decay_steps, low=0.0, low_open=True)
        self.alpha = _real(owner, "alpha", alpha, low=0.0)
        self.name = _name(owner, name, owner)
        self.warmup_target = (None if warmup_target is None
                              else _rate(owner, "warmup_target", warmup_target))
        self.warmup_steps = _real(owner, "warmup_steps", warmup_steps, low=0.0)

    def __call__(self, step: int) -> float:
        if self.warmup_target is None:
            return self.initial_learning_rate * _cosine(min(step, self.decay_steps)
                                                        / self.decay_steps, self.alpha)
        step = min(step, self.decay_steps + self.warmup_steps)
        if step < self.warmup_steps:
            return ((self.warmup_target - self.initial_learning_rate)
                    * (step / self.warmup_steps) + self.initial_learning_rate)
        return self.warmup_target * _cosine((step - self.warmup_steps) / self.decay_steps,
                                            self.alpha)

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "alpha": self.alpha, "name": self.name,
                "warmup_target": self.warmup_target, "warmup_steps": self.warmup_steps}


class CosineDecayRestarts(LearningRateSchedule):
    """Cosine decay from 1 to ``alpha`` over ``first_decay_steps``, then warm restarts,
    each ``t_mul`` times longer and starting ``m_mul`` times lower (SGDR)."""

    def __init__(self, initial_learning_rate: float, first_decay_steps: float,
                 t_mul: float = 2.0, m_mul: float = 1.0, alpha: float = 0.0,
                 name: str = "SGDRDecay") -> None:
        owner = "CosineDecayRestarts"
        self.initial_learning_rate = _rate(owner, "initial_learning_rate", initial_learning_rate)
        self.first_decay_steps = _real(owner, "first_decay_steps", first_decay_steps,
                                       low=0.0, low_open=True)
        self.t_mul = _real(owner, "t_mul", t_mul, low=1.0)  # shorter periods end the schedule
        self.m_mul = _real(owner, "m_mul", m_mul, low=0.0)
        self.alpha = _real(owner, "alpha", alpha, low=0.0)
        self.name = _name(owner, name, "SGDRDecay")

    def __call__(self, step: int) -> float:
        fraction = step / self.first_decay_steps
        if self.t_mul == 1.0:
            restart = math.floor(fraction)
            fraction -= restart
        else:
            restart = math.floor(math.log(1.0 - fraction * (1.0 - self.t_mul))
                                 / math.log(self.t_mul))
            done = (1.0 - self.t_mul ** restart) / (1.0 - self.t_mul)
            fraction = (fraction - done) / self.t_mul ** restart
        decayed = 0.5 * self.m_mul ** restart * (1.0 + math.cos(math.pi * fraction))
        return self.initial_learning_rate * ((1 - self.alpha) * decayed + self.alpha)

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate,
                "first_decay_steps": self.first_decay_steps, "t_mul": self.t_mul,
                "m_mul": self.m_mul, "alpha": self.alpha, "name": self.name}


_CLASSES = {cls.__name__: cls for cls in (ExponentialDecay, PiecewiseConstantDecay,
                                          InverseTimeDecay, PolynomialDecay, CosineDecay,
                                          CosineDecayRestarts)}


def serialize(schedule: LearningRateSchedule) -> dict:
    """``{"class_name": ..., "config": ...}`` (JSON-able)."""
    if not isinstance(schedule, LearningRateSchedule):
        raise TypeError(f"schedules.serialize: expected a LearningRateSchedule, got "
                        f"{type(schedule).__name__}")
    return {"class_name": type(schedule).__name__, "config": schedule.get_config()}


def deserialize(config: dict) -> LearningRateSchedule:
    """The schedule :func:`serialize` described."""
    cls = _CLASSES.get(str(config.get("class_name")))
    if cls is None:
        raise ValueError(f"schedules.deserialize: unknown schedule {config.get('class_name')!r}; "
                         f"valid names: {', '.join(_CLASSES)}")
    return cls.from_config(dict(config.get("config", {})))
