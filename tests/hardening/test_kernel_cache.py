"""The kernel cache is stamped with every kernel source, not only the kernel's own file.

Numba checks a cached kernel against a hash of the file that defines it; a kernel also
carries code inlined from other files (``simd``'s intrinsics, the folds), so tinynet's
locators add :func:`tinynet.kernels._jit.kernel_sources_digest` to the stamp.
"""

from __future__ import annotations

import os

import numba
import pytest

from tinynet.kernels import _jit

pytestmark = pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1",
                                reason="no dispatchers (and no cache) without the JIT")


def _write(root, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_digest_follows_kernel_files_only(tmp_path):
    _write(tmp_path, "kernels/simd.py", "from numba.extending import intrinsic\nA = 1\n")
    _write(tmp_path, "layers/norm.py", "from tinynet.kernels._jit import njit\nB = 2\n")
    _write(tmp_path, "layers/plain.py", "C = 3\n")
    _write(tmp_path, "README.txt", "numba\n")
    first = _jit.sources_digest(str(tmp_path))
    assert first == _jit.sources_digest(str(tmp_path))  # deterministic

    _write(tmp_path, "layers/plain.py", "C = 4\n")  # names neither Numba nor _jit
    _write(tmp_path, "README.txt", "numba numba\n")  # not a .py file
    assert _jit.sources_digest(str(tmp_path)) == first

    _write(tmp_path, "kernels/simd.py", "from numba.extending import intrinsic\nA = 2\n")
    second = _jit.sources_digest(str(tmp_path))
    assert second != first  # an edit to the inlined helpers alone changes the stamp

    _write(tmp_path, "layers/norm.py", "from tinynet.kernels._jit import njit\nB = 3\n")
    assert _jit.sources_digest(str(tmp_path)) not in (first, second)


def test_tinynet_kernels_use_the_stamping_locator():
    from tinynet.kernels import simd
    from tinynet.kernels.normalization import forward
    from tinynet.ops.arrays import reduction

    assert _jit.LOCATORS_INSTALLED
    for kernel in (forward._SERIAL_DRIVERS[False],
                   forward._finish_stats, reduction.lane_sum, simd.load4):
        locator = kernel._cache._impl._locator
        assert getattr(type(locator), "_tinynet", False)
        own, digest = locator.get_source_stamp()
        assert digest == _jit.kernel_sources_digest()
        assert own  # Numba's own stamp of the kernel's file is kept beside it


@numba.njit(cache=True)
def _outside(x):
    return x + 1


def test_other_code_keeps_numbas_locators():
    locator = _outside._cache._impl._locator
    assert not getattr(type(locator), "_tinynet", False)
    assert _outside(1) == 2


def test_digest_is_of_the_installed_package():
    assert _jit.kernel_sources_digest() == _jit.sources_digest(_jit.PACKAGE_DIR)
    assert os.path.isfile(os.path.join(_jit.PACKAGE_DIR, "kernels", "simd.py"))


def test_normalization_drivers_keep_no_dispatcher_in_their_closure():
    """Numba keys a closure's cache entry on its cells' pickled contents, and a dispatcher
    pickles differently in every process: a driver that captured one would never be
    loaded from the cache. The serial group drivers and the layouts' wide-row kernels
    capture constants only (their pieces are module globals); the parallel drivers are
    module functions that get the serial driver's address as an argument, and the serial
    driver gets the wide-row kernels' addresses."""
    from numba.core.dispatcher import Dispatcher

    from tinynet.kernels.normalization import backward, forward, layout

    wide = [*forward._WIDE_STATS.values(), *forward._WIDE_SWEEPS.values(),
            *backward._WIDE_GRADS.values(), *backward._WIDE_DXS.values()]
    for lay in (layout.SPANS, layout.HALF_ROWS, layout.QUAD_ROWS, layout.TWO_QUADS):
        for flag in (False, True):
            for driver in (forward._SERIAL_DRIVERS[flag], backward._SERIAL_DRIVERS[flag],
                           *wide):
                cells = [c.cell_contents for c in driver.py_func.__closure__ or ()]
                assert cells and not any(isinstance(c, Dispatcher) for c in cells), \
                    driver.py_func.__qualname__
            for mode in (layout.CHUNKS, layout.BLOCKS):  # the same driver for each layout
                for module, make in ((forward, forward.forward_kernel),
                                     (backward, backward.backward_kernel)):
                    kernel = make(lay, mode, flag)
                    assert kernel.func is module._run and kernel.args == (lay, True, flag)
    for driver in (forward.group_forward_parallel, backward.group_backward_parallel):
        assert driver.py_func.__closure__ is None


def test_the_inliner_copies_a_callee_block_once():
    # inline_ir copies the callee's blocks, then that copy again as an "original" every
    # caller discards: the copier hands its own copies back instead
    from numba.core import ir

    from tinynet.kernels._jit import _ONE_COPY, _BlockCopier

    scope = ir.Scope(None, ir.Loc("f", 1))
    block = ir.Block(scope, ir.Loc("f", 1))
    block.append(ir.Assign(ir.Const(1, block.loc), scope.redefine("a", block.loc), block.loc))
    copier = _BlockCopier()
    first = copier.deepcopy(block)
    assert first is not block and first.body[0].target is not block.body[0].target
    assert str(first.body[0]) == str(block.body[0])
    # the second copy of inline_ir (copied again under a Numba newer than checked)
    assert (copier.deepcopy(first) is first) == _ONE_COPY
    other = ir.Block(scope, ir.Loc("f", 2))  # a block it did not make is copied
    assert copier.deepcopy(other) is not other
