"""Unknown keyword arguments, Keras style: the error names the public class (or method),
every unknown keyword and the closest valid names.

``GroupNormalization(group=4)`` raises ``TypeError: GroupNormalization got an unexpected
keyword argument 'group'; did you mean 'groups'?`` where Python would name the base class
whose ``__init__`` refused it (``Layer.__init__()``) and suggest nothing.

Three entry points, one check:

* :class:`KeywordChecked`, a mixin of the public base classes (``Layer``, ``Optimizer``,
  ``Loss``, ``Metric``, ``Callback``, ``LearningRateSchedule``): every subclass's
  ``__init__`` is wrapped when the class is created, so a new layer gets the check for
  free;
* :func:`checked_method` for methods (the models' ``compile``, ``fit``, ``evaluate``,
  ``predict``, ``train_on_batch``, ``summary``, ``save``, ...): the message names
  ``<class>.<method>``, the class being the instance's;
* :func:`checked_function` for functions (``tn.Input``).

The check costs nothing on a valid call: the wrapped function runs as it is, and only
when it raises Python's own binding failure for a keyword the caller passed ("got an
unexpected keyword argument", or ``object.__init__``'s "takes no arguments") is that
error replaced by one naming the public owner; every other error passes through, and so
does one :func:`unexpected_keywords` made already (a class checking its own keywords, or
a constructor called inside another). A class whose ``**kwargs`` are its own (extra
attributes, as ``LambdaCallback``'s) keeps them: nothing is refused ahead of the call.

The valid names of a constructor are those of its ``__init__`` and, where that takes
``**kwargs``, of the ``__init__`` it forwards them to (the next one in the MRO), and so
on: ``GroupNormalization`` accepts ``groups`` ... ``scale`` and the keywords of
``Layer.__init__`` (``name``, ``trainable``, ...). A subclass that fixes an argument of
its base (``InstanceNormalization`` and ``groups``) lists its keywords explicitly rather
than forwarding ``**kwargs``.

This module imports nothing from tinynet (the lowest floor of the package).
"""

from __future__ import annotations

import difflib
import functools
import inspect
import re
from typing import Any, Callable, Iterable

__all__ = ["KeywordChecked", "checked_method", "checked_function", "unexpected_keywords",
           "suggestions", "valid_keywords", "class_keywords"]

# Keras 2 spellings with no close match among Keras 3's names
_ALIASES = {"lr": "learning_rate", "nb_epoch": "epochs", "input_dim": "input_shape",
            "input_length": "input_shape"}

_UNEXPECTED = re.compile(r"got an unexpected keyword argument '([^']+)'")
_NO_ARGUMENTS = re.compile(r"^\w+\(\) takes no arguments$|^object\.__init__\(\) takes exactly "
                           r"one argument")


def valid_keywords(function: Callable, skip_first: bool = False) -> tuple[list[str], bool]:
    """The names ``function`` accepts as keywords, in signature order, and whether it also
    takes ``**kwargs``. ``skip_first`` drops ``self``."""
    params = list(inspect.signature(function).parameters.values())
    if skip_first and params and params[0].kind in (params[0].POSITIONAL_ONLY,
                                                    params[0].POSITIONAL_OR_KEYWORD):
        params = params[1:]
    names = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return names, any(p.kind is p.VAR_KEYWORD for p in params)


def class_keywords(cls: type) -> list[str]:
    """Every keyword ``cls(...)`` accepts: its ``__init__``'s, then, while an ``__init__``
    takes ``**kwargs``, those of the next ``__init__`` up the MRO (where
    ``super().__init__(**kwargs)`` sends them)."""
    names: list[str] = []
    for klass in cls.__mro__:
        if "__init__" not in vars(klass) or klass is object:
            continue
        own, more = valid_keywords(vars(klass)["__init__"], skip_first=True)
        names += [n for n in own if n not in names]
        if not more:
            break
    return names


def _words_in(key: str, name: str) -> bool:
    """Whether ``key``'s words (split at ``_``) appear in a row in ``name``'s."""
    k, n = key.split("_"), name.split("_")
    return any(n[i:i + len(k)] == k for i in range(len(n) - len(k) + 1))


def suggestions(key: str, valid: list[str]) -> list[str]:
    """The valid names ``key`` was likely meant to be (at most 3, in ``valid``'s order): a
    Keras 2 alias (``lr``), a case slip, the closest spellings (``difflib``'s ratio, as
    ``get_close_matches`` uses, >= 0.8; near ties all), the names holding ``key``'s words
    (``pool`` -> ``pool_size``; ``shape`` -> ``target_shape`` or ``input_shape``), the
    closest spellings among those, else the closest spellings at ratio >= 0.6; ``[]`` when
    none is close."""
    alias = _ALIASES.get(key)
    if alias in valid:
        return [alias]
    lowered = {name.lower(): name for name in valid}
    key = key.lower()
    if key in lowered:
        return [lowered[key]]
    ratios = {name: difflib.SequenceMatcher(None, key, name.lower()).ratio() for name in valid}
    best = max(ratios.values(), default=0.0)
    closest = [name for name, r in ratios.items() if r >= best - 0.05][:3]  # near ties too
    if best >= 0.8:
        return closest
    holding = [name for name in valid if _words_in(key, name.lower())]
    if holding:  # the closest spellings among them (pool_size, not pool_regularizer)
        top = max(ratios[name] for name in holding)
        return [name for name in holding if ratios[name] >= top - 0.05][:3]
    return closest if best >= 0.6 else []


def _either(names: list[str]) -> str:
    quoted = [repr(name) for name in names]
    return " or ".join([", ".join(quoted[:-1]), quoted[-1]] if len(quoted) > 1 else quoted)


def unexpected_keywords(owner: str, unknown: Iterable[str], valid: list[str]) -> TypeError:
    """The error for ``unknown`` keywords passed to ``owner`` (a class or method name):
    each with its closest valid name, and the valid names when one has none."""
    unknown = list(unknown)
    hints = {key: suggestions(key, valid) for key in unknown}
    if len(unknown) == 1:
        key = unknown[0]
        text = f"{owner} got an unexpected keyword argument {key!r}"
        if hints[key]:
            text += f"; did you mean {_either(hints[key])}?"
    else:
        listed = ", ".join(f"{key!r}" + (f" (did you mean {_either(hints[key])}?)"
                                          if hints[key] else "")
                           for key in unknown)
        text = f"{owner} got unexpected keyword arguments {listed}"
    if not all(hints.values()):
        text += "; valid keyword arguments: " + (", ".join(valid) if valid else "none")
    error = TypeError(text)
    error.tinynet_keywords = True  # type: ignore[attr-defined]  # told already: keep it
    return error


def _refused(exc: TypeError, kwargs: dict, valid: list[str]) -> list[str]:
    """The keywords the caller passed that are not valid, when ``exc`` is Python's
    binding failure for one of them (else ``[]``: another error, re-raised as it is)."""
    if getattr(exc, "tinynet_keywords", False):  # a class's own check, or an inner call's
        return []
    unknown = [key for key in kwargs if key not in valid]
    if _NO_ARGUMENTS.search(str(exc)):  # object.__init__: a class without its own
        return unknown
    match = _UNEXPECTED.search(str(exc))
    return unknown if match is not None and match.group(1) in unknown else []


def _wrap_init(cls: type) -> None:
    """Wraps the ``__init__`` that ``cls(...)`` runs, as ``cls``'s own: the one it defines,
    or one it inherits from outside the checked classes (a mixin's, or ``object``'s)."""
    init = cls.__init__
    if getattr(init, "_checks_keywords", False):
        return

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            init(self, *args, **kwargs)
        except TypeError as exc:
            # only the call the user made (not a super().__init__ inside it) rewrites
            if not kwargs or type(self).__init__ is not __init__:
                raise
            valid = class_keywords(type(self))
            unknown = _refused(exc, kwargs, valid)
            if not unknown:
                raise
            raise unexpected_keywords(type(self).__name__, unknown, valid) from None

    __init__._checks_keywords = True  # type: ignore[attr-defined]
    cls.__init__ = __init__  # type: ignore[method-assign]


class KeywordChecked:
    """Mixin: unknown keywords passed to the class, or to any subclass, raise
    :func:`unexpected_keywords`'s error naming the class that was called."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _wrap_init(cls)


def checked_method(method: Callable) -> Callable:
    """``method`` with unknown keywords refused as ``<class>.<method> got an unexpected
    keyword argument ...`` (the class is the instance's)."""
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except TypeError as exc:
            if not kwargs:
                raise
            valid = valid_keywords(method, skip_first=True)[0]
            unknown = _refused(exc, kwargs, valid)
            if not unknown:
                raise
            owner = f"{type(self).__name__}.{method.__name__}"
            raise unexpected_keywords(owner, unknown, valid) from None
    return wrapper


def checked_function(function: Callable) -> Callable:
    """``function`` with unknown keywords refused as ``<function> got an unexpected
    keyword argument ...``."""
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except TypeError as exc:
            if not kwargs:
                raise
            valid = valid_keywords(function)[0]
            unknown = _refused(exc, kwargs, valid)
            if not unknown:
                raise
            raise unexpected_keywords(function.__name__, unknown, valid) from None
    return wrapper
