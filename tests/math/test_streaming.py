"""Streaming stores (``tinynet.kernels.streaming``, ``simd.vstream``): the policy, the
aligned allocation, and that a streamed vector holds the values of an ordinary store."""

import os
import platform

import numpy as np
import pytest

from tinynet.kernels import streaming
from tinynet.kernels._jit import njit
from tinynet.kernels.simd import (LANES, STREAM_ALIGN, load4, sfence, store4, vload, vsplat,
                                  vstore, vstream)

NOJIT = os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0")


@njit(cache=True)
def _scale_rows(x, out, a, stream):
    """out = x * a in 64-float quads (streamed or stored), then one 16-float tail."""
    va = vsplat(a)
    n = x.size // 64 * 64
    for i in range(0, n, 64):
        q = load4(x, i)
        r = (q[0] * va, q[1] * va, q[2] * va, q[3] * va)
        if stream:
            for k in range(4):
                vstream(out, i + 16 * k, r[k])
        else:
            store4(out, i, r)
    if n + LANES <= x.size:
        if stream:
            vstream(out, n, vload(x, n) * va)
        else:
            vstore(out, n, vload(x, n) * va)
    sfence()


@pytest.mark.parametrize("shape", [(1,), (3, 5), (2, 3, 5, 64), (0, 4), (7, 17)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_empty_aligned_is_aligned_contiguous_and_writable(shape, dtype):
    for _ in range(3):  # several allocations: the offset into the buffer varies
        a = streaming.empty_aligned(shape, dtype)
        assert a.shape == shape and a.dtype == dtype
        assert a.flags.c_contiguous and a.flags.writeable
        assert a.size == 0 or a.ctypes.data % STREAM_ALIGN == 0  # (empty: no data to align)
        a[...] = 1
        assert np.all(a == 1)


def test_streams_only_large_outputs_in_whole_vectors(monkeypatch):
    monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", 1000)
    assert streaming.streams(1000, 64)
    assert streaming.streams(10**9, 16)
    assert not streaming.streams(999, 64)  # below the threshold
    assert not streaming.streams(10**9, 24)  # a row of 24 floats: vectors not aligned


def test_layer_norm_rows_stream_by_the_shared_rule(monkeypatch):
    from tinynet.layers.regularization.normalization.group_norm_core import _plan

    monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", 1000)
    # layer norm's plans (one position, one group) stream rows of whole vectors, 64
    # features included, from the size threshold on
    for features in (16, 32, 64, 128, 256):
        assert _plan((4096, 1, features), 1, "LayerNormalization").streams(1000)
        assert not _plan((4096, 1, features), 1, "LayerNormalization").streams(999)
    assert not _plan((4096, 1, 136), 1, "LayerNormalization").streams(10**9)  # not vectors
    assert _plan((8, 100, 64), 4, "GroupNormalization").streams(10**9)


def test_threshold_is_a_quarter_of_the_last_level_cache():
    assert streaming.LAST_LEVEL_CACHE_BYTES > 0
    assert streaming.STREAM_MIN_BYTES == streaming.LAST_LEVEL_CACHE_BYTES // 4


def test_cache_size_falls_back_when_sysfs_has_none(monkeypatch):
    def no_listing(path):
        raise OSError("no sysfs here")

    monkeypatch.setattr(streaming.os, "listdir", no_listing)
    assert streaming._last_level_cache_bytes(default=12345) == 12345


@pytest.mark.parametrize("n", [64, 80, 64 * 9 + 16])
def test_streamed_vectors_hold_the_stored_values(n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    stored = streaming.empty_aligned((n,))
    streamed = streaming.empty_aligned((n,))
    stored[:] = np.nan
    streamed[:] = np.nan
    _scale_rows(x, stored, np.float32(1.7), False)
    _scale_rows(x, streamed, np.float32(1.7), True)
    assert stored.tobytes() == streamed.tobytes()
    assert np.array_equal(streamed, x * np.float32(1.7))


@pytest.mark.skipif(NOJIT, reason="inspects compiled code")
@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86 code")
def test_streamed_stores_compile_to_non_temporal_moves():
    import numba

    fresh = numba.njit(_scale_rows.py_func)  # not from the cache: its code can be inspected
    x = np.zeros(64, np.float32)
    fresh(x, streaming.empty_aligned((64,)), np.float32(1.0), True)
    asm = "\n".join(fresh.inspect_asm().values())
    assert "movnt" in asm  # vmovntps (non-temporal store)
    assert "sfence" in asm
