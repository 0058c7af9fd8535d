"""Streaming stores (``tinynet.ops.arrays.streaming``, ``simd.vstream``): the policy, the
aligned allocation, and that a streamed vector holds the values of an ordinary store."""

import os
import platform

import numpy as np
import pytest

from tinynet import tuning
from tinynet.ops.arrays import streaming
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


@pytest.fixture
def small_pool(monkeypatch):
    """Pooling from 1 KiB on, with this thread's pool emptied before and after."""
    if not streaming._POOLING:
        pytest.skip("the pool needs CPython's exact reference counts (before 3.14)")
    monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", 1024)
    streaming.release_pool()
    yield
    streaming.release_pool()


def test_pooled_buffer_is_reused_once_nothing_holds_it(small_pool):
    a = streaming.empty_aligned((16, 64))
    address = a.ctypes.data
    b = streaming.empty_aligned((16, 64))  # ``a`` is alive: another buffer
    assert b.ctypes.data != address
    del a
    c = streaming.empty_aligned((16, 64))
    assert c.ctypes.data == address
    assert c.shape == (16, 64) and c.dtype == np.float32 and c.flags.c_contiguous
    d = streaming.empty_aligned((64, 16))  # same bytes, another shape: the same rule
    assert d.shape == (64, 16) and d.ctypes.data not in (address, b.ctypes.data)
    del b
    e = streaming.empty_aligned((4, 4, 64))
    assert e.shape == (4, 4, 64) and e.ctypes.data % STREAM_ALIGN == 0


@pytest.mark.parametrize("hold", ["view", "reshape", "tensor", "memoryview", "list"])
def test_pooled_buffer_held_in_any_form_is_never_handed_out(small_pool, hold):
    from tinynet.tensor import Tensor

    a = streaming.empty_aligned((16, 64))
    a[...] = 7.0
    keep = {"view": lambda: a[3:5], "reshape": lambda: a.reshape(-1),
            "tensor": lambda: Tensor(a), "memoryview": lambda: memoryview(a),
            "list": lambda: [a]}[hold]()
    address = a.ctypes.data
    del a
    for _ in range(streaming.POOL_SIZE + 2):  # fills the pool; the held buffer stays out
        b = streaming.empty_aligned((16, 64))
        assert b.ctypes.data != address
        b[...] = -1.0
    kept = np.asarray(keep[0] if hold == "list" else keep)
    assert np.all(kept == 7.0)


def test_pool_is_bounded_and_a_free_buffer_makes_room(small_pool):
    held = [streaming.empty_aligned((16, 64)) for _ in range(streaming.POOL_SIZE)]
    assert len(streaming._POOL.bufs) == streaming.POOL_SIZE
    extra = streaming.empty_aligned((16, 64))  # all pooled buffers held: not pooled
    assert len(streaming._POOL.bufs) == streaming.POOL_SIZE
    assert all(extra.ctypes.data != e[1].ctypes.data for e in streaming._POOL.bufs)
    freed = held.pop().ctypes.data
    other = streaming.empty_aligned((32, 64))  # another size takes the free slot
    assert other.ctypes.data != freed
    assert len(streaming._POOL.bufs) == streaming.POOL_SIZE
    assert any(e[1].ctypes.data == other.ctypes.data for e in streaming._POOL.bufs)


def test_a_call_made_while_a_buffer_is_being_handed_out_gets_another(small_pool, monkeypatch):
    # a signal handler or finalizer allocating right after the pool checked a buffer
    import sys
    import types

    real = sys.getrefcount
    taken = []
    armed = [True]

    def getrefcount(obj):
        n = real(obj) - 1  # this wrapper's own reference
        del obj
        if armed[0]:
            armed[0] = False
            taken.append(streaming.empty_aligned((16, 64)))  # kept by the "handler"
        return n

    a = streaming.empty_aligned((16, 64))
    del a  # one free pooled buffer
    monkeypatch.setattr(streaming, "sys", types.SimpleNamespace(getrefcount=getrefcount))
    mine = streaming.empty_aligned((16, 64))
    assert taken and not np.shares_memory(mine, taken[0])


def test_reused_buffer_has_the_requested_dtype(small_pool):
    a = streaming.empty_aligned((16, 32), np.int64)
    del a
    b = streaming.empty_aligned((16, 32), np.longlong)  # equal to int64, another type
    assert b.dtype.type is np.longlong and b.dtype.char == np.dtype(np.longlong).char
    del b
    c = streaming.empty_aligned((32, 32), np.float32)  # the same bytes as float32
    assert c.dtype == np.float32 and c.shape == (32, 32)


def test_small_arrays_are_not_pooled(small_pool):
    a = streaming.empty_aligned((255,))  # 1020 bytes, below the threshold
    del a
    assert streaming._POOL.bufs == []
    b = streaming.empty_aligned((255,))
    assert b.ctypes.data % STREAM_ALIGN == 0
    assert streaming._POOL.bufs == []


def test_pools_are_per_thread(small_pool):
    import threading

    seen = []

    def work():
        seen.append(streaming.empty_aligned((16, 64)).ctypes.data)
        seen.append(len(streaming._POOL.bufs))

    a = streaming.empty_aligned((16, 64))
    address = a.ctypes.data
    del a
    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert seen[1] == 1  # the other thread started its own pool
    assert streaming.empty_aligned((16, 64)).ctypes.data == address


def test_layer_outputs_reuse_buffers_across_steps(small_pool):
    from tinynet.layers import BatchNormalization

    layer = BatchNormalization()
    x = np.random.default_rng(0).standard_normal((4, 8, 8, 64), dtype=np.float32)
    g = np.random.default_rng(1).standard_normal(x.shape, dtype=np.float32)
    layer.build((None, 8, 8, 64))
    y = layer.forward(x, training=True)
    dx = layer.backward(g)
    y1, dx1 = y.numpy().copy(), dx.numpy().copy()
    addresses = {y.numpy().ctypes.data, dx.numpy().ctypes.data}
    del y, dx
    for _ in range(3):  # the step's outputs are dropped: the same two buffers again
        y = layer.forward(x, training=True)
        dx = layer.backward(g)
        assert {y.numpy().ctypes.data, dx.numpy().ctypes.data} == addresses
        assert np.array_equal(y.numpy(), y1) and np.array_equal(dx.numpy(), dx1)
        del y, dx
    held = layer.forward(x, training=True)  # kept: the next step must not write into it
    before = held.numpy().copy()
    y2 = layer.forward(x, training=True)
    dx2 = layer.backward(g)
    assert y2.numpy().ctypes.data != held.numpy().ctypes.data
    assert np.array_equal(held.numpy(), before)
    assert np.array_equal(y2.numpy(), y1) and np.array_equal(dx2.numpy(), dx1)


def test_streams_only_large_outputs_in_whole_vectors(monkeypatch):
    monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", 1000)
    assert streaming.streams(1000, 64)
    assert streaming.streams(10**9, 16)
    assert not streaming.streams(999, 64)  # below the threshold
    assert not streaming.streams(10**9, 24)  # a row of 24 floats: vectors not aligned


def test_layer_norm_rows_stream_by_the_shared_rule(monkeypatch):
    from tinynet.ops.arrays.normalization_plan import plan_of as _plan

    monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", 1000)
    # layer norm's plans (one position, one group) stream rows of whole vectors, 64
    # features included, from the size threshold on
    for features in (16, 32, 64, 128, 256):
        assert _plan((4096, 1, features), 1, "LayerNormalization").streams(1000)
        assert not _plan((4096, 1, features), 1, "LayerNormalization").streams(999)
    assert not _plan((4096, 1, 136), 1, "LayerNormalization").streams(10**9)  # not vectors
    assert _plan((8, 100, 64), 4, "GroupNormalization").streams(10**9)


def test_threshold_is_a_quarter_of_the_last_level_cache_or_a_socket_caches_private_bound():
    mib = 1 << 20
    assert streaming.LOCAL_CACHE_MAX_BYTES == 64 * mib
    assert streaming.stream_threshold(260 * mib, 4 * mib) == 4 * mib  # Intel VM: 2 x 2 MiB L2
    assert streaming.stream_threshold(128 * mib, 2 * mib) == 2 * mib  # a socket's L3
    assert streaming.stream_threshold(65 * mib, 1 * mib) == 1 * mib  # just over the bound
    assert streaming.stream_threshold(260 * mib, 0) == 65 * mib  # L2 unknown: the quarter
    assert streaming.stream_threshold(260 * mib, 80 * mib) == 65 * mib  # the smaller
    assert streaming.stream_threshold(32 * mib, 1 * mib) == 8 * mib  # AMD VM: a CCX's L3
    assert streaming.stream_threshold(64 * mib, 1 * mib) == 16 * mib  # the largest local one
    assert streaming.stream_threshold(8 * mib, 4 * mib) == 2 * mib  # a small L3: its quarter
    assert streaming.stream_threshold(32 * mib, 0) == 8 * mib  # L2 unknown: the quarter
    assert streaming.LAST_LEVEL_CACHE_BYTES > 0
    override = tuning.env_bytes("TINYNET_STREAM_MIN_BYTES")
    assert streaming.STREAM_MIN_BYTES == (streaming.stream_threshold(
        streaming.LAST_LEVEL_CACHE_BYTES, streaming.PRIVATE_CACHE_BYTES)
        if override is None else override)


def _fake_sysfs(root, cpus):
    """A sysfs-like CPU folder: for each cpu, one ``cache/indexN`` per
    ``(level, type, size, shared_cpu_list)``."""
    for cpu, entries in cpus.items():
        for i, (level, kind, size, shared) in enumerate(entries):
            d = root / f"cpu{cpu}" / "cache" / f"index{i}"
            d.mkdir(parents=True)
            for name, text in (("level", level), ("type", kind), ("size", size),
                               ("shared_cpu_list", shared)):
                if text is not None:
                    (d / name).write_text(f"{text}\n")
        (root / f"cpu{cpu}" / "cache" / "uevent").write_text("")
    return str(root)


def _core(cpu, l2_shared, l2="2048K", l3="266240K"):
    return [(1, "Data", "48K", str(cpu)), (1, "Instruction", "64K", str(cpu)),
            (2, "Unified", l2, l2_shared), (3, "Unified", l3, "0-3")]


def test_cache_entries_are_read_by_level_from_sysfs(tmp_path):
    root = _fake_sysfs(tmp_path, {0: _core(0, "0")})
    assert streaming.cache_entries(0, root) == [
        (1, "Data", 48 << 10, "0"), (1, "Instruction", 64 << 10, "0"),
        (2, "Unified", 2 << 20, "0"), (3, "Unified", 266240 << 10, "0-3")]
    assert streaming.cache_entries(5, root) == []  # no such CPU
    assert streaming._last_level_cache_bytes(root=root, cpus=[0]) == 266240 << 10
    assert streaming._last_level_cache_bytes(123, root=root, cpus=[5]) == 123  # default


def test_private_caches_count_each_l2_once(tmp_path):
    # cpus 0 and 1 are hyperthreads of one core (one L2), cpu 2 and 3 have their own
    root = _fake_sysfs(tmp_path, {0: _core(0, "0-1"), 1: _core(1, "0-1"),
                                  2: _core(2, "2"), 3: _core(3, "3", l2="1M")})
    assert streaming._private_cache_bytes(root, [0, 1]) == 2 << 20
    assert streaming._private_cache_bytes(root, [0, 1, 2]) == 4 << 20
    assert streaming._private_cache_bytes(root, [1, 2, 3]) == 5 << 20
    assert streaming._private_cache_bytes(root, [7]) == 0  # unknown: the quarter rule alone


def test_unreadable_cache_entries_are_skipped(tmp_path):
    root = _fake_sysfs(tmp_path, {0: [(2, "Unified", "1M", None), (3, "Unified", "lots", "0")]})
    assert streaming.cache_entries(0, root) == [(2, "Unified", 1 << 20, "")]
    # an L2 that lists no sharing CPUs counts once per CPU
    assert streaming._private_cache_bytes(root, [0]) == 1 << 20


@pytest.mark.parametrize("text, expected", [("1048576", 1 << 20), (" 4_194_304 ", 4 << 20),
                                            ("0", 0), ("", 12345)])
def test_threshold_can_be_set_in_the_environment(monkeypatch, text, expected):
    monkeypatch.setenv("TINYNET_STREAM_MIN_BYTES", text)
    override = tuning.env_bytes("TINYNET_STREAM_MIN_BYTES")  # read through tuning
    assert (12345 if override is None else override) == expected


@pytest.mark.parametrize("text", ["lots", "-1", "1.5"])
def test_a_bad_threshold_in_the_environment_is_named(monkeypatch, text):
    monkeypatch.setenv("TINYNET_STREAM_MIN_BYTES", text)
    with pytest.raises(ValueError) as err:
        tuning.env_bytes("TINYNET_STREAM_MIN_BYTES")
    assert str(err.value) == (f"environment variable TINYNET_STREAM_MIN_BYTES={text!r}: "
                              "expected a non-negative integer (bytes)")


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


def test_private_caches_stop_counting_at_the_cap(tmp_path):
    root = _fake_sysfs(tmp_path, {c: _core(c, str(c)) for c in range(4)})
    assert streaming._private_cache_bytes(root, [0, 1, 2, 3]) == 8 << 20
    assert streaming._private_cache_bytes(root, [0, 1, 2, 3], cap=3 << 20) == 4 << 20


def test_pool_from_pools_smaller_buffers_and_the_default_does_not(small_pool):
    # the fixture's STREAM_MIN_BYTES is 1 KiB; these buffers are 512 bytes
    def pooled(a):
        return any(e[1].ctypes.data == a.ctypes.data for e in streaming._POOL.bufs)

    a = streaming.empty_aligned((8, 16))
    assert not pooled(a)
    b = streaming.empty_aligned((8, 16), pool_from=512)
    assert pooled(b) and b.ctypes.data % STREAM_ALIGN == 0
    address = b.ctypes.data
    del b
    c = streaming.empty_aligned((128,), pool_from=512)
    assert c.ctypes.data == address and c.shape == (128,)
    d = streaming.empty_aligned((256,), pool_from=1 << 30)  # 1 KiB, left out on request
    assert not pooled(d) and d.ctypes.data % STREAM_ALIGN == 0
