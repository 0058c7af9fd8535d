"""Calling a compiled kernel through its address (tinynet.kernels.address)."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from numba import prange

from tinynet.kernels import address
from tinynet.kernels._jit import njit

pytestmark = pytest.mark.skipif(not hasattr(njit(lambda: None), "overloads"),
                                reason="NUMBA_DISABLE_JIT: no compiled code, no address")


@njit(cache=True, error_model="numpy")
def _scaled_rows(x, out, scale, r0, r1):
    for i in range(r0, r1):
        for j in range(x.shape[1]):
            out[i, j] = x[i, j] * scale + np.float32(i)


@njit(cache=True, error_model="numpy")
def _squares(x, out, scale, r0, r1):
    for i in range(r0, r1):
        for j in range(x.shape[1]):
            out[i, j] = x[i, j] * x[i, j] * scale


@njit(cache=True, parallel=True, error_model="numpy")
def _tasks_at(addr, x, out, scale, tasks):
    per = (x.shape[0] + tasks - 1) // tasks
    for t in prange(tasks):
        address.call_at(addr, (x, out, scale, t * per, min(x.shape[0], (t + 1) * per)))


def _operands(rows=37, cols=19):
    x = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)
    return x, np.full_like(x, np.nan)


@pytest.mark.parametrize("tasks", [1, 2, 5])
def test_a_driver_runs_the_kernel_at_an_address_with_its_bits(tasks):
    x, out = _operands()
    want = np.empty_like(x)
    _scaled_rows(x, want, np.float32(0.5), 0, x.shape[0])
    args = (x, out, np.float32(0.5), 0, 0)
    _tasks_at(address.entry_address(_scaled_rows, args), x, out, np.float32(0.5), tasks)
    assert out.tobytes() == want.tobytes()


def test_one_driver_serves_every_kernel_of_the_same_argument_types():
    x, out = _operands()
    rows = np.arange(37, dtype=np.float32)[:, None]
    for kernel, expected in ((_scaled_rows, x * np.float32(2) + rows),
                             (_squares, x * x * np.float32(2))):
        args = (x, out, np.float32(2), 0, 0)
        _tasks_at(address.entry_address(kernel, args), x, out, np.float32(2), 3)
        np.testing.assert_array_equal(out, expected)
    assert len(_tasks_at.overloads) == 1


def test_entry_address_is_per_argument_types():
    x, out = _operands()
    args = (x, out, np.float32(1), 0, 0)
    first = address.entry_address(_squares, args)
    assert address.entry_address(_squares, (x + 1, out * 0, np.float32(3), 5, 7)) == first
    wide = x.astype(np.float64)
    other = address.entry_address(_squares, (wide, wide.copy(), 1.0, 0, 0))
    assert other != first and len(_squares.overloads) >= 2
    readonly = x.copy()
    readonly.flags.writeable = False
    assert address.entry_address(_squares, (readonly, out, np.float32(1), 0, 0)) != first


@pytest.mark.parametrize("rows", [1, 2, 37])
def test_run_parallel_runs_each_task_of_a_range_kernel_with_its_bits(rows):
    x, out = _operands(rows=rows)
    want = np.empty_like(x)
    _scaled_rows(x, want, np.float32(0.5), 0, rows)
    address.run_parallel(_scaled_rows, rows, x, out, np.float32(0.5))
    assert out.tobytes() == want.tobytes()


def test_one_task_driver_serves_every_range_kernel_of_the_same_argument_types():
    x, out = _operands()
    address.run_parallel(_squares, x.shape[0], x, out, np.float32(2))
    np.testing.assert_array_equal(out, x * x * np.float32(2))
    compiled = len(address.tasks_parallel.overloads)
    address.run_parallel(_scaled_rows, x.shape[0], x, out, np.float32(2))
    np.testing.assert_array_equal(out, x * np.float32(2) + np.arange(37, dtype=np.float32)[:, None])
    assert len(address.tasks_parallel.overloads) == compiled


@njit(cache=True, error_model="numpy")
def _mixed(x, idx, out, scale, flip, shift, r0, r1):
    for i in range(r0, r1):
        for j in range(x.shape[1]):
            v = x[i, j] * scale + np.float64(idx[i]) + shift
            out[i, j] = -v if flip else v


def test_one_parallel_driver_serves_every_argument_type():
    # the driver takes integers only: one compile, whatever the kernels' argument types
    x, out = _operands()
    address.run_parallel(_scaled_rows, x.shape[0], x, out, np.float32(0.5))
    wide = x.astype(np.float64)
    idx = np.arange(x.shape[0], dtype=np.int32)
    got = np.full_like(wide, np.nan)
    address.run_parallel(_mixed, x.shape[0], wide, idx, got, 0.25, True, np.int64(3))
    want = np.empty_like(wide)
    _mixed(wide, idx, want, 0.25, True, np.int64(3), 0, x.shape[0])
    assert got.tobytes() == want.tobytes()
    # hand-derived: row i holds -(x * 0.25 + i + 3)
    np.testing.assert_array_equal(got, -(wide * 0.25 + idx[:, None] + 3.0))
    assert len(address.tasks_parallel.overloads) == 1


@pytest.mark.parametrize("tasks", [0, np.int64(5), np.int32(37)])
def test_run_parallel_takes_any_integer_task_count(tasks):
    x, out = _operands()
    out[:] = 7.0
    address.run_parallel(_squares, tasks, x, out, np.float32(1))
    n = int(tasks)
    np.testing.assert_array_equal(out[:n], x[:n] * x[:n])
    assert (out[n:] == 7.0).all()  # tasks past the count do not run


def test_run_parallel_leaves_the_arrays_reference_counts_alone():
    import sys

    x, out = _operands()
    before = (sys.getrefcount(x), sys.getrefcount(out))
    for _ in range(3):
        address.run_parallel(_scaled_rows, x.shape[0], x, out, np.float32(0.5))
    assert (sys.getrefcount(x), sys.getrefcount(out)) == before


@njit(cache=True, error_model="numpy")
def _offset_rows(x, out, shift, r0, r1):
    for i in range(r0, r1):
        for j in range(x.shape[1]):
            out[i, j] = x[i, j] + shift[0] * shift[1]


def test_numpy_arrays_have_the_fields_the_slot_invoker_reads():
    assert address._fields_ok()


def test_argument_types_without_a_slot_go_through_the_launcher():
    x, out = _operands()
    address.run_parallel(_offset_rows, x.shape[0], x, out, (np.float32(2), np.float32(3)))
    want = np.empty_like(x)
    _offset_rows(x, want, (np.float32(2), np.float32(3)), 0, x.shape[0])
    assert out.tobytes() == want.tobytes()
    assert address._plans[tuple(address._key(a) for a in (x, out, (1, 2)))] is None


def test_a_slot_invoker_is_read_back_from_the_cache(monkeypatch):
    # another process finds the invoker in the kernel cache: no LLVM built for it
    x, out = _operands()
    args = (x[:, ::2], out[:, :10], np.uint8(3), np.int16(-2), False)
    argtys = tuple(numba.typeof(a) for a in args)
    name, _ = address._invoker_library(argtys)
    if getattr(address.tasks_parallel._cache, "_cache_path", None) is None:
        pytest.skip("no cache folder")

    def refuse(*_):
        raise AssertionError("built again")

    monkeypatch.setattr(address, "_slot_invoker", refuse)
    monkeypatch.setattr(address, "_plans", {})
    again, library = address._invoker_library(argtys)
    assert again == name and library.get_pointer_to_function(name)
    address.run_parallel(_mixed_small, x.shape[0], *args)
    want = np.full((37, 10), np.nan, dtype=np.float32)
    _mixed_small(x[:, ::2], want, np.uint8(3), np.int16(-2), False, 0, 37)
    assert out[:, :10].tobytes() == want.tobytes()


@njit(cache=True, error_model="numpy")
def _mixed_small(x, out, a, b, flip, r0, r1):
    for i in range(r0, r1):
        for j in range(x.shape[1]):
            v = x[i, j] * np.float32(a) + np.float32(b)
            out[i, j] = -v if flip else v


def test_an_invoker_that_cannot_be_built_falls_back_to_the_launcher(monkeypatch):
    # another Numba's code-generation internals: run_parallel still runs, with its bits
    def broken(*_):
        raise AttributeError("no such internal")

    monkeypatch.setattr(address, "_invoker_library", broken)
    monkeypatch.setattr(address, "_plans", {})
    x, out = _operands()
    address.run_parallel(_scaled_rows, x.shape[0], x, out, np.float32(3))
    want = np.empty_like(x)
    _scaled_rows(x, want, np.float32(3), 0, x.shape[0])
    assert out.tobytes() == want.tobytes()
    assert address._plans[tuple(address._key(a) for a in (x, out, np.float32(3)))] is None
