"""Kernel helpers compiled without Python entry points (``njit(callee=True)``).

A helper that only kernels call is linked into them, so its Python and C wrappers are
never used; tinynet's ``njit`` leaves them out (they are a good part of a small function's
compile time). A Python call to such a helper still works: it runs the helper's twin, the
same function compiled as an ordinary kernel with cache files of its own.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from tinynet.kernels import _jit
from tinynet.kernels._jit import njit

pytestmark = pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1",
                                reason="no dispatchers without the JIT")


@njit(callee=True, error_model="numpy")
def _twice(x):
    return 2 * x


@njit(error_model="numpy")
def _twice_plus_one(x):
    return _twice(x) + 1


def _has_python_wrapper(dispatcher, sig) -> bool:
    cres = dispatcher.overloads[sig]
    return cres.fndesc.llvm_cpython_wrapper_name in cres.library.get_llvm_str()


def test_a_callee_is_linked_into_its_callers_without_entry_points():
    assert isinstance(_twice, _jit._CalleeDispatcher)
    assert _twice.targetoptions["no_cpython_wrapper"]
    assert _twice.targetoptions["no_cfunc_wrapper"]
    assert _twice_plus_one(3) == 7
    (sig,) = _twice.signatures
    assert not _has_python_wrapper(_twice, sig)
    assert _has_python_wrapper(_twice_plus_one, _twice_plus_one.signatures[0])


def test_a_callee_called_from_python_runs_its_twin():
    assert _twice(4) == 8
    assert _twice(2.5) == 5.0
    twin = _twice._tinynet_twin
    assert not isinstance(twin, _jit._CalleeDispatcher)
    assert twin.py_func.__qualname__ == "_twice_py"  # cache files of its own
    assert twin.py_func.__code__ is _twice.py_func.__code__
    assert "no_cpython_wrapper" not in twin.targetoptions


def test_tinynet_helpers_are_callees_and_drivers_are_not():
    from tinynet.kernels.normalization import forward, layout

    assert isinstance(layout.span_reps, _jit._CalleeDispatcher)
    assert layout.span_reps(16) == layout.span_reps.py_func(16)
    driver = forward._SERIAL_DRIVERS[False]
    assert not isinstance(driver, _jit._CalleeDispatcher)
    assert "no_cpython_wrapper" not in driver.targetoptions


def test_callee_rejects_positional_options():
    with pytest.raises(TypeError, match="expected keyword options only"):
        njit(np.float32, callee=True)
