"""tinynet's own float32 GEMM: one fixed order of operations on every CPU.

A BLAS picks its inner kernel by CPU (OpenBLAS's Haswell, SkylakeX or Zen kernels sum a
product's terms in different orders), so its products, and every weight trained with
them, differ from one machine to another. This GEMM fixes the order instead: each output
element is one chain of fused multiply-adds over the inner index in increasing order,

    acc = 0;  acc = fma(op(a)[i, k], op(b)[k, j], acc) for k = 0, 1, ..., K - 1

then ``c = acc`` (or ``acc + beta * c``: two rounded float32 operations). The fused
multiply-add is IEEE 754's ``fusedMultiplyAdd`` (:func:`tinynet.kernels.simd.vfma`), the
same bits with or without an FMA unit, and the 16-lane vectors lower to the same per-lane
operations on AVX-512, AVX2 and SSE. Nothing else takes part in an element's sum, so the
blocking below (which is for speed only), the split over threads and the thread count
never show in a result.

The compiled kernels block GotoBLAS/BLIS-style, each task (a band of rows or of columns
of the output) on its own: ``op(b)`` is packed :data:`KC` inner steps by :data:`NC`
columns at a time into the task's scratch (panels of :data:`NR` columns, ``bp[k][column]``,
zeros past the last column; a last panel of at most 16 columns is packed 16 wide; ``b``'s
rows read in order), and a 6 x 32 register tile (twelve 16-lane accumulators: two vector
loads of ``b`` and six broadcasts of ``a`` per inner step) runs over every :data:`MR` rows
of ``op(a)`` and panel: for each block of :data:`MC` rows, panel by panel, so a panel
stays in the first-level cache while the block's rows pass over it; one call of the tile
function runs all the block's full tiles of a panel, up to ``MC / MR`` (a call passes
every array's fields: per tile, that cost as much as the multiply-adds of a few dozen
inner steps).
``op(a)`` is read in place through ``a``'s strides when its rows are ``a``'s rows; when
they are ``a``'s columns (``a.T``) and the product is more than two panels wide, the block
is packed first (strips of ``MR`` rows, ``MR`` floats a step), so the tile reads one
stream instead of a new cache line every step. A tile asks for its
lines of ``c`` before its chains run (a prefetch), so the stores at its end do not wait
for memory. Between two ``KC`` steps the chains wait in ``c`` itself (a float32 round
trip: the same chain). A 6 x 16 tile serves the narrow last panel, and every
panel, packed 16 wide, on cores without AVX-512 (``simd.NARROW_REGISTERS``: there the
6 x 32 tile's twelve accumulators need 24 of the 16 vector registers and spill); tiles
that cross the product's edge run on a small buffer, their inside moved from and back to
``c`` with masked vector loads and stores. Bands of the output go to Numba's threads
(:func:`gemm_parallel`), each band one task with its own scratch; no band's elements
depend on another's, so the bits are those of one task (:func:`gemm_serial`).

All of it is compiled once, as a cached C function that every kernel calls through an
LLVM symbol (:data:`SYMBOL`): linked into its callers instead, its code would be
optimized again in each of them (the tiled convolution's kernels took 10 s more to
compile). Under ``NUMBA_DISABLE_JIT=1`` the same code runs as Python (the same bits,
slowly), and :func:`gemm` called from Python computes the same chains with NumPy, one
inner index at a time over the whole output.
"""

from __future__ import annotations

import threading

import llvmlite.binding as ll
import numpy as np
from numba import carray, cfunc, prange, types
from numba.core import config as numba_config
from numba.extending import overload

from tinynet.kernels._jit import CALLEE_OPTIONS, njit
from tinynet.kernels.sgemm_tiles import cload, cload_n, cstore, cstore_n, tile16, tile32
from tinynet.kernels.simd import NARROW_REGISTERS, vfma, vstore

__all__ = ["MR", "NR", "KC", "NC", "MC", "SYMBOL", "ready", "compile_task", "gemm",
           "workspace_size", "gemm_serial", "gemm_parallel", "gemm_parts_serial",
           "gemm_parts_parallel"]

MR = 6    # rows of op(a) per register tile
NR = 32   # columns of op(b) per register tile (two 16-lane vectors)
KC = 256  # inner steps per packed block of op(b) (the chains wait in c in between)
NC = 512  # columns per packed block of op(b)
MC = 96   # rows of op(a) per pass over one packed panel


def gemm(a: np.ndarray, b: np.ndarray, c: np.ndarray, trans_a: bool = False,
         trans_b: bool = False, beta: float = 0.0) -> None:
    """``c = op(a) @ op(b) + beta * c`` in float32, in place, in the fixed order above.

    ``a``, ``b`` and ``c`` are 2-D float32 arrays; ``op(a)`` is ``a.T`` when ``trans_a``.
    Works in Numba kernels and in plain Python (the same bits).

    Shape:
        op(a): ``[M, K]``; op(b): ``[K, N]``; c: ``[M, N]``.
    """
    opa = a.T if trans_a else a
    opb = b.T if trans_b else b
    acc = np.zeros(c.shape, dtype=np.float32)
    for kk in range(opa.shape[1]):
        acc = vfma(opa[:, kk:kk + 1], opb[kk:kk + 1, :], acc)
    c[...] = acc + np.float32(beta) * c if beta else acc


def workspace_size(m: int, n: int, k: int) -> int:
    """Floats of one task's packing scratch for an ``[m, k] @ [k, n]`` product: a packed
    block of ``op(b)`` and, at its end, one of ``op(a)`` (used when ``a`` is transposed
    and ``n`` over two panels; :func:`_sgemm_whole` computes the same sum, without that
    part when it is not used)."""
    return max(1, min(KC, k) * (min(NC, (n + NR - 1) // NR * NR) + MC))


# ------------------------------------------------------------ packing and blocks
@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _pack_b(b, trans_b, k0, kc, j0, nc, bp, pw):
    """``op(b)[k0:k0 + kc, j0:j0 + nc]`` as panels of ``pw`` (``NR`` or 16) columns: the
    panel of columns ``jp`` on at ``bp[jp * kc:]``, ``pw`` floats a step (16 for a last
    panel of at most 16 columns), zeros past ``nc``."""
    if not trans_b and b.strides[1] == 4:  # b's rows read in order, each across the panels
        for kk in range(kc):
            for jp in range(0, nc, pw):
                width = min(pw, nc - jp)
                st = 16 if width <= 16 else NR
                for v in range(0, st, 16):
                    vstore(bp, jp * kc + kk * st + v,
                           cload_n(b, k0 + kk, j0 + jp + v, max(0, min(16, width - v))))
        return
    for jp in range(0, nc, pw):
        base = jp * kc
        width = min(pw, nc - jp)
        st = 16 if width <= 16 else NR
        if trans_b:  # op(b)[kk, j] = b[j, kk]: read along b's rows
            for col in range(width):
                row = b[j0 + jp + col]
                for kk in range(kc):
                    bp[base + kk * st + col] = row[k0 + kk]
            for kk in range(kc):
                for col in range(width, st):
                    bp[base + kk * st + col] = np.float32(0.0)
        else:
            for kk in range(kc):
                row = b[k0 + kk]
                for col in range(width):
                    bp[base + kk * st + col] = row[j0 + jp + col]
                for col in range(width, st):
                    bp[base + kk * st + col] = np.float32(0.0)


@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _packs_a(trans_a, n):
    """Whether a transposed ``a`` is packed: when its rows meet more than two panels
    (a product of two panels reads each line of ``a`` from the cache again at once, and
    packing would cost more than it saves)."""
    return trans_a and n > 2 * NR


@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _pack_a(a, i0, mc, m, k0, kc, ap):
    """``op(a)[i0:i0 + mc, k0:k0 + kc]`` of a transposed ``a`` (``op(a)[i, kk] =
    a[kk, i]``) as strips of :data:`MR` rows, strip ``s`` at ``ap[0, s * kc * MR:]``,
    ``MR`` floats a step, zeros for rows past ``m``."""
    for kk in range(kc):  # each row of a read in order, across the strips
        for s in range(0, mc, MR):  # MR floats, the lanes past row m - 1 zeros
            cstore_n(ap, 0, s * kc + kk * MR,
                     cload_n(a, k0 + kk, i0 + s, max(0, min(MR, m - i0 - s))), MR)


def _run_fn(narrow: bool):
    """The blocked GEMM's task with the narrow, or the wide, tiles (``narrow`` a constant of
    the closure: Numba prunes the tile it does not take, so that one is never compiled)."""

    @njit(callee=True, variant=narrow, cache=True, nogil=True, error_model="numpy",
          boundscheck=False)
    def run(a, b, c, trans_a, trans_b, beta, saved, r0, r1, c0, c1, bp, tb):
        """``c[r0:r1, c0:c1] = op(a)[r0:r1] @ op(b)[:, c0:c1] (+ beta * c)``: one task,
        ``op(b)`` packed block by block into ``bp`` (and, for a transposed ``a``, ``op(a)``
        into the last ``MC * min(KC, k)`` floats of ``bp``, which must have room for both).
        Tiles crossing the edge (``h`` rows,
        ``wd`` columns inside) run on the buffer ``tb`` (``[MR, NR]``), their inside copied
        from and back to ``c``. With ``beta`` and more than ``KC`` inner steps the chains
        pass through ``c``, so ``beta * c`` is added at the end from ``saved``, the caller's
        copy of ``c`` (the same two roundings as in one pass). ``narrow``: 16-column panels
        and the 6 x 16 tile everywhere. One function, not a chain of helpers:
        Numba optimizes a helper's code again in every helper that links it; and each tile
        has one call site, on ``c`` or on ``tb`` (so both must have one array type), because
        LLVM inlines a tile's unrolled loop at every site it is called from."""
        m = c.shape[0]
        if trans_a:  # op(a)[i, kk] = a[kk, i]
            k = a.shape[0]
            si, sk = a.strides[1], a.strides[0]
        else:
            k = a.shape[1]
            si, sk = a.strides[0], a.strides[1]
        fb = np.float32(beta)
        if k == 0:  # empty chains: acc = 0
            for i in range(r0, r1):
                for j in range(c0, c1):
                    c[i, j] = np.float32(0.0) + fb * c[i, j] if beta != 0.0 else np.float32(0.0)
            return
        split = beta != 0.0 and k > KC
        beta_on = beta != 0.0 and not split
        pw = 16 if narrow else NR
        pack_a = _packs_a(trans_a, c.shape[1])
        asz = MC * min(KC, k) if pack_a else 0  # op(a)'s packed block, at the scratch's end
        ap = bp[bp.shape[0] - asz:].reshape((1, asz))
        for jc in range(c0, c1, NC):
            nc = min(NC, c1 - jc)
            for pc in range(0, k, KC):
                kc = min(KC, k - pc)
                _pack_b(b, trans_b, pc, kc, jc, nc, bp, pw)
                load = pc > 0
                last = beta_on and pc + kc == k
                for ic in range(r0, r1, MC):
                    mc = min(MC, r1 - ic)
                    if pack_a:  # rows of op(a) are columns of a: packed, read in order
                        _pack_a(a, ic, mc, m, pc, kc, ap)
                    for jp in range(0, nc, pw):
                        wd = min(pw, nc - jp)
                        j0 = jc + jp
                        i0 = ic
                        while i0 < ic + mc:  # a column of tiles per call, edge tiles alone
                            h = min(MR, r1 - i0)
                            inside = h == MR and (wd == NR or wd == 16)
                            # the strips wholly inside from i0 on (only the product's last
                            # strip can be short), or the one edge tile
                            count = (ic + mc - i0) // MR if inside else 1
                            if pack_a:  # strip (i0 - ic) / MR of the packed block
                                src, ti, tl, tsi, tsk = ap, 0, MR - 1, 4, 4 * MR
                                tk0, sdi, sdk = (i0 - ic) // MR * kc, 0, kc
                            else:  # op(a) read in place
                                src, ti, tl, tsi, tsk = a, i0, m - 1, si, sk
                                tk0, sdi, sdk = pc, MR, 0
                            if inside:  # the tiles work on c itself
                                dst, di, dj = c, i0, j0
                            else:  # on the buffer
                                dst, di, dj = tb, 0, 0
                                if load or last:
                                    for r in range(h):
                                        for v in range(0, wd, 16):
                                            cstore(tb, r, v, cload_n(c, i0 + r, j0 + v,
                                                                       min(16, wd - v)))
                            if narrow:  # a constant: Numba prunes the branch not taken
                                tile16(src, ti, tl, tsi, tsk, tk0, bp, jp * kc, kc, dst, di, dj,
                                       load, last, fb, count, sdi, sdk)
                            elif wd > 16:
                                tile32(src, ti, tl, tsi, tsk, tk0, bp, jp * kc, kc, dst, di, dj,
                                       load, last, fb, count, sdi, sdk)
                            else:
                                tile16(src, ti, tl, tsi, tsk, tk0, bp, jp * kc, kc, dst, di, dj,
                                       load, last, fb, count, sdi, sdk)
                            if not inside:
                                for r in range(h):
                                    for v in range(0, wd, 16):
                                        cstore_n(c, i0 + r, j0 + v, cload(tb, r, v),
                                                 min(16, wd - v))
                            i0 += count * MR
        if split:
            for i in range(r0, r1):
                for j in range(c0, c1):
                    c[i, j] = c[i, j] + fb * saved[i, j]

    return run


# module globals (a kernel naming a dispatcher held in a closure would not be cached)
_run_narrow, _run_wide = _run_fn(True), _run_fn(False)


@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _saved(c, a, trans_a, beta):
    """A copy of ``c`` when :func:`_task` needs one (else an empty array)."""
    k = a.shape[0] if trans_a else a.shape[1]
    if beta != 0.0 and k > KC:
        return c.copy()
    return np.empty((0, 0), dtype=np.float32)


# ------------------------------------------------------------ one compiled GEMM
# The blocked GEMM above is compiled once, as a C function (``cfunc``, cached like the
# kernels) with the tiles this machine runs (:data:`simd.NARROW_REGISTERS`; the other
# variant is not compiled), registered with LLVM under :data:`SYMBOL`, and every kernel
# calls it there: a kernel that linked it instead (the convolutions call it per tile)
# would have its code optimized again at every level of every caller, several seconds
# each. The address is registered by :func:`ready` before any kernel that calls it is
# compiled or loaded from the cache. ``_gemm_task(m, n, k, trans_a, trans_b, a, lda, b,
# ldb, beta, c, ldc, saved, r0, r1, c0, c1, ws, ws_size, wt)``: the task (:func:`_run_fn`)
# on ``c[r0:r1, c0:c1]``, every matrix a pointer and a row stride in floats (columns
# adjacent), ``saved`` an ``[M, N]`` copy of ``c`` when ``beta`` and ``K > KC`` (else
# unused), ``ws``/``wt`` the task's scratch.
SYMBOL = "tinynet_sgemm_task"
_JIT = not numba_config.DISABLE_JIT
_i64, _f32 = types.int64, types.float32
_FP = types.CPointer(types.float32)
_SIG = types.void(_i64, _i64, _i64, _i64, _i64, _i64, _i64, _i64, _i64, _f32, _i64, _i64,
                  _i64, _i64, _i64, _i64, _i64, _i64, _i64, _i64)
# the same ABI (a pointer travels like a 64-bit int), typed pointers for carray
_SIG_PTR = types.void(_i64, _i64, _i64, _i64, _i64, _FP, _i64, _FP, _i64, _f32, _FP, _i64,
                      _FP, _i64, _i64, _i64, _i64, _FP, _i64, _FP)


def _task_c(narrow: bool):
    """The C function's body with the tiles ``narrow`` chooses (a constant of the closure,
    so only those compile); its own name, hence its own cache files."""

    def gemm_task(m, n, k, trans_a, trans_b, a, lda, b, ldb, beta, c, ldc, saved, r0, r1, c0,
                  c1, ws, ws_size, wt):  # pragma: no cover (compiled)
        ta = trans_a != 0
        tb = trans_b != 0
        av = carray(a, (k if ta else m, lda))[:, :(m if ta else k)]
        bv = carray(b, (n if tb else k, ldb))[:, :(k if tb else n)]
        cv = carray(c, (m, ldc))[:, :n]
        sv = carray(saved, (m, n)) if beta != 0.0 and k > KC else carray(saved, (0, 0))
        wv = carray(wt, (MR, NR))[:, :NR]  # a view typed as cv (see _run_fn)
        if narrow:  # a constant: the other branch is pruned
            _run_narrow(av, bv, cv, ta, tb, beta, sv, r0, r1, c0, c1, carray(ws, ws_size), wv)
        else:
            _run_wide(av, bv, cv, ta, tb, beta, sv, r0, r1, c0, c1, carray(ws, ws_size), wv)

    gemm_task.__qualname__ = f"gemm_task_{'narrow' if narrow else 'wide'}"
    return gemm_task


def compile_task(narrow: bool):
    """The C GEMM (``numba.cfunc``, from the cache when it is there) with the narrow, or the
    wide, tiles: :func:`ready` compiles the machine's; tests compare it with the other."""
    return cfunc(_SIG_PTR, cache=True, nogil=True, error_model="numpy",
                 boundscheck=False)(_task_c(narrow))


_ready = not _JIT  # without the JIT nothing calls the symbol
_ready_lock = threading.Lock()


def ready() -> None:
    """Compiles (or loads from the cache) the C GEMM and registers it as :data:`SYMBOL`,
    once per process. Every Python entry to a kernel that calls it (``matmul``, the tiled
    convolution) calls this first: a kernel that calls the symbol can be compiled or
    loaded from the cache only once it is registered. Not at import, so a first run
    compiles it when a model first needs a product, by then beside the compile-ahead
    helper, which compiles it among the first things it does."""
    global _ready
    if _ready:
        return
    with _ready_lock:
        if not _ready:
            compiled = compile_task(NARROW_REGISTERS)
            ll.add_symbol(SYMBOL, compiled.address)
            _keep.append(compiled)  # its code lives as long as the process
            _ready = True


_keep: list = []
_gemm_task = types.ExternalFunction(SYMBOL, _SIG)


def _task(a, b, c, trans_a, trans_b, beta, saved, r0, r1, c0, c1, ws, wt):
    """The blocked GEMM on ``c[r0:r1, c0:c1]`` with the machine's tiles (compiled: through
    :data:`SYMBOL`; ``a``, ``b`` and ``c`` need adjacent columns, ``saved`` is C-contiguous)."""
    (_run_narrow if NARROW_REGISTERS else _run_wide)(a, b, c, trans_a, trans_b, beta, saved, r0,
                                                     r1, c0, c1, ws, wt)


@overload(_task, jit_options=CALLEE_OPTIONS)
def _task_jit(a, b, c, trans_a, trans_b, beta, saved, r0, r1, c0, c1, ws, wt):
    def impl(a, b, c, trans_a, trans_b, beta, saved, r0, r1, c0, c1, ws, wt):
        m, n = c.shape
        k = a.shape[0] if trans_a else a.shape[1]
        _gemm_task(m, n, k, 1 if trans_a else 0, 1 if trans_b else 0, a.ctypes.data,
                   a.strides[0] // 4, b.ctypes.data, b.strides[0] // 4, np.float32(beta),
                   c.ctypes.data, c.strides[0] // 4, saved.ctypes.data, r0, r1, c0, c1,
                   ws.ctypes.data, ws.shape[0], wt.ctypes.data)
    return impl


@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _adjacent(a):
    """``a`` has adjacent columns and a nonnegative row stride (what the C GEMM takes)."""
    return a.strides[1] == 4 and a.strides[0] >= 0 and a.strides[0] % 4 == 0


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def gemm_serial(a, b, c, trans_a, trans_b, beta, ws, wt):
    """``c = op(a) @ op(b) (+ beta * c)`` (:func:`gemm`'s chains) in one task, with the
    scratch ``ws[0]`` (:func:`workspace_size` floats) and ``wt[0]`` (``[MR, NR]``).
    ``a``, ``b`` and ``c`` must have adjacent columns (``strides[1] == 4``)."""
    m, n = c.shape
    if m == 0 or n == 0:
        return
    _task(a, b, c, trans_a, trans_b, beta, _saved(c, a, trans_a, beta), 0, m, 0, n, ws[0],
          wt[0])


@njit(cache=True, parallel=True, error_model="numpy", boundscheck=False)
def gemm_parallel(a, b, c, trans_a, trans_b, beta, ws, wt):
    """:func:`gemm_serial` in ``ws.shape[0]`` tasks over Numba's threads: bands of rows
    (or of columns when the output is wider than tall), each packing its own ``op(b)``;
    every element is still one chain, so the bits are the serial kernel's."""
    m, n = c.shape
    if m == 0 or n == 0:
        return
    saved = _saved(c, a, trans_a, beta)
    tasks = ws.shape[0]
    rows = n <= m  # bands of rows, or of columns when the output is wider than tall
    units = (m + MR - 1) // MR if rows else (n + NR - 1) // NR  # whole tiles
    per = (units + tasks - 1) // tasks
    for t in prange(tasks):
        u0 = min(t * per, units)
        u1 = min(u0 + per, units)
        if u1 > u0 and rows:
            _task(a, b, c, trans_a, trans_b, beta, saved, u0 * MR, min(u1 * MR, m), 0, n,
                  ws[t], wt[t])
        elif u1 > u0:
            _task(a, b, c, trans_a, trans_b, beta, saved, 0, m, u0 * NR, min(u1 * NR, n),
                  ws[t], wt[t])


# ------------------------------------------------------------ a long inner index in parts
# ``a.T @ b`` with a long inner index (a weight gradient: one row of ``a`` and ``b`` per
# sample position) and a small output: bands of the output would give each thread all of
# one operand, so the inner index is cut instead, into ``parts`` consecutive ranges (a
# number the caller derives from the shape alone). Part ``p`` is one task's product (the
# chains of :func:`gemm` over its range) into ``acc[p]``; ``c`` is then
# ``((acc[0] + acc[1]) + acc[2]) + ...``. Which thread computes a part never shows.
@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _part(a, b, p, parts, acc, ws, wt):
    """Part ``p`` of ``parts``: ``acc[p] = a[k0:k1].T @ b[k0:k1]`` in one task."""
    k = a.shape[0]
    k0 = k * p // parts
    k1 = k * (p + 1) // parts
    _task(a[k0:k1], b[k0:k1], acc[p], True, False, 0.0, np.empty((0, 0), dtype=np.float32),
          0, acc.shape[1], 0, acc.shape[2], ws, wt)


@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _fold_parts(acc, c):
    """``c = ((acc[0] + acc[1]) + acc[2]) + ...`` (rounded after each add)."""
    for i in range(c.shape[0]):
        for j in range(c.shape[1]):
            s = acc[0, i, j]
            for p in range(1, acc.shape[0]):
                s = s + acc[p, i, j]
            c[i, j] = s


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def gemm_parts_serial(a, b, c, acc, ws, wt):
    """``c = a.T @ b`` in ``acc.shape[0]`` parts of the inner index (see above), in one task
    with the scratch ``ws[0]`` and ``wt[0]``; ``acc`` is ``[parts, M, N]`` scratch.

    Shape:
        a: ``[K, M]``; b: ``[K, N]``; c: ``[M, N]``; acc: ``[parts, M, N]``.
    """
    for p in range(acc.shape[0]):
        _part(a, b, p, acc.shape[0], acc, ws[0], wt[0])
    _fold_parts(acc, c)


@njit(cache=True, parallel=True, error_model="numpy", boundscheck=False)
def gemm_parts_parallel(a, b, c, acc, ws, wt):
    """:func:`gemm_parts_serial` with the parts shared by ``ws.shape[0]`` tasks over Numba's
    threads (consecutive parts per task): the same bits."""
    parts = acc.shape[0]
    tasks = ws.shape[0]
    per = (parts + tasks - 1) // tasks
    for t in prange(tasks):
        for p in range(t * per, min(parts, t * per + per)):
            _part(a, b, p, parts, acc, ws[t], wt[t])
    _fold_parts(acc, c)


@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _sgemm_whole(a, b, c, trans_a, trans_b, beta):
    """The whole product in one call of the C GEMM, scratch allocated here (``a``, ``b``
    and ``c`` with adjacent columns)."""
    m, n = c.shape
    k = a.shape[0] if trans_a else a.shape[1]
    # workspace_size, op(a)'s part only when it is packed (the convolutions call this per
    # tile, mostly with narrow products: a larger buffer would come from the system page by
    # page in every call)
    size = max(1, min(KC, k) * (min(NC, (n + NR - 1) // NR * NR)
                                + (MC if _packs_a(trans_a, n) else 0)))
    ws = np.empty(size, dtype=np.float32)
    wt = np.empty(MR * NR, dtype=np.float32)
    saved = _saved(c, a, trans_a, beta)
    _gemm_task(m, n, k, 1 if trans_a else 0, 1 if trans_b else 0, a.ctypes.data,
               a.strides[0] // 4, b.ctypes.data, b.strides[0] // 4, np.float32(beta),
               c.ctypes.data, c.strides[0] // 4, saved.ctypes.data, 0, m, 0, n,
               ws.ctypes.data, size, wt.ctypes.data)


@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _sgemm(a, b, c, trans_a, trans_b, beta):
    if c.shape[0] == 0 or c.shape[1] == 0:
        return
    if _adjacent(a) and _adjacent(b) and _adjacent(c):
        _sgemm_whole(a, b, c, trans_a, trans_b, beta)
    else:  # the C GEMM takes adjacent columns: contiguous copies
        cc = c.copy()
        _sgemm_whole(a.copy(), b.copy(), cc, trans_a, trans_b, beta)
        for i in range(c.shape[0]):  # a loop: ``c[:] = cc`` compiles a shape-error message
            for j in range(c.shape[1]):
                c[i, j] = cc[i, j]


@overload(gemm, jit_options={"nogil": True})
def _gemm_jit(a, b, c, trans_a=False, trans_b=False, beta=0.0):
    # An omitted flag reaches the body as a literal: ``bool``/``float`` make every call
    # compile the one runtime-flag :func:`_sgemm`, whichever flags a call site spells out.
    def impl(a, b, c, trans_a=False, trans_b=False, beta=0.0):  # pragma: no cover
        _sgemm(a, b, c, bool(trans_a), bool(trans_b), float(beta))
    return impl
