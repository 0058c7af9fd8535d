"""``Optimizer``: the base class of tinynet's optimizers (Keras 3 ``BaseOptimizer`` rules).

One :meth:`Optimizer.apply` call is one Keras ``apply_gradients`` step:

1. gradients are clipped (``clipnorm`` per parameter, ``global_clipnorm`` over all of
   them, or ``clipvalue``; norms are deterministic float64 sums in a fixed order);
2. decoupled weight decay ``w -= w * weight_decay * lr`` is applied to every parameter
   not excluded with :meth:`Optimizer.exclude_from_weight_decay`;
3. the subclass's update rule runs: one fused Numba kernel call for all small parameters
   (up to ``GROUP_MAX_ELEMS``) when they share the clipping scale and the weight-decay
   choice (their weights and slots are then views of one flat buffer each,
   :mod:`tinynet.optimizers.flat`), one call for each other parameter; the rules are
   elementwise, so both give the same bits;
4. ``iterations`` increases by one.

Slot arrays ("optimizer variables" in Keras) are created lazily, the first time a
parameter is seen; an optimizer's own float32 scalars (Nadam's ``u_product``) live with
``iterations``. Scalar coefficients are computed in float64 and rounded once to
float32; elementwise arithmetic is float32, as in Keras.
"""

from __future__ import annotations

import math
import re
import warnings
from typing import Any, Callable, Iterable

import numpy as np

from tinynet.keywords import KeywordChecked
from tinynet.layers.layer import Parameter
from tinynet.layers.validation import check_name
from tinynet.ops.arrays import optimizers as updates
from tinynet.optimizers.checks import RATE, check_float, check_rate
from tinynet.optimizers.flat import FlatGroup
from tinynet.optimizers.step_undo import StepUndo, is_finite
from tinynet.reprs import plain_repr
from tinynet.scalars import FLOAT32_MAX

__all__ = ["Optimizer"]

_F32 = np.float32
_EMPTY = np.empty(0, dtype=np.float32)
# Parameters up to this size share one update call (their gradients are copied into one
# buffer); a larger one gets its own call, where the copy would cost more than the call.
GROUP_MAX_ELEMS = 16_384


def _check_optional_float(value: Any, arg: str, owner: str, positive: bool) -> float | None:
    if value is None:
        return None
    expected = "None or a positive float" if positive else "None or a non-negative float"
    return check_float(value, arg, owner, low_open=positive, expected=expected)


def _check_learning_rate(value: Any, owner: str) -> float | Callable:
    if callable(value):
        return value
    return check_rate(value, "learning_rate", owner, expected=f"{RATE} or a callable schedule")


class Optimizer(KeywordChecked):
    """Base class: clipping, weight decay, learning rate, iterations, slots and state.

    Args:
        learning_rate: A non-negative float, or a callable ``schedule(iterations) -> float``
            (a Keras ``LearningRateSchedule`` works as is).
        weight_decay: If set, decoupled weight decay ``w -= w * weight_decay * lr`` is
            applied to each parameter before its update.
        clipnorm: Clips each parameter's gradient to this L2 norm.
        clipvalue: Clips each gradient element to ``[-clipvalue, clipvalue]``.
        global_clipnorm: Clips all gradients together to this global L2 norm.
        name: The optimizer's name.

    Subclasses define ``_slot_specs()`` (slot names and initial values), optionally
    ``_scalar_specs()`` (per-optimizer float32 scalars and initial values, saved with the
    state) and ``_prepare_step(lr)``, and ``_update(param, grad, slots, lr, common)``, and
    extend ``get_config``.
    """

    _default_name = "optimizer"

    def __init__(self, learning_rate: float | Callable = 0.001, *,
                 weight_decay: float | None = None, clipnorm: float | None = None,
                 clipvalue: float | None = None, global_clipnorm: float | None = None,
                 name: str | None = None) -> None:
        owner = type(self).__name__
        self.name = check_name(name, owner) or self._default_name
        self._learning_rate = _check_learning_rate(learning_rate, owner)
        self.weight_decay = _check_optional_float(weight_decay, "weight_decay", owner, False)
        self.clipnorm = _check_optional_float(clipnorm, "clipnorm", owner, True)
        self.clipvalue = _check_optional_float(clipvalue, "clipvalue", owner, True)
        self.global_clipnorm = _check_optional_float(global_clipnorm, "global_clipnorm", owner,
                                                     True)
        if sum(a is not None for a in (clipnorm, clipvalue, global_clipnorm)) > 1:
            raise ValueError(
                f"{owner}: only one of clipnorm, clipvalue and global_clipnorm can be set, "
                f"got clipnorm={clipnorm!r}, clipvalue={clipvalue!r}, "
                f"global_clipnorm={global_clipnorm!r}")
        self.iterations = 0
        self.built = False
        self._scalars = {name: _F32(init) for name, init in self._scalar_specs()}
        self._slots: dict[int, tuple[Parameter, dict[str, np.ndarray]]] = {}
        self._group: FlatGroup | None = None  # the parameters last updated in one call
        self._exclude_ids: set[int] = set()
        self._exclude_names: list[str] = []
        self._exclude_patterns: list[re.Pattern] = []
        self._undo: StepUndo | None = None

    # -- learning rate -------------------------------------------------------------------
    @property
    def learning_rate(self) -> float:
        """The current learning rate (a schedule is evaluated at ``iterations``).

        Raises:
            ValueError: the schedule's rate at ``iterations`` is not a learning rate (a
                growing schedule beyond float32's range, or a custom one gone negative).
        """
        lr = self._learning_rate
        if not callable(lr):
            return lr
        try:
            value = float(lr(self.iterations))
        except OverflowError:  # a float power beyond float's range (a growing schedule)
            value = math.inf
        if not 0.0 <= value <= FLOAT32_MAX:  # NaN fails too
            raise ValueError(f"{type(self).__name__}: the learning rate schedule "
                             f"{plain_repr(lr, 200)} gave "
                             f"{value!r} at iteration {self.iterations}; a learning rate must "
                             f"be {RATE}")
        return value

    @learning_rate.setter
    def learning_rate(self, value: float | Callable) -> None:
        """A new float or schedule; a float cannot replace a schedule given before, as in
        Keras (its rate follows the schedule, not a number set over it).

        Raises:
            TypeError: a number over a schedule (the message says to give the optimizer a
                float learning_rate instead).
        """
        owner = type(self).__name__
        if callable(self._learning_rate) and not callable(value):
            raise TypeError(f"{owner}: learning_rate was given as a schedule, so it cannot be "
                            f"set to a number (as in Keras); give the optimizer a float "
                            f"learning_rate to set it, got {value!r} over "
                            f"{self._learning_rate!r}")
        self._learning_rate = _check_learning_rate(value, owner)

    # -- weight decay exclusion ------------------------------------------------------------
    def exclude_from_weight_decay(self, var_list: Iterable[Parameter] | None = None,
                                  var_names: Iterable[str] | None = None) -> None:
        """Excludes parameters from weight decay (replaces any previous exclusion).

        Args:
            var_list: Parameters to exclude (matched by identity).
            var_names: Regular expressions (plain substrings work); a parameter whose
                ``name`` (``"kernel"``, ``"bias"``, ``"gamma"``, ...) matches any of them
                with ``re.search`` is excluded, as in Keras.

        Raises:
            TypeError: ``var_list`` holds something else than parameters, or ``var_names``
                something else than non-empty strings.
            ValueError: a name is not a valid regular expression (the message names it).
        """
        owner = type(self).__name__
        params = list(var_list) if var_list is not None else []
        for p in params:
            if not isinstance(p, Parameter):
                raise TypeError(
                    f"{owner}: exclude_from_weight_decay var_list must hold Parameter objects, "
                    f"got {type(p).__name__}")
        names = [var_names] if isinstance(var_names, str) else list(var_names or [])
        for n in names:
            if not isinstance(n, str) or not n:
                raise TypeError(
                    f"{owner}: exclude_from_weight_decay var_names must be non-empty strings, "
                    f"got {n!r}")
        patterns = []
        for n in sorted(set(names)):
            try:
                patterns.append(re.compile(n))
            except re.error as exc:
                raise ValueError(f"{owner}: exclude_from_weight_decay var_names must be "
                                 f"regular expressions (plain substrings work), got {n!r}: "
                                 f"{exc}") from None
        self._exclude_ids = {id(p) for p in params}
        self._exclude_names = sorted(set(names))
        self._exclude_patterns = patterns

    def _use_weight_decay(self, param: Parameter) -> bool:
        if self.weight_decay is None or id(param) in self._exclude_ids:
            return False
        return not any(p.search(param.name) for p in self._exclude_patterns)

    # -- slots -----------------------------------------------------------------------------
    def _slot_specs(self) -> list[tuple[str, float]]:
        """``[(slot_name, initial_value), ...]`` for each parameter (subclasses)."""
        return []

    def _scalar_specs(self) -> list[tuple[str, float]]:
        """``[(name, initial_value), ...]`` of the optimizer's own scalars (subclasses; no
        ``/`` in a name, so they never meet a slot key). ``__init__`` calls it before a
        subclass sets its attributes."""
        return []

    def _ensure_slots(self, param: Parameter) -> dict[str, np.ndarray]:
        entry = self._slots.get(id(param))
        if entry is None:
            slots = {name: np.full(param.value.shape, init, dtype=np.float32)
                     for name, init in self._slot_specs()}
            entry = (param, slots)
            self._slots[id(param)] = entry
        return entry[1]

    def build(self, params: Iterable[Parameter]) -> None:
        """Creates the slot arrays for ``params`` (done lazily by :meth:`apply`)."""
        for p in self._trainable(params):
            self._ensure_slots(p)
        self.built = True

    def count_params(self) -> int:
        """Slot scalars + ``iterations`` + the optimizer's own scalars (+ the learning
        rate when it is a float).

        As Keras counts ``len(optimizer.variables)`` sizes; 0 before the first build.
        """
        if not self.built:
            return 0
        slots = sum(a.size for _, s in self._slots.values() for a in s.values())
        return int(slots + 1 + len(self._scalars)
                   + (0 if callable(self._learning_rate) else 1))

    # -- the step ----------------------------------------------------------------------------
    def _trainable(self, params: Iterable[Parameter]) -> list[Parameter]:
        owner = type(self).__name__
        if isinstance(params, Parameter):
            params = [params]
        if not isinstance(params, Iterable):
            raise TypeError(f"{owner}: apply expects a list of Parameter objects, got "
                            f"{type(params).__name__}")
        out = []
        for p in params:
            if not isinstance(p, Parameter):
                raise TypeError(f"{owner}: apply expects Parameter objects, got "
                                f"{type(p).__name__}")
            if p.trainable:
                out.append(p)
        return out

    def apply(self, params: Iterable[Parameter]) -> None:
        """Updates each trainable parameter in place from its ``grad`` (one step).

        Parameters whose ``grad`` is ``None`` are skipped with a warning (as Keras);
        non-trainable parameters are ignored. Every gradient is checked before anything
        is modified, so a bad call leaves weights and slots untouched.

        Raises:
            ValueError: A gradient's shape differs from its parameter's, or no parameter
                has a gradient.
        """
        self._apply(self._trainable(params))

    def _apply(self, params: list[Parameter]) -> None:
        """:meth:`apply` on the trainable parameters ``params``."""
        self._run(self._plan_step(params))

    def _run(self, calls: list[tuple]) -> None:
        """The update calls of :meth:`_plan_step`, then ``iterations`` + 1 (none when
        there was nothing to update)."""
        if not calls:
            return
        for w, g, slots, lr32, common, _ in calls:
            self._update(w, g, slots, lr32, common)
        self.iterations += 1

    def _plan_step(self, params: list[Parameter]) -> list[tuple]:
        """Checks the gradients, creates missing slots, computes the step's scalars and
        returns the update calls ``(w, g, slots, lr, common, members)`` of one step
        (``members``: ``(param, start, stop)`` of each parameter in the flat ``w``),
        without updating anything."""
        owner = type(self).__name__
        if not params:
            return []
        pairs, missing = [], []
        for p in params:
            g = p.grad
            if g is None:
                missing.append(p.path)
                continue
            if not (type(g) is np.ndarray and g.dtype == _F32 and g.flags.c_contiguous):
                g = np.ascontiguousarray(g, dtype=np.float32)
            if g.shape != p.value.shape:
                raise ValueError(
                    f"{owner}: gradient of {p.path} has shape {g.shape}, expected "
                    f"{p.value.shape} (the parameter's shape)")
            pairs.append((p, g.reshape(-1)))
        if not pairs:
            raise ValueError(f"{owner}: no gradients provided for any parameter "
                             f"({', '.join(missing)}); run backward before apply")
        if missing:
            warnings.warn(f"{owner}: gradients do not exist for {missing}; they were skipped",
                          stacklevel=3)
        for p, _ in pairs:
            if not (p.value.flags.c_contiguous and p.value.dtype == np.float32):
                p.value = np.ascontiguousarray(p.value, dtype=np.float32)
            if id(p) not in self._slots:
                self._ensure_slots(p)
        self.built = True

        lr = self.learning_rate
        lr32 = _F32(lr)
        do_clip = self.clipvalue is not None
        clipvalue = _F32(self.clipvalue if do_clip else 0.0)
        wd = _F32(self.weight_decay if self.weight_decay is not None else 0.0)
        self._prepare_step(lr)
        if self.clipnorm is None and self.global_clipnorm is None and self.weight_decay is None:
            commons = None  # one scale (1) and no decay for every parameter
            common = (_F32(1.0), do_clip, clipvalue, False, wd)
        else:
            scales = self._grad_scales([g for _, g in pairs])
            commons = [(_F32(gscale), do_clip, clipvalue, self._use_weight_decay(p), wd)
                       for (p, _), gscale in zip(pairs, scales)]
            common = commons[0]
        uniform = commons is None or all(c == common for c in commons[1:])
        small = [pair for pair in pairs if pair[1].size <= GROUP_MAX_ELEMS] if uniform else []
        group = self._flat_group([p for p, _ in small]) if len(small) > 1 else None
        calls = []
        if group is not None:
            ends = np.cumsum([0, *(g.size for _, g in small)])
            members = [(p, int(lo), int(hi)) for (p, _), lo, hi in zip(small, ends, ends[1:])]
            calls.append((group.w, group.gather([g for _, g in small]), group.slots, lr32,
                          common, members))
        for i, (p, g) in enumerate(pairs):
            if group is None or g.size > GROUP_MAX_ELEMS:
                calls.append((p.value.reshape(-1), g, self._slots[id(p)][1], lr32,
                              common if commons is None else commons[i], [(p, 0, g.size)]))
        return calls

    def apply_or_undo(self, params: Iterable[Parameter]) -> Parameter | None:
        """:meth:`apply`, undone when a weight comes out NaN or infinite.

        The training loop's step. Adam and AdamW (the ``"adam"`` rule) first test their
        update without writing anything (the same float32 expressions, so the same
        bits) and take it only when every new weight is finite. The other optimizers
        copy weights, slots, ``iterations`` and their scalars before the update (into
        buffers reused from step to step, :class:`StepUndo`) and restore them bitwise if
        any updated weight is not finite afterwards. Either way a step that would leave a
        weight NaN or infinite leaves every weight and slot as it was.

        Returns:
            ``None``, or the first parameter whose updated weight was not finite (the
            step is then undone).
        """
        params = self._trainable(params)
        if self._can_check_step() and len({id(p) for p in params}) == len(params):
            return self._checked_step(params)
        undo = self._undo if self._undo is not None else StepUndo()
        self._undo = undo
        undo.save(params, self._slots, self._group, self.iterations, self._scalars)
        built = self.built
        self._apply(params)
        bad = undo.first_non_finite(params, self._group)
        if bad is not None:
            self.iterations, self._scalars = undo.restore(params, self._slots)
            self.built = built
            if any(id(p) not in self._slots for p in params):
                self._group = None  # its slot views belong to the dropped slots
        return bad

    def _checked_step(self, params: list[Parameter]) -> Parameter | None:
        """:meth:`apply_or_undo` for an optimizer that tests its step before taking it
        (:meth:`_check_update`): no copy of the weights and slots; a step that would
        leave a weight non-finite is not taken, and what planning it changed (new slots,
        ``built``, the optimizer's scalars) is put back."""
        built, scalars, had = self.built, dict(self._scalars), set(self._slots)
        calls = self._plan_step(params)
        first: dict[int, Parameter] = {}  # per update call, its first bad parameter
        updated: set[int] = set()
        for w, g, slots, lr32, common, members in calls:
            updated.update(id(p) for p, _, _ in members)
            index = self._check_update(w, g, slots, lr32, common)
            if index >= 0:
                p = next(p for p, lo, hi in members if lo <= index < hi)
                first[id(p)] = p
        bad = None
        if first or len(updated) < len(params):
            with np.errstate(over="ignore", invalid="ignore"):
                bad = next((p for p in params if id(p) in first
                            or (id(p) not in updated and not is_finite(p.value))), None)
        if bad is None:
            self._run(calls)
            return None
        self._scalars, self.built = scalars, built
        dropped = [key for key in self._slots if key not in had]
        for key in dropped:
            del self._slots[key]
        if dropped:
            self._group = None  # its slot views belong to the dropped slots
        return bad

    def _can_check_step(self) -> bool:
        """Hook: whether :meth:`_check_update` can test this optimizer's updates."""
        return False

    def _check_update(self, w: np.ndarray, g: np.ndarray, slots: dict[str, np.ndarray],
                      lr: np.float32, common: tuple) -> int:  # pragma: no cover - abstract
        """Hook: the first index of ``w`` that :meth:`_update` with the same arguments would
        make NaN or infinite, else -1, writing nothing."""
        raise NotImplementedError(f"{type(self).__name__}._check_update")

    def _flat_group(self, params: list[Parameter]) -> FlatGroup | None:
        """The :class:`FlatGroup` of ``params`` (the last one if it still matches, else a
        new one); ``None`` when a parameter is listed twice (it is then updated twice,
        one call each, as without grouping)."""
        group = self._group
        if group is None or not group.matches(params):
            if len({id(p) for p in params}) != len(params):
                return None
            group = self._group = FlatGroup(params, [self._slots[id(p)][1] for p in params])
        return group

    def _grad_scales(self, grads: list[np.ndarray]) -> list[float]:
        """Per-parameter gradient multipliers for clipnorm / global_clipnorm (else 1)."""
        if self.clipnorm is not None:
            c = self.clipnorm
            return [c / max(math.sqrt(updates.sum_squares(g)), c) for g in grads]
        if self.global_clipnorm is not None:
            c = self.global_clipnorm
            total = 0.0
            for g in grads:  # fixed parameter order
                total += updates.sum_squares(g)
            norm = math.sqrt(total)
            if not math.isfinite(norm):
                scale = math.nan  # as Keras: a non-finite global norm poisons the step
            else:
                scale = c / max(norm, c)
            return [scale] * len(grads)
        return [1.0] * len(grads)

    def _prepare_step(self, lr: float) -> None:
        """Hook: per-step scalars (e.g. Adam's bias correction) before the updates."""

    def _update(self, w: np.ndarray, g: np.ndarray, slots: dict[str, np.ndarray],
                lr: np.float32, common: tuple) -> None:  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}._update")

    @staticmethod
    def _flat(slots: dict[str, np.ndarray], name: str) -> np.ndarray:
        arr = slots.get(name)
        return _EMPTY if arr is None else arr.reshape(-1)

    # -- state (saving) --------------------------------------------------------------------
    def get_state(self) -> dict[str, np.ndarray]:
        """Returns copies of every slot as ``"<param_path>/<slot>"`` plus ``"iterations"``
        and the optimizer's own scalars (float32, shape ``()``) under their names.

        Raises:
            ValueError: Two tracked parameters share a path (keys would collide).
        """
        state: dict[str, np.ndarray] = {"iterations": np.array(self.iterations, dtype=np.int64)}
        state.update({name: np.array(v, dtype=np.float32) for name, v in self._scalars.items()})
        for p, slots in self._slots.values():
            for name, arr in slots.items():
                key = f"{p.path}/{name}"
                if key in state:
                    raise ValueError(f"{type(self).__name__}: two parameters share the path "
                                     f"{p.path!r}; optimizer state keys must be unique")
                state[key] = arr.copy()
        return state

    def set_state(self, state: dict[str, Any], params: Iterable[Parameter]) -> None:
        """Restores :meth:`get_state` output bitwise for ``params`` (their ``path`` keys).

        A state with ``iterations == 0`` and no slot keys restores an unbuilt optimizer
        (its own scalars, when absent, at their initial values). A parameter with none of
        its slots in the state (a layer frozen while the optimizer trained) gets fresh
        slots at its first update, as it would have without saving. Everything is
        validated before anything changes.

        Raises:
            ValueError: ``iterations``, a slot or a scalar is missing, a slot has the wrong
                shape, a scalar is not one float, or the state holds keys for no given
                parameter.
        """
        owner = type(self).__name__
        if "iterations" not in state:
            raise ValueError(f"{owner}: optimizer state has no 'iterations' entry")
        it = np.asarray(state["iterations"])
        if it.size != 1 or not np.issubdtype(it.dtype, np.integer) or int(it.reshape(-1)[0]) < 0:
            raise ValueError(f"{owner}: optimizer state 'iterations' must be one non-negative "
                             f"integer, got {it!r}")
        iterations = int(it.reshape(-1)[0])
        params = self._trainable(params)
        specs = [name for name, _ in self._slot_specs()]
        scalar_specs = self._scalar_specs()
        slot_keys = set(state) - {"iterations"} - {name for name, _ in scalar_specs}
        fresh = iterations == 0 and not slot_keys
        scalars = {}
        for name, init in scalar_specs:
            if name not in state:
                if not fresh:
                    raise ValueError(f"{owner}: optimizer state has no entry {name!r}")
                scalars[name] = _F32(init)
                continue
            arr = np.asarray(state[name])
            if arr.size != 1 or not np.issubdtype(arr.dtype, np.floating):
                raise ValueError(f"{owner}: optimizer state {name!r} must be one float, "
                                 f"got {arr!r}")
            scalars[name] = _F32(arr.reshape(-1)[0])
        restored: dict[int, tuple[Parameter, dict[str, np.ndarray]]] = {}
        used: set[str] = set()
        if not fresh:
            for p in params:
                if not any(f"{p.path}/{name}" in state for name in specs):
                    continue  # never trained here (e.g. frozen then): its slots start fresh
                slots = {}
                for name in specs:
                    key = f"{p.path}/{name}"
                    if key not in state:
                        raise ValueError(f"{owner}: optimizer state has no entry {key!r}")
                    arr = np.asarray(state[key])
                    if arr.shape != p.value.shape:
                        raise ValueError(
                            f"{owner}: optimizer state {key!r} has shape {arr.shape}, expected "
                            f"{p.value.shape}")
                    slots[name] = np.array(arr, dtype=np.float32, order="C", copy=True)
                    used.add(key)
                restored[id(p)] = (p, slots)
        unused = sorted(slot_keys - used)
        if unused:
            raise ValueError(f"{owner}: optimizer state entries match no parameter: {unused}")
        self._slots = restored
        self._scalars = scalars
        self._group = None  # its slot views belong to the replaced slots
        self.iterations = iterations
        self.built = not fresh

    # -- config ----------------------------------------------------------------------------
    def get_config(self) -> dict:
        """JSON-able constructor arguments (Keras keys); ``from_config`` rebuilds it.

        A :mod:`~tinynet.optimizers.schedules` schedule is stored as ``{"class_name": ...,
        "config": ...}``; any other callable learning rate as its current value.
        """
        from tinynet.optimizers import schedules

        lr = self._learning_rate
        config = {
            "name": self.name,
            "learning_rate": (schedules.serialize(lr)
                              if isinstance(lr, schedules.LearningRateSchedule)
                              else float(self.learning_rate)),
            "weight_decay": self.weight_decay,
            "clipnorm": self.clipnorm,
            "global_clipnorm": self.global_clipnorm,
            "clipvalue": self.clipvalue,
        }
        if self._exclude_names:
            config["exclude_from_weight_decay"] = list(self._exclude_names)
        return config

    @classmethod
    def from_config(cls, config: dict) -> "Optimizer":
        """Rebuilds an optimizer (without state) from :meth:`get_config` output."""
        if cls is Optimizer:
            raise TypeError("Optimizer.from_config: call it on a concrete optimizer class, or "
                            "use tinynet.optimizers.get({'class_name': ..., 'config': ...})")
        config = dict(config)
        exclude = config.pop("exclude_from_weight_decay", None)
        if exclude is not None and not isinstance(exclude, (list, tuple, str)):
            raise TypeError(f"{cls.__name__}.from_config: exclude_from_weight_decay must be a "
                            f"list of names, got {type(exclude).__name__}: {exclude!r:.80}")
        if isinstance(config.get("learning_rate"), dict):
            from tinynet.optimizers import schedules

            config["learning_rate"] = schedules.deserialize(config["learning_rate"])
        opt = cls(**config)
        if exclude:
            opt.exclude_from_weight_decay(var_names=exclude)
        return opt

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} name={self.name!r} "
                f"learning_rate={self.learning_rate!r} iterations={self.iterations}>")
